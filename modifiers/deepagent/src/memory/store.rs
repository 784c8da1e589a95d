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
//!
//! With an [`Embedder`] ([`MemoryStore::with_embedder`]) memory also
//! finds meaning, not only words:
//!
//! ```text
//!  add(entries) ──▶ embed the texts (one call) ──▶ entry.embedding = {model, vector} ──▶ backend
//!  search(user, q) ──▶ words:   index.search, the best `pool` (relevance × recency)
//!                  └─▶ meaning: embed(q) ──▶ VectorIndex::search, the best `pool` (cosine)
//!                  ──▶ reciprocal rank fusion: score = Σ 1 / (60 + rank) ──▶ top `limit`
//! ```
//!
//! The vectors follow the backend as the index does (in RAM, taken in by
//! `sync`). Entries without a vector of the embedder's model (older ones,
//! written without an embedder, or by another model) are found by words
//! only; so is everything when the embedder fails (a warning says so):
//! an entry that could not be embedded is stored without a vector, and a
//! question that could not be embedded is searched by words. An empty
//! question gives the most recent entries, as without an embedder. A
//! hybrid search fills its `limit` with the entries nearest in meaning
//! when few share words with the question (hits are ranked, not cut off
//! by a similarity threshold, which would differ from model to model).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lc_agent::{validate_user, Embedder};
use parking_lot::{Mutex, RwLock};

use super::backend::{InMemoryBackend, MemoryBackend};
use super::entry::{MemoryEmbedding, MemoryEntry, MemoryHit, MemoryKind, MemoryQuery};
use super::error::{MemoryError, MemoryResult};
use super::file::JsonFileBackend;
use super::index::MemoryIndex;
use super::redis::RedisMemoryBackend;
use super::vectors::{normalized, VectorIndex};

/// The longest text an entry may have (bytes).
pub(super) const MAX_TEXT_BYTES: usize = 64 * 1024;

/// Reciprocal rank fusion's constant: an entry at rank `r` (from 1) of
/// the words' or the meaning's ranking adds `1 / (RRF_K + r)` to its score
/// (60, as in the paper that introduced it: Cormack et al., 2009).
const RRF_K: f32 = 60.0;

/// How many of the best of each ranking a hybrid search fuses, per hit
/// asked for, and at least.
const FUSE_FACTOR: usize = 10;
const MIN_FUSE: usize = 50;

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
    /// Search by meaning, when there is an embedder.
    meaning: RwLock<Option<Arc<Meaning>>>,
}

/// The embedder and the vectors of its model.
struct Meaning {
    embedder: Arc<dyn Embedder>,
    vectors: VectorIndex,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("backend", &self.inner.backend.describe())
            .field(
                "embedder",
                &self.meaning().map(|m| m.embedder.model_name().to_string()),
            )
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
                meaning: RwLock::new(None),
            }),
        }
    }

    /// The same store (and its clones) searching by meaning too: new
    /// entries get `embedder`'s vectors, and searches fuse the nearest in
    /// meaning with the best by words (see the [module docs](self)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use lc_agent::OpenAiEmbedder;
    /// use lc_agent_deepagent::memory::MemoryStore;
    ///
    /// let embedder = OpenAiEmbedder::new(
    ///     lc_agent::HttpSettings::default().base_url("http://127.0.0.1:8000/v1").model("nomic-embed-text"),
    /// )?;
    /// let memory = MemoryStore::in_memory()?.with_embedder(Arc::new(embedder));
    /// # let _ = memory;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_embedder(self, embedder: Arc<dyn Embedder>) -> Self {
        let vectors = VectorIndex::new(embedder.model_name());
        *self.inner.meaning.write() = Some(Arc::new(Meaning { embedder, vectors }));
        self
    }

    fn meaning(&self) -> Option<Arc<Meaning>> {
        self.inner.meaning.read().clone()
    }

    /// `entries`, those without an embedding given one by the embedder
    /// (unchanged, with a warning, when it fails).
    async fn embedded(&self, meaning: &Meaning, entries: &[MemoryEntry]) -> Vec<MemoryEntry> {
        let mut entries = entries.to_vec();
        let missing: Vec<usize> = (0..entries.len())
            .filter(|i| entries[*i].embedding.is_none())
            .collect();
        if missing.is_empty() {
            return entries;
        }
        let texts: Vec<String> = missing.iter().map(|i| entries[*i].text.clone()).collect();
        let model = meaning.embedder.model_name().to_string();
        match meaning.embedder.embed(&texts).await {
            Ok(vectors) if vectors.len() == texts.len() => {
                for (i, vector) in missing.into_iter().zip(vectors) {
                    entries[i].embedding = Some(MemoryEmbedding {
                        model: model.clone(),
                        vector,
                    });
                }
            }
            Ok(vectors) => tracing::warn!(
                model,
                texts = texts.len(),
                vectors = vectors.len(),
                "the embedder gave a wrong number of vectors; storing the memories for search by words only"
            ),
            Err(e) => tracing::warn!(
                model, error = %e,
                "could not embed new memories; storing them for search by words only"
            ),
        }
        entries
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
        let embedded;
        let entries = match self.meaning() {
            Some(meaning) => {
                embedded = self.embedded(&meaning, entries).await;
                &embedded[..]
            }
            None => entries,
        };
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
    /// (an empty query text gives the most recent ones); with an embedder,
    /// fused with the nearest in meaning (the hits' score is then the
    /// fusion's; see the [module docs](self)).
    pub async fn search(&self, user: &str, query: &MemoryQuery) -> MemoryResult<Vec<MemoryHit>> {
        check_user(user)?;
        self.sync(user).await?;
        let meaning = self
            .meaning()
            .filter(|_| query.limit > 0 && !query.text.trim().is_empty());
        let Some(meaning) = meaning else {
            return self.inner.index.search(user, query);
        };
        let model = meaning.embedder.model_name();
        let vector = match meaning
            .embedder
            .embed(std::slice::from_ref(&query.text))
            .await
        {
            Ok(mut vectors) if vectors.len() == 1 => normalized(&vectors.remove(0)),
            Ok(vectors) => {
                tracing::warn!(model, vectors = vectors.len(), "the embedder gave a wrong number of vectors for the question; searching memory by words only");
                None
            }
            Err(e) => {
                tracing::warn!(model, error = %e, "could not embed the question; searching memory by words only");
                None
            }
        };
        let Some(vector) = vector else {
            return self.inner.index.search(user, query);
        };
        let pool = (query.limit * FUSE_FACTOR).max(MIN_FUSE);
        let words = self.inner.index.search(user, &query.clone().limit(pool))?;
        let near = meaning.vectors.search(user, &vector, query, pool);
        let mut fused: indexmap::IndexMap<String, (f32, Option<MemoryEntry>)> =
            indexmap::IndexMap::with_capacity(words.len() + near.len());
        for (rank, hit) in words.into_iter().enumerate() {
            let slot = fused.entry(hit.entry.id.clone()).or_insert((0.0, None));
            slot.0 += 1.0 / (RRF_K + rank as f32 + 1.0);
            slot.1 = Some(hit.entry);
        }
        for (rank, (id, _)) in near.into_iter().enumerate() {
            fused.entry(id).or_insert((0.0, None)).0 += 1.0 / (RRF_K + rank as f32 + 1.0);
        }
        // Stable: equal scores keep the words' order, then the meaning's.
        fused.sort_by(|_, a, _, b| b.0.total_cmp(&a.0));
        let mut hits = Vec::with_capacity(query.limit);
        for (id, (score, entry)) in fused {
            if hits.len() == query.limit {
                break;
            }
            let entry = match entry {
                Some(entry) => entry,
                None => match self.inner.index.get(user, &id)? {
                    Some(entry) => entry,
                    None => continue,
                },
            };
            if entry.user != user {
                tracing::error!("memory search found another user's entry; dropping it");
                continue;
            }
            hits.push(MemoryHit { entry, score });
        }
        Ok(hits)
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
        // The vectors are in RAM only: after a restart they take in the
        // entries from the first, while the index on disk goes on from
        // where it stopped.
        let meaning = self.meaning();
        let mut vectors_seen = meaning.as_ref().map(|m| m.vectors.seen(user));
        if let (Some(m), Some(seen)) = (&meaning, vectors_seen)
            && seen > known
        {
            m.vectors.remove_user(user);
            vectors_seen = Some(0);
        }
        let from = vectors_seen.map_or(known, |seen| seen.min(known));
        let new = self.inner.backend.entries_from(user, from).await?;
        if let Some(stranger) = new.iter().find(|e| e.user != user) {
            return Err(MemoryError::Corrupt {
                location: self.inner.backend.describe(),
                reason: format!(
                    "entry {} of user {} among {user}'s",
                    stranger.id, stranger.user
                ),
            });
        }
        self.inner
            .index
            .add(new.get(known - from..).unwrap_or_default())?;
        if let (Some(m), Some(seen)) = (&meaning, vectors_seen) {
            m.vectors
                .add(user, new.get(seen - from..).unwrap_or_default());
        }
        self.inner
            .synced
            .lock()
            .insert(user.to_string(), from + new.len());
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
