//! `GET /metrics`: the recorder's counters and histograms in Prometheus
//! text format, behind the same bearer token as the API when tokens are
//! on (the names: see metrics.rs).

use std::sync::Arc;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use crate::auth::User;
use crate::metrics::handle;
use crate::state::AppState;

/// `GET /metrics`.
pub(crate) async fn metrics(State(state): State<Arc<AppState>>, _user: User) -> Response {
    let Some(handle) = handle() else {
        return (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "metrics are off: another metrics recorder was installed in this process\n",
        )
            .into_response();
    };
    metrics::gauge!("lc_agent_active_sessions").set(state.hub.running_count() as f64);
    match state.runs.store.queue_depth().await {
        Ok(Some(depth)) => metrics::gauge!("lc_agent_queued_runs").set(depth as f64),
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "metrics: the queue's depth cannot be read"),
    }
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4")],
        handle.render(),
    )
        .into_response()
}
