//! A run taken over whose end was already written: its server wrote the
//! run's end event, then lost the store (or died) before it settled the
//! record. The server that takes the run over settles the record from
//! that end event instead of running the run again, so its event stream
//! keeps exactly one end.
//!
//! ```text
//!  execute(delivery) ─▶ record running, last event done | error? ─▶ settle from it ▸ ack
//!                                                           else ─▶ run it (worker.rs)
//! ```

use std::sync::Arc;

use tokio::sync::Notify;

use super::event::RunEvent;
use super::record::RunStatus;
use super::service::Runs;
use super::store::Delivery;

/// Settles the run of `delivery` from its end event when it has one and
/// its record still says `running`; whether it did (then the delivery is
/// acknowledged and there is nothing to run).
pub(crate) async fn settle_ended(state: &Arc<Runs>, delivery: &Delivery) -> bool {
    let runs = &**state;
    let Ok(Some(mut run)) = runs.store.get(delivery.run).await else {
        return false;
    };
    if run.status != RunStatus::Running {
        return false;
    }
    let last = match runs.store.last_seq(run.id).await {
        Ok(last) if last > 0 => last,
        _ => return false,
    };
    let Ok(tail) = runs.store.events(run.id, last - 1, 1).await else {
        return false;
    };
    let Some(end) = tail.into_iter().map(|e| e.event).find(RunEvent::is_end) else {
        return false;
    };
    let (status, error) = match end {
        RunEvent::Done(done) => {
            run.answer = (done.status == RunStatus::Done && !run.ephemeral).then_some(done.answer);
            run.pending = if done.status == RunStatus::Waiting {
                done.pending_approvals
            } else {
                Vec::new()
            };
            (done.status, None)
        }
        RunEvent::Error(e) => (RunStatus::Failed, Some(e.failure.message)),
        _ => return false,
    };
    run.status = status;
    run.error = error;
    if status.is_final() {
        run.finished_at.get_or_insert_with(chrono::Utc::now);
    }
    tracing::warn!(run = %run.id, status = status.as_str(), "took over a run whose end was written but not its record: settled from its end event");
    if let Err(e) = runs.store.settle(&run, runs.settings.keep).await {
        tracing::warn!(run = %run.id, error = %e, "cannot settle a run taken over (its lease will expire again)");
        return true;
    }
    let _ = runs.store.ack(delivery).await;
    runs.wake(run.id);
    true
}

/// The run's queue entry this server holds, and the signal that another
/// server took the run over.
#[derive(Clone)]
pub(crate) struct Held {
    pub(crate) delivery: Delivery,
    pub(crate) taken: Arc<Taken>,
}

/// Set once another server took the run over: its lease could not be
/// renewed in time (the store was out of reach), and a server that
/// outlived it took the entry (`XAUTOCLAIM`). The run stops here without
/// another word.
#[derive(Default)]
pub(crate) struct Taken {
    set: std::sync::atomic::AtomicBool,
    notice: Notify,
}

impl Taken {
    /// Another server took the run over.
    pub(crate) fn set(&self) {
        self.set.store(true, std::sync::atomic::Ordering::SeqCst);
        self.notice.notify_waiters();
    }

    /// Whether another server took the run over.
    pub(crate) fn is_set(&self) -> bool {
        self.set.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Resolves once another server took the run over.
    pub(crate) async fn wait(&self) {
        loop {
            let notice = self.notice.notified();
            if self.is_set() {
                return;
            }
            notice.await;
        }
    }
}
