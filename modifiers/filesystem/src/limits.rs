//! [`FileLimits`]: how much text `read_file` returns in one call and how
//! large a file `write_file`, `edit_file` and the line tools may leave.
//!
//! ```text
//!  FileLimits { max_read_bytes, max_write_bytes }
//!    .apply(backend) ─▶ a backend whose Backend::limits() says them
//!                          │ (every other call goes through unchanged)
//!  the file tools ask backend.limits():
//!    read_file   output stops at a whole line before max_read_bytes (footer)
//!    write_file  content over max_write_bytes ─▶ Error: Cannot write to ...
//!    edit_file, insert/replace/delete_lines
//!                the edited file over max_write_bytes ─▶ Error: Cannot edit ...
//!                (Backend::edit_capped, LineEdit::max_bytes: nothing written)
//! ```
//!
//! The limits belong to the file tools (what a model, `lc-agent tool`, the
//! MCP server and the HTTP tool endpoints call). The backend's own methods
//! are not capped: uploads, evicted tool results and rewinds write what
//! they are given.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::error::{FsError, FsResult};

/// The smallest read limit: one line as `read_file` prints it at its
/// longest (2,000 chars of up to 4 bytes, its number and the cut marker)
/// always fits, so every call shows at least one line.
pub(crate) const MIN_READ_BYTES: u64 = 8 << 10;

/// The file tools' size limits (see the module docs of `limits.rs`).
///
/// - `max_read_bytes` (default 256 KiB, at least 8 KiB): `read_file` stops
///   at a whole line before its output passes this many bytes and ends with
///   `[Output truncated at the read limit of <n> bytes. Showing lines
///   <a>-<b> of <total>. Use offset=<b> to read more.]`. The spec's
///   50,000-char rule still holds and comes first at the default.
/// - `max_write_bytes` (default 4 GiB): `write_file` refuses content over
///   it, and `edit_file` and the line tools refuse an edit that would leave
///   a larger file (measured in the file's own encoding); nothing is
///   written.
///
/// ```
/// use lc_agent::RunnableNetwork;
/// use lc_agent_filesystem::{run_tool, FileLimits, StateBackend};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let files = StateBackend::new(RunnableNetwork::new());
/// let backend = FileLimits::default().max_write_bytes(4).apply(files);
/// let backend = backend.resolve(&RunnableNetwork::new());
/// let out = run_tool(&*backend, "write_file", &json!({"file_path": "/a.txt", "content": "hello"})).await.unwrap();
/// assert_eq!(
///     out.content,
///     "Error: Cannot write to /a.txt: the content is 5 bytes, over the write limit of 4 bytes. \
///      Nothing was written; write less, or split the content across several files."
/// );
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FileLimits {
    max_read_bytes: u64,
    max_write_bytes: u64,
}

impl Default for FileLimits {
    fn default() -> Self {
        Self {
            max_read_bytes: Self::DEFAULT_MAX_READ_BYTES,
            max_write_bytes: Self::DEFAULT_MAX_WRITE_BYTES,
        }
    }
}

impl FileLimits {
    /// The default read limit: 256 KiB.
    pub const DEFAULT_MAX_READ_BYTES: u64 = 256 << 10;
    /// The default write limit: 4 GiB.
    pub const DEFAULT_MAX_WRITE_BYTES: u64 = 4 << 30;

    /// Sets the most bytes `read_file` returns in one call (raised to
    /// 8 KiB, so one line always fits).
    #[must_use]
    pub fn max_read_bytes(mut self, bytes: u64) -> Self {
        self.max_read_bytes = bytes;
        self
    }

    /// Sets the largest file `write_file`, `edit_file` and the line tools
    /// may leave, in bytes.
    #[must_use]
    pub fn max_write_bytes(mut self, bytes: u64) -> Self {
        self.max_write_bytes = bytes;
        self
    }

    /// The read limit in force (at least 8 KiB).
    pub fn read_limit(&self) -> u64 {
        self.max_read_bytes.max(MIN_READ_BYTES)
    }

    /// The write limit.
    pub fn write_limit(&self) -> u64 {
        self.max_write_bytes
    }

    /// Whether these are the defaults (a blueprint leaves them out).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// A writer that passes bytes on up to `cap` and only counts them after,
/// so an edit learns the exact size of its result while writing at most
/// `cap` bytes of it.
pub(crate) struct CappedWriter<W: Write> {
    inner: W,
    cap: Option<u64>,
    written: u64,
}

impl<W: Write> CappedWriter<W> {
    pub(crate) fn new(inner: W, cap: Option<u64>) -> Self {
        Self {
            inner,
            cap,
            written: 0,
        }
    }

    /// The size of the whole result when it is over the cap.
    pub(crate) fn over(&self) -> Option<u64> {
        self.cap
            .filter(|cap| self.written > *cap)
            .map(|_| self.written)
    }
}

impl<W: Write> Write for CappedWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len() as u64;
        let over = self.cap.is_some_and(|cap| self.written + n > cap);
        if !over {
            self.inner.write_all(buf)?;
        }
        self.written += n;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Refuses `write_file` content of `size` bytes over `limit`.
pub(crate) fn check_write(path: &str, size: u64, limit: u64) -> FsResult<()> {
    if size > limit {
        return Err(FsError::WriteTooLarge {
            path: path.to_string(),
            size,
            limit,
        });
    }
    Ok(())
}

/// Refuses an edit that would leave a file of `size` bytes over `limit`.
pub(crate) fn check_edit(path: &str, size: u64, limit: u64) -> FsResult<()> {
    if size > limit {
        return Err(FsError::EditTooLarge {
            path: path.to_string(),
            size,
            limit,
        });
    }
    Ok(())
}
