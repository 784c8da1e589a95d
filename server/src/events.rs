//! A run's events as JSON, for the SSE streams of the session API.
//!
//! ```text
//!  NetworkEvent::Delta(Text)        ─▶ event: text              {node_id, text}
//!  NodeAdded / NodeInvoked          ─▶ node_added / node_finished {node_id, kind, name[, message]}
//!  NodeFailed                       ─▶ node_failed              {node_id, error}
//!  ToolCallStarted / Finished       ─▶ tool_call_started / tool_call_finished
//!                                      {node_id, tool_call_id, name[, status, duration_ms]}
//!  InvokeStarted / InvokeFinished   ─▶ run_started / run_finished {outcome, duration_ms}
//!  (after the run)                  ─▶ approval_needed {pending}, then done {answer, revision, pending}
//!                                      or error {message, status}
//! ```

use lc_agent::{NetworkEvent, RunnableNetwork, StreamDelta, ToolStatus};
use lc_agent_modifiers::approvals::PendingApproval;
use serde_json::{json, Value};

fn node_fields(net: &RunnableNetwork, node_id: lc_agent::NodeId) -> Value {
    match net.node(node_id) {
        Some(node) => json!({"node_id": node_id, "kind": node.kind(), "name": node.name()}),
        None => json!({"node_id": node_id}),
    }
}

/// The SSE event name and data of a network event (`None`: not sent).
pub fn event_json(net: &RunnableNetwork, event: &NetworkEvent) -> Option<(&'static str, Value)> {
    Some(match event {
        NetworkEvent::Delta {
            node_id,
            delta: StreamDelta::Text(text),
        } if !text.is_empty() => ("text", json!({"node_id": node_id, "text": text})),
        NetworkEvent::NodeAdded { node_id } => ("node_added", node_fields(net, *node_id)),
        NetworkEvent::NodeInvoked { node_id } => {
            let mut fields = node_fields(net, *node_id);
            if let Some(output) = net.node(*node_id).and_then(|n| n.output()) {
                fields["message"] = serde_json::to_value(&*output).unwrap_or(Value::Null);
            }
            ("node_finished", fields)
        }
        NetworkEvent::NodeFailed { node_id, error } => {
            ("node_failed", json!({"node_id": node_id, "error": error}))
        }
        NetworkEvent::ToolCallStarted {
            node_id,
            tool_call_id,
            name,
        } => (
            "tool_call_started",
            json!({"node_id": node_id, "tool_call_id": tool_call_id, "name": name}),
        ),
        NetworkEvent::ToolCallFinished {
            node_id,
            tool_call_id,
            name,
            status,
            elapsed,
        } => (
            "tool_call_finished",
            json!({
                "node_id": node_id, "tool_call_id": tool_call_id, "name": name,
                "status": if *status == ToolStatus::Ok { "ok" } else { "error" },
                "duration_ms": elapsed.as_secs_f64() * 1000.0,
            }),
        ),
        NetworkEvent::InvokeStarted => ("run_started", json!({})),
        NetworkEvent::InvokeFinished { outcome, elapsed } => (
            "run_finished",
            json!({"outcome": format!("{outcome:?}"), "duration_ms": elapsed.as_secs_f64() * 1000.0}),
        ),
        _ => return None,
    })
}

/// A pending approval as JSON.
pub fn pending_json(pending: &PendingApproval) -> Value {
    json!({
        "node_id": pending.node_id,
        "tool_call": {
            "id": pending.tool_call.id,
            "name": pending.tool_call.name,
            "arguments": pending.tool_call.arguments,
        },
        "allowed": pending.allowed,
    })
}
