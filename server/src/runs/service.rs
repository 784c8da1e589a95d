//! [`Runs`]: the runs service of a server — its store, its name as a
//! queue consumer, the runs it executes now, the wake-ups of event
//! readers, and the [`SessionHub`] its runs load and save sessions with.
//! Starting runs (`submit.rs`), executing them (`worker.rs`), taking them
//! from the queue (`dispatch.rs`) and reading their events (`stream.rs`)
//! are `impl Runs` blocks of their own files.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{Notify, Semaphore};
use uuid::Uuid;

use super::store::RunStore;
use crate::config::RunSettings;
use crate::hub::SessionHub;

/// A run executing in this process.
pub(crate) struct Local {
    pub(crate) cancel: Arc<Notify>,
    /// Its session's inbox (steer.rs).
    pub(crate) inbox: super::inbox::RunInbox,
}

/// The runs of a server (see the module's documentation).
pub struct Runs {
    pub(crate) hub: Arc<SessionHub>,
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) settings: RunSettings,
    /// This server's name in the queue's consumer group.
    pub(crate) consumer: String,
    pub(crate) local: Mutex<HashMap<Uuid, Local>>,
    /// MCP servers' requests for input held here (`input.rs`).
    pub(crate) inputs: Mutex<super::desk::InputDesk>,
    wakers: Mutex<HashMap<Uuid, Arc<Notify>>>,
    pub(crate) permits: Arc<Semaphore>,
    pub(crate) started: AtomicBool,
    /// Set by a shutdown: take no more runs.
    pub(crate) draining: AtomicBool,
    /// Rung when the shutdown's grace period is over: hand runs back.
    pub(crate) hand_back: Arc<Notify>,
    pub(crate) handing_back: AtomicBool,
    /// The dispatcher's task (`dispatch.rs`), awaited when leaving.
    pub(crate) dispatcher: Mutex<Option<tokio::task::JoinHandle<()>>>,
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
    /// The runs of a server on `store`, with the sessions of `hub`.
    pub(crate) fn new(
        hub: Arc<SessionHub>,
        store: Arc<dyn RunStore>,
        settings: RunSettings,
    ) -> Self {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "server".to_string());
        let consumer = format!(
            "{host}-{}-{}",
            std::process::id(),
            &Uuid::new_v4().simple().to_string()[..6]
        );
        Self {
            hub,
            store,
            permits: Arc::new(Semaphore::new(settings.max_runs.max(1))),
            settings,
            consumer,
            local: Mutex::new(HashMap::new()),
            inputs: Mutex::default(),
            wakers: Mutex::new(HashMap::new()),
            started: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            hand_back: Arc::new(Notify::new()),
            handing_back: AtomicBool::new(false),
            dispatcher: Mutex::new(None),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn RunStore> {
        &self.store
    }

    /// This server's name in the run queue's consumer group.
    pub fn consumer(&self) -> &str {
        &self.consumer
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

    /// This server leaves the deployment's run queue (the end of a
    /// shutdown): once its dispatcher stopped and no run executes here,
    /// what it still holds is queued again and its consumer is deleted,
    /// so the group lists only live servers.
    pub async fn leave(&self) {
        self.draining.store(true, Ordering::SeqCst);
        let dispatcher = self.dispatcher.lock().take();
        if let Some(mut task) = dispatcher {
            // It stops at its next turn: a queue read blocks at most 1 s.
            if tokio::time::timeout(Duration::from_secs(3), &mut task)
                .await
                .is_err()
            {
                task.abort();
            }
        }
        if self.executing() > 0 {
            tracing::warn!(running = self.executing(), "runs still going at shutdown: this server stays in the run queue until their leases expire");
            return;
        }
        match self.store.leave(&self.consumer).await {
            Ok(true) => tracing::info!(server = %self.consumer, "left the run queue"),
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot leave the run queue (the other servers remove this one later)")
            }
        }
    }
}
