//! [`page_text`] and [`edit_text`]: what `read` and `edit` do to a file's
//! text, for a backend that gets and puts the text somewhere of its own
//! (an editor's buffers, reached over the Agent Client Protocol) — the
//! same paging, binary check and edit rules as every other backend.

use super::backend::ReadPage;
use super::error::FsError;
use super::map_backend;

/// Lines `offset..offset + limit` of `text`, the file `file` holds, as
/// [`Backend::read`](crate::Backend::read) returns them.
///
/// ```
/// use lc_agent_filesystem::page_text;
///
/// let page = page_text("/a.txt", "one\ntwo\nthree\n", 1, 1).unwrap();
/// assert_eq!((page.lines[0].text.as_str(), page.total), ("two", Some(3)));
/// ```
pub fn page_text(file: &str, text: &str, offset: usize, limit: usize) -> Result<ReadPage, FsError> {
    map_backend::read_text(file, text, offset, limit)
}

/// `text` (the file `file` holds) with `old` replaced by `new`, as
/// [`Backend::edit`](crate::Backend::edit) replaces it, and the number of
/// replacements.
///
/// ```
/// use lc_agent_filesystem::edit_text;
///
/// let (text, n) = edit_text("/a.txt", "a b a", "b", "c", false).unwrap();
/// assert_eq!((text.as_str(), n), ("a c a", 1));
/// assert!(edit_text("/a.txt", "a b a", "a", "c", false).is_err());
/// ```
pub fn edit_text(
    file: &str,
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<(String, usize), FsError> {
    crate::edit::edit_text(file, text, (old, new, replace_all), None)
}
