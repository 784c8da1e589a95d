//! Delegation: how a sub-network answers a tool call. One home for what
//! the `task` tool ([`crate::subagents`]), a supervisor's routes
//! ([`crate::supervisor`]) and the approvals ([`crate::approvals`]) know
//! about it.
//!
//! ```text
//!  chat ─▶ tool node {call}                  (the ToolLoop's)
//!  run_before:
//!  chat ─▶ NetworkNode, metadata[key] = call id ─▶ tool node {call} ─▶ next chat
//!            (the delegate: runs first)             serving(ctx, key) finds it,
//!                                                   last_answer(inner) is the result
//! ```
//!
//! A modifier that delegates a tool's calls names a metadata `key`
//! ([`TASK_CALL_KEY`](crate::subagents::TASK_CALL_KEY),
//! [`ROUTE_CALL_KEY`](crate::supervisor::ROUTE_CALL_KEY)); its delegate is
//! the parent of the call's tool node that carries the call's id under that
//! key. Its tool then answers with the delegate's last non-empty AI text.
//! Calls that have no delegate yet ([`unwired_calls`]) are those a person
//! edited (the approval took the old delegate away) and those of a session
//! saved by a program without the modifier.
//!
//! The approvals do not know the keys: a held call holds the delegate
//! before it that has not run ([`waiting_delegate`]), whichever modifier
//! put it there, and the calls of a model turn are its tool nodes, also
//! below a delegate ([`turn_calls`]).

use lc_agent::{
    Events, Message, NetworkEvent, NetworkNode, NodeId, NodeRef, Result, RunnableNetwork,
    ToolContext, ToolNode,
};
use serde_json::{json, Value};

/// The sub-network a modifier put before this tool call (its node carries
/// the call's id under `key`).
pub(crate) fn serving(ctx: &ToolContext, key: &str) -> Option<RunnableNetwork> {
    served_by(&ctx.network, ctx.node_id, &ctx.tool_call_id, key)
        .and_then(|p| p.downcast::<NetworkNode>().map(|n| n.network().clone()))
}

/// The node among `node_id`'s parents that serves the call `call_id`.
fn served_by(
    network: &RunnableNetwork,
    node_id: NodeId,
    call_id: &str,
    key: &str,
) -> Option<NodeRef> {
    network
        .parents(node_id)
        .into_iter()
        .find(|p| p.metadata_value(key).as_ref().and_then(Value::as_str) == Some(call_id))
}

/// The calls of the tool `name` that have not run, wait for nobody and have
/// no sub-network before them yet: a call a person edited (the approval
/// took the old sub-network away), or one of a session saved by a program
/// without the modifier.
pub(crate) fn unwired_calls(network: &RunnableNetwork, key: &str) -> Vec<NodeRef> {
    network
        .pending()
        .into_iter()
        .filter(|node| {
            node.held().is_none()
                && node.downcast::<ToolNode>().is_some_and(|tool| {
                    served_by(network, node.id(), &tool.tool_call.id, key).is_none()
                })
        })
        .collect()
}

/// Puts a sub-network node between a tool node and its parent (the chat
/// node that asked), naming it and marking which call it serves.
pub(crate) fn run_before(
    network: &RunnableNetwork,
    tool_node: &NodeRef,
    logic: NetworkNode,
    name: String,
    key: &str,
) -> Result<()> {
    let Some(tool) = tool_node.downcast::<ToolNode>() else {
        return Ok(());
    };
    let sub = network.add(logic, &tool_node.parents())?;
    sub.set_name(name);
    sub.set_metadata(key, json!(tool.tool_call.id));
    network.set_parents(tool_node.id(), &[sub.id()])
}

/// The last non-empty AI text of a network's conversation (nested
/// sub-networks' own answers are not part of it).
pub(crate) fn last_answer(network: &RunnableNetwork) -> Option<String> {
    network.history().iter_rev().find_map(|m| match m {
        Message::Ai { content, .. } if !content.trim().is_empty() => Some(content.clone()),
        _ => None,
    })
}

/// The sub-network a modifier put before a call (a task's sub-agent, a
/// supervisor's route) while it has not run, whichever modifier did.
pub(crate) fn waiting_delegate(network: &RunnableNetwork, call: &NodeRef) -> Option<NodeRef> {
    network
        .parents(call.id())
        .into_iter()
        .find(|p| !p.is_invoked() && p.downcast::<NetworkNode>().is_some())
}

/// The tool nodes of a model turn (the children of `chat`): a delegated
/// call's tool node sits below its sub-network, one level further.
pub(crate) fn turn_calls(network: &RunnableNetwork, chat: &NodeRef) -> Vec<NodeRef> {
    let mut calls = Vec::new();
    for child in network.children(chat.id()) {
        if child.downcast::<ToolNode>().is_some() {
            calls.push(child);
        } else {
            calls.extend(network.children(child.id()));
        }
    }
    calls
}

/// Answers a call that will not run (refused by the permission mode,
/// denied by a hook) with `message`, and says so where runs are watched
/// (exec's stream, an editor's tool calls, the server's events) as a
/// call's result is said.
pub(crate) fn answer_unrun(network: &RunnableNetwork, call: &NodeRef, message: Message) {
    call.set_output(message);
    call.network()
        .unwrap_or_else(|| network.clone())
        .emit(&NetworkEvent::NodeInvoked { node_id: call.id() });
}
