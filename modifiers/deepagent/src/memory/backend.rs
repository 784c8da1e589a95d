//! [`MemoryBackend`]: where entries are kept, as one append-only list per
//! user; with [`InMemoryBackend`].
//!
//! ```text
//!  append(entries) ─▶ alice: [e0, e1, e2, ...]   positions never change
//!  entries_from("alice", 2) ─▶ [e2, ...]          what the index has not seen
//! ```
//!
//! A sibling of the filesystem's [`Store`](lc_agent_filesystem::Store), not
//! an implementation of it: `Store` keeps file records by path and reads
//! whole namespaces, while memory is a log the search index follows from
//! where it stopped, so the one operation it needs is "this user's
//! entries from position n". The backends keep entries; the search index
//! ([`MemoryStore`](super::MemoryStore)) is rebuilt from them.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;

use super::entry::MemoryEntry;
use super::error::MemoryResult;

/// Durable storage of memory entries: per user, append-only, in order.
#[async_trait]
pub trait MemoryBackend: Send + Sync + 'static {
    /// Appends entries (of any users); when it returns they are committed.
    async fn append(&self, entries: &[MemoryEntry]) -> MemoryResult<()>;

    /// `user`'s entries from position `from` (0 = the first), in order.
    async fn entries_from(&self, user: &str, from: usize) -> MemoryResult<Vec<MemoryEntry>>;

    /// What the backend is, for messages (`in memory`, a path, a Redis URL).
    fn describe(&self) -> String;
}

/// Entries in process memory (clones share them); gone with the process.
#[derive(Debug, Clone, Default)]
pub struct InMemoryBackend {
    users: Arc<Mutex<HashMap<String, Vec<MemoryEntry>>>>,
}

impl InMemoryBackend {
    /// An empty backend.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl MemoryBackend for InMemoryBackend {
    async fn append(&self, entries: &[MemoryEntry]) -> MemoryResult<()> {
        let mut users = self.users.lock();
        for entry in entries {
            users
                .entry(entry.user.clone())
                .or_default()
                .push(entry.clone());
        }
        Ok(())
    }

    async fn entries_from(&self, user: &str, from: usize) -> MemoryResult<Vec<MemoryEntry>> {
        Ok(self
            .users
            .lock()
            .get(user)
            .map(|list| list.get(from..).unwrap_or_default().to_vec())
            .unwrap_or_default())
    }

    fn describe(&self) -> String {
        "in memory".to_string()
    }
}
