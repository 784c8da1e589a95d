//! A run's events in [`RedisRuns`]: a capped stream per run
//! (`<prefix>:run:<id>:events`, ids `0-<seq>`, `XADD MAXLEN ~` [`EVENTS_CAP`]),
//! appended by the server that runs it, read by any.

use ::redis::{cmd, Value};
use uuid::Uuid;

use super::queue::held_head;
use super::reply::{entries, field, store};
use super::{RedisRuns, EVENTS_CAP};
use crate::runs::event::{NumberedEvent, RunEvent};
use crate::runs::store::{Delivery, RunError, RunResult};

impl RedisRuns {
    pub(super) async fn add_events(&self, id: Uuid, events: &[NumberedEvent]) -> RunResult<()> {
        if events.is_empty() {
            return Ok(());
        }
        let key = self.events_key(id);
        let mut lines = Vec::with_capacity(events.len());
        for e in events {
            lines.push((
                format!("0-{}", e.seq),
                e.event.name(),
                serde_json::to_string(&e.event.data())
                    .map_err(|e| RunError::store("write a run's events", e))?,
            ));
        }
        self.redis
            .run("append the run's events", |mut conn| {
                let mut p = ::redis::pipe();
                for (seq, name, data) in &lines {
                    p.cmd("XADD")
                        .arg(&key)
                        .arg("MAXLEN")
                        .arg("~")
                        .arg(EVENTS_CAP)
                        .arg(seq)
                        .arg("event")
                        .arg(name)
                        .arg("data")
                        .arg(data)
                        .ignore();
                }
                async move { p.query_async::<()>(&mut conn).await }
            })
            .await
            .map_err(store)
    }

    pub(super) async fn read_events(
        &self,
        id: Uuid,
        after: u64,
        max: usize,
    ) -> RunResult<Vec<NumberedEvent>> {
        let key = self.events_key(id);
        let reply: Value = self
            .redis
            .run("read the run's events", |mut conn| {
                let c = cmd("XRANGE")
                    .arg(&key)
                    .arg(format!("0-{}", after.saturating_add(1)))
                    .arg("+")
                    .arg("COUNT")
                    .arg(max.max(1))
                    .clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        Ok(entries(reply)
            .into_iter()
            .filter_map(|(id, fields)| {
                let seq = id.strip_prefix("0-")?.parse().ok()?;
                let data = serde_json::from_str(field(&fields, "data")?).ok()?;
                let event = RunEvent::from_parts(field(&fields, "event")?, data).ok()?;
                Some(NumberedEvent { seq, event })
            })
            .take(max)
            .collect())
    }

    pub(super) async fn last_event(&self, id: Uuid) -> RunResult<u64> {
        let key = self.events_key(id);
        let reply: Value = self
            .redis
            .run("read the run's last event", |mut conn| {
                let c = cmd("XREVRANGE")
                    .arg(&key)
                    .arg("+")
                    .arg("-")
                    .arg("COUNT")
                    .arg(1)
                    .clone();
                async move { c.query_async(&mut conn).await }
            })
            .await
            .map_err(store)?;
        Ok(entries(reply)
            .first()
            .and_then(|(id, _)| id.strip_prefix("0-")?.parse().ok())
            .unwrap_or(0))
    }

    /// [`RunStore::append_held`](crate::runs::store::RunStore::append_held):
    /// one script checks that `consumer` holds the run's queue entry, then
    /// adds the events not there yet.
    pub(super) async fn add_held_events(
        &self,
        consumer: &str,
        delivery: &Delivery,
        events: &[NumberedEvent],
    ) -> RunResult<()> {
        if events.is_empty() {
            return Ok(());
        }
        let (queue, group, key) = (
            self.queue_key(),
            self.group(),
            self.events_key(delivery.run),
        );
        let mut c = cmd("EVAL");
        c.arg(APPEND_HELD)
            .arg(2)
            .arg(&queue)
            .arg(&key)
            .arg(&group)
            .arg(consumer)
            .arg(&delivery.tag)
            .arg(EVENTS_CAP);
        for e in events {
            let data = serde_json::to_string(&e.event.data())
                .map_err(|e| RunError::store("write a run's events", e))?;
            c.arg(format!("0-{}", e.seq)).arg(e.event.name()).arg(data);
        }
        let held: i64 = self
            .redis
            .run("append the run's events", |mut conn| {
                let c = c.clone();
                async move { c.query_async::<i64>(&mut conn).await }
            })
            .await
            .map_err(store)?;
        if held == 0 {
            return Err(RunError::Lost(delivery.run));
        }
        Ok(())
    }
}

/// Appends events for the holder of the run's queue entry (KEYS: the
/// queue, the run's events; ARGV: the group, the consumer, the entry, the
/// cap, then id, name, data of each event): 0 when another server holds
/// the entry; an event whose id is there already is left (a retry).
const APPEND_HELD: &str = concat!(
    held_head!(),
    r"
for i = 5, #ARGV, 3 do
  redis.pcall('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], ARGV[i], 'event', ARGV[i + 1], 'data', ARGV[i + 2])
end
return 1
"
);
