//! Waiting out a store that cannot be reached: a run's saves, events and
//! record are tried again, with backoff (0.1 s doubling to 2 s), for the
//! settings' `store_patience` (30 s by default), so a Redis restart or a
//! failover delays a run instead of failing it, and its event stream still
//! ends with its end event.

use std::future::Future;
use std::time::{Duration, Instant};

/// `op` until it succeeds, fails in a way `retry` does not take, or
/// `patience` has passed (then its last error).
pub(crate) async fn patiently<T, E, F, Fut>(
    patience: Duration,
    what: &str,
    retry: impl Fn(&E) -> bool,
    mut op: F,
) -> Result<T, E>
where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let started = Instant::now();
    let mut pause = Duration::from_millis(100);
    loop {
        match op().await {
            Err(e) if retry(&e) && started.elapsed() < patience => {
                tracing::warn!(error = %e, "{what}: the store cannot be reached; trying again");
                tokio::time::sleep(pause.min(patience.saturating_sub(started.elapsed()))).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            other => return other,
        }
    }
}

/// Whether a run-store error is one to wait out.
pub(crate) fn store_unreachable(e: &super::store::RunError) -> bool {
    matches!(e, super::store::RunError::Store { .. })
}
