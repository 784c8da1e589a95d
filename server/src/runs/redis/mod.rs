//! [`RedisRuns`]: runs of a deployment in Redis, shared by every server on
//! it — records, a capped event stream per run, and the run queue: a
//! Redis Stream with one consumer group, leases renewed while a server
//! works and taken over (`XAUTOCLAIM`) when it stops renewing.
//!
//! ```text
//!  <prefix>:run:<id>              hash     json (the record), status, prepared, cancel
//!  <prefix>:run:<id>:events       stream   ids 0-<seq>: event, data   (XADD MAXLEN ~ cap)
//!  <prefix>:run:<id>:asks         hash     request id -> its JSON: the requests for input its server holds
//!  <prefix>:run:<id>:answers      list     answers given through another server, for the holder to take
//!  <prefix>:runs:active:<session> string   the session's active run (SET NX: one at a time)
//!  <prefix>:runs:session:<session> zset    run ids by creation time
//!  <prefix>:runs:user:<user>      zset     run ids by creation time
//!  <prefix>:runs:busy:<user>      set      the user's queued and running runs (per-user limit)
//!  <prefix>:runs:key:<user>:<key> string   the run of an idempotency key (EX ttl)
//!  <prefix>:runs:queue            stream   run: <id>; group <prefix>:workers
//!  <prefix>:runs:inbox:<session>  list     messages sent while its run goes on (inbox.rs)
//! ```
//!
//! A new run's record is written first; then one script takes the
//! session's slot (`SET` unless held) and queues the run (`XADD`), so a
//! server that dies between two steps never leaves a held session without
//! a queued run (a server with room takes the run in that same step). A
//! server takes a run with `XREADGROUP ... >` (a connection of its own,
//! blocking at most a second), renews its lease with `XCLAIM ... JUSTID`
//! (idle time back to 0) while it runs it, and `XACK`s and `XDEL`s the
//! entry when the run ends or waits. An entry idle longer than the lease
//! belongs to a server that died: `XAUTOCLAIM` gives it to another, which
//! resumes the session from its last checkpoint.

use std::time::Duration;

use ::redis::{cmd, Value};
use async_trait::async_trait;
use lc_agent::{ListError, RedisConnector, SteerMessage};
use uuid::Uuid;

use super::event::NumberedEvent;
use super::record::{Run, RunStatus};
use super::store::{Delivery, RunError, RunResult, RunStore, Steer};
use reply::{store, text};

mod events;
mod inbox;
mod queue;
mod reply;

/// How long a run's listed requests for input and answers are kept at
/// most (the holder takes them off sooner; this outlives any run limit).
const INPUT_TTL_SECS: u64 = 86_400;

/// The longest event stream kept per run (older events are trimmed).
pub(crate) const EVENTS_CAP: usize = 10_000;

/// Runs in Redis (see the module's documentation).
#[derive(Debug, Clone)]
pub struct RedisRuns {
    redis: RedisConnector,
    /// A connection of its own for the blocking queue read.
    blocking: RedisConnector,
    prefix: String,
}

const TRANSITION: &str = r"
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return false end
local prepared = redis.call('HGET', KEYS[1], 'prepared')
for i = 3, #ARGV do
  if ARGV[i] == status then
    if ARGV[1] == 'running' and not prepared then return 'unprepared' end
    redis.call('HSET', KEYS[1], 'status', ARGV[1])
    if ARGV[1] == 'queued' then
      redis.call('XADD', KEYS[2], '*', 'run', ARGV[2])
    end
    return {redis.call('HGET', KEYS[1], 'json'), prepared or ''}
  end
end
return ''
";

/// A run leaving `running` (KEYS: record, events, the session's slot, the
/// user's busy set; ARGV: json, status, id, seconds kept, "1" when final).
const SETTLE: &str = r"
redis.call('HSET', KEYS[1], 'json', ARGV[1], 'status', ARGV[2])
redis.call('SREM', KEYS[4], ARGV[3])
if ARGV[5] == '1' then
  redis.call('EXPIRE', KEYS[1], ARGV[4])
  redis.call('EXPIRE', KEYS[2], ARGV[4])
  if redis.call('GET', KEYS[3]) == ARGV[3] then redis.call('DEL', KEYS[3]) end
end
return 1
";

/// The head of [`RESERVE`] and [`RESERVE_TAKE`]: the session's slot,
/// the user's count and the run's queue entry, together (KEYS: the slot,
/// the queue, the user's runs; ARGV: the run, the user's limit). Returns
/// the holder when the slot is taken, 0 when the user has too many runs.
macro_rules! reserve_head {
    () => {
        r"
local holder = redis.call('GET', KEYS[1])
if holder then return holder end
if redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('XADD', KEYS[2], '*', 'run', ARGV[1])
"
    };
}

/// The session's slot, the user's count and the run's queue entry (see
/// `reserve_head`).
const RESERVE: &str = concat!(reserve_head!(), "return false\n");

/// [`RESERVE`], then the oldest queued run for a consumer with room
/// (KEYS as [`RESERVE`], then the run's record; ARGV as [`RESERVE`], then
/// the group and the consumer): the holder when the slot is taken, 0 when
/// the user has too many runs, else `{entry id, run}` of the run taken
/// (this one: its status is `running` now) or nothing.
const RESERVE_TAKE: &str = concat!(
    reserve_head!(),
    r"local ok, got = pcall(redis.call, 'XREADGROUP', 'GROUP', ARGV[3], ARGV[4], 'COUNT', 1, 'STREAMS', KEYS[2], '>')
if not ok or not got or not got[1] then return false end
local entry = got[1][2][1]
if not entry then return false end
local run = entry[2][2]
if run == ARGV[1] then redis.call('HSET', KEYS[4], 'status', 'running') end
return {entry[1], run}
"
);

impl RedisRuns {
    /// Runs under `prefix` on the Redis of `redis`; `url` opens the
    /// connection the queue blocks on.
    pub fn new(redis: RedisConnector, url: &str, prefix: &str) -> RunResult<Self> {
        let blocking = RedisConnector::builder()
            .url(url)
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(store)?;
        Ok(Self {
            redis,
            blocking,
            prefix: prefix.to_string(),
        })
    }

    fn run_key(&self, id: Uuid) -> String {
        format!("{}:run:{id}", self.prefix)
    }

    fn events_key(&self, id: Uuid) -> String {
        format!("{}:run:{id}:events", self.prefix)
    }

    /// Runs `write` on `key`, then gives the key [`INPUT_TTL_SECS`] to live.
    async fn expiring(&self, what: &str, key: &str, write: ::redis::Cmd) -> RunResult<()> {
        let mut pipe = ::redis::pipe();
        pipe.add_command(write)
            .ignore()
            .cmd("EXPIRE")
            .arg(key)
            .arg(INPUT_TTL_SECS)
            .ignore();
        self.redis
            .run(what, |mut conn| {
                let pipe = pipe.clone();
                async move { pipe.query_async::<()>(&mut conn).await }
            })
            .await
            .map_err(store)
    }

    fn asks_key(&self, id: Uuid) -> String {
        format!("{}:run:{id}:asks", self.prefix)
    }

    fn answers_key(&self, id: Uuid) -> String {
        format!("{}:run:{id}:answers", self.prefix)
    }

    fn active_key(&self, session: Uuid) -> String {
        format!("{}:runs:active:{session}", self.prefix)
    }

    fn session_key(&self, session: Uuid) -> String {
        format!("{}:runs:session:{session}", self.prefix)
    }

    fn user_key(&self, user: &str) -> String {
        format!("{}:runs:user:{user}", self.prefix)
    }

    fn busy_key(&self, user: &str) -> String {
        format!("{}:runs:busy:{user}", self.prefix)
    }

    fn queue_key(&self) -> String {
        format!("{}:runs:queue", self.prefix)
    }

    fn group(&self) -> String {
        format!("{}:workers", self.prefix)
    }

    fn record(json: &str, status: Option<&str>) -> RunResult<Run> {
        let mut run: Run =
            serde_json::from_str(json).map_err(|e| RunError::store("read a run record", e))?;
        if let Some(status) = status.and_then(RunStatus::parse) {
            run.status = status;
        }
        Ok(run)
    }

    fn json(run: &Run) -> RunResult<String> {
        serde_json::to_string(run).map_err(|e| RunError::store("write a run record", e))
    }

    async fn ensure_group(&self) -> RunResult<()> {
        let (queue, group) = (self.queue_key(), self.group());
        let made: Result<(), ListError> = self
            .redis
            .run("create the run queue", |mut conn| {
                let c = cmd("XGROUP")
                    .arg("CREATE")
                    .arg(&queue)
                    .arg(&group)
                    .arg("0")
                    .arg("MKSTREAM")
                    .clone();
                async move {
                    match c.query_async::<Value>(&mut conn).await {
                        Ok(_) => Ok(()),
                        Err(e) if e.to_string().contains("BUSYGROUP") => Ok(()),
                        Err(e) => Err(e),
                    }
                }
            })
            .await;
        made.map_err(store)
    }

    async fn runs_of(&self, key: String, limit: usize) -> RunResult<Vec<Run>> {
        let ids: Vec<String> = self
            .redis
            .run("list runs", |mut conn| {
                let c = cmd("ZREVRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(limit.saturating_sub(1) as i64 * 2 + 1)
                    .clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        let mut runs = Vec::new();
        let mut gone = Vec::new();
        for id in ids {
            let Ok(uuid) = id.parse::<Uuid>() else {
                continue;
            };
            match self.get(uuid).await? {
                Some(run) if runs.len() < limit => runs.push(run),
                Some(_) => {}
                None => gone.push(id),
            }
        }
        if !gone.is_empty() {
            // Expired records: drop them from the index too.
            let _ = self
                .redis
                .run("forget expired runs", |mut conn| {
                    let c = cmd("ZREM").arg(&key).arg(&gone).clone();
                    async move { c.query_async::<Value>(&mut conn).await }
                })
                .await;
        }
        Ok(runs)
    }
}

impl RedisRuns {
    /// [`RunStore::create`]; with a consumer, [`RunStore::create_taking`].
    async fn reserve(
        &self,
        run: &Run,
        per_user: usize,
        consumer: Option<&str>,
    ) -> RunResult<Option<Delivery>> {
        let busy = self.busy_key(&run.user);
        // The record first, so that a session's active run always has one.
        let json = Self::json(run)?;
        let score = run.created_at.timestamp_micros();
        let id = run.id.to_string();
        let (key, session, user) = (
            self.run_key(run.id),
            self.session_key(run.session),
            self.user_key(&run.user),
        );
        self.redis
            .run("write the run", |mut conn| {
                let mut p = ::redis::pipe();
                p.cmd("HSET")
                    .arg(&key)
                    .arg("json")
                    .arg(&json)
                    .arg("status")
                    .arg(run.status.as_str())
                    .ignore();
                p.cmd("ZADD").arg(&session).arg(score).arg(&id).ignore();
                p.cmd("ZADD").arg(&user).arg(score).arg(&id).ignore();
                async move { p.query_async::<()>(&mut conn).await }
            })
            .await
            .map_err(store)?;
        // The session's slot, the user's count and the queue entry in one
        // step: only runs that hold their session count against the user.
        let (active, queue) = (self.active_key(run.session), self.queue_key());
        let limit = per_user.to_string();
        let (group, record) = (self.group(), self.run_key(run.id));
        let reply: Value = self
            .redis
            .run("reserve the session and queue the run", |mut conn| {
                let mut c = cmd("EVAL");
                let script = if consumer.is_some() {
                    RESERVE_TAKE
                } else {
                    RESERVE
                };
                c.arg(script)
                    .arg(if consumer.is_some() { 4 } else { 3 })
                    .arg(&active)
                    .arg(&queue)
                    .arg(&busy);
                if consumer.is_some() {
                    c.arg(&record);
                }
                c.arg(&id).arg(&limit);
                if let Some(consumer) = consumer {
                    c.arg(&group).arg(consumer);
                }
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        if let Value::Array(parts) = &reply {
            let tag = parts.first().and_then(text);
            let taken = parts.get(1).and_then(text).and_then(|r| r.parse().ok());
            return Ok(tag.zip(taken).map(|(tag, run)| Delivery { run, tag }));
        }
        let refused = match reply {
            Value::Nil => None,
            Value::Int(_) => Some(RunError::UserFull {
                user: run.user.clone(),
                limit: per_user,
            }),
            other => {
                let holder = text(&other).unwrap_or_default();
                Some(match holder.parse() {
                    Ok(holder) => RunError::Busy {
                        session: run.session,
                        run: holder,
                    },
                    Err(e) => {
                        RunError::store(format!("read the active run of {active} (`{holder}`)"), e)
                    }
                })
            }
        };
        if let Some(refused) = refused {
            let _ = self.abandon(run).await;
            return Err(refused);
        }
        Ok(None)
    }
}

#[async_trait]
impl RunStore for RedisRuns {
    async fn create(&self, run: &Run, per_user: usize) -> RunResult<()> {
        self.reserve(run, per_user, None).await.map(|_| ())
    }

    async fn create_taking(
        &self,
        run: &Run,
        per_user: usize,
        consumer: &str,
    ) -> RunResult<Option<Delivery>> {
        self.reserve(run, per_user, Some(consumer)).await
    }
    async fn prepared(&self, id: Uuid) -> RunResult<()> {
        let key = self.run_key(id);
        self.redis
            .run("mark the run prepared", |mut conn| {
                let c = cmd("HSET")
                    .arg(&key)
                    .arg("prepared")
                    .arg(chrono::Utc::now().timestamp_micros())
                    .clone();
                async move { c.query_async::<()>(&mut conn).await }
            })
            .await
            .map_err(store)
    }

    async fn abandon(&self, run: &Run) -> RunResult<()> {
        let (key, active, busy, session, user) = (
            self.run_key(run.id),
            self.active_key(run.session),
            self.busy_key(&run.user),
            self.session_key(run.session),
            self.user_key(&run.user),
        );
        let id = run.id.to_string();
        self.redis
            .run("forget the run", |mut conn| {
                let mut p = ::redis::pipe();
                p.cmd("DEL").arg(&key).ignore();
                p.cmd("SREM").arg(&busy).arg(&id).ignore();
                p.cmd("ZREM").arg(&session).arg(&id).ignore();
                p.cmd("ZREM").arg(&user).arg(&id).ignore();
                let (active, id) = (active.clone(), id.clone());
                async move {
                    p.query_async::<()>(&mut conn).await?;
                    // Frees the session only if this run holds it.
                    let holder: Option<String> =
                        cmd("GET").arg(&active).query_async(&mut conn).await?;
                    if holder.as_deref() == Some(id.as_str()) {
                        cmd("DEL").arg(&active).query_async::<()>(&mut conn).await?;
                    }
                    Ok(())
                }
            })
            .await
            .map_err(store)
    }

    async fn get(&self, id: Uuid) -> RunResult<Option<Run>> {
        let key = self.run_key(id);
        let (json, status, prepared): (Option<String>, Option<String>, Option<String>) = self
            .redis
            .run("read the run", |mut conn| {
                let c = cmd("HMGET")
                    .arg(&key)
                    .arg("json")
                    .arg("status")
                    .arg("prepared")
                    .clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        match json {
            Some(json) => {
                let mut run = Self::record(&json, status.as_deref())?;
                run.prepared |= prepared.is_some();
                if let Some(at) = prepared.and_then(|p| p.parse::<i64>().ok()) {
                    run.prepared_at = chrono::DateTime::from_timestamp_micros(at);
                }
                Ok(Some(run))
            }
            None => Ok(None),
        }
    }

    async fn active_of(&self, session: Uuid) -> RunResult<Option<Uuid>> {
        let key = self.active_key(session);
        let holder: Option<String> = self
            .redis
            .run("read the session's run", |mut conn| {
                let c = cmd("GET").arg(&key).clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        Ok(holder.and_then(|h| h.parse().ok()))
    }

    async fn of_session(&self, session: Uuid, limit: usize) -> RunResult<Vec<Run>> {
        self.runs_of(self.session_key(session), limit).await
    }

    async fn of_user(&self, user: &str, limit: usize) -> RunResult<Vec<Run>> {
        self.runs_of(self.user_key(user), limit).await
    }

    async fn put(&self, run: &Run) -> RunResult<()> {
        let json = Self::json(run)?;
        let key = self.run_key(run.id);
        self.redis
            .run("write the run", |mut conn| {
                let mut c = cmd("HSET");
                c.arg(&key)
                    .arg("json")
                    .arg(&json)
                    .arg("status")
                    .arg(run.status.as_str());
                if let Some(at) = run.prepared_at.filter(|_| run.prepared) {
                    // A run taken as it was created is marked prepared here.
                    c.arg("prepared").arg(at.timestamp_micros());
                }
                async move { c.query_async::<()>(&mut conn).await }
            })
            .await
            .map_err(store)
    }

    async fn transition(
        &self,
        id: Uuid,
        from: &[RunStatus],
        to: RunStatus,
    ) -> RunResult<Option<Run>> {
        let (key, queue) = (self.run_key(id), self.queue_key());
        let reply: Value = self
            .redis
            .run("change the run's status", |mut conn| {
                let mut c = cmd("EVAL");
                c.arg(TRANSITION)
                    .arg(2)
                    .arg(&key)
                    .arg(&queue)
                    .arg(to.as_str())
                    .arg(id.to_string());
                for s in from {
                    c.arg(s.as_str());
                }
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        match reply {
            Value::Nil => Err(RunError::NotFound(id)),
            ref v if text(v).as_deref() == Some("unprepared") => Err(RunError::NotPrepared(id)),
            Value::Array(parts) => {
                let json = parts.first().and_then(text).unwrap_or_default();
                let mut run = Self::record(&json, Some(to.as_str()))?;
                if let Some(at) = parts
                    .get(1)
                    .and_then(text)
                    .and_then(|p| p.parse::<i64>().ok())
                {
                    run.prepared = true;
                    run.prepared_at = chrono::DateTime::from_timestamp_micros(at);
                }
                Ok(Some(run))
            }
            _ => Ok(None),
        }
    }

    async fn settle(&self, run: &Run, keep: Duration) -> RunResult<()> {
        let json = Self::json(run)?;
        let (key, events, active, busy) = (
            self.run_key(run.id),
            self.events_key(run.id),
            self.active_key(run.session),
            self.busy_key(&run.user),
        );
        let id = run.id.to_string();
        let secs = keep.as_secs().max(1);
        let last = if run.status.is_final() { "1" } else { "" };
        // One script: a client that sees the run over finds its session free.
        self.redis
            .run("settle the run", |mut conn| {
                let c = cmd("EVAL")
                    .arg(SETTLE)
                    .arg(4)
                    .arg(&key)
                    .arg(&events)
                    .arg(&active)
                    .arg(&busy)
                    .arg(&json)
                    .arg(run.status.as_str())
                    .arg(&id)
                    .arg(secs)
                    .arg(last)
                    .clone();
                async move { c.query_async::<Value>(&mut conn).await }
            })
            .await
            .map_err(store)?;
        Ok(())
    }

    async fn request_cancel(&self, id: Uuid) -> RunResult<()> {
        let key = self.run_key(id);
        self.redis
            .run("cancel the run", |mut conn| {
                let c = cmd("HSET").arg(&key).arg("cancel").arg(1).clone();
                async move { c.query_async::<()>(&mut conn).await }
            })
            .await
            .map_err(store)
    }

    async fn cancel_requested(&self, id: Uuid) -> RunResult<bool> {
        let key = self.run_key(id);
        let flag: Option<String> = self
            .redis
            .run("read the run's cancel", |mut conn| {
                let c = cmd("HGET").arg(&key).arg("cancel").clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        Ok(flag.is_some())
    }

    fn shares_input(&self) -> bool {
        true
    }

    async fn put_ask(&self, run: Uuid, input: Uuid, ask: &serde_json::Value) -> RunResult<()> {
        let key = self.asks_key(run);
        let write = cmd("HSET")
            .arg(&key)
            .arg(input.to_string())
            .arg(ask.to_string())
            .clone();
        self.expiring("list a request for input", &key, write).await
    }

    async fn drop_ask(&self, run: Uuid, input: Option<Uuid>) -> RunResult<()> {
        // One key a command: the keys of a run need not share a slot.
        let commands = match input {
            Some(input) => vec![cmd("HDEL")
                .arg(self.asks_key(run))
                .arg(input.to_string())
                .clone()],
            None => vec![
                cmd("DEL").arg(self.asks_key(run)).clone(),
                cmd("DEL").arg(self.answers_key(run)).clone(),
            ],
        };
        for c in commands {
            self.redis
                .run("take a request for input off the list", |mut conn| {
                    let c = c.clone();
                    async move { c.query_async::<()>(&mut conn).await }
                })
                .await
                .map_err(store)?;
        }
        Ok(())
    }

    async fn asks(&self, run: Uuid) -> RunResult<Vec<serde_json::Value>> {
        let key = self.asks_key(run);
        let values: Vec<String> = self
            .redis
            .run("read the requests for input", |mut conn| {
                let c = cmd("HVALS").arg(&key).clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        Ok(values
            .iter()
            .filter_map(|v| serde_json::from_str(v).ok())
            .collect())
    }

    async fn post_answer(&self, run: Uuid, answer: &serde_json::Value) -> RunResult<()> {
        let key = self.answers_key(run);
        let write = cmd("RPUSH").arg(&key).arg(answer.to_string()).clone();
        self.expiring("leave an answer for input", &key, write)
            .await
    }

    async fn take_answers(&self, run: Uuid) -> RunResult<Vec<serde_json::Value>> {
        let key = self.answers_key(run);
        let values: Option<Vec<String>> = self
            .redis
            .run("take the answers for input", |mut conn| {
                let c = cmd("LPOP").arg(&key).arg(100).clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        Ok(values
            .unwrap_or_default()
            .iter()
            .filter_map(|v| serde_json::from_str(v).ok())
            .collect())
    }

    async fn steer(&self, session: Uuid, run: Uuid, message: &SteerMessage) -> RunResult<Steer> {
        self.keep_message(session, run, message).await
    }

    async fn inbox(&self, session: Uuid) -> RunResult<Vec<SteerMessage>> {
        self.read_inbox(session).await
    }

    async fn inbox_drop(&self, session: Uuid, ids: &[Uuid]) -> RunResult<()> {
        self.drop_messages(session, ids).await
    }

    async fn close_inbox(&self, session: Uuid, run: Uuid) -> RunResult<bool> {
        self.close_messages(session, run).await
    }

    async fn open_inbox(&self, run: Uuid) -> RunResult<()> {
        self.open_messages(run).await
    }

    async fn append(&self, id: Uuid, events: &[NumberedEvent]) -> RunResult<()> {
        self.add_events(id, events).await
    }

    async fn events(&self, id: Uuid, after: u64, max: usize) -> RunResult<Vec<NumberedEvent>> {
        self.read_events(id, after, max).await
    }

    async fn last_seq(&self, id: Uuid) -> RunResult<u64> {
        self.last_event(id).await
    }

    async fn remember(
        &self,
        user: &str,
        key: &str,
        run: Uuid,
        ttl: Duration,
    ) -> RunResult<Option<Uuid>> {
        let slot = format!("{}:runs:key:{user}:{key}", self.prefix);
        let id = run.to_string();
        let ms = ttl.as_millis().max(1) as u64;
        let held: Option<String> = self
            .redis
            .run("remember the request", |mut conn| {
                let c = cmd("SET")
                    .arg(&slot)
                    .arg(&id)
                    .arg("NX")
                    .arg("GET")
                    .arg("PX")
                    .arg(ms)
                    .clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        Ok(held.and_then(|h| h.parse().ok()))
    }

    async fn forget(&self, user: &str, key: &str) -> RunResult<()> {
        let slot = format!("{}:runs:key:{user}:{key}", self.prefix);
        self.redis
            .run("forget the request", |mut conn| {
                let c = cmd("DEL").arg(&slot).clone();
                async move { c.query_async::<()>(&mut conn).await }
            })
            .await
            .map_err(store)
    }

    async fn queue_depth(&self) -> RunResult<Option<u64>> {
        self.lag().await
    }

    async fn enqueue(&self, id: Uuid) -> RunResult<()> {
        self.push(id).await
    }

    async fn claim(&self, consumer: &str, wait: Duration) -> RunResult<Option<Delivery>> {
        self.take(consumer, wait).await
    }

    async fn reclaim(&self, consumer: &str, idle: Duration) -> RunResult<Option<Delivery>> {
        self.take_over(consumer, idle).await
    }

    async fn renew(&self, consumer: &str, delivery: &Delivery) -> RunResult<()> {
        self.extend(consumer, delivery).await
    }

    async fn ack(&self, delivery: &Delivery) -> RunResult<()> {
        self.done_with(delivery).await
    }

    async fn append_held(
        &self,
        consumer: &str,
        delivery: &Delivery,
        events: &[NumberedEvent],
    ) -> RunResult<()> {
        self.add_held_events(consumer, delivery, events).await
    }

    async fn leave(&self, consumer: &str) -> RunResult<bool> {
        self.leave_group(consumer).await
    }

    async fn prune(&self, consumer: &str, dead_after: Duration) -> RunResult<usize> {
        self.prune_group(consumer, dead_after).await
    }
}
