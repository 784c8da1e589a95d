//! What a file operation fails with: [`FsError`] (the exact text the model
//! reads), its machine code [`FileOpError`], and [`shown`], how a path
//! appears in any of it.

use std::borrow::Cow;

/// A path (or any argument) as the tools print it: every control character
/// escaped the way Rust's `escape_debug` spells it (`\n`, `\r`, `\t`, `\0`,
/// `\u{1b}`, `\u{85}`), everything else as it is. One path is thus always
/// one line of a listing, and a NUL byte is never echoed raw. (A backslash
/// is not escaped: `C:\x` prints as given.)
///
/// ```
/// use lc_agent_filesystem::path::shown;
///
/// assert_eq!(shown("/evil\nname.txt"), "/evil\\nname.txt");
/// assert_eq!(shown("a\0b\u{1b}[31m"), "a\\0b\\u{1b}[31m");
/// assert_eq!(shown("/src/main.rs"), "/src/main.rs");
/// ```
pub fn shown(path: &str) -> Cow<'_, str> {
    if !path.chars().any(char::is_control) {
        return Cow::Borrowed(path);
    }
    let mut out = String::with_capacity(path.len() + 8);
    for c in path.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Errors of backend operations. `Display` is the exact text the model
/// reads after `Error: ` (see the spec); none of them contains a host path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    /// A `..` component, a leading `~`, or `..` in a glob pattern.
    #[error("Path traversal not allowed: {}", shown(.0))]
    PathTraversal(String),
    /// NUL byte, drive letter, UNC prefix or over-long path.
    #[error("Invalid path: {}", shown(.0))]
    InvalidPath(String),
    /// A new file name (`write_file`, `edit_file`, uploads) with a control
    /// character in it.
    #[error("Invalid path: {} (file names cannot contain control characters)", shown(.0))]
    ControlCharInName(String),
    /// Bytes that are not UTF-8 given to a backend that keeps text only
    /// (the network's files, a key-value store): refused, never altered.
    #[error("{} was not stored: its bytes are not UTF-8 text, and this backend keeps text only", shown(.0))]
    NotText(String),
    /// The path leads outside the workspace (through a symlink).
    #[error("Path escapes the workspace: {}", shown(.0))]
    Escapes(String),
    /// A symlink loop.
    #[error("Too many levels of symbolic links: {}", shown(.0))]
    SymlinkLoop(String),
    /// No such file.
    #[error("File not found: {}", shown(.0))]
    FileNotFound(String),
    /// No such directory (for `ls`).
    #[error("Directory not found: {}", shown(.0))]
    DirectoryNotFound(String),
    /// No such file or directory (for `glob` and `grep`).
    #[error("Path not found: {}", shown(.0))]
    PathNotFound(String),
    /// A file where a directory is needed.
    #[error("Not a directory: {}", shown(.0))]
    NotADirectory(String),
    /// A directory given to `read_file` or `edit_file`.
    #[error("{} is a directory; use ls", shown(.0))]
    IsDirectoryUseLs(String),
    /// A directory given to `write_file`.
    #[error("{} is a directory", shown(.0))]
    IsDirectory(String),
    /// A binary file (NUL byte in its first 8 KiB).
    #[error("{} is a binary file ({size} bytes)", shown(path))]
    Binary {
        /// The file.
        path: String,
        /// Its size in bytes.
        size: u64,
    },
    /// `read_file` on an image or PDF larger than it reads.
    #[error(
        "{} is too large to read ({size} bytes; images and PDFs are read up to {max} bytes)",
        shown(path)
    )]
    TooLarge {
        /// The file.
        path: String,
        /// Its size in bytes.
        size: u64,
        /// The most bytes read.
        max: u64,
    },
    /// `read_file` on an image whose canvas is larger than it decodes.
    #[error(
        "{} is too large to read ({width}x{height} px; images are decoded up to {max} pixels)",
        shown(path)
    )]
    TooManyPixels {
        /// The file.
        path: String,
        /// Its width in pixels.
        width: u32,
        /// Its height in pixels.
        height: u32,
        /// The most pixels decoded.
        max: u64,
    },
    /// An image to attach that is not one.
    #[error("{} is not an image (PNG, JPEG, GIF or WebP)", shown(.0))]
    NotAnImage(String),
    /// `read_file` on an image or PDF that cannot be decoded.
    #[error("{} could not be read as {what}: {reason}", shown(path))]
    Undecodable {
        /// The file.
        path: String,
        /// What it looked like (`a PNG image`, `a PDF`).
        what: String,
        /// The decoder's reason.
        reason: String,
    },
    /// `edit_file` on a file that is not UTF-8.
    #[error("{} is not valid UTF-8; edit_file will not rewrite it", shown(.0))]
    NotUtf8(String),
    /// `edit_file` whose `new_string` the file's encoding cannot hold.
    #[error("{} is {encoding} text, which cannot hold every character of new_string; the file was not changed", shown(path))]
    CannotEncode {
        /// The file.
        path: String,
        /// Its encoding.
        encoding: &'static str,
    },
    /// `write_file` without `overwrite` onto an existing file.
    #[error("Cannot write to {} because it already exists. Read it and use edit_file, or call write_file with overwrite=true.", shown(.0))]
    AlreadyExists(String),
    /// `write_file` content over the write limit ([`FileLimits`](crate::FileLimits)).
    #[error("Cannot write to {}: the content is {size} bytes, over the write limit of {limit} bytes. Nothing was written; write less, or split the content across several files.", shown(path))]
    WriteTooLarge {
        /// The file.
        path: String,
        /// The content's size in bytes.
        size: u64,
        /// The write limit in bytes.
        limit: u64,
    },
    /// An edit (`edit_file`, a line tool) that would leave a file over the
    /// write limit ([`FileLimits`](crate::FileLimits)).
    #[error("Cannot edit {}: the edited file would be {size} bytes, over the write limit of {limit} bytes. The file was not changed; make a smaller change, or split the file into several.", shown(path))]
    EditTooLarge {
        /// The file.
        path: String,
        /// The edited file's size in bytes.
        size: u64,
        /// The write limit in bytes.
        limit: u64,
    },
    /// `write_file` below a file.
    #[error("Cannot create {}: {} is a file", shown(path), shown(parent))]
    ParentIsFile {
        /// The path to create.
        path: String,
        /// The ancestor that is a file.
        parent: String,
    },
    /// `read_file` with an offset past the last line.
    #[error("Line offset {offset} exceeds file length ({total} lines)")]
    OffsetPastEnd {
        /// The requested offset.
        offset: usize,
        /// The number of lines.
        total: usize,
    },
    /// `edit_file`: `old_string` does not occur (already quoted/cut).
    #[error("String not found in file: '{0}'")]
    StringNotFound(String),
    /// `edit_file`: `old_string` occurs several times (already quoted/cut).
    #[error("String '{string}' appears {count} times in file. Use replace_all=true or give more surrounding context.")]
    SeveralOccurrences {
        /// The cut string.
        string: String,
        /// How many times it occurs.
        count: usize,
    },
    /// `edit_file` with an empty `old_string`.
    #[error("old_string cannot be empty")]
    EmptyOldString,
    /// `edit_file` with identical strings.
    #[error("old_string and new_string are identical")]
    IdenticalStrings,
    /// An invalid glob pattern.
    #[error("Invalid glob pattern '{}': {reason}", shown(pattern))]
    InvalidGlob {
        /// The pattern as given.
        pattern: String,
        /// Why it is invalid.
        reason: String,
    },
    /// `execute` on a backend that cannot run commands.
    #[error("execute is not available: the backend cannot run commands")]
    NoSandbox,
    /// The operating system refused access.
    #[error("Permission denied: {}", shown(.0))]
    PermissionDenied(String),
    /// Any other I/O failure (the path is virtual; the reason has no host path).
    #[error("I/O error on {}: {reason}", shown(path))]
    Io {
        /// The virtual path.
        path: String,
        /// What failed.
        reason: String,
    },
    /// The key-value store failed.
    #[error("Storage error: {0}")]
    Store(String),
    /// A path rule refused the operation (the message names the rule and
    /// the path; see `permissions/`).
    #[error("{0}")]
    Refused(String),
    /// A rewind to a node the session does not hold.
    #[error("node {0} is not in this session")]
    UnknownNode(String),
}

impl FsError {
    /// The structured code of this error (for uploads and downloads).
    pub(crate) fn code(&self) -> FileOpError {
        match self {
            FsError::FileNotFound(_) | FsError::DirectoryNotFound(_) | FsError::PathNotFound(_) => {
                FileOpError::FileNotFound
            }
            FsError::IsDirectory(_) | FsError::IsDirectoryUseLs(_) => FileOpError::IsDirectory,
            FsError::AlreadyExists(_) => FileOpError::AlreadyExists,
            FsError::PermissionDenied(_) | FsError::Escapes(_) | FsError::Refused(_) => {
                FileOpError::PermissionDenied
            }
            _ => FileOpError::InvalidPath,
        }
    }
}

/// Structured error codes of `upload_files` / `download_files`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileOpError {
    /// No such file.
    FileNotFound,
    /// Not allowed (including paths that escape the workspace).
    PermissionDenied,
    /// The path is a directory.
    IsDirectory,
    /// The path breaks the path rules (or any other failure).
    InvalidPath,
    /// The file exists already.
    AlreadyExists,
}

impl FileOpError {
    /// The code as the spec spells it (`file_not_found`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FileOpError::FileNotFound => "file_not_found",
            FileOpError::PermissionDenied => "permission_denied",
            FileOpError::IsDirectory => "is_directory",
            FileOpError::InvalidPath => "invalid_path",
            FileOpError::AlreadyExists => "already_exists",
        }
    }
}

impl std::fmt::Display for FileOpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `Result` with [`FsError`].
pub(crate) type FsResult<T> = Result<T, FsError>;
