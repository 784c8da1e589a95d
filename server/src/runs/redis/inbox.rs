//! A session's inbox in [`RedisRuns`]: messages sent while its run goes
//! on (`<prefix>:runs:inbox:<session>`, a list of JSON), kept only while
//! that run holds the session and is not closing (one script), read by
//! whichever server runs it, taken out once its saved graph holds them.

use ::redis::cmd;
use lc_agent::SteerMessage;
use uuid::Uuid;

use super::reply::store;
use super::{RedisRuns, INPUT_TTL_SECS};
use crate::runs::store::{RunError, RunResult, Steer};

/// A message for a session's active run (KEYS: the session's slot, the
/// run's record, the inbox; ARGV: the run, the message's JSON, the
/// inbox's seconds to live): kept only while the run holds the session,
/// is queued or running, and is not closing its inbox.
const STEER: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 'ending' end
local status = redis.call('HGET', KEYS[2], 'status')
if status == 'waiting' then return 'waiting' end
if status ~= 'queued' and status ~= 'running' then return 'ending' end
if redis.call('HGET', KEYS[2], 'closing') then return 'ending' end
redis.call('RPUSH', KEYS[3], ARGV[2])
redis.call('EXPIRE', KEYS[3], ARGV[3])
return 'kept'
";

/// A run about to end (KEYS: the inbox, the run's record): 0 when a
/// message waits, else it closes (no message is kept for it) and 1.
const CLOSE_INBOX: &str = r"
if redis.call('LLEN', KEYS[1]) > 0 then return 0 end
redis.call('HSET', KEYS[2], 'closing', 1)
return 1
";

impl RedisRuns {
    fn inbox_key(&self, session: Uuid) -> String {
        format!("{}:runs:inbox:{session}", self.prefix)
    }

    pub(super) async fn keep_message(
        &self,
        session: Uuid,
        run: Uuid,
        message: &SteerMessage,
    ) -> RunResult<Steer> {
        let json = serde_json::to_string(message)
            .map_err(|e| RunError::store("write a message of the inbox", e))?;
        let (active, record, inbox) = (
            self.active_key(session),
            self.run_key(run),
            self.inbox_key(session),
        );
        let reply: String = self
            .redis
            .run("keep a message in the inbox", |mut conn| {
                let c = cmd("EVAL")
                    .arg(STEER)
                    .arg(3)
                    .arg(&active)
                    .arg(&record)
                    .arg(&inbox)
                    .arg(run.to_string())
                    .arg(&json)
                    .arg(INPUT_TTL_SECS)
                    .clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        Ok(match reply.as_str() {
            "kept" => Steer::Kept,
            "waiting" => Steer::Waiting,
            _ => Steer::Ending,
        })
    }

    pub(super) async fn read_inbox(&self, session: Uuid) -> RunResult<Vec<SteerMessage>> {
        let key = self.inbox_key(session);
        let values: Vec<String> = self
            .redis
            .run("read the inbox", |mut conn| {
                let c = cmd("LRANGE").arg(&key).arg(0).arg(-1).clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        Ok(values
            .iter()
            .filter_map(|v| serde_json::from_str(v).ok())
            .collect())
    }

    pub(super) async fn drop_messages(&self, session: Uuid, ids: &[Uuid]) -> RunResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let key = self.inbox_key(session);
        let values: Vec<String> = self
            .redis
            .run("read the inbox", |mut conn| {
                let c = cmd("LRANGE").arg(&key).arg(0).arg(-1).clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        // Each by its exact text: a message pushed meanwhile stays.
        let gone: Vec<String> = values
            .into_iter()
            .filter(|v| serde_json::from_str::<SteerMessage>(v).is_ok_and(|m| ids.contains(&m.id)))
            .collect();
        if gone.is_empty() {
            return Ok(());
        }
        self.redis
            .run("take messages out of the inbox", |mut conn| {
                let mut p = ::redis::pipe();
                for v in &gone {
                    p.cmd("LREM").arg(&key).arg(1).arg(v).ignore();
                }
                async move { p.query_async::<()>(&mut conn).await }
            })
            .await
            .map_err(store)
    }

    pub(super) async fn close_messages(&self, session: Uuid, run: Uuid) -> RunResult<bool> {
        let (inbox, record) = (self.inbox_key(session), self.run_key(run));
        let closed: i64 = self
            .redis
            .run("close the inbox", |mut conn| {
                let c = cmd("EVAL")
                    .arg(CLOSE_INBOX)
                    .arg(2)
                    .arg(&inbox)
                    .arg(&record)
                    .clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        Ok(closed == 1)
    }

    pub(super) async fn open_messages(&self, run: Uuid) -> RunResult<()> {
        let key = self.run_key(run);
        self.redis
            .run("open the inbox", |mut conn| {
                let c = cmd("HDEL").arg(&key).arg("closing").clone();
                async move { c.query_async::<()>(&mut conn).await }
            })
            .await
            .map_err(store)
    }
}
