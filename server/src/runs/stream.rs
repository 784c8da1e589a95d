//! [`Runs::events`]: a run's events after a number, as they come (from
//! this server's wake-ups, or by polling the store for those another
//! server writes), until the run ends or waits.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use futures::Stream;
use uuid::Uuid;

use super::event::{NumberedEvent, RunErrorEvent, RunEvent};
use super::record::RunStatus;
use super::service::Runs;
use crate::error::{RunFailure, STORE_UNAVAILABLE};

/// How often a reader looks for events another server wrote.
const POLL: Duration = Duration::from_millis(100);

/// How long an event stream waits for a session store it cannot read
/// before it ends with a 503.
const STORE_PATIENCE: Duration = Duration::from_secs(10);

impl Runs {
    /// The events of run `id` after `after`, as they come, until the run
    /// ends or waits.
    pub(crate) fn events(
        self: Arc<Self>,
        id: Uuid,
        after: u64,
    ) -> impl Stream<Item = NumberedEvent> + Send {
        let start = (self, after, VecDeque::<NumberedEvent>::new(), false, None);
        futures::stream::unfold(
            start,
            move |(runs, mut after, mut buf, over, mut failing)| async move {
                loop {
                    if let Some(event) = buf.pop_front() {
                        after = event.seq;
                        let mut done = false;
                        if buf.is_empty() && event.event.is_end() {
                            let status = runs.store.get(id).await.ok().flatten().map(|r| r.status);
                            done = !matches!(status, Some(RunStatus::Queued | RunStatus::Running));
                        }
                        return Some((event, (runs, after, buf, done, failing)));
                    }
                    if over {
                        return None;
                    }
                    let next = {
                        let waker = runs.waker(id);
                        let notified = waker.notified();
                        tokio::pin!(notified);
                        notified.as_mut().enable();
                        next_events(&runs, id, after, notified, &mut failing).await
                    };
                    match next {
                        Some(events) => buf.extend(events),
                        None => {
                            runs.forget_waker(id);
                            return None;
                        }
                    }
                }
            },
        )
    }
}

/// The events after `after` once there are some (`None`: the run is over
/// or waits, and there are none).
async fn next_events(
    runs: &Runs,
    id: Uuid,
    after: u64,
    notified: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>,
    failing: &mut Option<tokio::time::Instant>,
) -> Option<Vec<NumberedEvent>> {
    let mut read = true;
    match runs.store.events(id, after, 256).await {
        Ok(events) if !events.is_empty() => {
            *failing = None;
            return Some(events);
        }
        Ok(_) => {}
        Err(e) => {
            read = false;
            tracing::warn!(run = %id, error = %lc_agent::error_chain(&e), "cannot read a run's events");
        }
    }
    let record = runs.store.get(id).await;
    if read || record.is_ok() {
        *failing = None;
    } else {
        // The store is gone: after a while the stream ends in its terms
        // (the run, if it still goes on, can be followed once it is back).
        let since = *failing.get_or_insert_with(tokio::time::Instant::now);
        if since.elapsed() >= STORE_PATIENCE {
            let event = RunEvent::Error(RunErrorEvent {
                failure: RunFailure::new(StatusCode::SERVICE_UNAVAILABLE, STORE_UNAVAILABLE),
                revision: None,
                run: id,
                usage: None,
            });
            return Some(vec![NumberedEvent { seq: after, event }]);
        }
    }
    match record {
        Ok(None) => return None,
        Ok(Some(run)) if !matches!(run.status, RunStatus::Queued | RunStatus::Running) => {
            // Over (or waiting) and nothing new: one last look for events
            // written just before the status.
            let rest = runs.store.events(id, after, 256).await.unwrap_or_default();
            return (!rest.is_empty()).then_some(rest);
        }
        _ => {}
    }
    let _ = tokio::time::timeout(POLL, notified).await;
    Some(Vec::new())
}
