//! `lc-agent sessions fork | diff`: branches of a saved session.
//!
//! ```text
//! sessions fork <ID> --at <NODE>   a new session: the ancestors of NODE (ids kept),
//!                                  the in-graph files as they were there
//! sessions diff <A> <B>            from where the current branches part: each
//!                                  side's messages, tool calls, files changed, tokens
//! ```
//!
//! `<NODE>` is a node id or a unique prefix of one, the graph's label
//! `nN`, or `turn:N` (the last node of your N-th message's turn on the
//! current branch); `sessions show --ids` lists them. Two sessions part after the last node of their current
//! branches (root to current leaf) with the same id: a fork and its
//! origin share the nodes above the fork.

use std::io::Write;

use lc_agent::{NetworkList, NodeId, NodeRef, RunnableNetwork, TimeTravelExt};
use lc_agent_filesystem::BranchSide;

use crate::args::find_session;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// `sessions fork <ID> --at <NODE>`: saves the fork, prints its id.
pub(crate) async fn fork(
    list: &dyn NetworkList,
    id: &str,
    at: &str,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let id = find_session(list, id).await?;
    let net = list.load(id).await?;
    let Some(node) = find_target(&net, at)? else {
        return Err(
            "a fork needs a node: give an id (sessions show --ids lists them) or turn:N".into(),
        );
    };
    let fork = net.fork_at(node)?;
    list.save(&fork).await?;
    writeln!(
        out,
        "forked {} from {id} at node {node} ({} nodes)",
        fork.id(),
        fork.len()
    )?;
    Ok(())
}

/// `sessions diff <A> <B>`: what each current branch holds after the
/// nodes both share.
pub(crate) async fn diff(
    list: &dyn NetworkList,
    a: &str,
    b: &str,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let a = list.load(find_session(list, a).await?).await?;
    let b = list.load(find_session(list, b).await?).await?;
    let diff = lc_agent_filesystem::diff_branches(&a, &b);
    match diff.last_shared {
        Some(last) => writeln!(out, "shared: {} nodes, up to node {last}", diff.shared)?,
        None => writeln!(out, "shared: nothing (no common node)")?,
    }
    for (mark, net, side_of) in [("-", &a, &diff.a), ("+", &b, &diff.b)] {
        side(out, mark, net, side_of)?;
    }
    Ok(())
}

fn side(
    out: &mut dyn Write,
    mark: &str,
    net: &RunnableNetwork,
    side: &BranchSide,
) -> Result<(), Error> {
    writeln!(
        out,
        "{mark}{mark}{mark} {} ({} nodes after)",
        net.id(),
        side.nodes.len()
    )?;
    for message in side.nodes.iter().filter_map(NodeRef::output) {
        let text = message.text().replace('\n', " ");
        if !text.is_empty() {
            writeln!(
                out,
                "{mark} [{}] {}",
                message.role(),
                crate::console::cut(&text, 100)
            )?;
        }
    }
    let none = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    writeln!(out, "{mark} tool calls: {}", none(&side.tool_calls))?;
    writeln!(out, "{mark} files changed: {}", none(&side.files_changed))?;
    writeln!(out, "{mark} tokens: {}", side.tokens)?;
    Ok(())
}

/// Where `--at` / `--to` points: `start` (before the first message,
/// `None`), `turn:N` (the last node of your N-th message's turn on the
/// current branch), or a node by id or unique prefix.
pub(crate) fn find_target(net: &RunnableNetwork, at: &str) -> Result<Option<NodeId>, Error> {
    let at = at.trim();
    if at.eq_ignore_ascii_case("start") || at == "turn:0" {
        return Ok(None);
    }
    if let Some(n) = at.strip_prefix("turn:") {
        let n: usize = n.parse().map_err(|_| {
            format!(
                "`{at}`: a turn is turn:N with N a number (turn:1 is your first message's turn)"
            )
        })?;
        return turn_end(net, n).map(Some);
    }
    find_node(net, at).map(Some)
}

/// The nodes from the root to the current leaf, in the order they were
/// added.
pub(crate) fn current_branch(net: &RunnableNetwork) -> Vec<NodeRef> {
    let mut above = std::collections::HashSet::new();
    let mut stack: Vec<NodeId> = net.current_leaf().map(|n| n.id()).into_iter().collect();
    while let Some(id) = stack.pop() {
        if above.insert(id) {
            stack.extend(net.parents(id).iter().map(NodeRef::id));
        }
    }
    net.nodes()
        .into_iter()
        .filter(|n| above.contains(&n.id()))
        .collect()
}

/// The last node of turn `n` (1-based) on the current branch: the node
/// the next message was sent below, or the current leaf for the last.
fn turn_end(net: &RunnableNetwork, n: usize) -> Result<NodeId, Error> {
    let branch = current_branch(net);
    let humans: Vec<&NodeRef> = branch
        .iter()
        .filter(|node| node.kind() == lc_agent::HumanNode::KIND)
        .collect();
    if n == 0 || n > humans.len() {
        return Err(format!(
            "turn:{n}: the current branch has {} turn(s) (turn:1 to turn:{0}, or start)",
            humans.len()
        )
        .into());
    }
    match humans.get(n) {
        Some(next) => next
            .parents()
            .first()
            .copied()
            .ok_or_else(|| format!("turn:{n}: the next message has no parent").into()),
        None => net
            .current_leaf()
            .map(|l| l.id())
            .ok_or_else(|| "the session has no nodes".into()),
    }
}

/// `sessions show --ids`: the nodes of the current branch, a line each,
/// with what `--at` / `--to` accept: the id (its first 8 characters are
/// enough while unique), the graph's label (`n12`, as `--mermaid` draws
/// it) and, on the last node of each turn, `turn:N`.
pub(crate) fn show_ids(out: &mut dyn Write, net: &RunnableNetwork) -> std::io::Result<()> {
    let index: std::collections::HashMap<NodeId, usize> = net
        .nodes()
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id(), i))
        .collect();
    let branch = current_branch(net);
    let mut ends = std::collections::HashMap::new();
    for n in 1.. {
        match turn_end(net, n) {
            Ok(id) => {
                ends.insert(id, n);
            }
            Err(_) => break,
        }
    }
    writeln!(
        out,
        "nodes on the current branch (sessions fork --at / rewind --to take the id, its label or turn:N):"
    )?;
    for node in &branch {
        let id = node.id().to_string();
        let label = index
            .get(&node.id())
            .map_or(String::new(), |i| format!("n{i}"));
        let what = match node.output() {
            Some(m) => {
                let text = m.text().replace('\n', " ");
                format!("[{}] {}", m.role(), crate::console::cut(&text, 60))
            }
            None => format!("({})", node.kind()),
        };
        let turn = ends
            .get(&node.id())
            .map_or(String::new(), |n| format!("  <- turn:{n}"));
        writeln!(out, "  {id}  {label:<4} {what}{turn}")?;
    }
    Ok(())
}

/// A node by id, unique prefix, or the graph's label `nN` (the N-th node
/// added, as `sessions show --mermaid` and `--ids` name it).
fn find_node(net: &RunnableNetwork, prefix: &str) -> Result<NodeId, Error> {
    let prefix = prefix.trim().to_ascii_lowercase();
    // Ids are hex: `n` never starts one.
    if let Some(i) = prefix
        .strip_prefix('n')
        .and_then(|i| i.parse::<usize>().ok())
    {
        let nodes = net.nodes();
        return nodes.get(i).map(NodeRef::id).ok_or_else(|| {
            format!(
                "session {} has no node n{i} (its labels go from n0 to n{})",
                net.id(),
                nodes.len().saturating_sub(1)
            )
            .into()
        });
    }
    let found: Vec<NodeId> = net
        .nodes()
        .iter()
        .map(NodeRef::id)
        .filter(|id| !prefix.is_empty() && id.to_string().starts_with(&prefix))
        .collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(format!("session {} has no node `{prefix}`", net.id()).into()),
        _ => Err(format!(
            "`{prefix}` names {} nodes; give more of the id",
            found.len()
        )
        .into()),
    }
}
