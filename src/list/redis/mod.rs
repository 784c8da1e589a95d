//! [`RedisNetworkList`]: sessions in Redis, shared by several app servers.
//!
//! Keys, per user, under a configurable prefix (default `lc_agent`):
//!
//! | key | type | content |
//! | --- | --- | --- |
//! | `{prefix}:user:{user}:entries` | hash | id → network JSON |
//! | `{prefix}:user:{user}:info` | hash | id → small [`SessionInfo`] JSON (with the revision) |
//! | `{prefix}:user:{user}:timeline` | sorted set | id, scored by update time (µs since the epoch) |
//! | `{prefix}:user:{user}:rev:{id}` | string | the stored revision: what a save `WATCH`es |
//!
//! - **save** is one round trip on a connection of its own: `WATCH` the
//!   session's `rev` key, a tiny script that checks the stored revision,
//!   then `MULTI`, the four writes (and the optional TTL), `EXEC`, all sent
//!   together. A stale copy makes the script touch the watched key, so the
//!   `EXEC` applies nothing and the save fails with [`ListError::Conflict`].
//!   If another writer saved or deleted the same session in between, the
//!   `EXEC` applies nothing either and the save starts over, so no update is
//!   ever lost; writers of different sessions never disturb each other.
//!   The network JSON travels as a plain `HSET` argument: passing a
//!   megabyte through a Lua script costs Redis about a millisecond, four
//!   times a `SET` of the same size.
//! - **load** is one `HGET` on the entries hash.
//! - **list** is one script too: `ZREVRANGE` on the timeline, `HMGET` on the
//!   info hash — a page never fetches a network.
//! - **delete** removes the id from the three structures and its `rev` key
//!   in one `MULTI`/`EXEC`.
//!
//! # Connections
//!
//! Saves and loads — the operations that move whole networks — use lean
//! direct connections of their own (a crate-private RESP2 client), from a
//! small pool of idle ones (at most 8). The request is written from the
//! caller's own task with vectored writes that refer to the network JSON
//! instead of copying it, and a loaded network is read into one buffer of
//! its exact size. The reason is speed: Redis itself does a whole save
//! transaction in about 75 µs for a 95 KB network and 145 µs for 1 MB
//! (an `HGET`: 69 µs and 130 µs), but the `redis` crate's multiplexed
//! connection copies the payload into a packed command, grows its read
//! buffer step by step and hands every request to a driver task and back:
//! a 1 MB `SET` through it took about 1.1 ms on a multi-thread runtime.
//! A pooled connection goes back to the pool only after an exchange that
//! completed; one that met an I/O error, a malformed reply or the deadline
//! is dropped. The direct connection speaks RESP2 over TCP (`redis://`)
//! or a Unix socket (`redis+unix://`), with `AUTH` and `SELECT` as the URL
//! says; any other kind of address makes saves and loads fail with a
//! clear error.
//!
//! Every other operation goes through a [`ConnectionManager`], made on
//! first use.
//!
//! Every operation has a deadline (default 5 s): while Redis is down it
//! fails with [`ListError::Unavailable`] instead of hanging. After Redis
//! restarts, the next operation reconnects: an operation that meets a
//! dropped connection is retried once on a new one (a save or load also
//! forgets the idle connections, which are stale after a restart).

mod resp;

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::{Client, ErrorKind, RedisError, Script};
use async_trait::async_trait;
use uuid::Uuid;

use super::{
    stamp, validate_user, ListError, ListPage, ListQuery, ListResult, NetworkList, SessionInfo,
    DEFAULT_USER,
};
use crate::network::RunnableNetwork;
use resp::{Reply, Request};

/// The URL used unless the builder or `LC_AGENT_REDIS_URL` says otherwise.
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";
/// The key prefix used unless the builder says otherwise.
pub const DEFAULT_PREFIX: &str = "lc_agent";
/// The deadline of one operation unless the builder says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The revision check of a save, run between its `WATCH` and its `MULTI`.
/// KEYS: the session's rev key, the user's info hash; ARGV: id, expected
/// revision. Returns the stored revision when it is newer than expected
/// (after touching the watched rev key, which aborts the transaction
/// queued behind it), -2 after dropping a damaged rev key (the transaction
/// is aborted the same way and the save starts over), else -1. Only small values pass through Lua: the
/// network JSON travels in a plain `HSET`.
const CHECK_LUA: &str = r#"
local raw = redis.pcall('GET', KEYS[1])
if type(raw) == 'table' and raw.err then
  -- Not a string (damaged): drop it, which also aborts the queued EXEC;
  -- the retry falls back to the revision in the info hash.
  redis.call('DEL', KEYS[1])
  return -2
end
local stored = tonumber(raw)
if not stored then
  stored = 0
  local cur = redis.call('HGET', KEYS[2], ARGV[1])
  if cur then
    local ok, decoded = pcall(cjson.decode, cur)
    if ok and type(decoded) == 'table' and tonumber(decoded['revision']) then
      stored = tonumber(decoded['revision'])
    end
  end
end
if stored > tonumber(ARGV[2]) then
  redis.call('SET', KEYS[1], stored)
  return stored
end
return -1
"#;

/// How often a save starts over because another writer saved the same
/// session between its `WATCH` and its `EXEC`.
const SAVE_ATTEMPTS: usize = 32;

/// Idle direct connections kept for later saves and loads.
const IDLE_CONNECTIONS: usize = 8;

const LIST_LUA: &str = r#"
-- KEYS: info, timeline; ARGV: start, stop
local ids = redis.call('ZREVRANGE', KEYS[2], ARGV[1], ARGV[2])
local total = redis.call('ZCARD', KEYS[2])
local infos = {}
if #ids > 0 then infos = redis.call('HMGET', KEYS[1], unpack(ids)) end
return {total, ids, infos}
"#;

fn list_script() -> &'static Script {
    static S: OnceLock<Script> = OnceLock::new();
    S.get_or_init(|| Script::new(LIST_LUA))
}

/// The revision recorded in a session's info JSON.
fn revision_in(info: &str) -> Option<u64> {
    serde_json::from_str::<SessionInfo>(info)
        .ok()
        .map(|i| i.revision)
}

/// What one save writes.
struct SaveWrite<'a> {
    keys: [String; 3],
    rev_key: String,
    revision: u64,
    id: &'a str,
    expected: u64,
    json: &'a str,
    info_json: &'a str,
    score: i64,
    ttl_ms: i64,
}

impl<'a> SaveWrite<'a> {
    /// The whole save, sent in one write: `WATCH`, the revision check, and
    /// the transaction. A stale copy makes the check touch the watched
    /// key, so the `EXEC` behind it applies nothing. The network JSON is
    /// referenced, not copied.
    fn request(&'a self) -> Request<'a> {
        let [entries, info, timeline] = &self.keys;
        let mut round = Request::new();
        round.command(2).arg("WATCH").arg(&self.rev_key);
        round
            .command(7)
            .arg("EVAL")
            .arg(CHECK_LUA)
            .arg("2")
            .arg(&self.rev_key)
            .arg(info)
            .arg(self.id)
            .int(i64::try_from(self.expected).unwrap_or(i64::MAX));
        round.command(1).arg("MULTI");
        round
            .command(4)
            .arg("HSET")
            .arg(entries)
            .arg(self.id)
            .arg_ref(self.json.as_bytes());
        round
            .command(4)
            .arg("HSET")
            .arg(info)
            .arg(self.id)
            .arg_ref(self.info_json.as_bytes());
        round
            .command(4)
            .arg("ZADD")
            .arg(timeline)
            .int(self.score)
            .arg(self.id);
        round
            .command(3)
            .arg("SET")
            .arg(&self.rev_key)
            .int(i64::try_from(self.revision).unwrap_or(i64::MAX));
        if self.ttl_ms > 0 {
            for key in self.keys.iter().chain([&self.rev_key]) {
                round.command(3).arg("PEXPIRE").arg(key).int(self.ttl_ms);
            }
        }
        round.command(1).arg("EXEC");
        round
    }
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
    /// Idle direct connections for saves and loads, each used by one
    /// operation at a time (`WATCH` is per connection). Only connections
    /// whose last exchange completed come back here.
    idle: parking_lot::Mutex<Vec<resp::Connection>>,
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
                idle: parking_lot::Mutex::new(Vec::new()),
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

    /// The key holding a session's stored revision (watched by saves).
    pub fn rev_key(&self, user: &str, id: &str) -> String {
        format!("{}:user:{}:rev:{}", self.inner.prefix, user, id)
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
        self.within_deadline(what, async {
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
        })
        .await
    }

    /// Bounds an operation by the deadline and turns Redis failures into
    /// [`ListError::Unavailable`].
    async fn within_deadline<T>(
        &self,
        what: &str,
        attempt: impl Future<Output = Result<T, RedisError>>,
    ) -> ListResult<T> {
        let deadline = tokio::time::Instant::now() + self.inner.timeout;
        match tokio::time::timeout_at(deadline, attempt).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                let failed = if is_connection_error(&e) {
                    ""
                } else {
                    " failed"
                };
                Err(ListError::Unavailable {
                    reason: format!("redis at {} ({what}){failed}: {e}", self.inner.url),
                    source: Some(e),
                })
            }
            Err(_) => Err(ListError::Unavailable {
                reason: format!(
                    "redis at {} ({what}): no answer within {:?}",
                    self.inner.url, self.inner.timeout
                ),
                source: None,
            }),
        }
    }

    /// A direct connection only this caller uses until it gives it back:
    /// an idle one, or a new one when `fresh` or none is idle.
    async fn direct_connection(&self, fresh: bool) -> Result<resp::Connection, RedisError> {
        if !fresh {
            if let Some(conn) = self.inner.idle.lock().pop() {
                return Ok(conn);
            }
        }
        resp::Connection::connect(self.inner.client.get_connection_info()).await
    }

    /// Keeps a connection whose last exchange completed, for later.
    fn give_back(&self, conn: resp::Connection) {
        let mut idle = self.inner.idle.lock();
        if idle.len() < IDLE_CONNECTIONS {
            idle.push(conn);
        }
    }

    /// Runs `attempt` on a pooled (or new) direct connection; after a
    /// connection error, forgets the idle connections (after a restart
    /// they are all stale) and tries once more on a new connection.
    async fn direct<T, F, Fut>(&self, what: &str, attempt: F) -> Result<T, RedisError>
    where
        F: Fn(bool) -> Fut,
        Fut: Future<Output = Result<T, RedisError>>,
    {
        match attempt(false).await {
            Err(e) if is_connection_error(&e) => {
                tracing::debug!(error = %e, what, "redis connection error; retrying once on a new connection");
                self.inner.idle.lock().clear();
                attempt(true).await
            }
            other => other,
        }
    }

    /// The optimistic save transaction: `Ok(Ok(()))` when written,
    /// `Ok(Err(stored))` when the stored revision is newer than `expected`.
    async fn save_transaction(
        &self,
        round: &Request<'_>,
        id: &str,
        fresh: bool,
    ) -> Result<Result<(), u64>, RedisError> {
        let mut conn = self.direct_connection(fresh).await?;
        for _ in 0..SAVE_ATTEMPTS {
            // An I/O or protocol error drops `conn` with the error: its
            // state is unknown, it never goes back to the pool.
            let replies = conn.exchange(round).await?;
            if let Some(message) = replies.iter().find_map(Reply::first_error) {
                // Complete, but a WATCH or MULTI may be left open: drop it.
                return Err(resp::server_error(message));
            }
            // Replies: WATCH, EVAL, MULTI, QUEUED..., EXEC.
            let conflict = match replies.get(1) {
                Some(Reply::Int(n)) => *n,
                Some(other) => return Err(resp::unexpected("revision check", other)),
                None => return Err(resp::unexpected("revision check", &Reply::Nil)),
            };
            let exec = replies.last().unwrap_or(&Reply::Nil);
            if let Ok(stored) = u64::try_from(conflict) {
                self.give_back(conn);
                return Ok(Err(stored));
            }
            // `exec` is nil when the watched key changed: by our own check
            // (a damaged rev key was dropped) or by another writer: start
            // over.
            if let Reply::Array(_) = exec {
                self.give_back(conn);
                return Ok(Ok(()));
            }
            if *exec != Reply::Nil {
                return Err(resp::unexpected("EXEC", exec));
            }
            tracing::debug!(id, "concurrent save of this session; retrying");
        }
        self.give_back(conn);
        Err(RedisError::from((
            ErrorKind::TryAgain,
            "too many concurrent saves of this session; the save was not applied",
        )))
    }

    /// One `HGET` of a whole network on a direct connection.
    async fn load_attempt(
        &self,
        request: &Request<'_>,
        fresh: bool,
    ) -> Result<Option<Vec<u8>>, RedisError> {
        let mut conn = self.direct_connection(fresh).await?;
        let mut replies = conn.exchange(request).await?;
        // The exchange completed: the connection is in sync whatever the
        // reply says.
        self.give_back(conn);
        match replies.pop() {
            Some(Reply::Bulk(bytes)) => Ok(Some(bytes)),
            Some(Reply::Nil) => Ok(None),
            Some(Reply::Error(message)) => Err(resp::server_error(&message)),
            Some(other) => Err(resp::unexpected("HGET", &other)),
            None => Err(resp::unexpected("HGET", &Reply::Nil)),
        }
    }

    /// One field of one of this user's hashes.
    async fn hget<T: ::redis::FromRedisValue + Send>(
        &self,
        what: &str,
        hash: &str,
        id: Uuid,
    ) -> ListResult<Option<T>> {
        let key = self.key(&self.user, hash);
        let field = id.to_string();
        self.run(what, |mut conn| {
            let (key, field) = (key.clone(), field.clone());
            async move {
                ::redis::cmd("HGET")
                    .arg(key)
                    .arg(field)
                    .query_async(&mut conn)
                    .await
            }
        })
        .await
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
        let write = SaveWrite {
            rev_key: self.rev_key(&self.user, &id),
            revision: stamped.info.revision,
            keys,
            id: &id,
            expected: stamped.expected,
            json: &stamped.json,
            info_json: &info_json,
            score,
            ttl_ms: i64::try_from(ttl_ms).unwrap_or(i64::MAX),
        };
        let round = write.request();
        let expected = stamped.expected;
        let result = self
            .within_deadline(
                "save",
                self.direct("save", |fresh| self.save_transaction(&round, &id, fresh)),
            )
            .await;
        match result {
            Ok(Ok(())) => Ok(stamped.info),
            Ok(Err(found)) => {
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
        let info: Option<String> = self.hget("stored_revision", "info", id).await?;
        Ok(info.as_deref().and_then(revision_in))
    }

    async fn load(&self, id: Uuid) -> ListResult<RunnableNetwork> {
        let json = self.load_json(id).await?;
        RunnableNetwork::from_json(&json)
            .map_err(|e| self.corrupt(&self.user, id, "entries", e.to_string()))
    }

    async fn load_json(&self, id: Uuid) -> ListResult<String> {
        let key = self.key(&self.user, "entries");
        let field = id.to_string();
        let mut request = Request::new();
        request.command(3).arg("HGET").arg(&key).arg(&field);
        let raw = self
            .within_deadline(
                "load",
                self.direct("load", |fresh| self.load_attempt(&request, fresh)),
            )
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
        let rev_key = self.rev_key(&self.user, &field);
        let (a, b, c, _): (u64, u64, u64, u64) = self
            .run("delete", |mut conn| {
                let mut pipe = ::redis::pipe();
                pipe.atomic()
                    .hdel(&keys[0], &field)
                    .hdel(&keys[1], &field)
                    .zrem(&keys[2], &field)
                    .del(&rev_key);
                async move { pipe.query_async(&mut conn).await }
            })
            .await?;
        Ok(a + b + c > 0)
    }

    async fn list(&self, query: &ListQuery) -> ListResult<ListPage> {
        let user = query.user_or(&self.user)?;
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
