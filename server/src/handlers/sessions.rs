//! The session API: list, create, show and delete a user's sessions, send
//! a message or decisions and watch the run as server-sent events.
//!
//! ```text
//!  GET    /api/sessions?offset=&limit=&q=  a page of SessionInfo (newest first; q: names containing it)
//!  POST   /api/sessions {name?, mode?}  a new session (201), named by its first message unless named
//!  GET    /api/sessions/{id}?since=&offset=&limit=&file=
//!                                       messages (a page: the last 200 unless offset/limit say;
//!                                       messages_total, messages_offset; texts over 64 KiB clipped,
//!                                       `clipped: true`, the node whole at .../nodes/{node_id}),
//!                                       graph, Mermaid, files (text up to 64 KiB each and 1 MiB in
//!                                       all, else `content: null, omitted: true` with `bytes`;
//!                                       `file=PATH` adds that one whole), todos, approvals, usage;
//!                                       `since=REV` answers {unchanged: true} while at REV
//!  PATCH  /api/sessions/{id} {name?, mode?}  renames it, sets its permission mode (409 while it
//!                                       runs; 403 for `bypass` unless the server allows it, modes.rs)
//!  DELETE /api/sessions/{id}            204 (404 when there is none); its run is cancelled first
//!  GET    /api/sessions/{id}/nodes/{node_id}   one node: input, output, metadata (any depth)
//!  POST   /api/sessions/{id}/messages   {content, parts?, mode?}        ─▶ SSE (see events.rs);
//!                                       while the session's run goes on: 202 {id, mode, run,
//!                                       status}, the message joins it (mode inject (default),
//!                                       queue, interrupt: runs/steer.rs); `inbox` lists those waiting
//!                                       parts: text and images (handlers/parts.rs; 400 naming
//!                                       `parts[j]`), kept in the session exactly
//!  POST   /api/sessions/{id}/approvals  {decisions: [{node_id, decision, arguments?, message?}]} ─▶ SSE
//!  POST   /api/sessions/{id}/continue   asks a cut-off answer to go on  ─▶ SSE (400 when none is cut off)
//!  POST   /api/sessions/{id}/input/{input} {action, content?}  answers an MCP server's request
//!                                       for input (handlers/input.rs); `pending_input` lists those open
//!  POST   /api/sessions/{id}/stop       cancels the session's run, on any server (202; 409 when none)
//! ```
//!
//! Messages, decisions and continues are runs ([`Runs::submit`]): the SSE
//! streams are the run's events (`id:` is their number, so
//! `GET /api/runs/{run}/events` with `Last-Event-ID` picks up where a
//! dropped stream ended). A stopped run ends its stream with
//! `stopped {removed}` then `done` (`"stopped": true`); see runs/worker.rs
//! for what a stop keeps.
//!
//! [`Runs::submit`]: crate::runs::Runs

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use lc_agent::{revision_of, ListQuery, UsageExt};
use lc_agent::{NetworkNode, RunnableNetwork, ToolNode};
use lc_agent_deepagent::{pending_approvals, permission_mode, todos_of, PermissionMode};
use lc_agent_filesystem::Backend;
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::graph::{graph_json, node_json};
use super::parts::read_parts;
use super::sse::run_sse;
use crate::auth::User;
use crate::body::OptionalJson;
use crate::error::ApiError;
use crate::hub::DEFAULT_NAME;
use crate::runs::{DecisionIn, Input, PendingCall, Refused, Target};
use crate::state::AppState;

/// `?offset=&limit=&q=` of the listing.
#[derive(Debug, Deserialize)]
pub(crate) struct Page {
    #[serde(default)]
    offset: usize,
    #[serde(default)]
    limit: Option<usize>,
    /// Only sessions whose name contains this (any case).
    #[serde(default)]
    q: Option<String>,
}

/// Sessions read per store request while searching.
const SEARCH_BATCH: usize = 500;

pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Query(page): Query<Page>,
) -> Result<Json<Value>, ApiError> {
    let list = state.hub.list(&user)?;
    let limit = page.limit.unwrap_or(50).min(500);
    let needle = page
        .q
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(str::to_lowercase);
    let Some(needle) = needle else {
        let query = ListQuery {
            offset: page.offset,
            limit,
            ..ListQuery::default()
        };
        let page = list.list(&query).await?;
        return Ok(Json(json!({
            "sessions": page.sessions,
            "total": page.total,
            "errors": page.errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
        })));
    };
    // A search reads the listing (names are in it, networks are not
    // loaded) and pages through the matches.
    let mut matches = Vec::new();
    let mut errors = Vec::new();
    let mut offset = 0;
    loop {
        let batch = list
            .list(&ListQuery {
                offset,
                limit: SEARCH_BATCH,
                ..ListQuery::default()
            })
            .await?;
        let read = batch.sessions.len();
        errors.extend(batch.errors.iter().map(ToString::to_string));
        matches.extend(
            batch
                .sessions
                .into_iter()
                .filter(|s| s.name.to_lowercase().contains(&needle)),
        );
        offset += read;
        if read == 0 || offset >= batch.total {
            break;
        }
    }
    let total = matches.len();
    let sessions: Vec<_> = matches.into_iter().skip(page.offset).take(limit).collect();
    Ok(Json(
        json!({"sessions": sessions, "total": total, "errors": errors}),
    ))
}

/// `POST /api/sessions` body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewSession {
    #[serde(default)]
    name: Option<String>,
    /// Its permission mode (default: the server's).
    #[serde(default)]
    mode: Option<PermissionMode>,
}

pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    User(user): User,
    OptionalJson(body): OptionalJson<NewSession>,
) -> Result<impl IntoResponse, ApiError> {
    let name = body
        .name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| DEFAULT_NAME.to_string());
    let list = state.hub.list(&user)?;
    let net = state.hub.new_session(&user, &name).await?;
    if let Some(mode) = body.mode {
        crate::modes::set(&state.config, &net, mode)?;
    }
    list.save(&net).await?;
    Ok((StatusCode::CREATED, Json(view(&net))))
}

/// What the page shows of a session.
pub(crate) fn view(net: &RunnableNetwork) -> Value {
    let prices = crate::usage::prices_for(net);
    let mut shown = view_with(net, &prices);
    // The session's totals (sub-agents included), priced.
    shown["usage"] = net.usage().priced(&prices);
    // A fork: its copied nodes' usage, counted in its origin (not above).
    let inherited = net.inherited_usage();
    if !inherited.is_empty() {
        shown["usage_inherited"] = inherited.priced(&prices);
    }
    shown["mode"] = json!(permission_mode(net));
    shown
}

fn view_with(net: &RunnableNetwork, prices: &lc_agent::Prices) -> Value {
    let off = super::branches::off_branch(net);
    let messages: Vec<Value> = net
        .nodes()
        .iter()
        .filter(|node| !off.contains(&node.id()))
        .filter_map(|node| {
            // A question its run has not reached yet (the run saves it
            // before it starts; a page reloaded meanwhile shows it).
            let output = node.output().or_else(|| {
                node.downcast::<lc_agent::HumanNode>().map(|h| {
                    std::sync::Arc::new(lc_agent::Message::Human {
                        content: h.text.clone(),
                        parts: h.parts.clone(),
                    })
                })
            })?;
            let mut m = serde_json::to_value(&*output).ok()?;
            m["node_id"] = json!(node.id());
            m["kind"] = json!(node.kind());
            if node.kind() == lc_agent::HumanNode::KIND {
                // Where an edit or a retry goes: below the same parent.
                m["parent"] = json!(node.parents().first());
                let branches = super::branches::alternatives(net, node);
                if !branches.is_empty() {
                    m["branches"] = Value::Array(branches);
                }
            }
            let meta = node.metadata();
            for key in SHOWN_METADATA {
                if let Some(v) = meta.get(*key) {
                    m[*key] = v.clone();
                }
            }
            if let Some(cost) = turn_cost(&meta, prices) {
                m["cost_usd"] = json!(cost);
            }
            if let Some(inner) = node.downcast::<NetworkNode>().map(|n| n.network().clone()) {
                // A sub-agent's work: shown under the call it serves.
                m["inner"] = view_with(&inner, prices)["messages"].take();
                m["usage"] = inner.usage().priced(prices);
                m["serves"] = json!(net
                    .children(node.id())
                    .iter()
                    .find_map(|c| c.downcast::<ToolNode>().map(|t| t.tool_call.id.clone())));
            }
            Some(m)
        })
        .collect();
    let files: serde_json::Map<String, Value> = net
        .files()
        .into_iter()
        .map(|(path, data)| {
            (
                path,
                json!({"content": data.content.join("\n"), "modified_at": data.modified_at}),
            )
        })
        .collect();
    json!({
        "id": net.id(),
        "name": net.name(),
        "revision": revision_of(net),
        "messages": messages,
        "mermaid": net.to_mermaid(),
        "graph": graph_json(net, &off),
        "files": files,
        "todos": todos_of(net),
        "pending_approvals": pending_approvals(net).iter().map(PendingCall::from).collect::<Vec<_>>(),
    })
}

/// `GET /api/sessions/{id}` query.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShowQuery {
    /// The revision the caller has: when the stored session is still at
    /// it, the answer is `{"id", "revision", "unchanged": true}` and the
    /// session is not even read (a page polling a large session).
    #[serde(default)]
    since: Option<u64>,
    /// The first message of the page (default: the last [`PAGE`]).
    #[serde(default)]
    offset: Option<usize>,
    /// Messages in the page (default and at most [`PAGE`]).
    #[serde(default)]
    limit: Option<usize>,
    /// One file whose whole text the view carries (up to the session's
    /// per-file cap), whatever its size.
    #[serde(default)]
    file: Option<String>,
    /// The most graph nodes in the view, the latest (default
    /// [`GRAPH_NODES`], at most [`MAX_GRAPH_NODES`]): the page's "show
    /// earlier" asks for more.
    #[serde(default)]
    graph: Option<usize>,
}

/// Graph nodes in a view (the latest), unless `?graph=` says.
const GRAPH_NODES: usize = 300;

/// The most graph nodes one view carries.
const MAX_GRAPH_NODES: usize = 5_000;

/// Messages in one page of the view (the latest, unless `offset` says).
const PAGE: usize = 200;

/// The longest text of one message (its content, a tool call's
/// arguments) in the view; the whole node is `GET .../nodes/{node_id}`.
const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// The file texts one view carries in all; the files past it are listed
/// with their size only (`?file=` fetches one).
const MAX_VIEW_FILE_BYTES: usize = 1024 * 1024;

/// Bounds a view's graph to its latest `limit` nodes (`graph_total` says
/// how many there are; a parent outside them is left to the reader):
/// a long session's graph stays drawable and its view small. The
/// `mermaid` text of a graph cut so is left out (`null`).
fn bound_graph(shown: &mut Value, limit: usize) {
    let limit = limit.clamp(1, MAX_GRAPH_NODES);
    let Some(Value::Array(nodes)) = shown.pointer_mut("/graph/nodes") else {
        return;
    };
    let total = nodes.len();
    if total > limit {
        nodes.drain(..total - limit);
        shown["mermaid"] = Value::Null;
    }
    shown["graph_total"] = json!(total);
}

/// Bounds a view: one page of messages (`messages_total`,
/// `messages_offset` say where it is), each message's long texts clipped
/// (`clipped: true`), file texts within [`MAX_VIEW_FILE_BYTES`] (the
/// others `content: null`, `omitted: true`, with their `bytes`), and the
/// file `wanted` whole.
fn bound_view(shown: &mut Value, query: &ShowQuery, wanted: Option<&Value>) {
    bound_graph(shown, query.graph.unwrap_or(GRAPH_NODES));
    if let Some(Value::Array(messages)) = shown.get_mut("messages") {
        let total = messages.len();
        let limit = query.limit.unwrap_or(PAGE).clamp(1, PAGE);
        let offset = query
            .offset
            .unwrap_or(total.saturating_sub(limit))
            .min(total);
        let mut page: Vec<Value> = messages.drain(..).skip(offset).take(limit).collect();
        for message in &mut page {
            clip_message(message);
        }
        *messages = page;
        shown["messages_total"] = json!(total);
        shown["messages_offset"] = json!(offset);
    }
    if let Some(Value::Object(files)) = shown.get_mut("files") {
        let mut budget = MAX_VIEW_FILE_BYTES;
        for (path, file) in files.iter_mut() {
            let Some(text) = file.get("content").and_then(Value::as_str) else {
                continue;
            };
            let bytes = text.len();
            file["bytes"] = json!(bytes);
            if query.file.as_deref() == Some(path.as_str()) {
                continue;
            }
            if bytes > MAX_SHOWN_BYTES || bytes > budget {
                file["content"] = Value::Null;
                file["omitted"] = json!(true);
            } else {
                budget -= bytes;
            }
        }
        if let (Some(path), Some(wanted)) = (&query.file, wanted) {
            files.insert(path.clone(), wanted.clone());
        }
    }
}

/// Clips a message's content and its tool calls' arguments (and a
/// sub-agent's messages) to [`MAX_MESSAGE_BYTES`].
fn clip_message(message: &mut Value) {
    let mut clipped = false;
    let mut clip = |v: &mut Value| {
        if let Some(text) = v.as_str().filter(|t| t.len() > MAX_MESSAGE_BYTES) {
            let mut end = MAX_MESSAGE_BYTES;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            *v = json!(format!("{}…", &text[..end]));
            clipped = true;
        }
    };
    if let Some(content) = message.get_mut("content") {
        clip(content);
    }
    if let Some(Value::Array(calls)) = message.get_mut("tool_calls") {
        for call in calls {
            if let Some(arguments) = call.get_mut("arguments") {
                clip(arguments);
            }
        }
    }
    if clipped {
        message["clipped"] = json!(true);
    }
    if let Some(Value::Array(inner)) = message.get_mut("inner") {
        for m in inner {
            clip_message(m);
        }
    }
}

pub(crate) async fn show(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
    Query(query): Query<ShowQuery>,
) -> Result<Json<Value>, ApiError> {
    let list = state.hub.list(&user)?;
    if let Some(since) = query.since {
        // Only the user's own list is asked: another user's session is
        // never found here (the full path below says 403 or 404).
        if list.stored_revision(id).await? == Some(since) {
            let mut unchanged = json!({"id": id, "revision": since, "unchanged": true});
            // A request for input comes during a run, with no new revision.
            let open = state.runs.pending_input(&user, id).await;
            if !open.is_empty() {
                unchanged["pending_input"] = json!(open);
            }
            // So are messages sent while it runs.
            let inbox = state.runs.store.inbox(id).await?;
            if !inbox.is_empty() {
                unchanged["inbox"] = json!(inbox);
            }
            return Ok(Json(unchanged));
        }
    }
    let net = state.hub.load(&list, id).await?;
    let mut shown = view(&net);
    let mut wanted = None;
    if state.hub.has_directory() {
        // The file tools work in the user's directory: show its files.
        let (agent, _) = state.hub.agent_for(&user, Some(&net)).await?;
        let backend = agent.backend_for(&net);
        shown["files"] = directory_files(&*backend).await;
        if let Some(path) = &query.file {
            wanted = directory_file(&*backend, path).await;
        }
    } else if let Some(path) = &query.file {
        wanted = shown["files"].get(path).cloned();
    }
    bound_view(&mut shown, &query, wanted.as_ref());
    shown["pending_input"] = json!(state.runs.pending_input(&user, id).await);
    // Messages sent while its run goes on, not read by it yet.
    shown["inbox"] = json!(state.runs.store.inbox(id).await?);
    Ok(Json(shown))
}

/// One file of a directory backend, whole when it is text (up to the
/// session's per-file cap, which the backend enforces on writes).
async fn directory_file(backend: &dyn Backend, path: &str) -> Option<Value> {
    let d = backend
        .download_files(vec![path.to_string()])
        .await
        .into_iter()
        .next()?;
    let bytes = d.content?;
    let size = bytes.len();
    let text = String::from_utf8(bytes).ok();
    Some(json!({"content": text, "bytes": size}))
}

/// Files listed from a directory backend (the first [`MAX_LISTED_FILES`]);
/// the text of those up to [`MAX_SHOWN_BYTES`], `null` for the others.
async fn directory_files(backend: &dyn Backend) -> Value {
    let entries = backend.ls("/", true).await.unwrap_or_default();
    let paths: Vec<String> = entries
        .into_iter()
        .filter(|e| !e.is_dir)
        .map(|e| e.path)
        .take(MAX_LISTED_FILES)
        .collect();
    let downloads = backend.download_files(paths).await;
    let files: serde_json::Map<String, Value> = downloads
        .into_iter()
        .map(|d| {
            let size = d.content.as_ref().map(Vec::len);
            let omitted = size.is_some_and(|n| n > MAX_SHOWN_BYTES);
            let text = d
                .content
                .filter(|bytes| bytes.len() <= MAX_SHOWN_BYTES)
                .and_then(|bytes| String::from_utf8(bytes).ok());
            let mut file = json!({"content": text, "bytes": size});
            if omitted {
                file["omitted"] = json!(true);
            }
            (d.path, file)
        })
        .collect();
    Value::Object(files)
}

/// What one model call cost, when its model has a price.
fn turn_cost(meta: &serde_json::Map<String, Value>, prices: &lc_agent::Prices) -> Option<f64> {
    let usage: lc_agent::Usage =
        serde_json::from_value(meta.get(lc_agent::TOKEN_USAGE_KEY)?.clone()).ok()?;
    let model = meta
        .get(lc_agent::RESPONSE_MODEL_KEY)
        .or_else(|| meta.get("chat_model_name"))
        .and_then(Value::as_str)?;
    let mut counts = lc_agent::TokenCounts::default();
    counts += &usage;
    prices.of(model).map(|p| p.cost(&counts))
}

/// The node metadata a message of the view carries: the model, its token
/// usage, whether the answer was cut off or empty, a failure, and a tool
/// call's approval.
const SHOWN_METADATA: &[&str] = &[
    "chat_model_name",
    "response_model",
    "token_usage",
    "finish_reason",
    "cut_off",
    "empty_answer",
    "error",
    // A tool call's approval and its decision (`responded`: a person
    // wrote the result instead of running the call).
    "approval",
];

/// `PATCH /api/sessions/{id}` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Rename {
    #[serde(default)]
    name: Option<String>,
    /// A new permission mode (`modes.rs`).
    #[serde(default)]
    mode: Option<PermissionMode>,
}

pub(crate) async fn rename(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
    Json(body): Json<Rename>,
) -> Result<Json<Value>, ApiError> {
    if body.name.is_none() && body.mode.is_none() {
        return Err(ApiError::BadRequest(
            "give a `name` or a `mode` to change".to_string(),
        ));
    }
    let name = body.name.as_deref().map(str::trim);
    if name.is_some_and(str::is_empty) {
        return Err(ApiError::BadRequest("`name` is empty".to_string()));
    }
    if name.is_some_and(|name| name.chars().count() > MAX_NAME_CHARS) {
        return Err(ApiError::BadRequest(format!(
            "`name` is longer than {MAX_NAME_CHARS} characters"
        )));
    }
    let list = state.hub.list(&user)?;
    let _claim = state.hub.claim_owned(id, &list).await?;
    let net = state.hub.load(&list, id).await?;
    if let Some(mode) = body.mode {
        crate::modes::set(&state.config, &net, mode)?;
    }
    if let Some(name) = name {
        net.set_name(name);
    }
    let saved = list.save(&net).await?;
    Ok(Json(json!({
        "id": id, "name": net.name(), "revision": saved.revision,
        "mode": permission_mode(&net),
    })))
}

/// The longest name a rename accepts.
const MAX_NAME_CHARS: usize = 200;

pub(crate) async fn node(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path((id, node_id)): Path<(Uuid, Uuid)>,
) -> Result<Json<Value>, ApiError> {
    let list = state.hub.list(&user)?;
    let net = state.hub.load(&list, id).await?;
    node_json(&net, node_id)
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("session {id} has no node {node_id}")))
}

pub(crate) async fn stop(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
) -> Result<impl IntoResponse, ApiError> {
    let list = state.hub.list(&user)?;
    state.hub.owned(&list, id).await?;
    // The session's active run, on whichever server runs it.
    let active = state.runs.store.active_of(id).await?;
    let run = match active {
        Some(run) => state.runs.store.get(run).await?,
        None => None,
    };
    match run {
        Some(run) if run.user == user && !run.status.is_final() => {
            let run = state.runs.cancel(run).await?;
            Ok((
                StatusCode::ACCEPTED,
                Json(json!({"stopping": true, "run": run.id})),
            ))
        }
        _ => Err(ApiError::Conflict(format!(
            "no run of session {id} is going on"
        ))),
    }
}

pub(crate) async fn continue_cut_off(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
) -> Result<Response, Refused> {
    run(state, &user, id, Input::Continue).await
}

/// Starts a run of session `id` with `input` and streams it.
async fn run(
    state: Arc<AppState>,
    user: &str,
    id: Uuid,
    input: Input,
) -> Result<Response, Refused> {
    let submitted = state
        .runs
        .submit(user, Target::Session(id), input, None)
        .await?;
    if let Some(steered) = super::runs::steered(&submitted) {
        return Ok(steered);
    }
    Ok(run_sse(state.runs.clone(), submitted.run.id, submitted.after).into_response())
}

/// Files of a directory a session view lists.
const MAX_LISTED_FILES: usize = 200;
/// The largest file whose text a session view includes.
const MAX_SHOWN_BYTES: usize = 64 * 1024;

pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let list = state.hub.list(&user)?;
    state.hub.owned(&list, id).await?;
    // The session's run goes with it: cancelled (at once when it is
    // queued or waiting for a decision; a running one is asked to stop,
    // and the delete waits for it a moment).
    if let Some(active) = state.runs.store.active_of(id).await?
        && let Some(run) = state.runs.store.get(active).await?
        && run.user == user
        && !run.status.is_final()
    {
        state.runs.cancel(run).await?;
    }
    let _claim = state
        .hub
        .claim_within(id, &list, std::time::Duration::from_secs(5))
        .await?;
    if list.delete(id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("session {id} not found")))
    }
}

/// `POST /api/sessions/{id}/messages` body: the text, and the parts after
/// it (images; see parts.rs). A message may be only an image.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewMessage {
    #[serde(default)]
    content: String,
    #[serde(default)]
    parts: Option<Value>,
    /// How it joins the session's run when one goes on (steer.rs).
    #[serde(default)]
    mode: lc_agent::SteerMode,
}

pub(crate) async fn message(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
    Json(body): Json<NewMessage>,
) -> Result<Response, Refused> {
    let parts = read_parts(body.parts.as_ref())?;
    run(
        state,
        &user,
        id,
        Input::Message(body.content, parts, Some(body.mode)),
    )
    .await
}

/// `POST /api/sessions/{id}/approvals` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Decisions {
    decisions: Vec<DecisionIn>,
}

pub(crate) async fn approvals(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
    Json(body): Json<Decisions>,
) -> Result<Response, Refused> {
    run(state, &user, id, Input::Decisions(body.decisions)).await
}
