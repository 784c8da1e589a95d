//! [`RedisNetworkList`]: sessions in Redis — one server, a TLS server or a
//!
//! (The full description is on the [`RedisNetworkList`] docs.)

pub(crate) mod connection;
mod keys;
mod migrate;
mod save;

use std::sync::OnceLock;
use std::time::Duration;

use ::redis::{Script, Value};
use async_trait::async_trait;
use uuid::Uuid;

use super::{
    stamp, validate_user, ListError, ListPage, ListQuery, ListResult, NetworkList, SessionInfo,
    DEFAULT_USER,
};
use crate::network::RunnableNetwork;
pub use connection::{RedisConnection, RedisConnector, RedisConnectorBuilder};
use keys::UserKeys;
pub use migrate::Migration;

// The key prefix used unless the builder says otherwise.
use super::DEFAULT_PREFIX;

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

/// [`RedisNetworkList`]: sessions in Redis — one server, a TLS server or a
/// Redis Cluster — shared by several app servers.
///
/// ```text
///  RedisNetworkList (prefix, user, ttl)
///    ├─ keys.rs        <prefix>:user:{<user>}:entry:<id> | info | timeline | rev:<id>
///    ├─ save.rs        SET pending (JSON written into it) ▸ EVALSHA check-and-commit, one pipeline
///    ├─ migrate.rs     the legacy layout (no hash tag) ▸ the current one
///    └─ connection.rs  RedisConnector ▸ RedisConnection (server | cluster)
/// ```
///
/// Keys, per user, under a configurable prefix (default `lc_agent`); the
/// user is a hash tag, so all of one user's keys live in one Cluster slot:
///
/// | key | type | content |
/// | --- | --- | --- |
/// | `<prefix>:user:{<user>}:entry:<id>` | string | the network JSON |
/// | `<prefix>:user:{<user>}:info` | hash | id → small [`SessionInfo`] JSON (with the revision) |
/// | `<prefix>:user:{<user>}:timeline` | sorted set | id, scored by update time (µs since the epoch) |
/// | `<prefix>:user:{<user>}:rev:<id>` | string | the stored revision |
/// | `<prefix>:user:{<user>}:journal:<id>` | list | incremental saves since the entry (one record each) |
/// | `<prefix>:user:{<user>}:pending:<id>:<nonce>` | string | a network during its save (expires after a minute) |
///
/// - **save** is one round trip of two commands (`save.rs`): `SET` the
///   network JSON on a pending key of its own, then a script that checks
///   the stored revision and, atomically, `RENAME`s the pending key into
///   place and writes the info, the timeline and the revision. The network
///   is a `SET` argument, which Redis keeps without copying. A stale copy
///   fails with [`ListError::Conflict`], so no update is ever lost;
///   writers of different sessions never disturb each other.
/// - **incremental save**: a save of a network this list loaded or saved,
///   still at the stored revision, is one script that checks the revision
///   as above and appends one record of what changed to the session's
///   journal (one round trip, a few hundred bytes a turn); when the journal
///   would outgrow the entry (and 32 KiB), the save is a full one, which drops it.
/// - **load** is one round trip: `GET` of the entry and `LRANGE` of the
///   journal, applied on top (what a full save would give).
/// - **list** is one script: `ZREVRANGE` on the timeline, `HMGET` on the
///   info hash — a page never fetches a network.
/// - **delete** removes the entry and `rev` keys and the id from the info
///   hash and the timeline in one `MULTI`/`EXEC`.
/// - **TTL** (optional): a user's keys expire together, the TTL after the
///   latest save of any of their sessions.
///
/// Every operation goes through one [`RedisConnector`]: the `redis` crate's multiplexed connection (a
/// [`ConnectionManager`](::redis::aio::ConnectionManager)) or its Cluster
/// connection, with a deadline (default 5 s) and one retry after a dropped
/// connection. Clones of a list — and a `RedisStore` built from
/// [`RedisNetworkList::connector`] — share the connection.
///
/// # The key change (hash tags)
///
/// Before the hash tag the keys were `<prefix>:user:<user>:...`, with the
/// networks as fields of one hash `<prefix>:user:<user>:entries`; a
/// Cluster cannot run a save over them (`CROSSSLOT`). Data saved that way
/// is not read by this version: move it once with
/// [`RedisNetworkList::migrate_legacy_keys`] (the CLI: `lc-agent sessions
/// --redis URL migrate`), after every process runs this version.
///
/// # Speed
///
/// A load costs what a `GET` of the network JSON costs through the same
/// connection. A save costs a `SET` of the JSON, plus serializing the
/// network (straight into the `SET` command's buffer: no string in
/// between) and the commit script's writes (revision check, rename, info,
/// timeline, revision: about 20 µs of server time). `cargo bench --bench
/// sessions` measures them side by side with raw `SET`/`GET` of the same
/// bytes, interleaved, and with the floor of any checked save (`SET` plus
/// a one-command script). On a 2-core VM, where one loopback round trip
/// alone takes about 120 µs: load_json 88-99 % of `GET`, save 74-76 % of
/// `SET` at 100 KB and 81-84 % at 1 MB, the floor 94-98 %. The gap is the
/// price of refusing stale copies atomically; a save of a few hundred
/// microseconds is not what limits an agent whose turns take seconds. On
/// a Cluster the crate also copies each request once more (its routing
/// takes requests by value).
///
/// Sessions in Redis (see the docs above for keys and guarantees).
///
/// Clones share the connection.
///
/// ```no_run
/// use lc_agent::{ListQuery, NetworkList, RedisConnector, RedisNetworkList};
/// use std::time::Duration;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let redis = RedisConnector::builder()
///     .url("redis://127.0.0.1:6379")
///     .timeout(Duration::from_secs(2))
///     .build()?;
/// let sessions = RedisNetworkList::builder(redis)
///     .prefix("my_app")
///     .user("alice")
///     .build()?;
/// let page = sessions.list(&ListQuery::default()).await?;
/// for s in page.sessions {
///     println!("{} {} ({} nodes)", s.id, s.name, s.node_count);
/// }
///
/// // A Redis Cluster over TLS, trusting a private CA:
/// let cluster = RedisConnector::builder()
///     .cluster(["rediss://10.0.0.1:7000", "rediss://10.0.0.2:7000"])
///     .tls_root_certificates(std::fs::read("ca.pem")?)
///     .build()?;
/// let clustered = RedisNetworkList::builder(cluster).build()?;
/// # let _ = clustered;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisNetworkList {
    connector: RedisConnector,
    prefix: std::sync::Arc<str>,
    ttl: Option<Duration>,
    user: String,
    keys: UserKeys,
}

impl std::fmt::Debug for RedisNetworkList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisNetworkList")
            .field("target", &self.connector.describe())
            .field("prefix", &self.prefix)
            .field("user", &self.user)
            .finish()
    }
}

/// Configures a [`RedisNetworkList`] on a [`RedisConnector`] (which says
/// how Redis is reached: URL, Cluster, TLS, deadline).
#[derive(Debug, Clone)]
#[must_use]
pub struct RedisNetworkListBuilder {
    connector: RedisConnector,
    prefix: String,
    user: String,
    ttl: Option<Duration>,
}

impl RedisNetworkListBuilder {
    /// The key prefix (default `lc_agent`; no `{` or `}`).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The user (namespace) (default `default`).
    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.user = user.into();
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
        keys::check_prefix(&self.prefix)?;
        Ok(RedisNetworkList {
            connector: self.connector,
            keys: UserKeys::new(&self.prefix, &self.user),
            prefix: self.prefix.into(),
            ttl: self.ttl,
            user: self.user,
        })
    }
}

impl RedisNetworkList {
    /// Starts configuring a list on `connector` (clones of a connector
    /// share its connection, so lists of several prefixes can too).
    pub fn builder(connector: RedisConnector) -> RedisNetworkListBuilder {
        RedisNetworkListBuilder {
            connector,
            prefix: DEFAULT_PREFIX.to_string(),
            user: DEFAULT_USER.to_string(),
            ttl: None,
        }
    }

    /// The same store, working in another user's namespace (shares the
    /// connection).
    pub fn with_user(&self, user: impl Into<String>) -> ListResult<Self> {
        let user = user.into();
        validate_user(&user)?;
        Ok(Self {
            keys: UserKeys::new(&self.prefix, &user),
            user,
            ..self.clone()
        })
    }

    /// The same store and user, with this TTL (see the builder's
    /// [`ttl`](RedisNetworkListBuilder::ttl)); shares the connection.
    pub(crate) fn with_ttl(&self, ttl: Option<Duration>) -> Self {
        Self {
            ttl,
            ..self.clone()
        }
    }

    /// The connector (and connection) this list uses: share it with a
    /// `RedisStore`, or run commands of your own on it.
    pub fn connector(&self) -> &RedisConnector {
        &self.connector
    }

    /// The key of one of a user's structures (`info`, `timeline`).
    pub(crate) fn key(&self, user: &str, what: &str) -> String {
        UserKeys::named(&self.prefix, user, what)
    }

    /// Moves the sessions of every user that are still stored in the
    /// legacy key layout (without the hash tag) into the current one, and
    /// reports what it did: per user, one script moves each session (a
    /// session found in both layouts keeps the higher revision) and
    /// deletes the legacy keys. Idempotent; on a Cluster there is nothing
    /// to migrate (the legacy layout never worked there). See
    /// [`RedisNetworkList`].
    pub async fn migrate_legacy_keys(&self) -> ListResult<Migration> {
        migrate::migrate(self, &self.prefix).await
    }

    /// The bytes Redis uses for a session: `MEMORY USAGE` (every value
    /// counted, `SAMPLES 0`) of its network, journal and revision keys,
    /// plus its listing entry's length; `None` when there is no such
    /// session. One round trip.
    pub async fn memory_usage(&self, id: Uuid) -> ListResult<Option<u64>> {
        let field = id.to_string();
        let mut pipe = ::redis::pipe();
        for key in [
            self.keys.entry(&field),
            self.keys.journal(&field),
            self.keys.rev(&field),
        ] {
            pipe.cmd("MEMORY")
                .arg("USAGE")
                .arg(key)
                .arg("SAMPLES")
                .arg(0);
        }
        pipe.cmd("HSTRLEN").arg(&self.keys.info).arg(&field);
        let (entry, journal, rev, info): (Option<u64>, Option<u64>, Option<u64>, u64) = self
            .connector
            .run("memory_usage", |mut conn| {
                let pipe = &pipe;
                async move { pipe.query_async(&mut conn).await }
            })
            .await?;
        Ok(entry.map(|e| e + journal.unwrap_or(0) + rev.unwrap_or(0) + info))
    }

    /// A session's info entry that cannot be read.
    fn corrupt_info(&self, user: &str, id: Uuid, reason: impl Into<String>) -> ListError {
        ListError::Corrupt {
            location: format!("redis {} field {id}", self.key(user, "info")),
            id: Some(id),
            reason: reason.into(),
        }
    }

    /// A session's network that cannot be read.
    /// What names this list's copy of a session for incremental saves.
    fn store_of(&self, id: &str) -> String {
        format!(
            "redis {} {}",
            self.connector.describe(),
            self.keys.entry(id)
        )
    }

    /// A session as a full save writes it (entry and journal, fetched in
    /// one round trip), with the bytes of the entry and of the journal.
    async fn load_whole(&self, id: Uuid) -> ListResult<(String, (u64, u64))> {
        let field = id.to_string();
        let mut pipe = ::redis::pipe();
        pipe.cmd("GET").arg(self.keys.entry(&field));
        pipe.cmd("LRANGE")
            .arg(self.keys.journal(&field))
            .arg(0)
            .arg(-1);
        let (raw, journal): (Value, Vec<Vec<u8>>) = self
            .connector
            .run("load", |mut conn| {
                let pipe = &pipe;
                async move { pipe.query_async(&mut conn).await }
            })
            .await?;
        // The reply's own buffer becomes the string: no copy.
        let bytes = match raw {
            Value::BulkString(bytes) => bytes,
            Value::Nil => return Err(ListError::NotFound { id }),
            other => return Err(self.corrupt_entry(id, format!("not a string: {other:?}"))),
        };
        let text = String::from_utf8(bytes)
            .map_err(|e| self.corrupt_entry(id, format!("not UTF-8: {e}")))?;
        let snapshot_len = text.len() as u64;
        if journal.is_empty() {
            return Ok((text, (snapshot_len, 0)));
        }
        let lines = journal.concat();
        let revision = crate::list::info_from_json(text.as_bytes(), &self.user, chrono::Utc::now())
            .map_err(|r| self.corrupt_entry(id, r))?
            .revision;
        let found = crate::network::format::scan_journal(revision, &lines)
            .map_err(|r| self.corrupt_entry(id, r))?;
        let journal_len = found.valid_len as u64;
        if !found.changes() {
            return Ok((text, (snapshot_len, journal_len)));
        }
        let json = crate::network::format::materialize(&text, &lines, &found)
            .map_err(|r| self.corrupt_entry(id, r))?;
        Ok((json, (snapshot_len, journal_len)))
    }

    fn corrupt_entry(&self, id: Uuid, reason: impl Into<String>) -> ListError {
        ListError::Corrupt {
            location: format!("redis {}", self.keys.entry(&id.to_string())),
            id: Some(id),
            reason: reason.into(),
        }
    }
}

/// The delete: removes the session's keys and, when there was a session,
/// leaves its tombstone in the revision key (`deleted`, with the list's
/// TTL), so a copy still running elsewhere cannot save it again. KEYS:
/// entry, info, timeline, rev, journal. ARGV: id, TTL in ms (0: none).
/// Returns how many of the session's keys and fields were removed.
const DELETE_LUA: &str = r#"
redis.call('DEL', KEYS[5])
local n = redis.call('DEL', KEYS[1]) + redis.call('HDEL', KEYS[2], ARGV[1])
  + redis.call('ZREM', KEYS[3], ARGV[1])
if n > 0 then
  local ttl = tonumber(ARGV[2])
  if ttl > 0 then
    redis.call('SET', KEYS[4], 'deleted', 'PX', ttl)
  else
    redis.call('SET', KEYS[4], 'deleted')
  end
end
return n
"#;

fn delete_script() -> &'static ::redis::Script {
    static S: std::sync::OnceLock<::redis::Script> = std::sync::OnceLock::new();
    S.get_or_init(|| ::redis::Script::new(DELETE_LUA))
}

/// What a save writes: the full network (in its pending `SET`, with the
/// base it makes), or one journal record.
enum Write {
    Full(save::PendingSet, crate::network::format::base::SaveBase),
    Record(crate::network::format::JournalEntry),
    /// Taken by the save.
    None,
}

#[async_trait]
impl NetworkList for RedisNetworkList {
    fn user(&self) -> &str {
        &self.user
    }

    async fn save(&self, network: &RunnableNetwork) -> ListResult<SessionInfo> {
        let id = network.id().to_string();
        let store = self.store_of(&id);
        let mut full = false;
        loop {
            let expected = crate::list::revision_of(network);
            let mut stamped = stamp(network, &self.user, |net| {
                if !full && let Some(entry) = net.journal_entry(&store, expected)? {
                    let len = entry.stored_len() as usize;
                    return Ok((Write::Record(entry), len));
                }
                let (pending, len, base) = save::PendingSet::of(&self.keys, &id, net)?;
                Ok((Write::Full(pending, base), len))
            })?;
            let info_json =
                serde_json::to_string(&stamped.info).map_err(crate::NetworkError::from)?;
            let write = save::SaveWrite {
                keys: &self.keys,
                id: &id,
                expected: stamped.expected,
                revision: stamped.info.revision,
                info_json: &info_json,
                score: stamped.info.updated_at.timestamp_micros(),
                ttl_ms: self.ttl.map_or(0, |t| t.as_millis() as u64),
            };
            let (pipe, written) = match std::mem::replace(&mut stamped.written, Write::None) {
                Write::Full(pending, base) => (
                    write.pipeline(pending),
                    Write::Full(Default::default(), base),
                ),
                Write::Record(entry) => (write.append_pipeline(&entry.line), Write::Record(entry)),
                Write::None => {
                    stamped.restore(network);
                    return Err(ListError::Unavailable {
                        reason: "nothing to save".into(),
                        source: None,
                    });
                }
            };
            let result = self
                .connector
                .run("save", |mut conn| {
                    let pipe = &pipe;
                    async move { save::run(&mut conn, pipe).await }
                })
                .await;
            match result {
                Ok(save::Outcome::Saved) => {
                    match written {
                        Write::Full(_, base) => {
                            let len = stamped.info.bytes;
                            network.install_base(
                                base,
                                &store,
                                stamped.info.revision,
                                Some((len, 0)),
                            );
                        }
                        Write::Record(entry) => entry.written(network),
                        Write::None => {}
                    }
                    return Ok(stamped.info);
                }
                Ok(save::Outcome::NeedsFull) if !full => {
                    stamped.restore(network);
                    full = true;
                }
                Ok(save::Outcome::Deleted) => {
                    stamped.restore(network);
                    return Err(ListError::Deleted {
                        id: stamped.info.id,
                    });
                }
                Ok(save::Outcome::Conflict(found)) => {
                    stamped.restore(network);
                    return Err(ListError::Conflict {
                        id: stamped.info.id,
                        expected: stamped.expected,
                        found,
                    });
                }
                Ok(save::Outcome::NeedsFull) => {
                    stamped.restore(network);
                    return Err(ListError::Unavailable {
                        reason: "a full save was taken for an incremental one".into(),
                        source: None,
                    });
                }
                Err(e) => {
                    stamped.restore(network);
                    return Err(e);
                }
            }
        }
    }

    async fn stored_revision(&self, id: Uuid) -> ListResult<Option<u64>> {
        let mut get = ::redis::cmd("HGET");
        get.arg(&self.keys.info).arg(id.to_string());
        let info: Option<String> = self
            .connector
            .run("stored_revision", |mut conn| {
                let get = &get;
                async move { get.query_async(&mut conn).await }
            })
            .await?;
        Ok(info.as_deref().and_then(revision_in))
    }

    async fn load(&self, id: Uuid) -> ListResult<RunnableNetwork> {
        let (json, lens) = self.load_whole(id).await?;
        let net =
            RunnableNetwork::from_json(&json).map_err(|e| self.corrupt_entry(id, e.to_string()))?;
        let revision = crate::list::revision_of(&net);
        net.mark_loaded(&self.store_of(&id.to_string()), revision, lens.0, lens.1)?;
        Ok(net)
    }

    async fn load_json(&self, id: Uuid) -> ListResult<String> {
        Ok(self.load_whole(id).await?.0)
    }

    async fn delete(&self, id: Uuid) -> ListResult<bool> {
        let field = id.to_string();
        let keys = &self.keys;
        let mut call = ::redis::cmd("EVALSHA");
        call.arg(delete_script().get_hash())
            .arg(5)
            .arg(keys.entry(&field))
            .arg(&keys.info)
            .arg(&keys.timeline)
            .arg(keys.rev(&field))
            .arg(keys.journal(&field))
            .arg(&field)
            .arg(self.ttl.map_or(0, |t| t.as_millis() as u64));
        let removed: u64 = self
            .connector
            .run("delete", |mut conn| {
                let call = &call;
                async move {
                    match call.query_async(&mut conn).await {
                        Err(e)
                            if e.kind()
                                == ::redis::ErrorKind::Server(
                                    ::redis::ServerErrorKind::NoScript,
                                ) =>
                        {
                            delete_script().load_async(&mut conn).await?;
                            call.query_async(&mut conn).await
                        }
                        other => other,
                    }
                }
            })
            .await?;
        Ok(removed > 0)
    }

    async fn list(&self, query: &ListQuery) -> ListResult<ListPage> {
        let user = query.user_or(&self.user)?;
        let keys = UserKeys::new(&self.prefix, &user);
        if query.limit == 0 {
            let mut count = ::redis::cmd("ZCARD");
            count.arg(&keys.timeline);
            let total: usize = self
                .connector
                .run("list", |mut conn| {
                    let count = &count;
                    async move { count.query_async(&mut conn).await }
                })
                .await?;
            return Ok(ListPage {
                total,
                ..ListPage::default()
            });
        }
        let start = query.offset;
        let stop = query.offset.saturating_add(query.limit - 1);
        let (total, ids, infos): (usize, Vec<String>, Vec<Option<String>>) = self
            .connector
            .run("list", |mut conn| {
                let mut invocation = list_script().prepare_invoke();
                invocation
                    .key(&keys.info)
                    .key(&keys.timeline)
                    .arg(start)
                    .arg(stop);
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
            let Ok(uuid) = Uuid::parse_str(id) else {
                page.errors.push(ListError::Corrupt {
                    location: format!("redis {} member {id}", keys.timeline),
                    id: None,
                    reason: "not a session id".into(),
                });
                continue;
            };
            match info.map(|i| serde_json::from_str::<SessionInfo>(&i)) {
                Some(Ok(info)) => page.sessions.push(info),
                Some(Err(e)) => page
                    .errors
                    .push(self.corrupt_info(&user, uuid, e.to_string())),
                None => page.errors.push(self.corrupt_info(
                    &user,
                    uuid,
                    "listed in the timeline but has no info entry",
                )),
            }
        }
        Ok(page)
    }
}
