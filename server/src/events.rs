//! A run's events as JSON, for the SSE streams of the session API.
//!
//! ```text
//!  NetworkEvent::Delta(Text)        ─▶ event: text              {node_id, text}
//!  NodeAdded / NodeInvoked          ─▶ node_added / node_finished {node_id, kind, name[, message]}
//!  NodeFailed                       ─▶ node_failed              {node_id, error}
//!  ToolCallStarted / Finished       ─▶ tool_call_started / tool_call_finished
//!                                      {node_id, tool_call_id, name[, status, duration_ms]}
//!  EmptyAnswer                      ─▶ empty_answer             {node_id, kind, name}
//!  AnswerCutOff                     ─▶ answer_cut_off           {node_id, kind, name}
//!  SummaryWritten                   ─▶ summary_written          {node_id, kind, name, kept, summarized}
//!  InvokeStarted / InvokeFinished   ─▶ run_started / run_finished
//!                                      {outcome, duration_ms[, error | held]}
//!  (after the run)                  ─▶ approval_needed {pending}, then done {answer, revision, pending}
//!                                      or error {message, status}
//! ```
//!
//! The fields, where they are not plain:
//! - `status` of a tool call: `"ok"` or `"error"`.
//! - `outcome` of a run ([`outcome_name`]): `"completed"` (every pending
//!   node ran), `"failed"` (with `error`, the message), or `"held"` (with
//!   `held`, the ids of the nodes waiting for a decision). These strings
//!   are part of the API: they do not follow the Rust names.
//! - `empty_answer`: the chat node `node_id` got neither text nor tool
//!   calls from its model (the run goes on; the node's metadata says
//!   `empty_answer: true`).
//! - `summary_written`: the summary node `node_id` joined the conversation;
//!   it stands for `summarized` earlier messages and keeps the `kept`
//!   messages before it verbatim.

use lc_agent::{InvokeOutcome, NetworkEvent, RunnableNetwork, StreamDelta, ToolStatus};
use lc_agent_deepagent::approvals::PendingApproval;
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
        NetworkEvent::EmptyAnswer { node_id } => ("empty_answer", node_fields(net, *node_id)),
        NetworkEvent::AnswerCutOff { node_id } => ("answer_cut_off", node_fields(net, *node_id)),
        NetworkEvent::SummaryWritten {
            node_id,
            kept,
            summarized,
        } => {
            let mut fields = node_fields(net, *node_id);
            fields["kept"] = json!(kept);
            fields["summarized"] = json!(summarized);
            ("summary_written", fields)
        }
        NetworkEvent::InvokeStarted => ("run_started", json!({})),
        NetworkEvent::InvokeFinished { outcome, elapsed } => {
            let mut fields = json!({
                "outcome": outcome_name(outcome),
                "duration_ms": elapsed.as_secs_f64() * 1000.0,
            });
            match outcome {
                InvokeOutcome::Failed(error) => fields["error"] = json!(error),
                InvokeOutcome::Held(held) => fields["held"] = json!(held),
                _ => {}
            }
            ("run_finished", fields)
        }
        _ => return None,
    })
}

/// How a run ended, as `run_finished` names it: `"completed"`, `"failed"`
/// or `"held"` (a stable wire string, whatever the Rust variant is
/// called; an outcome this server does not know yet is `"unknown"`).
///
/// ```
/// use lc_agent::InvokeOutcome;
/// use lc_agent_server::events::outcome_name;
///
/// assert_eq!(outcome_name(&InvokeOutcome::Completed), "completed");
/// assert_eq!(outcome_name(&InvokeOutcome::Failed("boom".into())), "failed");
/// assert_eq!(outcome_name(&InvokeOutcome::Held(Vec::new())), "held");
/// ```
pub fn outcome_name(outcome: &InvokeOutcome) -> &'static str {
    match outcome {
        InvokeOutcome::Completed => "completed",
        InvokeOutcome::Failed(_) => "failed",
        InvokeOutcome::Held(_) => "held",
        _ => "unknown",
    }
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use lc_agent::{HumanNode, InvokeOutcome, NetworkEvent, RunnableNetwork};
    use serde_json::json;

    use super::event_json;

    fn finished(outcome: InvokeOutcome) -> serde_json::Value {
        let net = RunnableNetwork::new();
        let event = NetworkEvent::InvokeFinished {
            outcome,
            elapsed: Duration::from_millis(3),
        };
        let (name, data) = event_json(&net, &event).unwrap();
        assert_eq!(name, "run_finished");
        assert_eq!(data["duration_ms"], json!(3.0));
        data
    }

    #[test]
    fn run_finished_names_the_outcome_with_a_stable_string() {
        assert_eq!(
            finished(InvokeOutcome::Completed),
            json!({"outcome": "completed", "duration_ms": 3.0})
        );
        assert_eq!(
            finished(InvokeOutcome::Failed("step limit".into())),
            json!({"outcome": "failed", "error": "step limit", "duration_ms": 3.0})
        );
        let net = RunnableNetwork::new();
        let held = {
            let _s = net.enter();
            HumanNode::new("wait").id()
        };
        assert_eq!(
            finished(InvokeOutcome::Held(vec![held])),
            json!({"outcome": "held", "held": [held], "duration_ms": 3.0})
        );
    }

    #[test]
    fn empty_answers_and_summaries_are_sent() {
        let net = RunnableNetwork::new();
        let node_id = {
            let _s = net.enter();
            HumanNode::new("hi").id()
        };
        let (name, data) = event_json(&net, &NetworkEvent::EmptyAnswer { node_id }).unwrap();
        assert_eq!(name, "empty_answer");
        assert_eq!(
            data,
            json!({"node_id": node_id, "kind": "human", "name": "human"})
        );
        let event = NetworkEvent::SummaryWritten {
            node_id,
            kept: 2,
            summarized: 5,
        };
        let (name, data) = event_json(&net, &event).unwrap();
        assert_eq!(name, "summary_written");
        assert_eq!(
            (data["kept"].clone(), data["summarized"].clone()),
            (json!(2), json!(5))
        );
        assert_eq!(data["node_id"], json!(node_id));
    }
}
