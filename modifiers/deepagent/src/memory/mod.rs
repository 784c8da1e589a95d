//! Long-term memory: what a user said, decided and asked to remember,
//! kept across sessions and found again by relevance (feature `memory`).
//!
//! ```text
//!  MemoryModifier ── before each chat request ──▶ MemoryStore::search(user, last question)
//!    │                 system prompt += latest summary + top-k memories
//!    ├── after each finished turn ──▶ add(turn)     every N turns: spawn ─▶ `summary` model
//!    └── tools: remember (a fact) · recall (a search)                      ─▶ add(summary)
//!
//!  MemoryStore ── entries ──▶ MemoryBackend: InMemoryBackend | JsonFileBackend | RedisMemoryBackend
//!              ├─ search ───▶ MemoryIndex (tantivy; RAM, or a directory beside the JSON file)
//!              └─ meaning ──▶ Embedder (lc_agent; OpenAiEmbedder) + VectorIndex (RAM), fused
//!                             with the words by reciprocal rank fusion (when configured)
//! ```
//!
//! Entries are `{id, user, kind: turn|summary|fact, text, tags,
//! created_at, embedding?}` ([`MemoryEntry`]). The backend is the truth and the index
//! follows it (rebuilt from the entries when missing or stale). Memory
//! lives outside the graph: it belongs to a user, across sessions, and
//! enters a conversation through the system prompt; the session records
//! which of its turns were stored and when it was last summarized.
//!
//! Memories are per user: every search is filtered by the user in the
//! index query and every hit is checked again, so one user's memories
//! never reach another user's prompt.
//!
//! - `entry.rs`: [`MemoryEntry`], [`MemoryKind`], [`MemoryEmbedding`] (stored as base64), [`MemoryQuery`], [`MemoryHit`].
//! - `error.rs`: [`MemoryError`].
//! - `backend.rs`: the [`MemoryBackend`] trait and [`InMemoryBackend`].
//! - `file.rs`: `JsonFileBackend`, the append-only JSON-lines file (fsynced, kill-safe).
//! - `redis.rs`: [`RedisMemoryBackend`], a list per user with a hash tag.
//! - `index.rs`: the tantivy index: schema, analyzer, relevance × recency.
//! - `store.rs`: [`MemoryStore`], backend + index (+ vectors), kept in sync; hybrid search.
//! - `vectors.rs`: the embeddings per user in RAM, cosine search (exact, or sign bits then exact).
//! - `modifier.rs`: [`MemoryModifier`], the prompt section, turns, background summaries.
//! - `tools.rs`: the `remember` and `recall` tools ([`Remember`], [`Recall`], `user_of`).

mod backend;
mod entry;
mod error;
mod file;
mod index;
mod modifier;
mod redis;
mod store;
mod tools;
mod vectors;

pub use backend::{InMemoryBackend, MemoryBackend};
pub use entry::{MemoryEmbedding, MemoryEntry, MemoryHit, MemoryKind, MemoryQuery};
pub use error::{MemoryError, MemoryResult};
pub use modifier::{MemoryModifier, SUMMARIZED_KEY, TURNS_KEY, TURN_KEY};
pub use redis::RedisMemoryBackend;
pub use store::MemoryStore;
pub use tools::{Recall, Remember, USER_KEY};
