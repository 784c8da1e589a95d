//! The dispatcher: one per server, it takes runs from the queue while the
//! server has room (up to `--max-runs` at a time), until a shutdown.
//!
//! ```text
//!  reclaim (a lease left to expire: XAUTOCLAIM, every half lease) or claim (XREADGROUP)
//!     ─▶ Runs::execute (worker.rs) in a task of its own
//!  with each reclaim: remove the consumers of dead servers (nothing held, two leases silent)
//!  at the end of a shutdown: Runs::leave (service.rs) gives back what is held, XGROUP DELCONSUMER
//! ```

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::service::Runs;

impl Runs {
    /// Starts the dispatcher (once, inside a tokio runtime): it takes runs
    /// from the queue while this server has room, until a shutdown.
    pub(crate) fn start(self: &Arc<Self>) {
        if self.started.swap(true, Ordering::SeqCst) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            self.started.store(false, Ordering::SeqCst);
            return;
        };
        let task = handle.spawn(dispatch(Arc::downgrade(self)));
        *self.dispatcher.lock() = Some(task);
    }
}

/// The dispatcher: while the server lives and takes runs, waits for room,
/// then takes a run whose lease expired (every half lease) or the next
/// queued one, and executes it in a task of its own.
async fn dispatch(state: Weak<Runs>) {
    let mut last_reclaim = tokio::time::Instant::now() - Duration::from_secs(3600);
    loop {
        let Some(app) = state.upgrade() else { return };
        let runs = &*app;
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
            // Servers that died leave consumers behind: gone after two
            // leases of silence with nothing held.
            if let Err(e) = runs.store.prune(&runs.consumer, lease * 2).await {
                tracing::debug!(error = %e, "cannot remove stopped servers from the run queue");
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
            Some(app) if !app.draining.load(Ordering::SeqCst) => app,
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
            app.execute(delivery).await;
            drop(permit);
        });
    }
}
