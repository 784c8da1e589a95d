//! Durable runs: a run of a session is a record in a [`RunStore`], queued,
//! taken by any server of the deployment, checkpointed after every node,
//! and its events are numbered and kept, so a client reattaches, a cancel
//! reaches whichever server runs it, and a run whose server died is
//! finished by another from its last checkpoint.
//!
//! ```text
//!  POST /api/sessions/{id}/runs ─▶ Runs::submit: reserve the session (409 names its run; 429 per user)
//!     ▸ load ▸ apply the input (message | decisions | continue) ▸ save ▸ queue
//!     (a server with room takes the run in the same step as it queues it,
//!      and runs it as soon as its input is saved: no wait on the dispatcher)
//!  dispatcher (one per server): up to --max-runs at a time
//!     reclaim (a lease left to expire: XAUTOCLAIM) or claim (XREADGROUP) ─▶ worker.rs execute:
//!     status running ▸ load + agent + CheckpointModifier ▸ invoke ─▶ events (seq 1, 2, ...) ─▶ store
//!     ▸ lease renewed, cancel watched ▸ done | waiting | failed | cancelled ▸ ack
//!  GET /api/runs/{id}/events (Last-Event-ID | ?after=N) ─▶ the store's events, then new ones as they come
//! ```
//!
//! # Layout
//!
//! ```text
//! record.rs   Run, RunStatus, Usage, RunEvent
//! store.rs    RunStore (records, events, queue), RunError, Delivery
//! local.rs    LocalRuns: one process (with the JSON list): memory + files, restart recovery
//! redis.rs    RedisRuns: a deployment on Redis: hashes, capped event streams, a Stream queue
//! worker.rs   executing one run: checkpoints, events, cancel, wall-clock limit, hand back
//! http.rs     the run endpoints, SSE of a run's events, the 409 / 429 answers
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

pub(crate) mod http;
pub mod local;
pub mod record;
pub mod redis;
pub mod store;
pub(crate) mod worker;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use lc_agent::ListConfig;
use parking_lot::Mutex;
use tokio::sync::{Notify, Semaphore};
use uuid::Uuid;

pub use local::LocalRuns;
pub use record::{Run, RunEvent, RunStatus};
pub use redis::RedisRuns;
pub use store::{Delivery, RunError, RunResult, RunStore};

use crate::state::AppState;

/// How a server takes and keeps runs.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Runs this server executes at once (more wait in the queue).
    pub max_runs: usize,
    /// Queued and running runs one user may have (more get 429).
    pub per_user: usize,
    /// How long a run may take, from when a server takes it.
    pub time_limit: Option<Duration>,
    /// A run whose server has not renewed its lease for this long is
    /// taken over by another (Redis).
    pub lease: Duration,
    /// How long a finished run's record and events are kept.
    pub keep: Duration,
}

impl Default for RunSettings {
    fn default() -> Self {
        Self {
            max_runs: 32,
            per_user: 64,
            time_limit: Some(Duration::from_secs(3600)),
            lease: Duration::from_secs(15),
            keep: Duration::from_secs(3600),
        }
    }
}

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
                    .map_err(|e| RunError::Store(e.to_string()))?,
            };
            Ok(Arc::new(RedisRuns::new(connector, url, prefix)?))
        }
        ListConfig::Json { root } => Ok(Arc::new(LocalRuns::open(root.join(".runs"), keep)?)),
        _ => Ok(Arc::new(LocalRuns::in_memory())),
    }
}

/// A run executing in this process.
pub(crate) struct Local {
    pub(crate) cancel: Arc<Notify>,
}

/// The runs of a server: its store, its name as a queue consumer, what it
/// runs now, and the wake-ups of event readers.
pub struct Runs {
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) settings: RunSettings,
    /// This server's name in the queue's consumer group.
    pub(crate) consumer: String,
    pub(crate) local: Mutex<HashMap<Uuid, Local>>,
    wakers: Mutex<HashMap<Uuid, Arc<Notify>>>,
    pub(crate) permits: Arc<Semaphore>,
    started: AtomicBool,
    /// Set by a shutdown: take no more runs.
    pub(crate) draining: AtomicBool,
    /// Rung when the shutdown's grace period is over: hand runs back.
    pub(crate) hand_back: Arc<Notify>,
    pub(crate) handing_back: AtomicBool,
}

impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runs")
            .field("consumer", &self.consumer)
            .field("settings", &self.settings)
            .field("running", &self.local.lock().len())
            .finish_non_exhaustive()
    }
}

impl Runs {
    /// The runs of a server on `store`.
    pub fn new(store: Arc<dyn RunStore>, settings: RunSettings) -> Self {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "server".to_string());
        let consumer = format!(
            "{host}-{}-{}",
            std::process::id(),
            &Uuid::new_v4().simple().to_string()[..6]
        );
        Self {
            store,
            permits: Arc::new(Semaphore::new(settings.max_runs.max(1))),
            settings,
            consumer,
            local: Mutex::new(HashMap::new()),
            wakers: Mutex::new(HashMap::new()),
            started: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            hand_back: Arc::new(Notify::new()),
            handing_back: AtomicBool::new(false),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn RunStore> {
        &self.store
    }

    /// How many runs execute in this process now.
    pub fn executing(&self) -> usize {
        self.local.lock().len()
    }

    /// The wake-up of readers of `run`'s events.
    pub(crate) fn waker(&self, run: Uuid) -> Arc<Notify> {
        self.wakers.lock().entry(run).or_default().clone()
    }

    /// Wakes the readers of `run`'s events.
    pub(crate) fn wake(&self, run: Uuid) {
        if let Some(n) = self.wakers.lock().get(&run) {
            n.notify_waiters();
        }
    }

    /// Forgets the wake-up of `run` when nobody waits on it.
    pub(crate) fn forget_waker(&self, run: Uuid) {
        let mut wakers = self.wakers.lock();
        if wakers.get(&run).is_some_and(|n| Arc::strong_count(n) == 1) {
            wakers.remove(&run);
        }
    }

    /// Starts the dispatcher (once): it takes runs from the queue while
    /// this server has room, until a shutdown.
    pub(crate) fn start(&self, state: &Arc<AppState>) {
        if self.started.swap(true, Ordering::SeqCst) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            self.started.store(false, Ordering::SeqCst);
            return;
        };
        handle.spawn(dispatch(Arc::downgrade(state)));
    }

    /// Stops taking runs (a shutdown): running ones go on.
    pub fn stop_taking(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Hands back the runs still executing here: each stops where it is,
    /// saves the session and is queued again for another server (or this
    /// one's next start). Returns once they all left.
    pub async fn hand_back(&self) -> usize {
        self.draining.store(true, Ordering::SeqCst);
        self.handing_back.store(true, Ordering::SeqCst);
        let count = self.executing();
        self.hand_back.notify_waiters();
        for _ in 0..200 {
            if self.executing() == 0 {
                break;
            }
            self.hand_back.notify_waiters();
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        count
    }
}

/// The dispatcher: while the server lives and takes runs, waits for room,
/// then takes a run whose lease expired (every half lease) or the next
/// queued one, and executes it in a task of its own.
async fn dispatch(state: Weak<AppState>) {
    let mut last_reclaim = tokio::time::Instant::now() - Duration::from_secs(3600);
    loop {
        let Some(app) = state.upgrade() else { return };
        let runs = &app.runs;
        if runs.draining.load(Ordering::SeqCst) {
            return;
        }
        let Ok(permit) = runs.permits.clone().acquire_owned().await else {
            return;
        };
        let lease = runs.settings.lease;
        let mut delivery = None;
        if last_reclaim.elapsed() >= lease / 2 {
            last_reclaim = tokio::time::Instant::now();
            match runs.store.reclaim(&runs.consumer, lease).await {
                Ok(d) => {
                    if let Some(d) = &d {
                        tracing::warn!(run = %d.run, server = %runs.consumer, "took over a run whose server stopped renewing its lease");
                        // A dead server leaves several: look again at once.
                        last_reclaim = tokio::time::Instant::now() - lease;
                    }
                    delivery = d;
                }
                Err(e) => tracing::warn!(error = %e, "cannot look for abandoned runs"),
            }
        }
        let store = runs.store.clone();
        if delivery.is_none() {
            let consumer = runs.consumer.clone();
            drop(app);
            match store.claim(&consumer, Duration::from_millis(1000)).await {
                Ok(d) => delivery = d,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot take runs from the queue");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        } else {
            drop(app);
        }
        let Some(delivery) = delivery else { continue };
        let app = match state.upgrade() {
            Some(app) if !app.runs.draining.load(Ordering::SeqCst) => app,
            _ => {
                // Taken while the server was stopping: back to the queue
                // at once, for another server (or the next start).
                if let Err(e) = store.enqueue(delivery.run).await {
                    tracing::warn!(run = %delivery.run, error = %e, "cannot give a run back (its lease will expire)");
                    return;
                }
                let _ = store.ack(&delivery).await;
                return;
            }
        };
        tokio::spawn(async move {
            worker::execute(app, delivery).await;
            drop(permit);
        });
    }
}
