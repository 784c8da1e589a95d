//! [`plan_edit`]: where `edit_file` replaces, decided once on the file's
//! text and then written out by every backend ([`EditPlan`]).
//!
//! ```text
//!  text + old/new --(CRLF file? adjust both to \r\n)--> occurrences
//!       0 -> "String not found"   >1 without replace_all -> "appears n times"
//!       else EditPlan { starts, old_len, new } --write_to--> edited bytes
//! ```

use std::io::{self, Write};

use super::encoding::{classify, Encoding};
use super::error::{FsError, FsResult};
use super::path;

/// Cuts a string quoted in an error to its first 200 chars, then `...`.
pub(crate) fn cut_quote(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// `s` with every line ending written `\r\n` (how an `old_string` or
/// `new_string` meets a CRLF file).
pub(crate) fn crlf_variant(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// Where `edit_file` replaces, in a file's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EditPlan {
    /// Byte offsets of the occurrences to replace.
    pub starts: Vec<usize>,
    /// Length of the (line-ending adjusted) old string.
    pub old_len: usize,
    /// The (line-ending adjusted) replacement.
    pub new: String,
}

impl EditPlan {
    /// Writes the edited text.
    pub(crate) fn write_to<W: Write>(&self, text: &[u8], mut out: W) -> io::Result<()> {
        let mut pos = 0;
        for &start in &self.starts {
            out.write_all(&text[pos..start])?;
            out.write_all(self.new.as_bytes())?;
            pos = start + self.old_len;
        }
        out.write_all(&text[pos..])?;
        out.flush()
    }

    /// The edited text.
    pub(crate) fn apply(&self, text: &str) -> String {
        let mut out = Vec::with_capacity(text.len());
        // Writing to a Vec cannot fail.
        let _ = self.write_to(text.as_bytes(), &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// Plans an `edit_file` replacement: CRLF files get `\r\n` in both
/// strings; occurrences are counted without overlap.
pub(crate) fn plan_edit(text: &str, old: &str, new: &str, replace_all: bool) -> FsResult<EditPlan> {
    let crlf = memchr::memchr(b'\n', text.as_bytes())
        .is_some_and(|i| i > 0 && text.as_bytes()[i - 1] == b'\r');
    let (old_adj, new_adj) = if crlf {
        (crlf_variant(old), crlf_variant(new))
    } else {
        (old.to_string(), new.to_string())
    };
    let starts: Vec<usize> =
        memchr::memmem::find_iter(text.as_bytes(), old_adj.as_bytes()).collect();
    match starts.len() {
        0 => Err(FsError::StringNotFound(cut_quote(old))),
        n if n > 1 && !replace_all => Err(FsError::SeveralOccurrences {
            string: cut_quote(old),
            count: n,
        }),
        _ => Ok(EditPlan {
            starts,
            old_len: old_adj.len(),
            new: new_adj,
        }),
    }
}

/// `edit` of a file's text: the new text and the number of replacements
/// (refused when the new text is over `max_bytes`).
pub(crate) fn edit_text(
    file: &str,
    text: &str,
    (old, new, replace_all): (&str, &str, bool),
    max_bytes: Option<u64>,
) -> FsResult<(String, usize)> {
    path::check_new_name(file)?;
    if classify(text.as_bytes()) == Encoding::Binary {
        return Err(FsError::Binary {
            path: file.to_string(),
            size: text.len() as u64,
        });
    }
    let plan = plan_edit(text, old, new, replace_all)?;
    let edited = plan.apply(text);
    if let Some(limit) = max_bytes {
        super::limits::check_edit(file, edited.len() as u64, limit)?;
    }
    Ok((edited, plan.starts.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_plans() {
        let plan = plan_edit("a\r\nb\r\na\r\nb", "a\nb", "c\nd", true).unwrap();
        assert_eq!(plan.apply("a\r\nb\r\na\r\nb"), "c\r\nd\r\nc\r\nd");
        assert_eq!(
            plan_edit("aaaa", "aa", "b", false).unwrap_err(),
            FsError::SeveralOccurrences {
                string: "aa".into(),
                count: 2
            }
        );
    }
}
