//! Time travel in the graph: forks, branches, edits and rewinds. Nothing is
//! deleted: every answer ever given stays a node.
//!
//! ```text
//!  fork_at(n)        a new network: the ancestors of n (same ids, outputs,
//!                    metadata), in-graph files as they were when n ran,
//!                    metadata.forked_from = {session, node}
//!  branch_at(n, c)   c becomes another child of n and the current leaf
//!  edit_at(n, text)  a human message or a tool result said differently:
//!                    a sibling of n (and, under a tool result, the next
//!                    chat node again); `invoke` runs only what is new
//!  rewind_to(n)      the next node attaches under n (None: a new root)
//! ```
//!
//! **Files at a node.** The file tools record each change they make on
//! their tool node's metadata, `file_changes: [{path, before, after,
//! in_graph}]` (`before`/`after` name a content hash, `null` for "no
//! file"), and keep the contents, deduplicated by hash, in the session
//! beside the graph (`snapshots.rs`; see `lc-agent-filesystem`'s
//! snapshots); a fork takes them along. The files of a fork are the session's in-graph files with
//! every change recorded by a node added after `n` taken back, newest
//! first. Changes to a disk workspace are not the graph's: a fork shares
//! the workspace as it is (rewinding it is the file tools' job).
//!
//! **Usage.** A fork's `usage` counts its new nodes' calls only: the
//! fork drops the origin's totals, and the usage feature, counting a
//! network's nodes, leaves out the copied ones ([`inherited_nodes`]):
//! their calls are the origin's (`UsageExt::inherited_usage` shows
//! them apart), so a sum over sessions counts each call once.
//!
//! **Rewind.** `rewind_to` is kept in the metadata (`rewound_to`), so a
//! rewound session saved and loaded elsewhere continues from the same
//! place; the first node attached afterwards clears it.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{json, Value};

use super::snapshots::{FileSnapshots, FILE_CHANGES};
use super::{Graph, RunnableNetwork};
use crate::error::{NetworkError, Result};
use crate::files::{FileData, Files};
use crate::message::Message;
use crate::node::kinds::{self, TypedFields};
use crate::node::{NodeId, NodeLogic, NodeRef};

/// The session's metadata: where the next node attaches after a rewind.
pub(crate) const REWOUND_TO: &str = "rewound_to";

/// The nodes a fork copied from its origin (the node it was forked at
/// and its ancestors): their calls count in the origin, not here. Empty
/// for a network that is not a fork.
pub(crate) fn inherited_nodes(net: &RunnableNetwork) -> HashSet<NodeId> {
    let Some(at) = net
        .metadata_value("forked_from")
        .and_then(|f| f.get("node")?.as_str()?.parse::<NodeId>().ok())
    else {
        return HashSet::new();
    };
    let g = net.0.graph.lock();
    if g.get(at).is_err() {
        return HashSet::new();
    }
    ancestors(&g, at)
}

/// Time travel on a network: a fork at a node, a branch beside it, an
/// edit of a human message and a rewind.
pub trait TimeTravelExt {
    /// A new network (a new id) holding the ancestors of `node` and `node`
    /// itself, with the same ids, outputs and metadata, and the in-graph
    /// files as they were when `node` ran; its metadata says where it came
    /// from: `forked_from = {"session": <this id>, "node": <node>}`. This
    /// network is not changed. Like a loaded network, the fork has the
    /// default modifiers only: attach models, tools and modifiers again.
    ///
    /// ```
    /// use lc_agent::{HumanNode, RunnableNetwork, ScriptedChatModel, TimeTravelExt};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let net = RunnableNetwork::builder()
    ///     .default_node("chat")
    ///     .chat_model("m")
    ///     .model("m", ScriptedChatModel::new(["one", "two"]))
    ///     .build();
    /// let first = { let _s = net.enter(); HumanNode::new("first") };
    /// net.invoke().await?;
    /// { let _s = net.enter(); HumanNode::new("second"); }
    /// net.invoke().await?;
    /// let answer = net.children(first.id())[0].id();
    /// let fork = net.fork_at(answer)?;
    /// assert_eq!(fork.len(), 2);
    /// assert_eq!(fork.history().to_vec()[1].text(), "one");
    /// assert_eq!(fork.metadata_value("forked_from").unwrap()["node"], answer.to_string());
    /// # Ok::<(), lc_agent::NetworkError>(())
    /// # }).unwrap();
    /// ```
    fn fork_at(&self, node: NodeId) -> Result<RunnableNetwork>;

    /// Adds `child` as another child of `node` (the branches already below
    /// `node` stay as they are); `child` becomes the current leaf, so the
    /// conversation goes on from there.
    fn branch_at(&self, node: NodeId, child: &NodeRef) -> Result<()>;

    /// Says a human message or a tool result differently, at any depth:
    /// a new node beside `node` (same parents) with `text`; below a tool
    /// result, a new node of the kind that read the old one (the next
    /// chat turn) follows it. The old branch stays; the new node is the
    /// current leaf; the next [`invoke`](crate::RunnableNetwork::invoke) runs only the new
    /// nodes — everything above `node` keeps its cached outputs. Returns
    /// the new node.
    fn edit_at(&self, node: NodeId, text: impl Into<String>) -> Result<NodeRef>;

    /// Rewinds the conversation: the next node added without parents
    /// (the next human message) attaches under `node`, or becomes a new
    /// root with `None`; [`current_leaf`](crate::RunnableNetwork::current_leaf) and
    /// [`history`](crate::RunnableNetwork::history) read from there until then. Nothing is
    /// removed; the branch below `node` stays. Kept in the metadata, so it
    /// is saved with the network.
    fn rewind_to(&self, node: Option<NodeId>) -> Result<()>;
}

impl TimeTravelExt for RunnableNetwork {
    fn fork_at(&self, node: NodeId) -> Result<RunnableNetwork> {
        let g = self.0.graph.lock();
        g.get(node)?;
        let keep = ancestors(&g, node);
        let mut nodes = Vec::with_capacity(keep.len());
        for n in g.nodes().values().filter(|n| keep.contains(&n.id())) {
            nodes.push((copy_node(n)?, n.parents()));
        }
        let mut metadata = g.metadata.clone();
        metadata.shift_remove(REWOUND_TO);
        // Usage belongs to nodes: the copied nodes' calls are the
        // origin's. The origin's totals stay there; the fork's own are
        // counted from its nodes when first read, the copied ones left out
        // (see `inherited_nodes`). The key is the usage feature's
        // `USAGE_KEY`, named here so the floor does not stand on it.
        metadata.shift_remove("usage");
        metadata.insert(
            "forked_from".into(),
            json!({"session": g.id.to_string(), "node": node.to_string()}),
        );
        let later: Vec<NodeRef> = g
            .nodes()
            .get_index_of(&node)
            .map(|i| g.nodes().values().skip(i + 1).cloned().collect())
            .unwrap_or_default();
        let fork = RunnableNetwork::with_graph(Graph::new(
            uuid::Uuid::new_v4(),
            g.name.clone(),
            metadata,
            g.default_node.clone(),
            g.chat_model_name.clone(),
        ));
        drop(g);
        let snapshots = self.0.file_snapshots.read().clone();
        let mut files = self.files();
        for n in later.iter().rev() {
            undo_changes(&mut files, n, &snapshots);
        }
        *fork.0.files.write() = files;
        // The kept contents go along: a rewind in the fork needs them.
        *fork.0.file_snapshots.write() = snapshots;
        fork.add_default_modifiers();
        fork.insert_loaded(nodes)?;
        Ok(fork)
    }

    fn branch_at(&self, node: NodeId, child: &NodeRef) -> Result<()> {
        self.0.graph.lock().get(node)?;
        self.add_node_with_parents(child, &[node])
    }

    fn edit_at(&self, node: NodeId, text: impl Into<String>) -> Result<NodeRef> {
        let old = self.node(node).ok_or(NetworkError::UnknownNode(node))?;
        let text = text.into();
        let parents = old.parents();
        if old.kind() == kinds::HUMAN {
            let new = NodeRef::detached_shared(built(
                kinds::HUMAN,
                TypedFields {
                    text: Some(text),
                    ..TypedFields::default()
                },
            )?);
            self.add_node_with_parents(&new, &parents)?;
            return Ok(new);
        }
        let call = match old.kind() {
            kinds::TOOL => old.logic().save()?.remove("tool_call"),
            _ => None,
        };
        let Some(call) = call else {
            return Err(NetworkError::NotEditable {
                node,
                kind: old.kind().to_string(),
            });
        };
        let call: crate::message::ToolCall = serde_json::from_value(call)?;
        let output = Message::tool(text, call.id.clone());
        let new = NodeRef::from_parts(
            built(
                kinds::TOOL,
                TypedFields {
                    tool_call: Some(call),
                    ..TypedFields::default()
                },
            )?,
            uuid::Uuid::new_v4(),
            Some(old.name()),
            true,
            Some(Arc::new(output)),
            crate::node::metadata::Metadata::from(serde_json::Map::from_iter([(
                "edited_from".to_string(),
                json!(node.to_string()),
            )])),
        );
        self.add_node_with_parents(&new, &parents)?;
        if let Some(next) = self.children(node).into_iter().next() {
            let follower = NodeRef::detached_shared(fresh_logic(&next)?);
            let parents: Vec<NodeId> = next
                .parents()
                .into_iter()
                .map(|p| if p == node { new.id() } else { p })
                .collect();
            self.add_node_with_parents(&follower, &parents)?;
        }
        Ok(new)
    }

    fn rewind_to(&self, node: Option<NodeId>) -> Result<()> {
        let mut g = self.0.graph.lock();
        if let Some(id) = node {
            g.get(id)?;
        }
        let value = node.map_or(Value::Null, |id| Value::String(id.to_string()));
        g.metadata.insert(REWOUND_TO.into(), value);
        Ok(())
    }
}

/// `node` and everything above it.
fn ancestors(g: &Graph, node: NodeId) -> HashSet<NodeId> {
    let mut seen = HashSet::new();
    let mut stack = vec![node];
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        if let Some(n) = g.nodes().get(&id) {
            stack.extend(n.parents());
        }
    }
    seen
}

/// A detached copy of a node with the same id and state. Built-in message
/// kinds are immutable and share their logic; other kinds (a sub-network
/// holds a whole network) are copied through their saved fields.
fn copy_node(n: &NodeRef) -> Result<NodeRef> {
    let st = n.saved_fields();
    let shared = kinds::is_immutable(n.kind());
    let logic = match kinds::loader(n.kind()) {
        Some(load) if !shared => load(n.logic().save()?)?,
        // Kinds without a loader are kept as read (generic nodes).
        _ => n.0.logic.clone(),
    };
    Ok(NodeRef::from_parts(
        logic,
        n.id(),
        Some(st.name().to_string()),
        st.invoked(),
        st.outputs().clone(),
        st.metadata().clone(),
    ))
}

/// A fresh logic of the same kind and fields as `n`'s (not invoked).
fn fresh_logic(n: &NodeRef) -> Result<Arc<dyn NodeLogic>> {
    let load = kinds::loader(n.kind())
        .ok_or_else(|| NetworkError::Format(format!("unknown node kind `{}`", n.kind())))?;
    load(n.logic().save()?)
}

/// A built-in kind from typed fields.
fn built(kind: &str, mut fields: TypedFields) -> Result<Arc<dyn NodeLogic>> {
    kinds::typed(kind, &mut fields)
        .ok_or_else(|| NetworkError::Format(format!("`{kind}` cannot be built from these fields")))
}

/// Takes back the in-graph file changes a node recorded, newest first.
fn undo_changes(files: &mut Files, node: &NodeRef, snapshots: &FileSnapshots) {
    let Some(Value::Array(changes)) = node.metadata_value(FILE_CHANGES) else {
        return;
    };
    for change in changes.iter().rev() {
        if change.get("in_graph") != Some(&Value::Bool(true)) {
            continue;
        }
        let Some(path) = change.get("path").and_then(Value::as_str) else {
            continue;
        };
        match change.get("before").and_then(Value::as_str) {
            None => {
                files.remove(path);
            }
            Some(hash) => {
                let text = snapshots.get(hash);
                if let Some(text) = text {
                    match files.get_mut(path) {
                        Some(data) => data.set_text(text),
                        None => {
                            files.insert(path.to_string(), FileData::new(text));
                        }
                    }
                }
            }
        }
    }
}
