//! [`RedisNetworkList`]: sessions in Redis, shared by several app servers.
//!
//! Keys, per user, under a configurable prefix (default `lc_agent`):
//!
//! | key | type | content |
//! | --- | --- | --- |
//! | `{prefix}:user:{user}:entries` | hash | id → network JSON |
//! | `{prefix}:user:{user}:info` | hash | id → small [`SessionInfo`] JSON (with the revision) |
//! | `{prefix}:user:{user}:timeline` | sorted set | id, scored by update time (µs since the epoch) |
//!
//! - **save** is one Lua script (one round trip, atomic on the server): it
//!   reads the stored revision from the info hash, refuses a stale copy with
//!   [`ListError::Conflict`], and writes the three keys (and the optional
//!   TTL) together.
//! - **list** is one script too: `ZREVRANGE` on the timeline, `HMGET` on the
//!   info hash — a page never fetches a network.
//! - **delete** removes the id from the three keys in one `MULTI`/`EXEC`.
//!
//! The connection is a [`ConnectionManager`], made on first use. Every
//! operation has a deadline (default 5 s): while Redis is down it fails with
//! [`ListError::Unavailable`] instead of hanging. After Redis restarts, the
//! next operation reconnects (an operation that meets a dropped connection
//! is retried once on the new one).

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::{Client, RedisError, Script};
use async_trait::async_trait;
use uuid::Uuid;

use super::{
    stamp, validate_user, ListError, ListPage, ListQuery, ListResult, NetworkList, SessionInfo,
    DEFAULT_USER,
};
use crate::network::RunnableNetwork;

/// The URL used unless the builder or `LC_AGENT_REDIS_URL` says otherwise.
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";
/// The key prefix used unless the builder says otherwise.
pub const DEFAULT_PREFIX: &str = "lc_agent";
/// The deadline of one operation unless the builder says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

const SAVE_LUA: &str = r#"
-- KEYS: entries, info, timeline
-- ARGV: id, expected revision, network json, info json, score, ttl ms
local cur = redis.call('HGET', KEYS[2], ARGV[1])
local stored = 0
if cur then
  local ok, decoded = pcall(cjson.decode, cur)
  if ok and type(decoded) == 'table' and tonumber(decoded['revision']) then
    stored = tonumber(decoded['revision'])
  end
end
if cur and stored > tonumber(ARGV[2]) then
  return {0, stored}
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
local ttl = tonumber(ARGV[6])
if ttl > 0 then
  for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ttl) end
end
return {1, stored}
"#;

const LIST_LUA: &str = r#"
-- KEYS: info, timeline; ARGV: start, stop
local ids = redis.call('ZREVRANGE', KEYS[2], ARGV[1], ARGV[2])
local total = redis.call('ZCARD', KEYS[2])
local infos = {}
if #ids > 0 then infos = redis.call('HMGET', KEYS[1], unpack(ids)) end
return {total, ids, infos}
"#;

fn save_script() -> &'static Script {
    static S: OnceLock<Script> = OnceLock::new();
    S.get_or_init(|| Script::new(SAVE_LUA))
}

fn list_script() -> &'static Script {
    static S: OnceLock<Script> = OnceLock::new();
    S.get_or_init(|| Script::new(LIST_LUA))
}

/// Sessions in Redis (see the [module docs](self) for keys and guarantees).
///
/// Clones share the connection.
///
/// ```no_run
/// use lc_agent::list::{ListQuery, NetworkList, RedisNetworkList};
/// use std::time::Duration;
///
/// # async fn demo() -> Result<(), lc_agent::list::ListError> {
/// let sessions = RedisNetworkList::builder()
///     .url("redis://127.0.0.1:6379")
///     .prefix("my_app")
///     .user("alice")
///     .timeout(Duration::from_secs(2))
///     .build()?;
/// let page = sessions.list(&ListQuery::default()).await?;
/// for s in page.sessions {
///     println!("{} {} ({} nodes)", s.id, s.name, s.node_count);
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisNetworkList {
    inner: Arc<Inner>,
    user: String,
}

struct Inner {
    client: Client,
    url: String,
    prefix: String,
    timeout: Duration,
    ttl: Option<Duration>,
    conn: tokio::sync::Mutex<Option<ConnectionManager>>,
}

impl std::fmt::Debug for RedisNetworkList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisNetworkList")
            .field("url", &self.inner.url)
            .field("prefix", &self.inner.prefix)
            .field("user", &self.user)
            .finish()
    }
}

/// Configures a [`RedisNetworkList`].
#[derive(Debug, Clone)]
#[must_use]
pub struct RedisNetworkListBuilder {
    url: Option<String>,
    prefix: String,
    user: String,
    timeout: Duration,
    ttl: Option<Duration>,
}

impl RedisNetworkListBuilder {
    /// The Redis URL (default: `LC_AGENT_REDIS_URL`, else
    /// [`DEFAULT_REDIS_URL`]).
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// The key prefix (default [`DEFAULT_PREFIX`]).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The user (namespace) (default [`DEFAULT_USER`]).
    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.user = user.into();
        self
    }

    /// The deadline of one operation, connecting included (default
    /// [`DEFAULT_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Expire a user's sessions this long after their latest save.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Checks the configuration; connects on first use.
    pub fn build(self) -> ListResult<RedisNetworkList> {
        validate_user(&self.user)?;
        let url = match self.url {
            Some(u) => u,
            None => std::env::var("LC_AGENT_REDIS_URL")
                .ok()
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| DEFAULT_REDIS_URL.to_string()),
        };
        let client = Client::open(url.as_str())
            .map_err(|e| ListError::Config(format!("redis url `{url}`: {e}")))?;
        Ok(RedisNetworkList {
            inner: Arc::new(Inner {
                client,
                url,
                prefix: self.prefix,
                timeout: self.timeout,
                ttl: self.ttl,
                conn: tokio::sync::Mutex::new(None),
            }),
            user: self.user,
        })
    }
}

fn is_connection_error(e: &RedisError) -> bool {
    e.is_connection_dropped() || e.is_io_error() || e.is_connection_refusal() || e.is_timeout()
}

impl RedisNetworkList {
    /// Starts configuring a list.
    pub fn builder() -> RedisNetworkListBuilder {
        RedisNetworkListBuilder {
            url: None,
            prefix: DEFAULT_PREFIX.to_string(),
            user: DEFAULT_USER.to_string(),
            timeout: DEFAULT_TIMEOUT,
            ttl: None,
        }
    }

    /// The same store, working in another user's namespace (shares the
    /// connection).
    pub fn with_user(&self, user: impl Into<String>) -> ListResult<Self> {
        let user = user.into();
        validate_user(&user)?;
        Ok(Self {
            inner: self.inner.clone(),
            user,
        })
    }

    /// The key of one of a user's structures (`entries`, `info`, `timeline`).
    pub fn key(&self, user: &str, what: &str) -> String {
        format!("{}:user:{}:{}", self.inner.prefix, user, what)
    }

    async fn connection(&self) -> Result<ConnectionManager, RedisError> {
        let mut slot = self.inner.conn.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(self.inner.timeout)
            .set_response_timeout(self.inner.timeout)
            .set_number_of_retries(1)
            .set_max_delay(100);
        let c = ConnectionManager::new_with_config(self.inner.client.clone(), config).await?;
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Runs one operation within the deadline; a dropped connection is
    /// retried once (the manager reconnects meanwhile).
    async fn run<T, F, Fut>(&self, what: &str, op: F) -> ListResult<T>
    where
        F: Fn(ConnectionManager) -> Fut + Send,
        Fut: Future<Output = Result<T, RedisError>> + Send,
        T: Send,
    {
        let deadline = tokio::time::Instant::now() + self.inner.timeout;
        let attempt = async {
            let mut last = None;
            for _ in 0..2 {
                let result = match self.connection().await {
                    Ok(conn) => op(conn).await,
                    Err(e) => Err(e),
                };
                match result {
                    Ok(v) => return Ok(v),
                    Err(e) if is_connection_error(&e) => {
                        tracing::debug!(error = %e, what, "redis connection error; retrying once");
                        last = Some(e);
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(last.unwrap_or_else(|| {
                RedisError::from((::redis::ErrorKind::IoError, "no connection"))
            }))
        };
        match tokio::time::timeout_at(deadline, attempt).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) if is_connection_error(&e) => Err(ListError::Unavailable(format!(
                "redis at {} ({what}): {e}",
                self.inner.url
            ))),
            Ok(Err(e)) => Err(ListError::Unavailable(format!(
                "redis at {} ({what}) failed: {e}",
                self.inner.url
            ))),
            Err(_) => Err(ListError::Unavailable(format!(
                "redis at {} ({what}): no answer within {:?}",
                self.inner.url, self.inner.timeout
            ))),
        }
    }

    fn corrupt(&self, user: &str, id: Uuid, what: &str, reason: impl Into<String>) -> ListError {
        ListError::Corrupt {
            location: format!("redis {} field {id}", self.key(user, what)),
            id: Some(id),
            reason: reason.into(),
        }
    }
}

#[async_trait]
impl NetworkList for RedisNetworkList {
    fn user(&self) -> &str {
        &self.user
    }

    async fn save(&self, network: &RunnableNetwork) -> ListResult<SessionInfo> {
        let stamped = stamp(network, &self.user)?;
        let id = stamped.info.id.to_string();
        let keys = [
            self.key(&self.user, "entries"),
            self.key(&self.user, "info"),
            self.key(&self.user, "timeline"),
        ];
        let info_json = serde_json::to_string(&stamped.info).map_err(crate::NetworkError::from)?;
        let score = stamped.info.updated_at.timestamp_micros();
        let ttl_ms = self.inner.ttl.map_or(0, |t| t.as_millis() as u64);
        let expected = stamped.expected;
        let json = &stamped.json;
        let result = self
            .run("save", |mut conn| {
                let mut invocation = save_script().prepare_invoke();
                invocation
                    .key(&keys[0])
                    .key(&keys[1])
                    .key(&keys[2])
                    .arg(&id)
                    .arg(expected)
                    .arg(json.as_str())
                    .arg(&info_json)
                    .arg(score)
                    .arg(ttl_ms);
                async move { invocation.invoke_async::<(i64, u64)>(&mut conn).await }
            })
            .await;
        match result {
            Ok((1, _)) => Ok(stamped.info),
            Ok((_, found)) => {
                stamped.restore(network);
                Err(ListError::Conflict {
                    id: stamped.info.id,
                    expected,
                    found,
                })
            }
            Err(e) => {
                stamped.restore(network);
                Err(e)
            }
        }
    }

    async fn stored_revision(&self, id: Uuid) -> ListResult<Option<u64>> {
        let key = self.key(&self.user, "info");
        let field = id.to_string();
        let raw: Option<String> = self
            .run("stored_revision", |mut conn| {
                let (key, field) = (key.clone(), field.clone());
                async move {
                    ::redis::cmd("HGET")
                        .arg(key)
                        .arg(field)
                        .query_async(&mut conn)
                        .await
                }
            })
            .await?;
        Ok(raw
            .and_then(|r| serde_json::from_str::<SessionInfo>(&r).ok())
            .map(|i| i.revision))
    }

    async fn load(&self, id: Uuid) -> ListResult<RunnableNetwork> {
        let json = self.load_json(id).await?;
        RunnableNetwork::from_json(&json)
            .map_err(|e| self.corrupt(&self.user, id, "entries", e.to_string()))
    }

    async fn load_json(&self, id: Uuid) -> ListResult<String> {
        let key = self.key(&self.user, "entries");
        let field = id.to_string();
        let raw: Option<Vec<u8>> = self
            .run("load", |mut conn| {
                let (key, field) = (key.clone(), field.clone());
                async move {
                    ::redis::cmd("HGET")
                        .arg(key)
                        .arg(field)
                        .query_async(&mut conn)
                        .await
                }
            })
            .await?;
        let raw = raw.ok_or(ListError::NotFound { id })?;
        String::from_utf8(raw)
            .map_err(|e| self.corrupt(&self.user, id, "entries", format!("not UTF-8: {e}")))
    }

    async fn delete(&self, id: Uuid) -> ListResult<bool> {
        let keys = [
            self.key(&self.user, "entries"),
            self.key(&self.user, "info"),
            self.key(&self.user, "timeline"),
        ];
        let field = id.to_string();
        let (a, b, c): (u64, u64, u64) = self
            .run("delete", |mut conn| {
                let mut pipe = ::redis::pipe();
                pipe.atomic()
                    .hdel(&keys[0], &field)
                    .hdel(&keys[1], &field)
                    .zrem(&keys[2], &field);
                async move { pipe.query_async(&mut conn).await }
            })
            .await?;
        Ok(a + b + c > 0)
    }

    async fn list(&self, query: &ListQuery) -> ListResult<ListPage> {
        let user = match &query.user {
            Some(u) => {
                validate_user(u)?;
                u.clone()
            }
            None => self.user.clone(),
        };
        if query.limit == 0 {
            let key = self.key(&user, "timeline");
            let total: usize = self
                .run("list", |mut conn| {
                    let key = key.clone();
                    async move { ::redis::cmd("ZCARD").arg(key).query_async(&mut conn).await }
                })
                .await?;
            return Ok(ListPage {
                total,
                ..ListPage::default()
            });
        }
        let keys = [self.key(&user, "info"), self.key(&user, "timeline")];
        let start = query.offset;
        let stop = query.offset.saturating_add(query.limit - 1);
        let (total, ids, infos): (usize, Vec<String>, Vec<Option<String>>) = self
            .run("list", |mut conn| {
                let mut invocation = list_script().prepare_invoke();
                invocation.key(&keys[0]).key(&keys[1]).arg(start).arg(stop);
                async move { invocation.invoke_async(&mut conn).await }
            })
            .await?;
        let mut page = ListPage {
            total,
            ..ListPage::default()
        };
        for (id, info) in ids
            .iter()
            .zip(infos.into_iter().chain(std::iter::repeat(None)))
        {
            let parsed = Uuid::parse_str(id);
            let Ok(uuid) = parsed else {
                page.errors.push(ListError::Corrupt {
                    location: format!("redis {} member {id}", keys[1]),
                    id: None,
                    reason: "not a session id".into(),
                });
                continue;
            };
            match info.map(|i| serde_json::from_str::<SessionInfo>(&i)) {
                Some(Ok(info)) => page.sessions.push(info),
                Some(Err(e)) => page
                    .errors
                    .push(self.corrupt(&user, uuid, "info", e.to_string())),
                None => page.errors.push(self.corrupt(
                    &user,
                    uuid,
                    "info",
                    "listed in the timeline but has no info entry",
                )),
            }
        }
        Ok(page)
    }
}
