//! Sessions: saving, loading, listing and deleting networks.
//!
//! A [`NetworkList`] keeps many networks (sessions) per user, keyed by the
//! network id. Two implementations ship with the crate:
//!
//! - [`JsonNetworkList`]: one file per network under
//!   `<root>/<user>/<id>.json`, written atomically, with a rebuildable
//!   append-only index (`<root>/<user>/.index.jsonl`) so that listing never
//!   parses whole networks;
//! - [`RedisNetworkList`]: hashes and a sorted set per user in Redis, saved
//!   with one atomic Lua script.
//!
//! # Revisions and timestamps
//!
//! Every save stamps three keys into the network's own metadata, so they
//! travel inside the saved JSON and survive copying a session elsewhere:
//!
//! | key | value |
//! | --- | --- |
//! | [`REVISION_KEY`] (`"revision"`) | `1` on the first save, one more on every save |
//! | [`CREATED_AT_KEY`] (`"created_at"`) | RFC 3339 time of the first save (kept afterwards) |
//! | [`UPDATED_AT_KEY`] (`"updated_at"`) | RFC 3339 time of the latest save |
//!
//! A network that was loaded (or last saved) at revision `r` may be saved
//! again only while the stored copy is still at revision `r` or older;
//! otherwise [`save`](NetworkList::save) fails with [`ListError::Conflict`]
//! and changes nothing. [`save_force`](NetworkList::save_force) overrides
//! the check (the caller's copy wins and gets a revision above the stored
//! one). A failed save leaves the network's metadata as it was.
//!
//! ```
//! use lc_agent::list::{JsonNetworkList, ListError, ListQuery, NetworkList};
//! use lc_agent::RunnableNetwork;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let dir = tempfile::tempdir()?;
//! let sessions = JsonNetworkList::new(dir.path()).with_user("alice")?;
//!
//! let net = RunnableNetwork::builder().name("Trip planning").build();
//! let info = sessions.save(&net).await?;
//! assert_eq!(info.revision, 1);
//!
//! // Another process loads the session, changes it and saves first ...
//! let other = sessions.load(net.id()).await?;
//! other.set_name("Trip to Lisbon");
//! sessions.save(&other).await?;
//!
//! // ... so our stale copy is refused instead of silently winning.
//! net.set_name("Trip to Porto");
//! assert!(matches!(sessions.save(&net).await, Err(ListError::Conflict { .. })));
//!
//! let page = sessions.list(&ListQuery::default()).await?;
//! assert_eq!(page.sessions[0].name, "Trip to Lisbon");
//! assert!(sessions.delete(net.id()).await?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

pub mod json;
pub mod redis;
mod resp;

use std::fmt;

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};
use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::error::NetworkError;
use crate::network::RunnableNetwork;

pub use json::JsonNetworkList;
pub use redis::{RedisNetworkList, RedisNetworkListBuilder};

/// A session id: the network's id.
pub type SessionId = Uuid;

/// Metadata key of the revision number (see the [module docs](self)).
pub const REVISION_KEY: &str = "revision";
/// Metadata key of the time of the first save (RFC 3339).
pub const CREATED_AT_KEY: &str = "created_at";
/// Metadata key of the time of the latest save (RFC 3339).
pub const UPDATED_AT_KEY: &str = "updated_at";
/// The user (namespace) a list works in unless told otherwise.
pub const DEFAULT_USER: &str = "default";
/// The page size of a [`ListQuery`] unless told otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 50;

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
    #[error("session store unavailable: {0}")]
    Unavailable(String),
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
pub type ListResult<T> = std::result::Result<T, ListError>;

/// What a list shows about one session, without loading the network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The network id.
    pub id: Uuid,
    /// The user (namespace) the session belongs to.
    pub user: String,
    /// The network's human-readable name.
    pub name: String,
    /// Time of the first save.
    pub created_at: DateTime<Utc>,
    /// Time of the latest save.
    pub updated_at: DateTime<Utc>,
    /// Number of nodes.
    pub node_count: usize,
    /// Size of the saved JSON in bytes.
    pub bytes: u64,
    /// The stored revision.
    pub revision: u64,
    /// The network's metadata (used by [`NetworkList::find`]).
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

/// Which page of sessions to list.
///
/// ```
/// use lc_agent::list::ListQuery;
/// let q = ListQuery::default().user("bob").offset(50).limit(25);
/// assert_eq!((q.offset, q.limit), (50, 25));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// The user (namespace) to list; `None` means the list's own user.
    pub user: Option<String>,
    /// Sessions to skip (newest first).
    pub offset: usize,
    /// Page size.
    pub limit: usize,
}

impl Default for ListQuery {
    fn default() -> Self {
        Self {
            user: None,
            offset: 0,
            limit: DEFAULT_PAGE_SIZE,
        }
    }
}

impl ListQuery {
    /// The user to list: the query's (checked), else `own`.
    pub fn user_or(&self, own: &str) -> ListResult<String> {
        match &self.user {
            Some(u) => {
                validate_user(u)?;
                Ok(u.clone())
            }
            None => Ok(own.to_string()),
        }
    }

    /// Lists another user's sessions.
    #[must_use]
    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }

    /// Skips this many sessions.
    #[must_use]
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    /// Returns at most this many sessions.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
}

/// One page of a listing.
#[derive(Debug, Default)]
pub struct ListPage {
    /// Sessions, most recently updated first.
    pub sessions: Vec<SessionInfo>,
    /// Entries of this page that could not be read (corrupt files or
    /// index entries); the listing goes on without them. Unreadable files
    /// that a [`JsonNetworkList`] cannot place in the order at all are
    /// reported with the first page (offset 0).
    pub errors: Vec<ListError>,
    /// Number of sessions of the user (all pages).
    pub total: usize,
}

/// A store of sessions: many networks per user, keyed by network id.
///
/// Every method works in the list's own user (namespace), except
/// [`list`](NetworkList::list), whose [`ListQuery`] may name another one.
/// See the [module docs](self) for revisions and timestamps.
#[async_trait]
pub trait NetworkList: Send + Sync {
    /// The user (namespace) this list works in.
    fn user(&self) -> &str;

    /// Inserts or updates the network (keyed by its id), unless the stored
    /// copy is newer ([`ListError::Conflict`]). On success the network's
    /// metadata carries the new revision and timestamps.
    async fn save(&self, network: &RunnableNetwork) -> ListResult<SessionInfo>;

    /// Saves whatever the stored revision is; the saved revision is one
    /// above the higher of the stored one and the network's.
    async fn save_force(&self, network: &RunnableNetwork) -> ListResult<SessionInfo> {
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
        Err(last.unwrap_or(ListError::Unavailable("save_force kept conflicting".into())))
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
                .list(&ListQuery::default().offset(offset).limit(500))
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

/// The revision a network was loaded or last saved at (0 if never saved).
pub fn revision_of(network: &RunnableNetwork) -> u64 {
    network
        .metadata_value(REVISION_KEY)
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

/// Checks a user (namespace) name: 1 to 128 characters among
/// `A-Z a-z 0-9 . _ -`, not starting with `.`.
pub fn validate_user(user: &str) -> ListResult<()> {
    let ok = !user.is_empty()
        && user.len() <= 128
        && !user.starts_with('.')
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(ListError::InvalidUser(user.to_string()))
    }
}

/// A network stamped for saving: its JSON and info at the new revision,
/// and what to put back if the save does not happen.
pub(crate) struct Stamped {
    pub(crate) expected: u64,
    pub(crate) json: String,
    pub(crate) info: SessionInfo,
    previous: [(&'static str, Option<Value>); 3],
}

pub(crate) fn timestamp(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

fn parse_time(v: Option<&Value>) -> Option<DateTime<Utc>> {
    v.and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// Sets the next revision and timestamps on the network and serializes it.
pub(crate) fn stamp(network: &RunnableNetwork, user: &str) -> ListResult<Stamped> {
    let previous =
        [REVISION_KEY, CREATED_AT_KEY, UPDATED_AT_KEY].map(|k| (k, network.metadata_value(k)));
    let expected = revision_of(network);
    // Micro-second precision: what the saved text and Redis scores hold.
    let now = Utc::now().trunc_subsecs(6);
    let created = parse_time(previous[1].1.as_ref()).unwrap_or(now);
    network.set_metadata(REVISION_KEY, Value::from(expected + 1));
    network.set_metadata(CREATED_AT_KEY, Value::from(timestamp(&created)));
    network.set_metadata(UPDATED_AT_KEY, Value::from(timestamp(&now)));
    let stamped = Stamped {
        expected,
        json: String::new(),
        info: SessionInfo {
            id: network.id(),
            user: user.to_string(),
            name: network.name(),
            created_at: created,
            updated_at: now,
            node_count: network.len(),
            bytes: 0,
            revision: expected + 1,
            metadata: network.metadata(),
        },
        previous,
    };
    match network.to_json() {
        Ok(json) => Ok(Stamped {
            info: SessionInfo {
                bytes: json.len() as u64,
                ..stamped.info.clone()
            },
            json,
            ..stamped
        }),
        Err(e) => {
            stamped.restore(network);
            Err(e.into())
        }
    }
}

impl Stamped {
    /// Puts the network's revision and timestamps back (the save failed).
    pub(crate) fn restore(&self, network: &RunnableNetwork) {
        for (key, value) in &self.previous {
            match value {
                Some(v) => network.set_metadata(*key, v.clone()),
                None => {
                    network.remove_metadata(key);
                }
            }
        }
    }
}

/// Counts the elements of a JSON array without keeping them.
#[derive(Default)]
struct CountSeq(usize);

impl<'de> Deserialize<'de> for CountSeq {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CountSeq;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CountSeq, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(CountSeq(n))
            }
        }
        d.deserialize_seq(V)
    }
}

/// The parts of a saved network that a listing needs; every other field
/// is skipped without being built.
#[derive(Deserialize)]
struct SavedHead {
    format: String,
    id: Uuid,
    #[serde(default)]
    name: String,
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default)]
    nodes: CountSeq,
}

/// Reads the listing info out of a saved network's JSON.
pub(crate) fn info_from_json(
    json: &[u8],
    user: &str,
    fallback_time: DateTime<Utc>,
) -> Result<SessionInfo, String> {
    let head: SavedHead = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    if head.format != crate::persist::FORMAT {
        return Err(format!(
            "unsupported format `{}` (expected `{}`)",
            head.format,
            crate::persist::FORMAT
        ));
    }
    let updated = parse_time(head.metadata.get(UPDATED_AT_KEY))
        .unwrap_or(fallback_time)
        .trunc_subsecs(6);
    Ok(SessionInfo {
        id: head.id,
        user: user.to_string(),
        name: head.name,
        created_at: parse_time(head.metadata.get(CREATED_AT_KEY)).unwrap_or(updated),
        updated_at: updated,
        node_count: head.nodes.0,
        bytes: json.len() as u64,
        revision: head
            .metadata
            .get(REVISION_KEY)
            .and_then(Value::as_u64)
            .unwrap_or(0),
        metadata: head.metadata,
    })
}
