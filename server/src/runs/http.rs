//! The run endpoints, and the one way every other endpoint starts a run
//! ([`submit`]) and streams it ([`events_sse`]).
//!
//! ```text
//!  POST /api/sessions/{id}/runs   {content} | {decisions: [...]} [, background: true]
//!                                  ─▶ SSE of the run (or 202 {run} with background)
//!                                     409 {error: {run, status[, pending]}}: the session's active run
//!                                     429 + Retry-After: the user has --max-user-runs runs queued or running
//!  GET  /api/sessions/{id}/runs   {runs: [...]}, newest first
//!  GET  /api/runs/{id}            the run
//!  POST /api/runs/{id}/cancel     202 the run (cancelled at once when queued or waiting)
//!  GET  /api/runs/{id}/events     SSE from Last-Event-ID (or ?after=N): id: <seq>, event, data
//! ```
//!
//! One rule for a message while calls wait for a decision (issue 21.3):
//! it is refused (409, naming the waiting calls and the run); decisions
//! come first, so a tool call always gets its result before the next
//! human turn.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures::Stream;
use lc_agent::RunnableNetwork;
use lc_agent_deepagent::approvals::{decide, pending_approvals, Decision, DecisionKind};
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::record::{Run, RunEvent, RunStatus};
use super::store::RunError;
use crate::auth::User;
use crate::error::ApiError;
use crate::events::pending_json;
use crate::state::AppState;

/// The session metadata key naming the run whose input it holds last.
pub const RUN_KEY: &str = "run";

/// A refused request: an [`ApiError`], or an answer of its own (409 with
/// the session's run, 429 with Retry-After). Boxed: it travels in `Err`.
pub(crate) struct Refusal(Box<Response>);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        *self.0
    }
}

impl From<Response> for Refusal {
    fn from(r: Response) -> Self {
        Self(Box::new(r))
    }
}

/// The answer of an [`ApiError`].
pub(crate) fn refuse(e: impl Into<ApiError>) -> Refusal {
    e.into().into_response().into()
}

impl From<RunError> for ApiError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::NotFound(id) => ApiError::NotFound(format!("run {id} not found")),
            RunError::Busy { .. } | RunError::UserFull { .. } => ApiError::Conflict(e.to_string()),
            RunError::Store(m) => ApiError::Internal(m),
            RunError::NotPrepared(id) => {
                ApiError::Conflict(format!("run {id} is not prepared yet"))
            }
        }
    }
}

fn conflict(message: String, extra: Value) -> Refusal {
    let mut error = json!({"message": message, "type": "conflict_error", "code": 409});
    if let (Some(e), Some(x)) = (error.as_object_mut(), extra.as_object()) {
        e.extend(x.clone());
    }
    (StatusCode::CONFLICT, Json(json!({ "error": error })))
        .into_response()
        .into()
}

/// Seconds a client is told to wait when its queue is full.
const RETRY_AFTER_SECS: u64 = 2;

fn too_many(message: String) -> Refusal {
    let mut r = (
        StatusCode::TOO_MANY_REQUESTS,
        Json(json!({"error": {"message": message, "type": "rate_limit_error", "code": 429}})),
    )
        .into_response();
    r.headers_mut()
        .insert("retry-after", HeaderValue::from(RETRY_AFTER_SECS));
    r.into()
}

/// The 409 of a session whose run `holder` is active.
async fn busy(state: &AppState, session: Uuid, holder: Uuid) -> Refusal {
    let run = state.runs.store.get(holder).await.ok().flatten();
    let status = run.as_ref().map(|r| r.status);
    if let Some(run) = run.filter(|r| r.status == RunStatus::Waiting) {
        let calls: Vec<String> = run
            .pending
            .iter()
            .map(|p| {
                format!(
                    "{} {} (node {})",
                    p["tool_call"]["name"].as_str().unwrap_or("?"),
                    p["tool_call"]["arguments"],
                    p["node_id"].as_str().unwrap_or("?")
                )
            })
            .collect();
        return conflict(
            format!(
                "session {session} waits for decisions on {}: send them first (POST /api/sessions/{session}/runs {{\"decisions\": [...]}}); run {holder}",
                calls.join("; ")
            ),
            json!({"run": holder, "status": "waiting", "pending": run.pending}),
        );
    }
    conflict(
        format!("session {session} has a run in progress: {holder}; try again when it ends, or cancel it (POST /api/runs/{holder}/cancel)"),
        json!({"run": holder, "status": status}),
    )
}

/// What a run is asked to do with a session.
pub(crate) enum Target {
    /// An existing session.
    Session(Uuid),
    /// A new session, saved with its first run.
    New(RunnableNetwork),
    /// A session only for this run (`store: false`): saved with it,
    /// removed when it ends.
    Ephemeral(RunnableNetwork),
}

/// A run that was queued.
pub(crate) struct Submitted {
    /// The run (for decisions on a waiting run: that run, queued again).
    pub(crate) run: Run,
    /// Its events after this one are this submission's.
    pub(crate) after: u64,
}

/// Starts a run of `user`'s session: reserves the session (409 naming its
/// active run; decisions resume a waiting run), loads it, lets `prepare`
/// change it (the input), saves it and queues the run. `id` names the
/// run (an idempotency key chose it) or a new id is made.
pub(crate) async fn submit(
    state: &Arc<AppState>,
    user: &str,
    target: Target,
    input: &str,
    id: Option<Uuid>,
    prepare: impl FnOnce(&RunnableNetwork) -> Result<(), Refusal>,
) -> Result<Submitted, Refusal> {
    let runs = &state.runs;
    let list = state.list(user).map_err(refuse)?;
    let session = match &target {
        Target::Session(id) => *id,
        Target::New(net) | Target::Ephemeral(net) => net.id(),
    };
    let mut run = Run::new(session, user, input);
    run.ephemeral = matches!(target, Target::Ephemeral(_));
    if let Some(id) = id {
        run.id = id;
    }
    // A server with room takes the run as it queues it (the dispatcher
    // does not stand between): it runs as soon as its input is saved.
    let room = if runs.draining.load(std::sync::atomic::Ordering::SeqCst) {
        None
    } else {
        runs.permits.clone().try_acquire_owned().ok()
    };
    let created = match &room {
        Some(_) => {
            runs.store
                .create_taking(&run, runs.settings.per_user, &runs.consumer)
                .await
        }
        None => runs
            .store
            .create(&run, runs.settings.per_user)
            .await
            .map(|()| None),
    };
    let mut mine = None;
    match created {
        Ok(Some(delivery)) => {
            if let Some(permit) = room {
                if delivery.run == run.id {
                    mine = Some((delivery, permit));
                } else {
                    // An older run was next in the queue: run it here.
                    let state = state.clone();
                    tokio::spawn(async move {
                        super::worker::execute(state, delivery).await;
                        drop(permit);
                    });
                }
            }
        }
        Ok(None) => {}
        Err(RunError::Busy { run: holder, .. }) => {
            if input == "decisions" {
                if let Ok(Some(waiting)) = runs.store.get(holder).await {
                    if waiting.status == RunStatus::Waiting && waiting.user == user {
                        return resume(state, &list, waiting, prepare).await;
                    }
                }
            }
            return Err(busy(state, session, holder).await);
        }
        Err(e @ RunError::UserFull { .. }) => return Err(too_many(e.to_string())),
        Err(e) => return Err(refuse(e)),
    }
    let prepared = async {
        let net = match target {
            Target::Session(id) => state.load(user, &list, id).await.map_err(refuse)?,
            Target::New(net) | Target::Ephemeral(net) => net,
        };
        prepare(&net)?;
        // The session names its run: a server that finds the run not
        // marked prepared (this one died) knows from the session whether
        // the input was saved.
        net.set_metadata(RUN_KEY, json!(run.id));
        list.save(&net).await.map_err(refuse)?;
        if mine.is_none() {
            runs.store.prepared(run.id).await.map_err(refuse)?;
            runs.wake(run.id);
        }
        Ok(())
    }
    .await;
    if let Err(refusal) = prepared {
        if let Err(e) = runs.store.abandon(&run).await {
            tracing::error!(run = %run.id, error = %e, "a refused run could not be forgotten");
        }
        if let Some((delivery, _permit)) = mine {
            let _ = runs.store.ack(&delivery).await;
        }
        return Err(refusal);
    }
    if let Some((delivery, permit)) = mine {
        // Taken when it was queued: it runs now, here; its record says it
        // is prepared when its worker writes it (a server that dies first
        // leaves a run that the session names: see `never_prepared`).
        let mut taken = run.clone();
        taken.status = RunStatus::Running;
        taken.prepared = true;
        taken.prepared_at = Some(chrono::Utc::now());
        let state = state.clone();
        tokio::spawn(async move {
            super::worker::execute_taken(state, delivery, taken).await;
            drop(permit);
        });
    }
    Ok(Submitted { run, after: 0 })
}

/// Decisions for a waiting run: the session gets them and the same run
/// is queued again.
async fn resume(
    state: &Arc<AppState>,
    list: &Arc<dyn lc_agent::NetworkList>,
    waiting: Run,
    prepare: impl FnOnce(&RunnableNetwork) -> Result<(), Refusal>,
) -> Result<Submitted, Refusal> {
    let runs = &state.runs;
    let net = state
        .load(&waiting.user, list, waiting.session)
        .await
        .map_err(refuse)?;
    prepare(&net)?;
    net.set_metadata(RUN_KEY, json!(waiting.id));
    list.save(&net).await.map_err(refuse)?;
    let after = runs.store.last_seq(waiting.id).await.map_err(refuse)?;
    // Queued again (and on the queue) in one step.
    let Some(run) = runs
        .store
        .transition(waiting.id, &[RunStatus::Waiting], RunStatus::Queued)
        .await
        .map_err(refuse)?
    else {
        return Err(busy(state, waiting.session, waiting.id).await);
    };
    Ok(Submitted { run, after })
}

/// Reads `text` as a new human turn of a session: refused while calls
/// wait for a decision (see the [module docs](self)).
pub(crate) fn add_message(net: &RunnableNetwork, text: &str) -> Result<(), Refusal> {
    refuse_while_waiting(net)?;
    let _scope = net.enter();
    lc_agent::HumanNode::new(text);
    Ok(())
}

/// 409 when calls of `net` wait for a decision.
pub(crate) fn refuse_while_waiting(net: &RunnableNetwork) -> Result<(), Refusal> {
    let pending = pending_approvals(net);
    if pending.is_empty() {
        return Ok(());
    }
    let calls: Vec<String> = pending
        .iter()
        .map(|p| {
            format!(
                "{} {} (node {})",
                p.tool_call.name, p.tool_call.arguments, p.node_id
            )
        })
        .collect();
    Err(conflict(
        format!(
            "session {} waits for decisions on {}: send them first (POST /api/sessions/{}/runs {{\"decisions\": [...]}})",
            net.id(),
            calls.join("; "),
            net.id()
        ),
        json!({"pending": pending.iter().map(pending_json).collect::<Vec<_>>()}),
    ))
}

/// One decision of a request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecisionIn {
    node_id: Uuid,
    decision: DecisionKind,
    /// The new arguments of an `edit`.
    #[serde(default)]
    arguments: Option<Value>,
    /// The reason of a `reject`, the result of a `respond`.
    #[serde(default)]
    message: Option<String>,
}

/// Writes `decisions` to the waiting calls of `net` (400 for a decision
/// that does not fit; nothing is saved then).
pub(crate) fn apply_decisions(
    net: &RunnableNetwork,
    decisions: Vec<DecisionIn>,
) -> Result<(), Refusal> {
    if decisions.is_empty() {
        return Err(refuse(ApiError::BadRequest(
            "`decisions` is empty".to_string(),
        )));
    }
    for d in decisions {
        let bad = |m: &str| refuse(ApiError::BadRequest(m.to_string()));
        let decision = match d.decision {
            DecisionKind::Approve => Decision::Approve,
            DecisionKind::Edit => Decision::Edit(
                d.arguments
                    .ok_or_else(|| bad("an `edit` needs `arguments`"))?,
            ),
            DecisionKind::Reject => {
                Decision::Reject(d.message.unwrap_or_else(|| "rejected".to_string()))
            }
            DecisionKind::Respond => Decision::Respond(
                d.message
                    .ok_or_else(|| bad("a `respond` needs `message`"))?,
            ),
        };
        decide(net, d.node_id, decision)
            .map_err(|e| refuse(ApiError::BadRequest(e.to_string())))?;
    }
    Ok(())
}

/// `POST /api/sessions/{id}/runs` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunIn {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    decisions: Option<Vec<DecisionIn>>,
    #[serde(default)]
    background: bool,
}

/// The name a session without one gets from its first message.
fn name_from(net: &RunnableNetwork, text: &str) {
    if net.name() == crate::sessions::DEFAULT_NAME {
        net.set_name(lc_agent_deepagent::titles::title_of(text));
    }
}

/// Starts a run of a message (the session API's `/messages`, and `/runs`).
pub(crate) async fn submit_message(
    state: &Arc<AppState>,
    user: &str,
    id: Uuid,
    content: String,
) -> Result<Submitted, Refusal> {
    if content.trim().is_empty() {
        return Err(refuse(ApiError::BadRequest(
            "`content` is empty".to_string(),
        )));
    }
    submit(state, user, Target::Session(id), "message", None, |net| {
        add_message(net, &content)?;
        name_from(net, &content);
        Ok(())
    })
    .await
}

/// Starts (or resumes) a run with decisions.
pub(crate) async fn submit_decisions(
    state: &Arc<AppState>,
    user: &str,
    id: Uuid,
    decisions: Vec<DecisionIn>,
) -> Result<Submitted, Refusal> {
    if decisions.is_empty() {
        return Err(refuse(ApiError::BadRequest(
            "`decisions` is empty".to_string(),
        )));
    }
    submit(state, user, Target::Session(id), "decisions", None, |net| {
        apply_decisions(net, decisions)
    })
    .await
}

pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
    Json(body): Json<RunIn>,
) -> Result<Response, Refusal> {
    let submitted = match (body.content, body.decisions) {
        (Some(content), None) => submit_message(&state, &user, id, content).await?,
        (None, Some(decisions)) => submit_decisions(&state, &user, id, decisions).await?,
        _ => {
            return Err(refuse(ApiError::BadRequest(
                "give either `content` (a message) or `decisions`".to_string(),
            )))
        }
    };
    if body.background {
        return Ok((StatusCode::ACCEPTED, Json(run_json(&submitted.run))).into_response());
    }
    Ok(events_sse(state, submitted.run.id, submitted.after).into_response())
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

/// A run as the API shows it: its usage priced (the built-in table and
/// the server's `prices.toml`).
pub(crate) fn run_json(run: &Run) -> Value {
    let mut value = json!(run);
    value["usage"] = crate::usage::priced_totals(&run.usage);
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
    let run = cancel_run(&state, run).await?;
    Ok((StatusCode::ACCEPTED, Json(run_json(&run))).into_response())
}

/// Cancels `run`: at once when it is queued or waiting, else asks the
/// server running it (this one, or another through the store).
pub(crate) async fn cancel_run(state: &Arc<AppState>, run: Run) -> Result<Run, ApiError> {
    let store = &state.runs.store;
    let id = run.id;
    for from in [RunStatus::Queued, RunStatus::Waiting] {
        if let Some(mut cancelled) = store.transition(id, &[from], RunStatus::Cancelled).await? {
            if from == RunStatus::Waiting {
                reject_waiting(state, &cancelled).await?;
            }
            cancelled.finished_at = Some(chrono::Utc::now());
            let seq = store.last_seq(id).await? + 1;
            let revision = match state.list(&run.user) {
                Ok(list) => list.stored_revision(run.session).await.ok().flatten(),
                Err(_) => None,
            };
            store
                .append(
                    id,
                    &[RunEvent {
                        seq,
                        event: "done".to_string(),
                        data: json!({"answer": "", "revision": revision, "stopped": true,
                            "pending_approvals": [], "run": id, "status": "cancelled"}),
                    }],
                )
                .await?;
            store.settle(&cancelled, state.runs.settings.keep).await?;
            state.runs.wake(id);
            return Ok(cancelled);
        }
    }
    store.request_cancel(id).await?;
    if let Some(local) = state.runs.local.lock().get(&id) {
        local.cancel.notify_one();
    }
    Ok(store.get(id).await?.unwrap_or(run))
}

/// A cancelled waiting run: its calls are rejected, so the session's
/// next turn finds them answered.
async fn reject_waiting(state: &Arc<AppState>, run: &Run) -> Result<(), ApiError> {
    let list = state.list(&run.user)?;
    let net = state.load(&run.user, &list, run.session).await?;
    for p in pending_approvals(&net) {
        decide(
            &net,
            p.node_id,
            Decision::Reject("the run was cancelled".to_string()),
        )
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    }
    list.save(&net).await?;
    Ok(())
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
    Ok(events_sse(state, id, after).into_response())
}

/// How often a reader looks for events another server wrote.
const POLL: Duration = Duration::from_millis(100);

/// How long an event stream waits for a session store it cannot read
/// before it ends with a 503.
const STORE_PATIENCE: Duration = Duration::from_secs(10);

/// The events of run `id` after `after`, as they come, until the run
/// ends or waits.
pub(crate) fn event_stream(
    state: Arc<AppState>,
    id: Uuid,
    after: u64,
) -> impl Stream<Item = RunEvent> + Send {
    let start = (state, after, VecDeque::<RunEvent>::new(), false, None);
    futures::stream::unfold(
        start,
        move |(state, mut after, mut buf, over, mut failing)| async move {
            loop {
                if let Some(event) = buf.pop_front() {
                    after = event.seq;
                    let mut done = false;
                    if buf.is_empty() && event.is_end() {
                        let status = state
                            .runs
                            .store
                            .get(id)
                            .await
                            .ok()
                            .flatten()
                            .map(|r| r.status);
                        done = !matches!(status, Some(RunStatus::Queued | RunStatus::Running));
                    }
                    return Some((event, (state, after, buf, done, failing)));
                }
                if over {
                    return None;
                }
                let next = {
                    let waker = state.runs.waker(id);
                    let notified = waker.notified();
                    tokio::pin!(notified);
                    notified.as_mut().enable();
                    next_events(&state, id, after, notified, &mut failing).await
                };
                match next {
                    Some(events) => buf.extend(events),
                    None => {
                        state.runs.forget_waker(id);
                        return None;
                    }
                }
            }
        },
    )
}

/// The events after `after` once there are some (`None`: the run is over
/// or waits, and there are none).
async fn next_events(
    state: &AppState,
    id: Uuid,
    after: u64,
    notified: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>,
    failing: &mut Option<tokio::time::Instant>,
) -> Option<Vec<RunEvent>> {
    let mut read = true;
    match state.runs.store.events(id, after, 256).await {
        Ok(events) if !events.is_empty() => {
            *failing = None;
            return Some(events);
        }
        Ok(_) => {}
        Err(e) => {
            read = false;
            tracing::warn!(run = %id, error = %e, "cannot read a run's events");
        }
    }
    let record = state.runs.store.get(id).await;
    if read || record.is_ok() {
        *failing = None;
    } else {
        // The store is gone: after a while the stream ends in its terms
        // (the run, if it still goes on, can be followed once it is back).
        let since = *failing.get_or_insert_with(tokio::time::Instant::now);
        if since.elapsed() >= STORE_PATIENCE {
            return Some(vec![RunEvent {
                seq: after,
                event: "error".to_string(),
                data: json!({"status": 503, "message": crate::error::STORE_UNAVAILABLE, "run": id}),
            }]);
        }
    }
    match record {
        Ok(None) => return None,
        Ok(Some(run)) if !matches!(run.status, RunStatus::Queued | RunStatus::Running) => {
            // Over (or waiting) and nothing new: one last look for events
            // written just before the status.
            let rest = state
                .runs
                .store
                .events(id, after, 256)
                .await
                .unwrap_or_default();
            return (!rest.is_empty()).then_some(rest);
        }
        _ => {}
    }
    let _ = tokio::time::timeout(POLL, notified).await;
    Some(Vec::new())
}

/// [`event_stream`] as SSE (`id:` is the sequence number).
pub(crate) fn events_sse(
    state: Arc<AppState>,
    id: Uuid,
    after: u64,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    use futures::StreamExt as _;
    let stream = event_stream(state, id, after).map(|e| {
        Ok(Event::default()
            .id(e.seq.to_string())
            .event(e.event)
            .data(e.data.to_string()))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
