//! Where two sessions' current branches part, and what each holds after
//! that point (its nodes, the tools it called, the files the agent changed,
//! its tokens): one reading for `lc-agent sessions diff` and the server's
//! `GET /api/sessions/{a}/diff/{b}`.

use std::collections::HashSet;

use lc_agent::{NetworkNode, NodeId, NodeRef, RunnableNetwork, TOKEN_USAGE_KEY};
use serde_json::Value;

/// Two sessions' current branches compared from where they part.
#[derive(Debug)]
pub struct BranchDiff {
    /// How many nodes both branches hold.
    pub shared: usize,
    /// The last node both share, if any.
    pub last_shared: Option<NodeId>,
    /// What the first session's branch holds after them.
    pub a: BranchSide,
    /// What the second session's branch holds after them.
    pub b: BranchSide,
}

/// One branch's nodes after the shared ones, with their totals.
#[derive(Debug)]
pub struct BranchSide {
    /// The nodes, oldest first (a sub-agent is one node; what it did
    /// inside counts in the totals below).
    pub nodes: Vec<NodeRef>,
    /// The tools their messages called, in order.
    pub tool_calls: Vec<String>,
    /// The paths the agent's file tools changed, each once, in order.
    pub files_changed: Vec<String>,
    /// Their total tokens (from the recorded usage).
    pub tokens: u64,
}

/// Compares the current branches of `a` and `b`: every node above each
/// current leaf (all parents: a turn's parallel tool calls too), split
/// into those both hold and those after.
pub fn diff_branches(a: &RunnableNetwork, b: &RunnableNetwork) -> BranchDiff {
    let (path_a, path_b) = (branch(a), branch(b));
    let ids_a: HashSet<NodeId> = path_a.iter().map(NodeRef::id).collect();
    let ids_b: HashSet<NodeId> = path_b.iter().map(NodeRef::id).collect();
    let shared = path_a.iter().filter(|n| ids_b.contains(&n.id())).count();
    let last_shared = path_a
        .iter()
        .rev()
        .find(|n| ids_b.contains(&n.id()))
        .map(NodeRef::id);
    let only = |path: Vec<NodeRef>, other: &HashSet<NodeId>| -> Vec<NodeRef> {
        path.into_iter()
            .filter(|n| !other.contains(&n.id()))
            .collect()
    };
    BranchDiff {
        shared,
        last_shared,
        a: BranchSide::of(only(path_a, &ids_b)),
        b: BranchSide::of(only(path_b, &ids_a)),
    }
}

/// The current leaf and every node above it (all parents), in the order
/// they were added.
fn branch(net: &RunnableNetwork) -> Vec<NodeRef> {
    let mut above = HashSet::new();
    let mut stack: Vec<NodeId> = net.current_leaf().map(|n| n.id()).into_iter().collect();
    while let Some(id) = stack.pop() {
        if above.insert(id)
            && let Some(node) = net.node(id)
        {
            stack.extend(node.parents());
        }
    }
    net.nodes()
        .into_iter()
        .filter(|n| above.contains(&n.id()))
        .collect()
}

/// `node` and, for a sub-network (a sub-agent), every node inside it.
fn with_inner(node: &NodeRef, f: &mut dyn FnMut(&NodeRef)) {
    f(node);
    if let Some(inner) = node.downcast::<NetworkNode>() {
        for n in inner.network().nodes() {
            with_inner(&n, f);
        }
    }
}

impl BranchSide {
    fn of(nodes: Vec<NodeRef>) -> Self {
        let mut tool_calls = Vec::new();
        let mut files_changed: Vec<String> = Vec::new();
        let mut tokens = 0u64;
        for node in &nodes {
            with_inner(node, &mut |node| {
                if let Some(message) = node.output() {
                    tool_calls.extend(message.tool_calls().iter().map(|c| c.name.clone()));
                }
                let meta = node.metadata();
                if let Some(Value::Array(changes)) = meta.get("file_changes") {
                    for path in changes.iter().filter_map(|c| c.get("path")?.as_str()) {
                        if !files_changed.iter().any(|f| f == path) {
                            files_changed.push(path.to_string());
                        }
                    }
                }
                tokens += meta
                    .get(TOKEN_USAGE_KEY)
                    .and_then(|u| u.get("total_tokens"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
            });
        }
        BranchSide {
            nodes,
            tool_calls,
            files_changed,
            tokens,
        }
    }
}
