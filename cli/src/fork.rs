//! `lc-agent sessions fork | diff`: branches of a saved session.
//!
//! ```text
//! sessions fork <ID> --at <NODE>   a new session: the ancestors of NODE (ids kept),
//!                                  the in-graph files as they were there
//! sessions diff <A> <B>            from where the current branches part: each
//!                                  side's messages, tool calls, files changed, tokens
//! ```
//!
//! `<NODE>` is a node id or a unique prefix of one (`sessions export`
//! shows them). Two sessions part after the last node of their current
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
    let node = find_node(&net, at)?;
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

/// A node by id or unique prefix.
fn find_node(net: &RunnableNetwork, prefix: &str) -> Result<NodeId, Error> {
    let prefix = prefix.trim().to_ascii_lowercase();
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
