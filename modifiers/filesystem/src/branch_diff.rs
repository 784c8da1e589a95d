//! Where two sessions' current branches part, and what each holds after
//! that point (its nodes, the tools it called, the files the agent changed,
//! its tokens): one reading for `lc-agent sessions diff` and the server's
//! `GET /api/sessions/{a}/diff/{b}`.

use std::collections::HashSet;

use lc_agent::{NodeId, NodeRef, RunnableNetwork, TOKEN_USAGE_KEY};
use serde_json::Value;

/// Two sessions' current branches compared from where they part.
#[derive(Debug)]
pub struct BranchDiff {
    /// How many nodes both branches share from their root.
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
    /// The nodes, oldest first.
    pub nodes: Vec<NodeRef>,
    /// The tools their messages called, in order.
    pub tool_calls: Vec<String>,
    /// The paths the agent's file tools changed, each once, in order.
    pub files_changed: Vec<String>,
    /// Their total tokens (from the recorded usage).
    pub tokens: u64,
}

/// Compares the current branches of `a` and `b`.
pub fn diff_branches(a: &RunnableNetwork, b: &RunnableNetwork) -> BranchDiff {
    let (mut path_a, mut path_b) = (branch(a), branch(b));
    let shared = path_a
        .iter()
        .zip(&path_b)
        .take_while(|(x, y)| x.id() == y.id())
        .count();
    let last_shared = shared
        .checked_sub(1)
        .and_then(|i| path_a.get(i))
        .map(NodeRef::id);
    BranchDiff {
        shared,
        last_shared,
        a: BranchSide::of(path_a.split_off(shared)),
        b: BranchSide::of(path_b.split_off(shared)),
    }
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

impl BranchSide {
    fn of(nodes: Vec<NodeRef>) -> Self {
        let mut tool_calls = Vec::new();
        let mut files_changed: Vec<String> = Vec::new();
        let mut tokens = 0u64;
        for node in &nodes {
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
        }
        BranchSide {
            nodes,
            tool_calls,
            files_changed,
            tokens,
        }
    }
}
