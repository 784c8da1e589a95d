//! Sessions: saving, loading, listing and deleting networks.
//!
//! (The full description is on the [`NetworkList`] docs.)

mod cache;
mod checkpoint;
mod config;
pub(crate) mod json;
mod patient;
#[cfg(feature = "redis")]
pub(crate) mod redis;
mod retention;
mod session;
mod stamp;

use async_trait::async_trait;
use serde_json::Value;
use uuid::Uuid;

use crate::error::NetworkError;
use crate::network::format::journal::REVISION_KEY;
use crate::network::RunnableNetwork;

pub(crate) use cache::CachedNetworkList;
pub use cache::SessionCache;
pub use checkpoint::{CheckpointModifier, CheckpointPolicy};
pub use config::{ListConfig, Lists};
pub use json::JsonNetworkList;
pub use patient::save_patiently;
#[cfg(feature = "redis")]
pub use redis::{RedisNetworkList, RedisNetworkListBuilder};
pub(crate) use retention::RetentionList;
pub use session::{validate_user, ListPage, ListQuery, SessionInfo};
pub use stamp::revision_of;
pub(crate) use stamp::{info_from_json, stamp};

/// The default Redis key prefix (of `ListConfig::redis` and
/// `RedisNetworkList`).
pub(crate) const DEFAULT_PREFIX: &str = "lc_agent";

/// A session id: the network's id.
pub type SessionId = Uuid;

/// Metadata key of the time of the first save (RFC 3339).
pub const CREATED_AT_KEY: &str = "created_at";
/// Metadata key of the time of the latest save (RFC 3339).
pub const UPDATED_AT_KEY: &str = "updated_at";
/// The user (namespace) a list works in unless told otherwise.
pub(crate) const DEFAULT_USER: &str = "default";
/// The page size of a [`ListQuery`] unless told otherwise.
pub(crate) const DEFAULT_PAGE_SIZE: usize = 50;

/// Errors of session lists.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ListError {
    /// No session with this id.
    #[error("session {id} not found")]
    NotFound {
        /// The id that was asked for.
        id: Uuid,
    },
    /// The session was deleted: a delete is final, so a copy that was
    /// loaded (or running) before the delete cannot save it again.
    #[error("session {id} was deleted; it cannot be saved again (start a new session)")]
    Deleted {
        /// The deleted session's id.
        id: Uuid,
    },
    /// A stored session (or its index entry) cannot be read.
    #[error("corrupt session at {location}: {reason}")]
    Corrupt {
        /// Where it is: a file path, or a Redis key and field.
        location: String,
        /// The session id, when known.
        id: Option<Uuid>,
        /// What is wrong with it.
        reason: String,
    },
    /// The stored session is newer than the copy being saved.
    #[error("session {id} was saved elsewhere: this copy is at revision {expected}, the stored one at {found}; load it again, or use save_force to overwrite")]
    Conflict {
        /// The session id.
        id: Uuid,
        /// The revision the saved copy was loaded (or last saved) at.
        expected: u64,
        /// The stored revision.
        found: u64,
    },
    /// The store cannot be reached (Redis down, timeout).
    #[error("session store unavailable: {reason}")]
    Unavailable {
        /// What was tried and what happened.
        reason: String,
        /// The client's error, when there is one (for Redis, a
        /// `redis::RedisError`).
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// A user (namespace) name that cannot be used.
    #[error("invalid user name `{0}`: use 1 to 128 characters among A-Z a-z 0-9 . _ - and do not start with `.`")]
    InvalidUser(String),
    /// A configuration value is wrong (for example a Redis URL).
    #[error("session list configuration: {0}")]
    Config(String),
    /// File-system access failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// The network could not be written as JSON.
    #[error(transparent)]
    Network(#[from] NetworkError),
}

/// `Result` with [`ListError`].
pub(crate) type ListResult<T> = std::result::Result<T, ListError>;

/// Sessions: saving, loading, listing and deleting networks.
///
/// A [`NetworkList`] keeps many networks (sessions) per user, keyed by the
/// network id. Two implementations ship with the crate:
///
/// - [`JsonNetworkList`]: one file per network under
///   `<root>/<user>/<id>.json`, written atomically, with a rebuildable
///   append-only index (`<root>/<user>/.index.jsonl`) so that listing never
///   parses whole networks;
/// - [`RedisNetworkList`]: hashes and a sorted set per user in Redis, saved
///   with an optimistic check-and-commit script (one round trip per save).
///
/// # Revisions and timestamps
///
/// Every save stamps three keys into the network's own metadata, so they
/// travel inside the saved JSON and survive copying a session elsewhere:
///
/// | key | value |
/// | --- | --- |
/// | [`REVISION_KEY`] (`"revision"`) | `1` on the first save, one more on every save |
/// | [`CREATED_AT_KEY`] (`"created_at"`) | RFC 3339 time of the first save (kept afterwards) |
/// | [`UPDATED_AT_KEY`] (`"updated_at"`) | RFC 3339 time of the latest save |
///
/// A network that was loaded (or last saved) at revision `r` may be saved
/// again only while the stored copy is still at revision `r` or older;
/// otherwise [`save`](NetworkList::save) fails with [`ListError::Conflict`]
/// and changes nothing. [`save_force`](NetworkList::save_force) overrides
/// the check (the caller's copy wins and gets a revision above the stored
/// one). A failed save leaves the network's metadata as it was.
///
/// # A delete is final
///
/// [`delete`](NetworkList::delete) leaves a tombstone: a copy of the
/// session that is still running somewhere (another process, another
/// server on the same Redis) cannot bring it back; its next
/// [`save`](NetworkList::save) — or [`save_force`](NetworkList::save_force)
/// — fails with [`ListError::Deleted`]. The tombstone is a few bytes per
/// deleted session (a file under `<root>/<user>/.deleted/`, or the
/// session's revision key in Redis, which expires with the list's TTL).
///
/// ```
/// use lc_agent::{JsonNetworkList, ListError, ListQuery, NetworkList};
/// use lc_agent::RunnableNetwork;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir()?;
/// let sessions = JsonNetworkList::new(dir.path()).with_user("alice")?;
///
/// let net = RunnableNetwork::builder().name("Trip planning").build();
/// let info = sessions.save(&net).await?;
/// assert_eq!(info.revision, 1);
///
/// // Another process loads the session, changes it and saves first ...
/// let other = sessions.load(net.id()).await?;
/// other.set_name("Trip to Lisbon");
/// sessions.save(&other).await?;
///
/// // ... so our stale copy is refused instead of silently winning.
/// net.set_name("Trip to Porto");
/// assert!(matches!(sessions.save(&net).await, Err(ListError::Conflict { .. })));
///
/// let page = sessions.list(&ListQuery::default()).await?;
/// assert_eq!(page.sessions[0].name, "Trip to Lisbon");
/// assert!(sessions.delete(net.id()).await?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// A store of sessions: many networks per user, keyed by network id.
///
/// Every method works in the list's own user (namespace), except
/// [`list`](NetworkList::list), whose [`ListQuery`] may name another one.
/// See above for revisions and timestamps.
#[async_trait]
pub trait NetworkList: Send + Sync {
    /// The user (namespace) this list works in.
    fn user(&self) -> &str;

    /// Inserts or updates the network (keyed by its id), unless the stored
    /// copy is newer ([`ListError::Conflict`]). On success the network's
    /// metadata carries the new revision and timestamps.
    async fn save(&self, network: &RunnableNetwork) -> ListResult<SessionInfo>;

    /// Saves whatever the stored revision is; the saved revision is one
    /// above the higher of the stored one and the network's. The save is
    /// a full one (it repairs whatever is stored).
    async fn save_force(&self, network: &RunnableNetwork) -> ListResult<SessionInfo> {
        network.forget_base();
        let id = network.id();
        let mut last = None;
        for _ in 0..16 {
            let stored = self.stored_revision(id).await?.unwrap_or(0);
            let mine = revision_of(network);
            if stored > mine {
                network.set_metadata(REVISION_KEY, Value::from(stored));
            }
            match self.save(network).await {
                Err(e @ ListError::Conflict { .. }) => last = Some(e),
                other => return other,
            }
        }
        Err(last.unwrap_or(ListError::Unavailable {
            reason: "save_force kept conflicting".into(),
            source: None,
        }))
    }

    /// The stored revision of a session, `None` when there is none.
    async fn stored_revision(&self, id: Uuid) -> ListResult<Option<u64>>;

    /// Loads a session. Models, tools and modifiers must be attached again.
    async fn load(&self, id: Uuid) -> ListResult<RunnableNetwork>;

    /// The saved JSON of a session, exactly as stored.
    async fn load_json(&self, id: Uuid) -> ListResult<String>;

    /// Deletes a session; returns whether it existed.
    async fn delete(&self, id: Uuid) -> ListResult<bool>;

    /// A page of sessions, most recently updated first, without loading
    /// the networks.
    async fn list(&self, query: &ListQuery) -> ListResult<ListPage>;

    /// Every session of the list's user, newest first; sessions that cannot
    /// be read are error entries and the rest still load.
    async fn load_all(&self) -> ListResult<Vec<ListResult<RunnableNetwork>>> {
        let mut out = Vec::new();
        for entry in self.list_everything().await? {
            match entry {
                Ok(info) => out.push(self.load(info.id).await),
                Err(e) => out.push(Err(e)),
            }
        }
        Ok(out)
    }

    /// Sessions whose metadata has `key` equal to `value`, newest first.
    async fn find(&self, key: &str, value: &Value) -> ListResult<Vec<SessionInfo>> {
        Ok(self
            .list_everything()
            .await?
            .into_iter()
            .filter_map(Result::ok)
            .filter(|info| info.metadata.get(key) == Some(value))
            .collect())
    }

    /// Every entry of the list's user, page by page, newest first.
    async fn list_everything(&self) -> ListResult<Vec<ListResult<SessionInfo>>> {
        let mut out = Vec::new();
        let mut offset = 0;
        loop {
            let page = self
                .list(&ListQuery {
                    offset,
                    limit: 500,
                    ..ListQuery::default()
                })
                .await?;
            let empty = page.sessions.is_empty() && page.errors.is_empty();
            out.extend(page.errors.into_iter().map(Err));
            out.extend(page.sessions.into_iter().map(Ok));
            offset += 500;
            if empty || offset >= page.total {
                return Ok(out);
            }
        }
    }
}
