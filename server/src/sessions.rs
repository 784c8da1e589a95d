//! The session API: list, create, show and delete a user's sessions, send
//! a message or decisions and watch the run as server-sent events.
//!
//! ```text
//!  GET    /api/sessions                 a page of SessionInfo (newest first)
//!  POST   /api/sessions {name?}         a new session (201)
//!  GET    /api/sessions/{id}            messages, Mermaid, files, todos, pending approvals
//!  DELETE /api/sessions/{id}            204 (404 when there is none)
//!  POST   /api/sessions/{id}/messages   {content}                       ─▶ SSE (see events.rs)
//!  POST   /api/sessions/{id}/approvals  {decisions: [{node_id, decision, arguments?, message?}]} ─▶ SSE
//! ```

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::IntoResponse;
use axum::Json;
use futures::Stream;
use lc_agent::RunnableNetwork;
use lc_agent::{revision_of, ListQuery};
use lc_agent_deepagent::approvals::{decide, pending_approvals, Decision, DecisionKind};
use lc_agent_deepagent::todos::todos_of;
use lc_agent_filesystem::Backend;
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::auth::User;
use crate::error::ApiError;
use crate::events::{event_json, pending_json};
use crate::run::{Item, Session};
use crate::state::AppState;

/// `?offset=&limit=` of the listing.
#[derive(Debug, Deserialize)]
pub(crate) struct Page {
    #[serde(default)]
    offset: usize,
    #[serde(default)]
    limit: Option<usize>,
}

pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Query(page): Query<Page>,
) -> Result<Json<Value>, ApiError> {
    let list = state.list(&user)?;
    let query = ListQuery::default()
        .offset(page.offset)
        .limit(page.limit.unwrap_or(50).min(500));
    let page = list.list(&query).await?;
    Ok(Json(json!({
        "sessions": page.sessions,
        "total": page.total,
        "errors": page.errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
    })))
}

/// `POST /api/sessions` body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewSession {
    #[serde(default)]
    name: Option<String>,
}

pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    User(user): User,
    body: Option<Json<NewSession>>,
) -> Result<impl IntoResponse, ApiError> {
    let name = body
        .and_then(|Json(b)| b.name)
        .unwrap_or_else(|| "New session".to_string());
    let session = Session::create(&state, &user, &name)?;
    session.commit().await?;
    Ok((StatusCode::CREATED, Json(view(&session.net))))
}

/// What the page shows of a session.
pub(crate) fn view(net: &RunnableNetwork) -> Value {
    let messages: Vec<Value> = net
        .nodes()
        .iter()
        .filter_map(|node| {
            let output = node.output()?;
            let mut m = serde_json::to_value(&*output).ok()?;
            m["node_id"] = json!(node.id());
            m["kind"] = json!(node.kind());
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
        "files": files,
        "todos": todos_of(net),
        "pending_approvals": pending_approvals(net).iter().map(pending_json).collect::<Vec<_>>(),
    })
}

pub(crate) async fn show(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
) -> Result<Json<Value>, ApiError> {
    let list = state.list(&user)?;
    let net = state.load(&user, &list, id).await?;
    let mut shown = view(&net);
    if state.has_directory() {
        // The file tools work in the user's directory: show its files.
        let (agent, _) = state.agent_for(&user, Some(&net))?;
        shown["files"] = directory_files(&*agent.backend_for(&net)).await;
    }
    Ok(Json(shown))
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
            let text = d
                .content
                .filter(|bytes| bytes.len() <= MAX_SHOWN_BYTES)
                .and_then(|bytes| String::from_utf8(bytes).ok());
            (d.path, json!({"content": text}))
        })
        .collect();
    Value::Object(files)
}

/// Files of a directory a session view lists.
pub const MAX_LISTED_FILES: usize = 200;
/// The largest file whose text a session view includes.
pub const MAX_SHOWN_BYTES: usize = 64 * 1024;

pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let list = state.list(&user)?;
    let _claim = state.claim(id, &list)?;
    if list.delete(id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(state.not_yours(&user, id).await)
    }
}

/// `POST /api/sessions/{id}/messages` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewMessage {
    content: String,
}

pub(crate) async fn message(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
    Json(body): Json<NewMessage>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    if body.content.trim().is_empty() {
        return Err(ApiError::BadRequest("`content` is empty".to_string()));
    }
    let session = Session::open(&state, &user, id).await?;
    session.human(&body.content);
    session.commit().await?;
    Ok(sse(session))
}

/// One decision of `POST /api/sessions/{id}/approvals`.
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
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    if body.decisions.is_empty() {
        return Err(ApiError::BadRequest("`decisions` is empty".to_string()));
    }
    let session = Session::open(&state, &user, id).await?;
    for d in body.decisions {
        let decision =
            match d.decision {
                DecisionKind::Approve => Decision::Approve,
                DecisionKind::Edit => Decision::Edit(d.arguments.ok_or_else(|| {
                    ApiError::BadRequest("an `edit` needs `arguments`".to_string())
                })?),
                DecisionKind::Reject => {
                    Decision::Reject(d.message.unwrap_or_else(|| "rejected".to_string()))
                }
                DecisionKind::Respond => Decision::Respond(d.message.ok_or_else(|| {
                    ApiError::BadRequest("a `respond` needs `message`".to_string())
                })?),
            };
        // A refused decision changes nothing: the loaded copy is dropped
        // unsaved.
        decide(&session.net, d.node_id, decision)
            .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    }
    session.commit().await?;
    Ok(sse(session))
}

/// The run's events as SSE, ending with `done` or `error`.
fn sse(session: Session) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let net = session.net.clone();
    let rx = session.stream();
    let stream = futures::stream::unfold((rx, net, false), |(mut rx, net, over)| async move {
        if over {
            return None;
        }
        loop {
            let item = rx.recv().await?;
            let (name, data, last) = match item {
                Item::Event(e) => match event_json(&net, &e) {
                    Some((name, data)) => (name, data, false),
                    None => continue,
                },
                Item::Approvals(pending) => (
                    "approval_needed",
                    json!({"pending": pending.iter().map(pending_json).collect::<Vec<_>>()}),
                    false,
                ),
                Item::End(end) => match end.error {
                    Some((status, message)) => (
                        "error",
                        json!({"message": message, "status": status, "revision": end.revision}),
                        true,
                    ),
                    None => (
                        "done",
                        json!({
                            "answer": end.answer,
                            "revision": end.revision,
                            "pending_approvals": end.pending.iter().map(pending_json).collect::<Vec<_>>(),
                        }),
                        true,
                    ),
                },
            };
            let event = Event::default().event(name).data(data.to_string());
            return Some((Ok(event), (rx, net, last)));
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
