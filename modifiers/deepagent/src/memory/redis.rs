//! [`RedisMemoryBackend`]: memory entries in Redis, a list per user, for
//! many servers sharing one memory.
//!
//! ```text
//!  <prefix>:user:{alice}:memory   list   entry JSON, oldest first (RPUSH)
//!                └──┬──┘
//!   hash tag: the user's memory shares a Cluster slot with the user's
//!   sessions (see lc-agent's session list keys)
//!
//!  append ─▶ one RPUSH per user (the entries of one call, in order)
//!  entries_from(user, n) ─▶ LRANGE key n -1
//! ```
//!
//! Every server keeps its own search index in RAM and takes in the
//! entries other servers pushed before each search (one `LRANGE` from
//! where it stopped). It goes through lc-agent's
//! [`RedisConnector`]: one server, TLS (`rediss://`) or a Cluster.

use std::collections::BTreeMap;

use async_trait::async_trait;
use lc_agent::RedisConnector;

use super::backend::MemoryBackend;
use super::entry::MemoryEntry;
use super::error::{MemoryError, MemoryResult};

/// The key prefix when none is given.
pub(super) const DEFAULT_PREFIX: &str = "lc-agent";

/// Entries in Redis (see the [module docs](super)).
#[derive(Debug, Clone)]
pub struct RedisMemoryBackend {
    redis: RedisConnector,
    prefix: String,
}

impl RedisMemoryBackend {
    /// Redis at `url` (`redis://127.0.0.1:6379/0`, `rediss://...`);
    /// nothing connects until first use.
    pub fn new(url: impl Into<String>) -> MemoryResult<Self> {
        let redis = RedisConnector::new(url).map_err(|source| MemoryError::Redis { source })?;
        Ok(Self::with_connector(redis))
    }

    /// On an existing connector (a Cluster, a private CA, or the one of a
    /// `RedisNetworkList`).
    pub fn with_connector(redis: RedisConnector) -> Self {
        Self {
            redis,
            prefix: DEFAULT_PREFIX.to_string(),
        }
    }

    /// Keys under `prefix` instead of the default prefix `lc-agent`.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The list holding `user`'s entries.
    pub fn key(&self, user: &str) -> String {
        format!("{}:user:{{{user}}}:memory", self.prefix)
    }

    async fn query<T: redis::FromRedisValue>(
        &self,
        what: &str,
        cmd: &redis::Cmd,
    ) -> MemoryResult<T> {
        self.redis
            .run(
                what,
                |mut conn| async move { cmd.query_async(&mut conn).await },
            )
            .await
            .map_err(|source| MemoryError::Redis { source })
    }
}

#[async_trait]
impl MemoryBackend for RedisMemoryBackend {
    async fn append(&self, entries: &[MemoryEntry]) -> MemoryResult<()> {
        let mut by_user: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for entry in entries {
            let json =
                serde_json::to_string(entry).map_err(|e| MemoryError::Invalid(e.to_string()))?;
            by_user.entry(&entry.user).or_default().push(json);
        }
        for (user, lines) in by_user {
            let mut cmd = redis::cmd("RPUSH");
            cmd.arg(self.key(user)).arg(lines);
            let _len: i64 = self.query("memory append", &cmd).await?;
        }
        Ok(())
    }

    async fn entries_from(&self, user: &str, from: usize) -> MemoryResult<Vec<MemoryEntry>> {
        let key = self.key(user);
        let mut cmd = redis::cmd("LRANGE");
        cmd.arg(&key).arg(from).arg(-1);
        let raw: Vec<String> = self.query("memory read", &cmd).await?;
        raw.iter()
            .enumerate()
            .map(|(i, r)| {
                serde_json::from_str(r).map_err(|e| MemoryError::Corrupt {
                    location: format!("{key} at {}", from + i),
                    reason: e.to_string(),
                })
            })
            .collect()
    }

    fn describe(&self) -> String {
        self.redis.describe().to_string()
    }
}
