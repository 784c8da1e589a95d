//! The run endpoints.
//!
//! ```text
//!  POST /api/sessions/{id}/runs   {content[, parts][, mode]} | {decisions: [...]} [, background: true]
//!                                  ─▶ SSE of the run (or 202 {run} with background)
//!                                     202 {id, mode, run, status}: a message with a `mode` while the
//!                                     session's run goes on joins it (inject | queue | interrupt;
//!                                     steer.rs); without one it is refused (409) as before
//!                                     409 {error: {run, status[, pending]}}: the session's active run
//!                                     429 + Retry-After: the user has --max-user-runs runs queued or running
//!  GET  /api/sessions/{id}/runs   {runs: [...]}, newest first
//!  GET  /api/runs/{id}            the run
//!  POST /api/runs/{id}/cancel     202 the run (cancelled at once when queued or waiting)
//!  GET  /api/runs/{id}/events     SSE from Last-Event-ID (or ?after=N): id: <seq>, event, data
//! ```

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::parts::read_parts;
use super::sse::run_sse;
use crate::auth::User;
use crate::error::ApiError;
use crate::runs::{DecisionIn, Input, Refused, Run, Submitted, Target};
use crate::state::AppState;
use lc_agent::SteerMode;

/// `POST /api/sessions/{id}/runs` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunIn {
    #[serde(default)]
    content: Option<String>,
    /// The parts after the message's text (images; see parts.rs).
    #[serde(default)]
    parts: Option<Value>,
    #[serde(default)]
    decisions: Option<Vec<DecisionIn>>,
    #[serde(default)]
    background: bool,
    /// How a message joins the session's run when one goes on: `inject`,
    /// `queue`, `interrupt` (steer.rs). Without it such a message is
    /// refused (409 naming the run), as this API always did.
    #[serde(default)]
    mode: Option<SteerMode>,
}

pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
    Json(body): Json<RunIn>,
) -> Result<Response, Refused> {
    let parts = read_parts(body.parts.as_ref())?;
    let input = match (body.content, body.decisions) {
        (content, None)
            if content.is_some()
                || !parts.is_empty()
                || body.mode == Some(SteerMode::Interrupt) =>
        {
            Input::Message(content.unwrap_or_default(), parts, body.mode)
        }
        (None, Some(decisions)) if parts.is_empty() => Input::Decisions(decisions),
        _ => {
            return Err(ApiError::BadRequest(
                "give either `content` (a message, with its `parts`) or `decisions`".to_string(),
            )
            .into())
        }
    };
    let submitted = state
        .runs
        .submit(&user, Target::Session(id), input, None)
        .await?;
    if let Some(steered) = steered(&submitted) {
        return Ok(steered);
    }
    if body.background {
        return Ok((StatusCode::ACCEPTED, Json(run_json(&submitted.run))).into_response());
    }
    Ok(run_sse(state.runs.clone(), submitted.run.id, submitted.after).into_response())
}

/// 202 for a message that joins the session's run going on: its id and
/// mode, and the run (whose events show it joining: `steered`).
pub(crate) fn steered(submitted: &Submitted) -> Option<Response> {
    let message = submitted.steered.as_ref()?;
    let body = json!({
        "id": message.id,
        "mode": message_mode(message),
        "run": submitted.run.id,
        "status": submitted.run.status,
    });
    Some((StatusCode::ACCEPTED, Json(body)).into_response())
}

fn message_mode(message: &lc_agent::SteerMessage) -> Value {
    serde_json::to_value(message).map_or(Value::Null, |m| m["mode"].clone())
}

/// A run of `user` (404 for another user's).
async fn run_of(state: &AppState, user: &str, id: Uuid) -> Result<Run, ApiError> {
    match state.runs.store.get(id).await? {
        Some(run) if run.user == user => Ok(run),
        _ => Err(ApiError::NotFound(format!("run {id} not found"))),
    }
}

pub(crate) async fn show(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(run_json(&run_of(&state, &user, id).await?)))
}

/// A run as the API shows it: its usage priced (the built-in table, the
/// server's `prices.toml` and the session blueprint's `[prices]`).
fn run_json(run: &Run) -> Value {
    let mut value = json!(run);
    let prices = crate::usage::with_own(run.prices.as_ref());
    value["usage"] = run.usage.priced(&prices);
    if let Some(map) = value.as_object_mut() {
        map.remove("prices");
    }
    value
}

/// `?limit=` of a listing.
#[derive(Debug, Deserialize)]
pub(crate) struct Limit {
    #[serde(default)]
    limit: Option<usize>,
}

pub(crate) async fn of_session(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
    Query(q): Query<Limit>,
) -> Result<Json<Value>, ApiError> {
    let list = state.hub.list(&user)?;
    state.hub.owned(&list, id).await?;
    let limit = q.limit.unwrap_or(50).min(500);
    let runs: Vec<Value> = state
        .runs
        .store
        .of_session(id, limit)
        .await?
        .iter()
        .filter(|r| r.user == user)
        .map(run_json)
        .collect();
    Ok(Json(json!({ "runs": runs })))
}

pub(crate) async fn cancel(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
) -> Result<Response, ApiError> {
    let run = run_of(&state, &user, id).await?;
    if run.status.is_final() {
        return Err(ApiError::Conflict(format!(
            "run {id} is over ({}): there is nothing to cancel",
            run.status
        )));
    }
    let run = state.runs.cancel(run).await?;
    Ok((StatusCode::ACCEPTED, Json(run_json(&run))).into_response())
}

/// `?after=N` of an event stream.
#[derive(Debug, Deserialize)]
pub(crate) struct After {
    #[serde(default)]
    after: Option<u64>,
}

pub(crate) async fn events(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
    headers: HeaderMap,
    Query(q): Query<After>,
) -> Result<Response, ApiError> {
    run_of(&state, &user, id).await?;
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let after = last.or(q.after).unwrap_or(0);
    Ok(run_sse(state.runs.clone(), id, after).into_response())
}
