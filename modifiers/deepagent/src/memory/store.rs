//! [`MemoryStore`]: a user's memories, kept by a [`MemoryBackend`] and
//! found through the search index.
//!
//! ```text
//!  add(entry) ──▶ backend.append (committed) ──▶ sync(user)
//!  search(user, q) ──▶ sync(user) ──▶ index.search (+user:<user>)
//!
//!  sync(user): the index holds the user's first n entries
//!              ──▶ backend.entries_from(user, n) ──▶ index.add ──▶ n' = n + new
//! ```
//!
//! The backend is the truth; the index follows it. Before every search
//! the index takes in what the backend has and it has not seen (entries
//! that other processes or servers added, or that a crash kept out of the
//! index). The first time a user is seen, the index's count for that user
//! is checked against the backend (the last indexed entry must be there):
//! an index that is stale (a backend that was replaced or cut) is rebuilt
//! for that user from the entries; a missing one is rebuilt in full.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lc_agent::validate_user;
use parking_lot::Mutex;

use super::backend::{InMemoryBackend, MemoryBackend};
use super::entry::{MemoryEntry, MemoryHit, MemoryKind, MemoryQuery};
use super::error::{MemoryError, MemoryResult};
use super::file::JsonFileBackend;
use super::index::MemoryIndex;
use super::redis::RedisMemoryBackend;

/// The longest text an entry may have (bytes).
pub(super) const MAX_TEXT_BYTES: usize = 64 * 1024;

/// Long-term memory: entries per user in a backend, searched by relevance
/// and recency (clones share everything).
///
/// ```
/// use lc_agent_deepagent::memory::{MemoryEntry, MemoryKind, MemoryQuery, MemoryStore};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let memory = MemoryStore::in_memory()?;
/// memory.add(&MemoryEntry::new("alice", MemoryKind::Fact, "Alice's cat is called Miso")).await?;
/// memory.add(&MemoryEntry::new("bob", MemoryKind::Fact, "Bob's cat is called Tiger")).await?;
///
/// let hits = memory.search("alice", &MemoryQuery::new("what is my cat called?")).await?;
/// assert_eq!(hits.len(), 1);
/// assert!(hits[0].entry.text.contains("Miso"));
/// # Ok::<(), lc_agent_deepagent::memory::MemoryError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct MemoryStore {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Arc<dyn MemoryBackend>,
    index: MemoryIndex,
    /// How many of each user's entries the index holds (users seen so far).
    synced: Mutex<HashMap<String, usize>>,
    /// One sync at a time (so no entry is indexed twice).
    sync_lock: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("backend", &self.inner.backend.describe())
            .finish_non_exhaustive()
    }
}

impl MemoryStore {
    /// Memories in process memory, with a RAM index.
    pub fn in_memory() -> MemoryResult<Self> {
        Self::with_backend(InMemoryBackend::new())
    }

    /// Memories in `dir`: the entries in `dir/entries.jsonl` (append-only,
    /// fsynced) and the index in `dir/index/`. When another process
    /// writes that index, this one searches with an index in RAM built
    /// from the same entries (and says so in the log).
    pub fn open(dir: impl AsRef<Path>) -> MemoryResult<Self> {
        let dir = dir.as_ref();
        let backend = JsonFileBackend::open(dir.join("entries.jsonl"))?;
        let index = match MemoryIndex::open_dir(&dir.join("index")) {
            Ok(index) => index,
            Err(MemoryError::Index {
                source: tantivy::TantivyError::LockFailure(..),
            }) => {
                tracing::warn!(dir = %dir.display(), "another process writes the memory index; using one in RAM");
                MemoryIndex::in_ram()?
            }
            Err(e) => return Err(e),
        };
        Ok(Self::from_parts(Arc::new(backend), index))
    }

    /// Memories in the default directory: `$LC_AGENT_HOME/memory`, else
    /// `<the user's data directory>/lc-agent/memory`, else `.lc-agent/memory`.
    pub(crate) fn open_default() -> MemoryResult<Self> {
        Self::open(Self::default_dir())
    }

    /// `$LC_AGENT_HOME/memory`, else `<the user's data directory>/lc-agent/memory`
    /// (`~/.local/share/lc-agent/memory` on Linux), else `.lc-agent/memory`.
    pub(crate) fn default_dir() -> PathBuf {
        match std::env::var_os("LC_AGENT_HOME") {
            Some(home) if !home.is_empty() => PathBuf::from(home).join("memory"),
            _ => match dirs::data_dir() {
                Some(data) => data.join("lc-agent").join("memory"),
                None => PathBuf::from(".lc-agent").join("memory"),
            },
        }
    }

    /// Memories in Redis at `url` (a list per user, see
    /// [`RedisMemoryBackend`]), with a RAM index on this server that
    /// follows what every server adds.
    pub fn redis(url: impl Into<String>) -> MemoryResult<Self> {
        Self::with_backend(RedisMemoryBackend::new(url)?)
    }

    /// Memories in any backend, with a RAM index.
    pub fn with_backend(backend: impl MemoryBackend) -> MemoryResult<Self> {
        Ok(Self::from_parts(Arc::new(backend), MemoryIndex::in_ram()?))
    }

    fn from_parts(backend: Arc<dyn MemoryBackend>, index: MemoryIndex) -> Self {
        Self {
            inner: Arc::new(Inner {
                backend,
                index,
                synced: Mutex::new(HashMap::new()),
                sync_lock: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// Stores one entry (see [`MemoryStore::add_many`]).
    pub async fn add(&self, entry: &MemoryEntry) -> MemoryResult<()> {
        self.add_many(std::slice::from_ref(entry)).await
    }

    /// Stores entries: they are committed when this returns, and found by
    /// the next search. Nothing is stored when one of them is invalid (a
    /// bad user name, an empty or oversized text).
    pub async fn add_many(&self, entries: &[MemoryEntry]) -> MemoryResult<()> {
        for e in entries {
            check_user(&e.user)?;
            if e.text.trim().is_empty() {
                return Err(MemoryError::Invalid(format!("entry {} has no text", e.id)));
            }
            if e.text.len() > MAX_TEXT_BYTES {
                return Err(MemoryError::Invalid(format!(
                    "entry {} has {} bytes of text (at most {MAX_TEXT_BYTES})",
                    e.id,
                    e.text.len()
                )));
            }
        }
        self.inner.backend.append(entries).await?;
        let mut users: Vec<&str> = entries.iter().map(|e| e.user.as_str()).collect();
        users.sort_unstable();
        users.dedup();
        for user in users {
            if let Err(e) = self.sync(user).await {
                // Committed all the same: the next search indexes it.
                tracing::warn!(user, error = %e, "memory stored but not indexed yet");
            }
        }
        Ok(())
    }

    /// `user`'s best entries for `query`: relevance combined with recency
    /// (an empty query text gives the most recent ones).
    pub async fn search(&self, user: &str, query: &MemoryQuery) -> MemoryResult<Vec<MemoryHit>> {
        check_user(user)?;
        self.sync(user).await?;
        self.inner.index.search(user, query)
    }

    /// `user`'s most recent entry of `kind`.
    pub async fn latest(&self, user: &str, kind: MemoryKind) -> MemoryResult<Option<MemoryEntry>> {
        let hits = self
            .search(user, &MemoryQuery::new("").kind(kind).limit(1))
            .await?;
        Ok(hits.into_iter().next().map(|h| h.entry))
    }

    /// Every entry of `user`, oldest first (from the backend).
    pub async fn entries(&self, user: &str) -> MemoryResult<Vec<MemoryEntry>> {
        check_user(user)?;
        self.inner.backend.entries_from(user, 0).await
    }

    /// Brings the index up to date with `user`'s entries in the backend.
    pub(crate) async fn sync(&self, user: &str) -> MemoryResult<()> {
        let _one = self.inner.sync_lock.lock().await;
        let known = self.inner.synced.lock().get(user).copied();
        let known = match known {
            Some(n) => n,
            None => self.verified_count(user).await?,
        };
        let new = self.inner.backend.entries_from(user, known).await?;
        if let Some(stranger) = new.iter().find(|e| e.user != user) {
            return Err(MemoryError::Corrupt {
                location: self.inner.backend.describe(),
                reason: format!(
                    "entry {} of user {} among {user}'s",
                    stranger.id, stranger.user
                ),
            });
        }
        self.inner.index.add(&new)?;
        self.inner
            .synced
            .lock()
            .insert(user.to_string(), known + new.len());
        Ok(())
    }

    /// How many of `user`'s entries the index holds, checked against the
    /// backend; a stale index loses the user's entries (they are added
    /// again from the backend).
    async fn verified_count(&self, user: &str) -> MemoryResult<usize> {
        let index = &self.inner.index;
        let n = index.count(user)?;
        if n == 0 {
            return Ok(0);
        }
        let tail = self.inner.backend.entries_from(user, n - 1).await?;
        let fits = match tail.first() {
            Some(last) => index.contains(user, &last.id)?,
            None => false,
        };
        if fits {
            return Ok(n);
        }
        tracing::warn!(
            user,
            indexed = n,
            "the memory index does not match the entries; rebuilding it for this user"
        );
        index.remove_user(user)?;
        Ok(0)
    }
}

fn check_user(user: &str) -> MemoryResult<()> {
    validate_user(user).map_err(|source| MemoryError::User { source })
}
