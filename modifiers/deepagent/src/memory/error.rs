//! [`MemoryError`]: what can go wrong storing or searching memories.

use std::path::PathBuf;

/// Errors of long-term memory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// An entry or a query that cannot be stored or run (bad user name,
    /// empty text, ...); nothing was changed.
    #[error("invalid memory: {0}")]
    Invalid(String),
    /// The user name breaks the rules of session user names.
    #[error("invalid memory user: {source}")]
    User {
        /// Why.
        #[source]
        source: lc_agent::ListError,
    },
    /// A file of the JSON-file store could not be read or written.
    #[error("memory file {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Redis failed (connection or command).
    #[error("memory in redis: {source}")]
    Redis {
        /// The cause.
        #[source]
        source: lc_agent::ListError,
    },
    /// A stored entry is not a memory entry.
    #[error("corrupt memory entry at {location}: {reason}")]
    Corrupt {
        /// Where (file and byte offset, or Redis key and position).
        location: String,
        /// What is wrong.
        reason: String,
    },
    /// The search index failed.
    #[error("memory index: {source}")]
    Index {
        /// The cause.
        #[source]
        source: tantivy::TantivyError,
    },
}

impl From<tantivy::TantivyError> for MemoryError {
    fn from(source: tantivy::TantivyError) -> Self {
        MemoryError::Index { source }
    }
}

/// The result of memory operations.
pub type MemoryResult<T> = Result<T, MemoryError>;
