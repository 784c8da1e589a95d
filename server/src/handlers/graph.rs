//! A session's graph as the page draws it: every node with its state, its
//! parents and a short excerpt, sub-agents' networks nested inside their
//! node; and one node in full (input, output, metadata).
//!
//! ```text
//!  graph_json(net)  ─▶ {nodes: [{id, kind, name, state, parents, excerpt, off_branch?, inner?}]}
//!                      state: "ran" | "failed" | "held" | "pending"
//!  node_json(net, id) ─▶ {id, kind, name, state, input: [messages], output, metadata}
//!                        (found at any depth of sub-networks)
//! ```

use std::collections::HashSet;

use lc_agent::{NetworkNode, NodeId, NodeRef, RunnableNetwork};
use serde_json::{json, Value};

/// The longest excerpt of a node's output in the graph.
const EXCERPT_CHARS: usize = 60;

/// What a node's box says about it: it ran, it failed (its last attempt
/// left `metadata["error"]`), it is held (waiting for a decision or for
/// work inside it), or it has not run yet.
pub(crate) fn state_of(node: &NodeRef) -> &'static str {
    if node.is_invoked() {
        "ran"
    } else if node.metadata_value("error").is_some() {
        "failed"
    } else if node.held().is_some() {
        "held"
    } else {
        "pending"
    }
}

/// The graph of `net` (sub-networks nested); the nodes in `off` (turns
/// of another branch) are marked `off_branch`.
pub(crate) fn graph_json(net: &RunnableNetwork, off: &HashSet<NodeId>) -> Value {
    let nodes: Vec<Value> = net
        .nodes()
        .iter()
        .map(|node| {
            let mut v = json!({
                "id": node.id(),
                "kind": node.kind(),
                "name": node.name(),
                "state": state_of(node),
                "parents": node.parents(),
                "excerpt": excerpt(node),
            });
            if off.contains(&node.id()) {
                v["off_branch"] = json!(true);
            }
            if let Some(inner) = inner_of(node) {
                v["inner"] = graph_json(&inner, &HashSet::new());
            }
            v
        })
        .collect();
    json!({ "nodes": nodes })
}

/// One node of `net` or of a sub-network at any depth, in full; `None`
/// when there is no such node.
pub(crate) fn node_json(net: &RunnableNetwork, id: NodeId) -> Option<Value> {
    if let Some(node) = net.node(id) {
        let input: Vec<Value> = net
            .input_of(&node)
            .to_vec()
            .into_iter()
            .filter_map(|m| serde_json::to_value(m).ok())
            .collect();
        let output = node
            .output()
            .and_then(|m| serde_json::to_value(&*m).ok())
            .unwrap_or(Value::Null);
        return Some(json!({
            "id": node.id(),
            "kind": node.kind(),
            "name": node.name(),
            "state": state_of(&node),
            "input": input,
            "output": output,
            "metadata": node.metadata(),
        }));
    }
    net.nodes()
        .iter()
        .filter_map(inner_of)
        .find_map(|inner| node_json(&inner, id))
}

/// The inner network of a sub-network node.
fn inner_of(node: &NodeRef) -> Option<RunnableNetwork> {
    node.downcast::<NetworkNode>().map(|n| n.network().clone())
}

fn excerpt(node: &NodeRef) -> String {
    let Some(message) = node.output() else {
        return String::new();
    };
    let text = message.text().split_whitespace().collect::<Vec<_>>();
    let text = if text.is_empty() && !message.tool_calls().is_empty() {
        let names: Vec<&str> = message
            .tool_calls()
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        format!("calls {}", names.join(", "))
    } else {
        text.join(" ")
    };
    if text.chars().count() > EXCERPT_CHARS {
        let cut: String = text.chars().take(EXCERPT_CHARS).collect();
        format!("{cut}…")
    } else {
        text
    }
}
