//! [`RunEvent`]: the one protocol of what a run emits. The worker writes
//! these, the stores keep them numbered ([`NumberedEvent`]), and every
//! reader gets them typed: the chat completions (streamed or not), the
//! session API's and the runs API's SSE streams, and the web page; the
//! CLI's `lc-agent exec --json` maps them to its Codex-shaped JSON lines
//! (`cli/src/exec/events.rs`).
//!
//! On the wire (SSE, the stores, `lc-agent runs show --events`) an event
//! is `{"seq": N, "event": "<name>", "data": {...}}` (SSE: `id: N`,
//! `event: <name>`, `data: {...}`); the names and fields below are part
//! of the API and stay as they are.
//!
//! ```text
//!  NetworkEvent::Delta(Text)        ─▶ text               {node_id, text}
//!  NodeAdded / NodeInvoked          ─▶ node_added / node_finished {node_id, kind, name[, message]}
//!  NodeFailed                       ─▶ node_failed        {node_id, error}
//!  ToolCallStarted / Finished       ─▶ tool_call_started / tool_call_finished
//!                                      {node_id, tool_call_id, name[, status, duration_ms]}
//!  EmptyAnswer / AnswerCutOff       ─▶ empty_answer / answer_cut_off {node_id, kind, name}
//!  SummaryWritten                   ─▶ summary_written    {node_id, kind, name, kept, summarized}
//!  HookRan                          ─▶ hook               {event, command, outcome, message[, node_id]}
//!  Steered (a message sent mid-run) ─▶ steered            {id, mode[, node_id]}
//!  InvokeStarted / InvokeFinished   ─▶ run_started {[warning]} / run_finished
//!                                      {outcome, duration_ms[, error | held][, usage]}
//!  an MCP server's elicitation/create ─▶ input_requested {id, server, message, requested_schema}
//!  its answer (POST .../input/{id})   ─▶ input_answered {id, action}
//!  (after the run)                  ─▶ stopped {removed}, approval_needed {pending},
//!                                      then done {answer, revision, stopped, pending_approvals,
//!                                      run, status[, usage][, cut_off]} or error {message, status[, revision],
//!                                      run[, usage]};  handed_back {server} at a shutdown
//! ```
//!
//! The fields, where they are not plain:
//! - `warning` of `run_started`: present when the session runs in bypass
//!   mode (no call asks for approval), every time.
//! - `status` of a tool call: `"ok"` or `"error"`.
//! - `outcome` of a run ([`Outcome`]): `"completed"` (every pending node
//!   ran), `"failed"` (with `error`, the message), or `"held"` (with
//!   `held`, the ids of the nodes waiting for a decision).
//! - `empty_answer`: the chat node got neither text nor tool calls from
//!   its model (the run goes on; the node's metadata says
//!   `empty_answer: true`).
//! - `summary_written`: the summary node joined the conversation; it
//!   stands for `summarized` earlier messages and keeps the `kept`
//!   messages before it verbatim.
//! - `usage`: the run's token usage, priced
//!   ([`UsageTotals::priced`](lc_agent::UsageTotals::priced)).
//! - `status` of `error`: the HTTP status a request would have failed
//!   with (502 the model, 409 a conflict, 503 the store, 504 the time
//!   limit).

use lc_agent::ToolStatus;
use lc_agent::{InvokeOutcome, Message, NetworkEvent, NodeId, RunnableNetwork, StreamDelta};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::pending::PendingCall;
use super::record::RunStatus;
use crate::error::RunFailure;

/// Everything a run emits (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunEvent {
    /// Text a chat node streamed.
    Text {
        /// The chat node.
        node_id: NodeId,
        /// The new text.
        text: String,
    },
    /// A node joined the graph.
    NodeAdded(NodeInfo),
    /// A node ran.
    NodeFinished {
        /// The node.
        #[serde(flatten)]
        node: NodeInfo,
        /// Its output.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<Message>,
    },
    /// A node failed.
    NodeFailed {
        /// The node.
        node_id: NodeId,
        /// Why.
        error: String,
    },
    /// A tool call started.
    ToolCallStarted {
        /// The tool node.
        node_id: NodeId,
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        name: String,
    },
    /// A tool call finished.
    ToolCallFinished {
        /// The tool node.
        node_id: NodeId,
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        name: String,
        /// `ok` or `error`.
        status: ToolStatus,
        /// How long it took.
        duration_ms: f64,
    },
    /// A chat node got neither text nor tool calls.
    EmptyAnswer(NodeInfo),
    /// A chat node's answer was cut off (its length limit).
    AnswerCutOff(NodeInfo),
    /// A summary node joined the conversation.
    SummaryWritten {
        /// The summary node.
        #[serde(flatten)]
        node: NodeInfo,
        /// Messages kept verbatim before it.
        kept: usize,
        /// Messages it stands for.
        summarized: usize,
    },
    /// A hook command of the server's settings ran (`outcome`: `ok`,
    /// `blocked`, `failed`, `timed_out`).
    Hook {
        /// The hook event (`PreToolUse`, `Stop`, ...).
        event: String,
        /// The command.
        command: String,
        /// How it ended.
        outcome: String,
        /// Its reason or error.
        message: String,
        /// The tool node it ran for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node_id: Option<NodeId>,
    },
    /// A message sent while the run went on (`POST` while it ran: 202)
    /// joined it at a node boundary as the human node `node_id` (`mode`:
    /// `inject`, `queue` or `interrupt`); an interrupt with nothing to
    /// say has no node: it stopped the run.
    Steered {
        /// The message (the id the 202 gave).
        id: Uuid,
        /// How it joined.
        mode: String,
        /// The human node it became.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node_id: Option<NodeId>,
    },
    /// The invoke started.
    RunStarted {
        /// Said when the session runs in bypass mode (nothing asks).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        warning: Option<String>,
    },
    /// The invoke ended.
    RunFinished {
        /// How.
        outcome: Outcome,
        /// How long it took.
        duration_ms: f64,
        /// Why it failed (`failed`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The nodes waiting for a decision (`held`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        held: Option<Vec<NodeId>>,
        /// What this invoke used, priced.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Value>,
    },
    /// A shutdown handed the run back to the queue.
    HandedBack {
        /// The server that handed it back.
        server: String,
    },
    /// The run was cancelled or timed out: the nodes it added that never
    /// ran are taken out.
    Stopped {
        /// How many.
        removed: usize,
    },
    /// Calls wait for a person's decision.
    ApprovalNeeded {
        /// The calls.
        pending: Vec<PendingCall>,
    },
    /// An MCP server asks the person for input in the middle of a tool
    /// call; the call waits for `POST /api/sessions/{session}/input/{id}`.
    InputRequested(InputRequest),
    /// A request for input was answered (`action`: `accept`, `decline`
    /// or `cancel`). One the run's end left unanswered is declined, with
    /// no event.
    InputAnswered {
        /// The request.
        id: Uuid,
        /// The answer's action.
        action: String,
    },
    /// The run ended (done, waiting or cancelled).
    Done(RunDone),
    /// The run failed.
    Error(RunErrorEvent),
}

/// `input_requested`: an MCP server's request for input (its
/// `elicitation/create`, form mode), as the person is to see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// The request, as the answer names it.
    pub id: Uuid,
    /// The MCP server that asks (its name in the configuration).
    pub server: String,
    /// What it says.
    pub message: String,
    /// The form: a JSON Schema object of flat properties (strings,
    /// numbers, booleans, enums), as the server sent it.
    pub requested_schema: Value,
}

/// A node an event is about (`kind` and `name` when the graph has it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// The node.
    pub node_id: NodeId,
    /// Its kind (`human`, `chat`, `tool`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl NodeInfo {
    /// Node `node_id` of `net`.
    pub fn of(net: &RunnableNetwork, node_id: NodeId) -> Self {
        let node = net.node(node_id);
        Self {
            node_id,
            kind: node.as_ref().map(|n| n.kind().to_string()),
            name: node.as_ref().map(|n| n.name().to_string()),
        }
    }
}

/// How an invoke ended, as `run_finished` names it (stable wire strings,
/// whatever the Rust variants of [`InvokeOutcome`] are called).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Every pending node ran.
    Completed,
    /// A node failed.
    Failed,
    /// Nodes wait for a decision.
    Held,
    /// An outcome this server does not know yet.
    #[serde(other)]
    Unknown,
}

impl Outcome {
    /// The outcome of an invoke.
    ///
    /// ```
    /// use lc_agent::InvokeOutcome;
    /// use lc_agent_server::Outcome;
    ///
    /// assert_eq!(Outcome::of(&InvokeOutcome::Completed), Outcome::Completed);
    /// assert_eq!(Outcome::of(&InvokeOutcome::Failed("boom".into())), Outcome::Failed);
    /// assert_eq!(Outcome::of(&InvokeOutcome::Held(Vec::new())), Outcome::Held);
    /// ```
    pub fn of(outcome: &InvokeOutcome) -> Self {
        match outcome {
            InvokeOutcome::Completed => Outcome::Completed,
            InvokeOutcome::Failed(_) => Outcome::Failed,
            InvokeOutcome::Held(_) => Outcome::Held,
            _ => Outcome::Unknown,
        }
    }
}

/// `done`: the run's end, for a done, waiting or cancelled run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDone {
    /// The final answer (empty unless the agent answered).
    pub answer: String,
    /// The session's revision after the run.
    pub revision: Option<u64>,
    /// Whether a cancel or the time limit stopped it.
    pub stopped: bool,
    /// The calls it waits for (a waiting run).
    pub pending_approvals: Vec<PendingCall>,
    /// The run.
    pub run: Uuid,
    /// Where it is now.
    pub status: RunStatus,
    /// What it used, priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// Whether the answer was cut off by the model's output limit (the
    /// answering chat node's `cut_off`): OpenAI's `finish_reason: length`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_off: bool,
}

/// `error`: the run failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunErrorEvent {
    /// The failure, as a client sees it.
    #[serde(flatten)]
    pub failure: RunFailure,
    /// The session's revision after the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u64>,
    /// The run.
    pub run: Uuid,
    /// What it used, priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
}

impl RunEvent {
    /// The event a network event of `net` is sent as (`None`: not sent).
    pub fn from_network(net: &RunnableNetwork, event: &NetworkEvent) -> Option<Self> {
        Some(match event {
            NetworkEvent::Delta {
                node_id,
                delta: StreamDelta::Text(text),
            } if !text.is_empty() => RunEvent::Text {
                node_id: *node_id,
                text: text.clone(),
            },
            NetworkEvent::NodeAdded { node_id } => RunEvent::NodeAdded(NodeInfo::of(net, *node_id)),
            NetworkEvent::NodeInvoked { node_id } => RunEvent::NodeFinished {
                node: NodeInfo::of(net, *node_id),
                message: net
                    .node(*node_id)
                    .and_then(|n| n.output())
                    .map(|m| (*m).clone()),
            },
            NetworkEvent::NodeFailed { node_id, error } => RunEvent::NodeFailed {
                node_id: *node_id,
                error: error.clone(),
            },
            NetworkEvent::ToolCallStarted {
                node_id,
                tool_call_id,
                name,
            } => RunEvent::ToolCallStarted {
                node_id: *node_id,
                tool_call_id: tool_call_id.clone(),
                name: name.clone(),
            },
            NetworkEvent::ToolCallFinished {
                node_id,
                tool_call_id,
                name,
                status,
                elapsed,
            } => RunEvent::ToolCallFinished {
                node_id: *node_id,
                tool_call_id: tool_call_id.clone(),
                name: name.clone(),
                status: *status,
                duration_ms: elapsed.as_secs_f64() * 1000.0,
            },
            NetworkEvent::EmptyAnswer { node_id } => {
                RunEvent::EmptyAnswer(NodeInfo::of(net, *node_id))
            }
            NetworkEvent::AnswerCutOff { node_id } => {
                RunEvent::AnswerCutOff(NodeInfo::of(net, *node_id))
            }
            NetworkEvent::SummaryWritten {
                node_id,
                kept,
                summarized,
            } => RunEvent::SummaryWritten {
                node: NodeInfo::of(net, *node_id),
                kept: *kept,
                summarized: *summarized,
            },
            NetworkEvent::HookRan {
                node_id,
                event,
                command,
                outcome,
                message,
            } => RunEvent::Hook {
                event: event.clone(),
                command: command.clone(),
                outcome: outcome.clone(),
                message: message.clone(),
                node_id: *node_id,
            },
            NetworkEvent::Steered { id, mode, node_id } => RunEvent::Steered {
                id: *id,
                mode: (*mode).to_string(),
                node_id: *node_id,
            },
            NetworkEvent::InvokeStarted => RunEvent::RunStarted {
                warning: crate::modes::run_warning(net),
            },
            NetworkEvent::InvokeFinished { outcome, elapsed } => RunEvent::RunFinished {
                outcome: Outcome::of(outcome),
                duration_ms: elapsed.as_secs_f64() * 1000.0,
                error: match outcome {
                    InvokeOutcome::Failed(error) => Some(error.clone()),
                    _ => None,
                },
                held: match outcome {
                    InvokeOutcome::Held(held) => Some(held.clone()),
                    _ => None,
                },
                usage: None,
            },
            _ => return None,
        })
    }

    /// The event's name (SSE `event:`).
    pub fn name(&self) -> &'static str {
        match self {
            RunEvent::Text { .. } => "text",
            RunEvent::NodeAdded(_) => "node_added",
            RunEvent::NodeFinished { .. } => "node_finished",
            RunEvent::NodeFailed { .. } => "node_failed",
            RunEvent::ToolCallStarted { .. } => "tool_call_started",
            RunEvent::ToolCallFinished { .. } => "tool_call_finished",
            RunEvent::EmptyAnswer(_) => "empty_answer",
            RunEvent::AnswerCutOff(_) => "answer_cut_off",
            RunEvent::SummaryWritten { .. } => "summary_written",
            RunEvent::Hook { .. } => "hook",
            RunEvent::RunStarted { .. } => "run_started",
            RunEvent::RunFinished { .. } => "run_finished",
            RunEvent::HandedBack { .. } => "handed_back",
            RunEvent::Steered { .. } => "steered",
            RunEvent::Stopped { .. } => "stopped",
            RunEvent::ApprovalNeeded { .. } => "approval_needed",
            RunEvent::InputRequested(_) => "input_requested",
            RunEvent::InputAnswered { .. } => "input_answered",
            RunEvent::Done(_) => "done",
            RunEvent::Error(_) => "error",
        }
    }

    /// The event's data (SSE `data:`).
    pub fn data(&self) -> Value {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut tagged)) => tagged.remove("data").unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }

    /// The event of a name and its data (as the stores keep them).
    pub fn from_parts(name: &str, data: Value) -> Result<Self, serde_json::Error> {
        let mut tagged = serde_json::Map::new();
        tagged.insert("event".to_string(), Value::String(name.to_string()));
        tagged.insert("data".to_string(), data);
        serde_json::from_value(Value::Object(tagged))
    }

    /// Whether the event ends a stream of the run (`done` or `error`).
    pub fn is_end(&self) -> bool {
        matches!(self, RunEvent::Done(_) | RunEvent::Error(_))
    }
}

/// One numbered event of a run: `seq` counts from 1 and never repeats
/// within a run, whichever server sends it (SSE `id:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumberedEvent {
    /// Its place in the run.
    pub seq: u64,
    /// The event (`event` and `data` on the wire).
    #[serde(flatten)]
    pub event: RunEvent,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use lc_agent::{HumanNode, InvokeOutcome, NetworkEvent, RunnableNetwork};
    use serde_json::json;

    use super::{NumberedEvent, RunEvent};

    fn finished(outcome: InvokeOutcome) -> serde_json::Value {
        let net = RunnableNetwork::new();
        let event = NetworkEvent::InvokeFinished {
            outcome,
            elapsed: Duration::from_millis(3),
        };
        let event = RunEvent::from_network(&net, &event).unwrap();
        assert_eq!(event.name(), "run_finished");
        let data = event.data();
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
            json!({"outcome": "failed", "duration_ms": 3.0, "error": "step limit"})
        );
        let net = RunnableNetwork::new();
        let held = {
            let _s = net.enter();
            HumanNode::new("wait").id()
        };
        assert_eq!(
            finished(InvokeOutcome::Held(vec![held])),
            json!({"outcome": "held", "duration_ms": 3.0, "held": [held]})
        );
    }

    #[test]
    fn empty_answers_and_summaries_are_sent() {
        let net = RunnableNetwork::new();
        let node_id = {
            let _s = net.enter();
            HumanNode::new("hi").id()
        };
        let event = RunEvent::from_network(&net, &NetworkEvent::EmptyAnswer { node_id }).unwrap();
        assert_eq!(event.name(), "empty_answer");
        assert_eq!(
            event.data(),
            json!({"node_id": node_id, "kind": "human", "name": "human"})
        );
        let event = NetworkEvent::SummaryWritten {
            node_id,
            kept: 2,
            summarized: 5,
        };
        let event = RunEvent::from_network(&net, &event).unwrap();
        assert_eq!(event.name(), "summary_written");
        let data = event.data();
        assert_eq!(
            (data["kept"].clone(), data["summarized"].clone()),
            (json!(2), json!(5))
        );
        assert_eq!(data["node_id"], json!(node_id));
    }

    #[test]
    fn numbered_events_read_back_as_written() {
        let net = RunnableNetwork::new();
        let node_id = {
            let _s = net.enter();
            HumanNode::new("hi").id()
        };
        for event in [
            RunEvent::RunStarted { warning: None },
            RunEvent::Text {
                node_id,
                text: "hello".into(),
            },
            RunEvent::from_network(&net, &NetworkEvent::NodeInvoked { node_id }).unwrap(),
            RunEvent::Stopped { removed: 2 },
        ] {
            let numbered = NumberedEvent { seq: 7, event };
            let text = serde_json::to_string(&numbered).unwrap();
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(value["seq"], json!(7));
            assert_eq!(value["event"], json!(numbered.event.name()));
            assert_eq!(value["data"], numbered.event.data());
            let back: NumberedEvent = serde_json::from_str(&text).unwrap();
            assert_eq!(back, numbered);
            let parts = RunEvent::from_parts(numbered.event.name(), numbered.event.data()).unwrap();
            assert_eq!(parts, numbered.event);
        }
        assert_eq!(RunEvent::RunStarted { warning: None }.data(), json!({}));
    }
}
