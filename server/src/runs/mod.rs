//! Durable runs: a run of a session is a record in a [`RunStore`], queued,
//! taken by any server of the deployment, checkpointed after every node,
//! and its events are numbered and kept, so a client reattaches, a cancel
//! reaches whichever server runs it, and a run whose server died is
//! finished by another from its last checkpoint.
//!
//! ```text
//!  Runs::submit(user, target, Input) ─▶ reserve the session (409 names its run; 429 per user)
//!     ▸ load ▸ apply the input (message | decisions | continue | completion) ▸ save ▸ queue
//!     (decisions for a waiting run: the same run, queued again)
//!     (a server with room takes the run in the same step as it queues it,
//!      and runs it as soon as its input is saved: no wait on the dispatcher)
//!  dispatcher (one per server): up to --max-runs at a time
//!     reclaim (a lease left to expire: XAUTOCLAIM) or claim (XREADGROUP) ─▶ worker.rs execute:
//!     status running ▸ load + agent + CheckpointModifier ▸ invoke ─▶ events (seq 1, 2, ...) ─▶ store
//!     ▸ lease renewed, cancel watched ▸ done | waiting | failed | cancelled ▸ ack
//!  Runs::events(id, after) ─▶ the store's events (RunEvent), then new ones as they come
//! ```
//!
//! # Layout
//!
//! ```text
//! event.rs    RunEvent: the one protocol of what a run emits; NumberedEvent (seq + event)
//! desk.rs     InputDesk: the requests for input held here, the runs that can ask; PendingInput
//! input.rs    MCP servers' requests for input, held for the person while the call waits
//! pending.rs  PendingCall: a tool call waiting for a decision
//! record.rs   Run, RunStatus
//! store.rs    RunStore (records, events, queue), RunError, Delivery
//! local.rs    LocalRuns: one process (with the JSON list): memory + files, restart recovery
//! redis/      RedisRuns: a deployment on Redis: hashes, capped event streams (mod.rs),
//!             the Stream queue and its consumer group (queue.rs), events.rs, replies (reply.rs)
//! service.rs  Runs: the service (store, hub, settings, what runs here, event wake-ups)
//! inbox.rs    RunInbox: a run's side of its session's inbox (given, joined)
//! steer.rs    a message for a busy session: kept in its inbox (202), read by the run at
//!             its next node boundary (inject, queue, interrupt); invoked again until none waits
//! submit.rs   Input, Target, Runs::submit (and resume), Runs::cancel, retries of a request,
//!             Refused (409 naming the session's run, 429)
//! worker.rs   Runs::execute: one run: checkpoints, events, cancel, wall-clock limit, hand back;
//!             its events and lease only while it holds the run (else another server took it over)
//! takeover.rs a run taken over whose end was written but not its record: settled from its end
//! patience.rs a store that cannot be reached, waited out (saves, events, the record; 30 s)
//! dispatch.rs Runs::start: the dispatcher taking runs from the queue
//! stream.rs   Runs::events: a run's events as they come, until it ends or waits
//! ```
//!
//! # What survives what
//!
//! - A client that disconnects: nothing is lost; the run goes on and
//!   `GET /api/runs/{id}/events` with `Last-Event-ID` replays what it missed.
//! - A server killed (`kill -9`): the node in flight (a model call or tool
//!   call that had not finished) runs again on the server that takes the
//!   run over after its lease; every finished node is in the session's
//!   last checkpoint and never runs again; the run's events so far are
//!   kept (Redis) and numbering goes on.
//! - A graceful shutdown: runs that do not finish within the grace period
//!   are handed back (queued again, in-flight node dropped) for another
//!   server (Redis) or the next start (JSON list).
//! - With the JSON list, a process killed: its queued and running runs are
//!   queued again when it starts next.
//! - A store that cannot be reached for a while (a Redis restart): the
//!   run's checkpoints, events and record are tried again for up to
//!   `RunSettings::store_patience` (30 s), so it goes on where it was and
//!   its events still end with its end event; past that it fails.

mod desk;
mod dispatch;
mod event;
mod inbox;
mod input;
mod local;
mod patience;
mod pending;
mod record;
mod redis;
mod service;
mod steer;
mod store;
mod stream;
mod submit;
mod takeover;
mod worker;

use std::sync::Arc;
use std::time::Duration;

use lc_agent::ListConfig;

pub use desk::PendingInput;
pub use event::{InputRequest, NodeInfo, NumberedEvent, Outcome, RunDone, RunErrorEvent, RunEvent};
pub(crate) use input::{read_answer, AnswerRefused, Answered};
pub(crate) use local::LocalRuns;
pub use pending::PendingCall;
pub use record::{Run, RunStatus};
pub use redis::RedisRuns;
pub use service::Runs;
pub use store::{Delivery, RunError, RunResult, RunStore, Steer};
pub(crate) use submit::{DecisionIn, Input, Refused, Submitted, Target};

/// The run store of a session store: Redis runs (under the same prefix)
/// for Redis sessions, else runs kept beside the JSON sessions
/// (`<dir>/.runs`).
pub fn open_store(
    sessions: &ListConfig,
    lists: &lc_agent::Lists,
    keep: Duration,
) -> RunResult<Arc<dyn RunStore>> {
    match sessions {
        ListConfig::Redis { url, prefix } => {
            let connector = match lists.redis() {
                Some(list) => list.connector().clone(),
                None => lc_agent::RedisConnector::new(url.clone())
                    .map_err(|e| RunError::store("open the Redis client", e))?,
            };
            Ok(Arc::new(RedisRuns::new(connector, url, prefix)?))
        }
        ListConfig::Json { root } => Ok(Arc::new(LocalRuns::open(root.join(".runs"), keep)?)),
        _ => Ok(Arc::new(LocalRuns::in_memory())),
    }
}
