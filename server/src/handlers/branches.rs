//! Time travel on the API: fork, rewind and diff a session.
//!
//! ```text
//! POST /api/sessions/{id}/fork     {"node": ID}                      201 the new session's id
//! POST /api/sessions/{id}/rewind   {"node": ID|null, "what": "conversation"|"files"|"both"}
//!                                  the files restored and those changed outside (kept)
//! GET  /api/sessions/{a}/diff/{b}  from where the current branches part: per side the
//!                                  messages, tool calls, files changed and tokens
//! ```
//!
//! Another user's session is refused as everywhere else (`Hub::load`).
//! Files are rewound in the session's workspace: its own files, or the
//! user's directory when the server works in one.

use std::collections::HashSet;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use lc_agent::{NodeId, NodeRef, RunnableNetwork, TOKEN_USAGE_KEY};
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::auth::User;
use crate::error::ApiError;
use crate::state::AppState;

/// `POST /api/sessions/{id}/fork` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForkAt {
    node: NodeId,
}

pub(crate) async fn fork(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
    Json(body): Json<ForkAt>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let list = state.hub.list(&user)?;
    let net = state.hub.load(&user, &list, id).await?;
    let fork = net
        .fork_at(body.node)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    list.save(&fork).await?;
    Ok((
        StatusCode::CREATED,
        Json(
            json!({"id": fork.id(), "forked_from": {"session": id, "node": body.node}, "nodes": fork.len()}),
        ),
    ))
}

/// What a rewind restores.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum What {
    /// The conversation only.
    Conversation,
    /// The files only.
    Files,
    #[default]
    /// Both.
    Both,
}

/// `POST /api/sessions/{id}/rewind` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RewindTo {
    node: Option<NodeId>,
    #[serde(default)]
    what: What,
}

pub(crate) async fn rewind(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
    Json(body): Json<RewindTo>,
) -> Result<Json<Value>, ApiError> {
    let list = state.hub.list(&user)?;
    let _claim = state.hub.claim(id, &list)?;
    let net = state.hub.load(&user, &list, id).await?;
    if let Some(node) = body.node
        && net.node(node).is_none()
    {
        return Err(ApiError::BadRequest(format!(
            "session {id} has no node {node}"
        )));
    }
    let mut files = Value::Null;
    if body.what != What::Conversation {
        let (agent, _) = state.hub.agent_for(&user, Some(&net))?;
        let backend = agent.backend_for(&net);
        let report = lc_agent_filesystem::rewind_files(&net, &*backend, body.node)
            .await
            .map_err(|e| ApiError::BadRequest(e.to_string()))?;
        files = serde_json::to_value(report).unwrap_or_default();
    }
    if body.what != What::Files {
        net.rewind_to(body.node)
            .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    }
    let saved = list.save(&net).await?;
    Ok(Json(
        json!({"id": id, "node": body.node, "files": files, "revision": saved.revision}),
    ))
}

pub(crate) async fn diff(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path((a, b)): Path<(Uuid, Uuid)>,
) -> Result<Json<Value>, ApiError> {
    let list = state.hub.list(&user)?;
    let a = state.hub.load(&user, &list, a).await?;
    let b = state.hub.load(&user, &list, b).await?;
    let (path_a, path_b) = (branch(&a), branch(&b));
    let shared = path_a
        .iter()
        .zip(&path_b)
        .take_while(|(x, y)| x.id() == y.id())
        .count();
    let last = shared
        .checked_sub(1)
        .and_then(|i| path_a.get(i))
        .map(NodeRef::id);
    Ok(Json(json!({
        "shared": {"nodes": shared, "last": last},
        "a": side(&a, &path_a[shared..]),
        "b": side(&b, &path_b[shared..]),
    })))
}

/// The nodes from a root to the current leaf (first parents).
fn branch(net: &RunnableNetwork) -> Vec<NodeRef> {
    let mut path = Vec::new();
    let mut seen = HashSet::new();
    let mut at = net.current_leaf();
    while let Some(node) = at {
        if !seen.insert(node.id()) {
            break;
        }
        at = node.parents().first().and_then(|p| net.node(*p));
        path.push(node);
    }
    path.reverse();
    path
}

fn side(net: &RunnableNetwork, nodes: &[NodeRef]) -> Value {
    let mut messages = Vec::new();
    let mut calls = Vec::new();
    let mut files: Vec<String> = Vec::new();
    let mut tokens = 0u64;
    for node in nodes {
        if let Some(message) = node.output() {
            messages
                .push(json!({"node": node.id(), "role": message.role(), "text": message.text()}));
            calls.extend(message.tool_calls().iter().map(|c| c.name.clone()));
        }
        let meta = node.metadata();
        if let Some(Value::Array(changes)) = meta.get("file_changes") {
            for path in changes.iter().filter_map(|c| c.get("path")?.as_str()) {
                if !files.iter().any(|f| f == path) {
                    files.push(path.to_string());
                }
            }
        }
        tokens += meta
            .get(TOKEN_USAGE_KEY)
            .and_then(|u| u.get("total_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
    }
    json!({"id": net.id(), "nodes": nodes.len(), "messages": messages, "tool_calls": calls, "files_changed": files, "tokens": tokens})
}
