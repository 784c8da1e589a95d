//! The run queue of [`RedisRuns`]: a Redis Stream with one consumer group
//! (`<prefix>:workers`), each server a consumer. A server takes a run
//! (`XREADGROUP`), renews its lease (`XCLAIM ... JUSTID`), acknowledges it
//! (`XACK` + `XDEL`); a run left to expire is taken over (`XAUTOCLAIM`).
//! A server that stops leaves the group (`XGROUP DELCONSUMER`, after giving
//! back what it still held), and the survivors remove the consumers of
//! servers that died (nothing pending, silent past a bound).

use std::time::Duration;

use ::redis::{cmd, Value};
use uuid::Uuid;

use super::reply::{entries, field, items, store, text};
use super::RedisRuns;
use crate::runs::store::{Delivery, RunError, RunResult};

impl RedisRuns {
    /// The consumer group's `lag`: entries of the queue no server has
    /// read yet (`XINFO GROUPS`, Redis 7).
    pub(super) async fn lag(&self) -> RunResult<Option<u64>> {
        let (queue, group) = (self.queue_key(), self.group());
        let reply = self
            .redis
            .run("read the queue's depth", |mut conn| {
                let c = cmd("XINFO").arg("GROUPS").arg(&queue).clone();
                async move { c.query_async::<Value>(&mut conn).await }
            })
            .await;
        let Ok(reply) = reply else {
            // No queue yet: nothing waits.
            return Ok(Some(0));
        };
        for info in items(reply) {
            let fields: Vec<Value> = items(info);
            let pairs: Vec<(String, String)> = fields
                .chunks(2)
                .filter_map(|kv| Some((text(kv.first()?)?, text(kv.get(1)?)?)))
                .collect();
            if field(&pairs, "name") == Some(group.as_str()) {
                return Ok(field(&pairs, "lag").and_then(|l| l.parse().ok()));
            }
        }
        Ok(Some(0))
    }

    pub(super) async fn push(&self, id: Uuid) -> RunResult<()> {
        let queue = self.queue_key();
        let id = id.to_string();
        self.redis
            .run("queue the run", |mut conn| {
                let c = cmd("XADD").arg(&queue).arg("*").arg("run").arg(&id).clone();
                async move { c.query_async::<Value>(&mut conn).await }
            })
            .await
            .map_err(store)?;
        Ok(())
    }

    pub(super) async fn take(&self, consumer: &str, wait: Duration) -> RunResult<Option<Delivery>> {
        let (queue, group) = (self.queue_key(), self.group());
        let block = wait.as_millis().clamp(1, 2000) as u64;
        let read = || {
            self.blocking.run("take a queued run", |mut conn| {
                let c = cmd("XREADGROUP")
                    .arg("GROUP")
                    .arg(&group)
                    .arg(consumer)
                    .arg("COUNT")
                    .arg(1)
                    .arg("BLOCK")
                    .arg(block)
                    .arg("STREAMS")
                    .arg(&queue)
                    .arg(">")
                    .clone();
                async move { c.query_async::<Value>(&mut conn).await }
            })
        };
        let reply = match read().await {
            Ok(reply) => reply,
            Err(e) if e.to_string().contains("NOGROUP") => {
                self.ensure_group().await?;
                read().await.map_err(store)?
            }
            Err(e) => return Err(store(e)),
        };
        // [[queue, [[id, [run, <id>]]]]]
        let streams = items(reply);
        for stream in streams {
            let mut parts = items(stream).into_iter();
            let _name = parts.next();
            for (tag, fields) in entries(parts.next().unwrap_or(Value::Nil)) {
                if let Some(run) = field(&fields, "run").and_then(|r| r.parse().ok()) {
                    return Ok(Some(Delivery { run, tag }));
                }
            }
        }
        Ok(None)
    }

    pub(super) async fn take_over(
        &self,
        consumer: &str,
        idle: Duration,
    ) -> RunResult<Option<Delivery>> {
        let (queue, group) = (self.queue_key(), self.group());
        let ms = idle.as_millis() as u64;
        let reply: Value = match self
            .redis
            .run("take over a run", |mut conn| {
                let c = cmd("XAUTOCLAIM")
                    .arg(&queue)
                    .arg(&group)
                    .arg(consumer)
                    .arg(ms)
                    .arg("0-0")
                    .arg("COUNT")
                    .arg(1)
                    .clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
        {
            Ok(reply) => reply,
            Err(e) if e.to_string().contains("NOGROUP") => {
                self.ensure_group().await?;
                return Ok(None);
            }
            Err(e) => return Err(store(e)),
        };
        // [next, [[id, [run, <id>]]], [deleted ids]]
        let mut parts = items(reply).into_iter();
        let _next = parts.next();
        for (tag, fields) in entries(parts.next().unwrap_or(Value::Nil)) {
            if let Some(run) = field(&fields, "run").and_then(|r| r.parse().ok()) {
                return Ok(Some(Delivery { run, tag }));
            }
        }
        Ok(None)
    }

    pub(super) async fn extend(&self, consumer: &str, delivery: &Delivery) -> RunResult<()> {
        let (queue, group) = (self.queue_key(), self.group());
        let held: i64 = self
            .redis
            .run("renew the run's lease", |mut conn| {
                let c = cmd("EVAL")
                    .arg(RENEW_HELD)
                    .arg(1)
                    .arg(&queue)
                    .arg(&group)
                    .arg(consumer)
                    .arg(&delivery.tag)
                    .clone();
                async move { c.query_async::<i64>(&mut conn).await }
            })
            .await
            .map_err(store)?;
        if held == 0 {
            return Err(RunError::Lost(delivery.run));
        }
        Ok(())
    }

    pub(super) async fn done_with(&self, delivery: &Delivery) -> RunResult<()> {
        let (queue, group) = (self.queue_key(), self.group());
        self.redis
            .run("acknowledge the run", |mut conn| {
                let mut p = ::redis::pipe();
                p.cmd("XACK")
                    .arg(&queue)
                    .arg(&group)
                    .arg(&delivery.tag)
                    .ignore();
                p.cmd("XDEL").arg(&queue).arg(&delivery.tag).ignore();
                async move { p.query_async::<()>(&mut conn).await }
            })
            .await
            .map_err(store)
    }

    /// This server leaves the group (a shutdown): the entries it still
    /// holds are queued again for another server, then its consumer is
    /// deleted. False when it held entries it could not give back (then it
    /// stays, and the survivors take them over after the lease).
    pub(super) async fn leave_group(&self, consumer: &str) -> RunResult<bool> {
        let (queue, group) = (self.queue_key(), self.group());
        let held: Value = match self
            .redis
            .run("list the runs this server holds", |mut conn| {
                let c = cmd("XPENDING")
                    .arg(&queue)
                    .arg(&group)
                    .arg("-")
                    .arg("+")
                    .arg(1000)
                    .arg(consumer)
                    .clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
        {
            Ok(held) => held,
            // No queue or no group: nothing to leave.
            Err(e) if e.to_string().contains("NOGROUP") => return Ok(true),
            Err(e) => return Err(store(e)),
        };
        // [[id, consumer, idle, deliveries], ...]
        let tags: Vec<String> = items(held)
            .into_iter()
            .filter_map(|entry| text(items(entry).first()?))
            .collect();
        for tag in tags {
            // The entry's run (its fields), taken to this consumer.
            let claimed: Value = self
                .redis
                .run("give back a run", |mut conn| {
                    let c = cmd("XCLAIM")
                        .arg(&queue)
                        .arg(&group)
                        .arg(consumer)
                        .arg(0)
                        .arg(&tag)
                        .clone();
                    async move { c.query_async(&mut conn).await }
                })
                .await
                .map_err(store)?;
            let run = entries(claimed)
                .into_iter()
                .find_map(|(_, fields)| field(&fields, "run").and_then(|r| r.parse().ok()));
            if let Some(run) = run {
                self.push(run).await?;
            }
            self.done_with(&Delivery {
                run: run.unwrap_or_else(Uuid::nil),
                tag,
            })
            .await?;
        }
        self.redis
            .run("leave the run queue's group", |mut conn| {
                let c = cmd("XGROUP")
                    .arg("DELCONSUMER")
                    .arg(&queue)
                    .arg(&group)
                    .arg(consumer)
                    .clone();
                async move { c.query_async::<Value>(&mut conn).await }
            })
            .await
            .map_err(store)?;
        Ok(true)
    }

    /// Deletes the consumers of servers that died: nothing pending (what
    /// they held was taken over) and silent for longer than `dead_after`.
    /// A live server idle that long is deleted too, harmlessly: its next
    /// read makes its consumer again. Returns how many were deleted.
    pub(super) async fn prune_group(
        &self,
        consumer: &str,
        dead_after: Duration,
    ) -> RunResult<usize> {
        let (queue, group) = (self.queue_key(), self.group());
        let Ok(reply) = self
            .redis
            .run("list the run queue's consumers", |mut conn| {
                let c = cmd("XINFO")
                    .arg("CONSUMERS")
                    .arg(&queue)
                    .arg(&group)
                    .clone();
                async move { c.query_async::<Value>(&mut conn).await }
            })
            .await
        else {
            // No queue or no group yet: nobody to remove.
            return Ok(0);
        };
        let bound = dead_after.as_millis() as u64;
        let mut removed = 0;
        for info in items(reply) {
            let pairs: Vec<(String, String)> = items(info)
                .chunks(2)
                .filter_map(|kv| Some((text(kv.first()?)?, text(kv.get(1)?)?)))
                .collect();
            let name = field(&pairs, "name").unwrap_or_default().to_string();
            let pending: u64 = field(&pairs, "pending")
                .and_then(|p| p.parse().ok())
                .unwrap_or(1);
            let idle: u64 = field(&pairs, "idle")
                .and_then(|i| i.parse().ok())
                .unwrap_or(0);
            if name.is_empty() || name == consumer || pending > 0 || idle <= bound {
                continue;
            }
            // Deleted only if still nothing pending (it may have taken a
            // run since the listing).
            let gone: i64 = self
                .redis
                .run("remove a dead server from the run queue", |mut conn| {
                    let c = cmd("EVAL")
                        .arg(DELETE_IDLE)
                        .arg(1)
                        .arg(&queue)
                        .arg(&group)
                        .arg(&name)
                        .clone();
                    async move { c.query_async::<i64>(&mut conn).await }
                })
                .await
                .map_err(store)?;
            if gone > 0 {
                tracing::info!(consumer = %name, idle_ms = idle, "removed a stopped server from the run queue");
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// Deletes a consumer (KEYS: the queue; ARGV: the group, the consumer)
/// if it holds nothing: 1 when deleted.
const DELETE_IDLE: &str = r"
local held = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if #held > 0 then return 0 end
redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
return 1
";

/// The head of the scripts that act only for the holder of a queue entry
/// (KEYS[1]: the queue; ARGV: the group, the consumer, the entry): stops
/// with 0 unless the consumer holds the entry.
macro_rules! held_head {
    () => {
        r"
local held = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if #held == 0 or held[1][2] ~= ARGV[2] then return 0 end
"
    };
}
pub(super) use held_head;

/// Renews a lease (`XCLAIM ... JUSTID`: idle time back to 0) only for the
/// consumer that holds the entry: 1, else 0 (another server took it over).
const RENEW_HELD: &str = concat!(
    held_head!(),
    "redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')\nreturn 1\n"
);
