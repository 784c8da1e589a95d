//! Virtual paths: the rules every tool applies to a path argument.
//!
//! A virtual path is absolute (`/src/main.rs`), uses `/` as separator, has
//! no empty, `.` or `..` components, and no trailing slash (except the root
//! `/` itself). [`normalize`] turns a tool argument into one or says why it
//! cannot.

pub use super::error::shown;
use super::error::FsError;

/// The longest path argument accepted, in bytes.
pub(crate) const MAX_PATH_BYTES: usize = 4096;

/// Normalises a path argument into a virtual absolute path.
///
/// - relative paths are taken relative to `/`;
/// - `//a///b/` becomes `/a/b`, `.` components are dropped;
/// - a `..` component or a leading `~` is [`FsError::PathTraversal`];
/// - a NUL byte, a drive letter (`C:`), a leading `\\` or more than
///   4,096 bytes is [`FsError::InvalidPath`].
///
/// Errors name the argument exactly as given.
///
/// ```
/// use lc_agent_filesystem::path::normalize;
///
/// assert_eq!(normalize("//a///b/").unwrap(), "/a/b");
/// assert_eq!(normalize("notes.txt").unwrap(), "/notes.txt");
/// assert_eq!(normalize("/a/./foo..bar.txt").unwrap(), "/a/foo..bar.txt");
/// assert_eq!(
///     normalize("/a/../etc").unwrap_err().to_string(),
///     "Path traversal not allowed: /a/../etc"
/// );
/// assert_eq!(normalize("C:\\x").unwrap_err().to_string(), "Invalid path: C:\\x");
/// ```
pub fn normalize(arg: &str) -> Result<String, FsError> {
    let invalid = || FsError::InvalidPath(arg.to_string());
    if arg.len() > MAX_PATH_BYTES || arg.contains('\0') || arg.starts_with("\\\\") {
        return Err(invalid());
    }
    let bytes = arg.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Err(invalid());
    }
    if arg.starts_with('~') {
        return Err(FsError::PathTraversal(arg.to_string()));
    }
    let mut out = String::with_capacity(arg.len() + 1);
    for part in arg.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(FsError::PathTraversal(arg.to_string())),
            name => {
                out.push('/');
                out.push_str(name);
            }
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    Ok(out)
}

/// Refuses a name for a file about to be created or rewritten (`write_file`,
/// `edit_file`, uploads) when it contains a control character (a newline,
/// a tab, ESC, ...): such a name would read as something else in every
/// listing. [`FsError::ControlCharInName`] names the path escaped.
pub(crate) fn check_new_name(path: &str) -> Result<(), FsError> {
    if path.chars().any(char::is_control) {
        return Err(FsError::ControlCharInName(path.to_string()));
    }
    Ok(())
}

/// The components of a normalised virtual path (none for `/`).
pub(crate) fn components(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|c| !c.is_empty())
}

/// Joins a normalised directory path and a child name.
pub fn join(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The parent of a normalised path (`/` for a top-level entry and for `/`).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// `path` relative to the directory `dir` (both normalised), or `None`
/// when `path` is not strictly below `dir`.
pub(crate) fn relative_to<'a>(path: &'a str, dir: &str) -> Option<&'a str> {
    if dir == "/" {
        return path.strip_prefix('/').filter(|r| !r.is_empty());
    }
    path.strip_prefix(dir)?
        .strip_prefix('/')
        .filter(|r| !r.is_empty())
}

/// Whether any component of the path is a `.git` directory, i.e. the path
/// is `.git` itself or inside one (invisible to `ls`, `glob` and `grep`).
pub(crate) fn in_git_dir(path: &str) -> bool {
    components(path).any(|c| c == ".git")
}

/// Whether a file at `path` lies inside a `.git` directory (its parent chain
/// contains `.git`).
pub(crate) fn file_in_git_dir(path: &str) -> bool {
    in_git_dir(parent(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_names_without_control_characters() {
        assert!(check_new_name("/notes/ok name.md").is_ok());
        assert_eq!(
            check_new_name("/evil\nname.txt").unwrap_err().to_string(),
            "Invalid path: /evil\\nname.txt (file names cannot contain control characters)"
        );
    }

    #[test]
    fn rules() {
        assert_eq!(normalize("/").unwrap(), "/");
        assert_eq!(normalize("").unwrap(), "/");
        assert_eq!(normalize("a/b/").unwrap(), "/a/b");
        assert!(matches!(normalize("~/x"), Err(FsError::PathTraversal(_))));
        assert!(matches!(normalize("a/.."), Err(FsError::PathTraversal(_))));
        assert!(matches!(normalize("a\0b"), Err(FsError::InvalidPath(_))));
        assert!(matches!(normalize("C:"), Err(FsError::InvalidPath(_))));
        assert!(matches!(
            normalize("\\\\srv\\x"),
            Err(FsError::InvalidPath(_))
        ));
        assert!(matches!(
            normalize(&"a".repeat(4097)),
            Err(FsError::InvalidPath(_))
        ));
        assert_eq!(parent("/a/b"), "/a");
        assert_eq!(parent("/a"), "/");
        assert_eq!(relative_to("/a/b", "/a"), Some("b"));
        assert_eq!(relative_to("/ab", "/a"), None);
        assert_eq!(relative_to("/a", "/"), Some("a"));
    }
}
