//! One poller for the tests: ask again every [`INTERVAL`] until the
//! answer comes, a bounded number of times, then fail the test saying what
//! never happened and what was seen last. [`run_status`] is the poll every
//! runs test needs: a run's record until it has a status.

use std::time::Duration;

use serde_json::Value;

/// How long the poller waits between two tries.
pub const INTERVAL: Duration = Duration::from_millis(50);

/// The tries that take at least `timeout` ([`INTERVAL`] apart, each try's
/// own time on top).
pub fn tries_in(timeout: Duration) -> usize {
    usize::try_from(timeout.as_millis() / INTERVAL.as_millis())
        .unwrap_or(usize::MAX)
        .max(1)
}

/// Calls `attempt` until it returns `Ok`, at most `tries` times,
/// [`INTERVAL`] apart; its value. Panics naming `what` with the last
/// `Err` (what the try saw) when no try succeeded.
pub async fn until<T, Fut>(what: &str, tries: usize, mut attempt: impl FnMut() -> Fut) -> T
where
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let mut last = String::new();
    for _ in 0..tries {
        match attempt().await {
            Ok(value) => return value,
            Err(seen) => last = seen,
        }
        tokio::time::sleep(INTERVAL).await;
    }
    panic!("{what}: not after {tries} tries {INTERVAL:?} apart; last seen: {last}");
}

/// Polls `GET {base}/api/runs/{run}` (as the user of `token`, when given)
/// until the run's status is `want`, at most `tries` times; the run's
/// record.
pub async fn run_status(
    http: &reqwest::Client,
    base: &str,
    run: &str,
    token: Option<&str>,
    want: &str,
    tries: usize,
) -> Value {
    let url = format!("{base}/api/runs/{run}");
    until(&format!("run {run} becomes {want}"), tries, || async {
        let mut request = http.get(&url);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let record: Value = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"))
            .json()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: no JSON: {e}"));
        if record["status"] == want {
            Ok(record)
        } else {
            Err(record.to_string())
        }
    })
    .await
}
