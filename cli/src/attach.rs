//! `@path/to/image.png` in a message (`run`, `chat`, `exec`): the image is
//! attached to the message as an image part.
//!
//! A word that starts with `@` and names a file ending with `.png`,
//! `.jpg`, `.jpeg`, `.gif` or `.webp` (trailing punctuation such as `,`
//! or a final `.` left out) is read from the workspace root (`--root`, else
//! the current directory), confined like the file tools' paths (no `..`,
//! no symlink out of the root), and attached (downscaled like `read_file`
//! shows images); a missing or broken one is an error before anything is
//! sent. The text stays as typed. Any other `@word` (`@alice`,
//! `@notes.txt`) is plain text.

use std::path::Path;

use lc_agent::ContentPart;
use lc_agent_filesystem::FilesystemBackend;

use crate::error::{CliError, CliResult};

/// The image names a message mentions with `@`, in order.
fn mentioned(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        .map(|name| {
            let name = name.trim_end_matches(|c| ",;:!?)]}\"'".contains(c));
            name.strip_suffix('.').unwrap_or(name)
        })
        .filter(|name| {
            name.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && ["png", "jpg", "jpeg", "gif", "webp"]
                        .iter()
                        .any(|e| ext.eq_ignore_ascii_case(e))
            })
        })
        .collect()
}

/// The images `text` mentions with `@`, read from `root` (the
/// workspace's directory, else the current one).
pub(crate) async fn attachments(text: &str, root: Option<&Path>) -> CliResult<Vec<ContentPart>> {
    let names = mentioned(text);
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let root = match root {
        Some(root) => root.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| CliError::usage(format!("cannot attach images: {e}")))?,
    };
    let disk = FilesystemBackend::new(&root).map_err(|e| {
        CliError::usage(format!(
            "cannot attach images: the workspace cannot be opened: {e}"
        ))
    })?;
    let mut parts = Vec::with_capacity(names.len());
    for name in names {
        let part = lc_agent_filesystem::image_part(&disk, name)
            .await
            .map_err(|e| CliError::usage(format!("cannot attach @{name}: {e}")))?;
        parts.push(part);
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_words_name_images() {
        assert_eq!(
            mentioned("see @shots/a.png, and @b.JPG. ask @alice about @notes.txt or @.png"),
            ["shots/a.png", "b.JPG"]
        );
    }
}
