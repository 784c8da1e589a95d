//! Time travel on the API: fork, rewind and diff a session.
//!
//! ```text
//! POST /api/sessions/{id}/fork     {"node": ID}                      201 the new session's id
//! POST /api/sessions/{id}/rewind   {"node": ID|null, "what": "conversation"|"files"|"both"}
//!                                  the files restored and those changed outside (kept);
//!                                  in a directory workspace from the turn records (the
//!                                  shell's changes too)
//! POST /api/sessions/{id}/redo     the last rewind taken back (until the next turn)
//! GET  /api/sessions/{a}/diff/{b}  from where the current branches part: per side the
//!                                  messages, tool calls, files changed and tokens
//! ```
//!
//! Switching between branches is a rewind of the conversation to the
//! leaf of the branch to show (`{"node": leaf, "what": "conversation"}`):
//! the current leaf is where the next message goes, so no endpoint of its
//! own. The session view (`GET /api/sessions/{id}`) shows the current
//! branch's messages; a human message said differently carries
//! `branches: [{node, leaf}]` (see [`alternatives`]), and the graph marks
//! the nodes of other branches `off_branch` ([`off_branch`]).
//!
//! Another user's session is refused as everywhere else (`Hub::load`).
//! Files are rewound in the session's workspace: its own files, or the
//! user's directory when the server works in one.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use lc_agent::{HumanNode, NodeId, NodeRef, RunnableNetwork, TimeTravelExt};
use lc_agent_filesystem::BranchSide;
use lc_agent_filesystem::RewindWhat;
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
    let net = state.hub.load(&list, id).await?;
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

/// `POST /api/sessions/{id}/rewind` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RewindTo {
    node: Option<NodeId>,
    #[serde(default)]
    what: RewindWhat,
}

pub(crate) async fn rewind(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
    Json(body): Json<RewindTo>,
) -> Result<Json<Value>, ApiError> {
    let list = state.hub.list(&user)?;
    let _claim = state.hub.claim_owned(id, &list).await?;
    let net = state.hub.load(&list, id).await?;
    if let Some(node) = body.node
        && net.node(node).is_none()
    {
        return Err(ApiError::BadRequest(format!(
            "session {id} has no node {node}"
        )));
    }
    let (agent, _) = state.hub.agent_for(&user, Some(&net)).await?;
    let backend = agent.backend_for(&net);
    let report = lc_agent_filesystem::rewind(
        &net,
        agent.workspace_history(),
        &*backend,
        body.node,
        body.what,
    )
    .await
    .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let saved = list.save(&net).await?;
    Ok(Json(json!({
        "id": id,
        "node": body.node,
        "files": report.files.map_or(Value::Null, |f| serde_json::to_value(f).unwrap_or_default()),
        "source": report.source,
        "revision": saved.revision,
    })))
}

pub(crate) async fn redo(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path(id): Path<Uuid>,
) -> Result<Json<Value>, ApiError> {
    let list = state.hub.list(&user)?;
    let _claim = state.hub.claim_owned(id, &list).await?;
    let net = state.hub.load(&list, id).await?;
    let (agent, _) = state.hub.agent_for(&user, Some(&net)).await?;
    let report = lc_agent_filesystem::redo(&net, agent.workspace_history())
        .await
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let saved = list.save(&net).await?;
    Ok(Json(json!({
        "id": id,
        "what": report.what,
        "node": report.node,
        "files": report.files.map_or(Value::Null, |f| serde_json::to_value(f).unwrap_or_default()),
        "revision": saved.revision,
    })))
}

pub(crate) async fn diff(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path((a, b)): Path<(Uuid, Uuid)>,
) -> Result<Json<Value>, ApiError> {
    let list = state.hub.list(&user)?;
    let a = state.hub.load(&list, a).await?;
    let b = state.hub.load(&list, b).await?;
    let diff = lc_agent_filesystem::diff_branches(&a, &b);
    Ok(Json(json!({
        "shared": {"nodes": diff.shared, "last": diff.last_shared},
        "a": side(&a, &diff.a),
        "b": side(&b, &diff.b),
    })))
}

fn side(net: &RunnableNetwork, side: &BranchSide) -> Value {
    let messages: Vec<Value> = side
        .nodes
        .iter()
        .filter_map(|node| {
            let message = node.output()?;
            Some(json!({"node": node.id(), "role": message.role(), "text": message.text()}))
        })
        .collect();
    json!({"id": net.id(), "nodes": side.nodes.len(), "messages": messages, "tool_calls": side.tool_calls, "files_changed": side.files_changed, "tokens": side.tokens})
}

/// The nodes of turns that are not on the current branch: a human message
/// that is not an ancestor of the current leaf, and everything below it.
/// The page shows the current branch's messages and dims the others in
/// the graph.
pub(crate) fn off_branch(net: &RunnableNetwork) -> HashSet<NodeId> {
    let nodes = net.nodes();
    let by_id: HashMap<NodeId, &NodeRef> = nodes.iter().map(|n| (n.id(), n)).collect();
    let mut on = HashSet::new();
    let mut stack: Vec<NodeId> = net.current_leaf().map(|n| n.id()).into_iter().collect();
    while let Some(id) = stack.pop() {
        if on.insert(id)
            && let Some(node) = by_id.get(&id)
        {
            stack.extend(node.parents());
        }
    }
    let mut off = HashSet::new();
    for node in &nodes {
        if (node.kind() == HumanNode::KIND && !on.contains(&node.id()))
            || node.parents().iter().any(|p| off.contains(p))
        {
            off.insert(node.id());
        }
    }
    off
}

/// The messages said in place of a human message `human` (its siblings
/// of the same kind under the same parent, itself included, oldest
/// first), each with the leaf its branch ends at (the newest node below
/// it with no children): what the page's ‹ › switch between. Empty when
/// the message was never said differently.
pub(crate) fn alternatives(net: &RunnableNetwork, human: &NodeRef) -> Vec<Value> {
    let parents = human.parents();
    let siblings: Vec<NodeRef> = match parents.first() {
        Some(p) => net.children(*p),
        None => net
            .nodes()
            .into_iter()
            .filter(|n| n.parents().is_empty())
            .collect(),
    }
    .into_iter()
    .filter(|n| n.kind() == HumanNode::KIND && n.parents() == parents)
    .collect();
    if siblings.len() < 2 {
        return Vec::new();
    }
    siblings
        .iter()
        .map(|s| json!({"node": s.id(), "leaf": branch_leaf(net, s)}))
        .collect()
}

/// The newest node below `top` (or `top`) with no children.
fn branch_leaf(net: &RunnableNetwork, top: &NodeRef) -> NodeId {
    let mut below = HashSet::new();
    let mut stack = vec![top.id()];
    while let Some(id) = stack.pop() {
        if below.insert(id) {
            stack.extend(net.children(id).iter().map(NodeRef::id));
        }
    }
    net.nodes()
        .iter()
        .rev()
        .find(|n| below.contains(&n.id()) && net.children(n.id()).is_empty())
        .map_or(top.id(), NodeRef::id)
}
