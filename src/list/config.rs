//! [`ListConfig`]: *which sessions* — a JSON directory, or a Redis URL and
//! key prefix — and [`Lists`], the store opened once, which hands out each
//! user's [`NetworkList`].
//!
//! ```text
//!  ListConfig::json(dir) | ::redis(url).prefix(p) | ::default()
//!        │ open()          (checks the configuration; Redis connects on first use)
//!        ▼
//!  Lists ── user("alice") ──▶ Arc<dyn NetworkList>   (one per user, cached, shared connection)
//!    .retention(30 days)  sessions expire after their latest save (RetentionList; Redis TTLs)
//!    .snapshot_turns(20)  each session keeps the file contents rewinds to its last 20 turns need
//!    .cache(64)           parsed networks kept, checked by revision (CachedNetworkList)
//! ```
//!
//! This is the one place that turns "where sessions live" into lists: the
//! CLI (`--sessions DIR | --redis URL [--prefix P]`), the server and the
//! examples all go through it, so a new store option is a change here.
//!
//! ```
//! use lc_agent::{ListConfig, NetworkList};
//! use lc_agent::RunnableNetwork;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let dir = tempfile::tempdir()?;
//! let lists = ListConfig::json(dir.path()).open()?;
//! let alice = lists.user("alice")?;
//! alice.save(&RunnableNetwork::builder().name("Plans").build()).await?;
//! assert_eq!(alice.list(&Default::default()).await?.total, 1);
//! assert_eq!(lists.user("bob")?.list(&Default::default()).await?.total, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

#[cfg(not(feature = "redis"))]
use super::ListError;
#[cfg(feature = "redis")]
use super::RedisNetworkList;
use super::{CachedNetworkList, RetentionList, SessionCache};
use super::{JsonNetworkList, ListResult, NetworkList};

use super::DEFAULT_PREFIX;

/// Where sessions live: a JSON directory or a Redis URL and key prefix;
/// [`open`](Self::open) gives the [`Lists`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListConfig {
    /// A [`JsonNetworkList`]: one file per session under `root/<user>/`.
    Json {
        /// The sessions directory.
        root: PathBuf,
    },
    /// A [`RedisNetworkList`] at `url` (shared by every process naming it).
    Redis {
        /// `redis://`, `rediss://` (TLS) or `redis+unix://`.
        url: String,
        /// The key prefix (default `lc_agent`).
        prefix: String,
    },
}

impl Default for ListConfig {
    /// The JSON list under [`JsonNetworkList::default_root`].
    fn default() -> Self {
        Self::json(JsonNetworkList::default_root())
    }
}

impl ListConfig {
    /// Sessions in JSON files under `root`.
    pub fn json(root: impl Into<PathBuf>) -> Self {
        Self::Json { root: root.into() }
    }

    /// Sessions in Redis at `url`, under the default key prefix.
    pub fn redis(url: impl Into<String>) -> Self {
        Self::Redis {
            url: url.into(),
            prefix: DEFAULT_PREFIX.to_string(),
        }
    }

    /// The Redis key prefix (a JSON list has none: unchanged).
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        if let Self::Redis { prefix: p, .. } = &mut self {
            *p = prefix.into();
        }
        self
    }

    /// From the usual options: `redis` wins when given (with `prefix`, if
    /// any), else `dir`, else the default JSON directory.
    pub fn from_options(
        dir: Option<PathBuf>,
        redis: Option<String>,
        prefix: Option<String>,
    ) -> Self {
        match (redis, dir) {
            (Some(url), _) => {
                let config = Self::redis(url);
                match prefix {
                    Some(p) => config.prefix(p),
                    None => config,
                }
            }
            (None, Some(dir)) => Self::json(dir),
            (None, None) => Self::default(),
        }
    }

    /// Opens the store: checks the configuration (Redis connects on first
    /// use). Redis needs the `redis` feature (on by default).
    pub fn open(&self) -> ListResult<Lists> {
        let base = match self {
            Self::Json { root } => Base::Json(JsonNetworkList::new(root.clone())),
            #[cfg(feature = "redis")]
            Self::Redis { url, prefix } => Base::Redis(
                RedisNetworkList::builder(super::redis::RedisConnector::new(url.clone())?)
                    .prefix(prefix.clone())
                    .build()?,
            ),
            #[cfg(not(feature = "redis"))]
            Self::Redis { .. } => {
                return Err(ListError::Config(
                    "sessions in Redis need lc-agent built with the `redis` feature".into(),
                ))
            }
        };
        Ok(Lists {
            config: self.clone(),
            base,
            users: Arc::new(Mutex::new(HashMap::new())),
            retention: None,
            snapshot_turns: None,
            cache: None,
        })
    }
}

#[derive(Clone)]
enum Base {
    Json(JsonNetworkList),
    #[cfg(feature = "redis")]
    Redis(RedisNetworkList),
}

/// An opened session store: each user's list, opened once and shared (one
/// Redis connection, one JSON listing cache). Cheap to clone.
#[derive(Clone)]
pub struct Lists {
    config: ListConfig,
    base: Base,
    users: Arc<Mutex<HashMap<String, Arc<dyn NetworkList>>>>,
    retention: Option<Duration>,
    snapshot_turns: Option<usize>,
    cache: Option<SessionCache>,
}

impl std::fmt::Debug for Lists {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lists")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Lists {
    /// Sessions expire `retention` after their latest save: each user's
    /// list removes its expired ones (`RetentionList`), and in Redis the
    /// user's keys expire after it too. Applies to lists handed out after
    /// this call.
    ///
    /// ```
    /// use std::time::Duration;
    /// use lc_agent::ListConfig;
    /// let dir = tempfile::tempdir().unwrap();
    /// let lists = ListConfig::json(dir.path()).open().unwrap()
    ///     .retention(Duration::from_secs(30 * 86_400))
    ///     .cache(64);
    /// assert_eq!(lists.user("alice").unwrap().user(), "alice");
    /// ```
    #[must_use]
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = Some(retention);
        #[cfg(feature = "redis")]
        if let Base::Redis(redis) = &self.base {
            self.base = Base::Redis(redis.with_ttl(Some(retention)));
        }
        self.users.lock().clear();
        self
    }

    /// Each saved session keeps only the file contents (rewind snapshots)
    /// a rewind to a point within its last `turns` turns needs
    /// ([`SnapshotsExt::trim_file_snapshots`](crate::SnapshotsExt::trim_file_snapshots));
    /// older rewinds report those files as not kept. Applies to lists
    /// handed out after this call.
    #[must_use]
    pub fn snapshot_turns(mut self, turns: usize) -> Self {
        self.snapshot_turns = Some(turns);
        self.users.lock().clear();
        self
    }

    /// Keeps up to `sessions` parsed networks, shared by every user's
    /// list (`CachedNetworkList`); 0 keeps none. Applies to lists handed
    /// out after this call.
    #[must_use]
    pub fn cache(mut self, sessions: usize) -> Self {
        self.cache = (sessions > 0).then(|| SessionCache::new(sessions));
        self.users.lock().clear();
        self
    }

    /// The session cache, when there is one.
    pub fn session_cache(&self) -> Option<&SessionCache> {
        self.cache.as_ref()
    }

    /// The session list of `user` (a bad user name is an error).
    pub fn user(&self, user: &str) -> ListResult<Arc<dyn NetworkList>> {
        if let Some(list) = self.users.lock().get(user) {
            return Ok(list.clone());
        }
        let mut list: Arc<dyn NetworkList> = match &self.base {
            Base::Json(json) => Arc::new(json.with_user(user)?),
            #[cfg(feature = "redis")]
            Base::Redis(redis) => Arc::new(redis.with_user(user)?),
        };
        if let Some(cache) = &self.cache {
            list = Arc::new(CachedNetworkList::new(list, cache.clone()));
        }
        if self.retention.is_some() || self.snapshot_turns.is_some() {
            list = Arc::new(RetentionList::new(
                list,
                self.retention,
                self.snapshot_turns,
            ));
        }
        self.users.lock().insert(user.to_string(), list.clone());
        Ok(list)
    }

    /// The Redis list, when sessions live in Redis (its connection can be
    /// shared with other stores, or used for Redis-only commands).
    #[cfg(feature = "redis")]
    pub fn redis(&self) -> Option<&RedisNetworkList> {
        match &self.base {
            Base::Redis(redis) => Some(redis),
            Base::Json(_) => None,
        }
    }
}
