//! The `exec --json` event stream (format `lc-agent-exec/1`): what a run
//! emits ([`RunEvent`], the one event protocol) as the JSON lines of
//! Codex's `codex exec --json` — threads, turns and items — plus the items
//! lc-agent has and Codex does not (approval requests, summaries, hooks).
//!
//! ```text
//!  exec itself            ─▶ thread.started {thread_id, format[, forked_from]}, turn.started
//!  resume --rewind-to     ─▶ item.completed rewind {node, what, files, source}
//!  RunEvent::ToolCallStarted ─▶ item.started   command_execution (`execute`) | tool_call
//!  RunEvent::NodeFinished  chat ─▶ item.completed agent_message {text}
//!                          tool ─▶ item.completed command_execution | tool_call {result, status}
//!                          write_todos ─▶ item.started / item.updated todo_list
//!  RunEvent::ApprovalNeeded ─▶ item.started approval_request {status: pending}
//!  exec's decision          ─▶ item.completed approval_request {status: approved | unanswered}
//!  RunEvent::SummaryWritten ─▶ item.completed summary
//!  RunEvent::Hook           ─▶ item.completed hook
//!  NodeFailed / EmptyAnswer / AnswerCutOff ─▶ item.completed error
//!  RunEvent::Done           ─▶ (todo_list completed) turn.completed {usage}
//!  RunEvent::Error          ─▶ (todo_list completed) turn.failed {error: {message}}
//!  exec itself              ─▶ error {message}  (the run cannot go on: --output-schema unmet)
//! ```
//!
//! The names and fields are the API: later versions only add fields and
//! item types (a reader skips what it does not know); a change that is not
//! an addition gets a new `format`. Item ids are `item_0`, `item_1`, ...
//! in the order items start. Each line is one JSON value, UTF-8, with no
//! raw line or paragraph separators inside (U+2028/U+2029 are escaped), so
//! a line reader sees whole events whatever a tool or model printed.

use std::collections::HashMap;

use lc_agent::{Message, NodeId, RunnableNetwork, ToolNode, ToolStatus};
use lc_agent_deepagent::{todos_of, TodoStatus};
use lc_agent_server::{PendingCall, RunEvent};
use serde::Serialize;
use serde_json::Value;

use crate::console::{out, short_args};

/// The stream's format, on `thread.started`.
pub(crate) const FORMAT: &str = "lc-agent-exec/1";

/// One line of the stream.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type")]
pub(crate) enum ExecEvent {
    /// First: the session the run is in (`exec resume` takes its id).
    #[serde(rename = "thread.started")]
    ThreadStarted {
        thread_id: String,
        format: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        forked_from: Option<String>,
    },
    /// A prompt went to the agent (also a prompt `--output-schema` sends
    /// again with the errors).
    #[serde(rename = "turn.started")]
    TurnStarted {},
    /// The agent answered the turn.
    #[serde(rename = "turn.completed")]
    TurnCompleted { usage: Usage },
    /// The turn ended without an answer.
    #[serde(rename = "turn.failed")]
    TurnFailed { error: ErrorBody },
    /// An item began.
    #[serde(rename = "item.started")]
    ItemStarted { item: Item },
    /// An item changed.
    #[serde(rename = "item.updated")]
    ItemUpdated { item: Item },
    /// An item reached its end (may come without `item.started`).
    #[serde(rename = "item.completed")]
    ItemCompleted { item: Item },
    /// The run cannot go on.
    #[serde(rename = "error")]
    Error { message: String },
}

/// A turn's token usage, and its cost when its models have prices (the
/// session's: its blueprint's `[prices]` over the price file over the
/// built-ins).
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Usage {
    input_tokens: u64,
    cached_input_tokens: u64,
    output_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_usd: Option<f64>,
}

/// Why a turn failed.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ErrorBody {
    message: String,
}

/// A thread item: its id and what it is.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Item {
    id: String,
    #[serde(flatten)]
    details: Details,
}

/// Where a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CallStatus {
    InProgress,
    Completed,
    Failed,
}

/// Where an approval request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ApprovalStatus {
    /// Asked.
    Pending,
    /// Approved without asking (`--yes`).
    Approved,
    /// Nobody can answer: the run ends (exit code 3).
    Unanswered,
}

/// One entry of a `todo_list` item.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TodoEntry {
    text: String,
    completed: bool,
    status: TodoStatus,
}

/// What an item is.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Details {
    /// Text the agent answered (a JSON text with `--output-schema`).
    AgentMessage { text: String },
    /// An `execute` call.
    CommandExecution {
        call_id: String,
        command: String,
        aggregated_output: String,
        exit_code: Option<i32>,
        status: CallStatus,
    },
    /// Any other tool call (file tools, `task`, MCP tools...).
    ToolCall {
        tool: String,
        call_id: String,
        arguments: Value,
        result: Option<String>,
        status: CallStatus,
    },
    /// The agent's plan (`write_todos`).
    TodoList { items: Vec<TodoEntry> },
    /// A call that waits for a person's decision.
    ApprovalRequest {
        tool: String,
        call_id: String,
        arguments: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        allowed: Vec<String>,
        status: ApprovalStatus,
    },
    /// A summary joined the conversation.
    Summary {
        text: String,
        kept: usize,
        summarized: usize,
    },
    /// A hook command ran (for a tool call: its `call_id`, the one of the
    /// call's own item).
    Hook {
        event: String,
        command: String,
        outcome: String,
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
    },
    /// `exec resume --rewind-to`: the session went back to a node before
    /// the turn (what `sessions rewind --json` prints).
    Rewind {
        #[serde(flatten)]
        report: lc_agent_filesystem::RewindReport,
    },
    /// Something went wrong that did not end the turn by itself.
    Error { message: String },
    /// Something the user should know that the run did on its own (a
    /// project's files left unused until it is trusted, a session's
    /// workspace narrowed); said on stderr as `warning:` too.
    Warning { message: String },
}

/// Turns run events into the stream and writes it: JSON lines on stdout
/// (`--json`), or short progress lines on stderr.
pub(crate) struct ExecStream {
    json: bool,
    next_item: usize,
    /// Tool items started, by tool node.
    calls: HashMap<NodeId, Item>,
    /// Approval requests asked, by tool node.
    approvals: HashMap<NodeId, Item>,
    /// The turn's todo list, once written.
    todos: Option<Item>,
}

impl ExecStream {
    /// A stream written as JSON lines (`json`) or as progress on stderr.
    pub(crate) fn new(json: bool) -> Self {
        Self {
            json,
            next_item: 0,
            calls: HashMap::new(),
            approvals: HashMap::new(),
            todos: None,
        }
    }

    /// Writes an event of exec's own (thread, turn, error).
    pub(crate) fn emit(&mut self, event: ExecEvent) {
        self.write(&event);
    }

    /// Writes what `event` (of `net`) is in the stream.
    pub(crate) fn on_run_event(&mut self, net: &RunnableNetwork, event: &RunEvent) {
        for line in self.map(net, event) {
            self.write(&line);
        }
    }

    /// The decision on an approval request: its item completes.
    pub(crate) fn decided(&mut self, node_id: NodeId, decision: ApprovalStatus) {
        if let Some(mut item) = self.approvals.remove(&node_id) {
            if let Details::ApprovalRequest { status, .. } = &mut item.details {
                *status = decision;
            }
            self.write(&ExecEvent::ItemCompleted { item });
        }
    }

    /// A `warning` item (with `--json`; the line was said on stderr).
    /// A rewind done before the turn (an item of the stream; a line on
    /// stderr without `--json`).
    pub(crate) fn rewound(&mut self, report: lc_agent_filesystem::RewindReport) {
        if self.json {
            let item = self.item(Details::Rewind { report });
            self.write(&ExecEvent::ItemCompleted { item });
        } else {
            let files = report.files.as_ref().map_or(0, |f| f.restored.len());
            eprintln!(
                "rewound to {} ({files} file(s) restored)",
                report
                    .node
                    .map_or_else(|| "the start".to_string(), |n| n.to_string())
            );
        }
    }

    pub(crate) fn warning(&mut self, message: String) {
        if self.json {
            let item = self.item(Details::Warning { message });
            self.write(&ExecEvent::ItemCompleted { item });
        }
    }

    fn item(&mut self, details: Details) -> Item {
        let id = format!("item_{}", self.next_item);
        self.next_item += 1;
        Item { id, details }
    }

    /// The lines `event` becomes.
    fn map(&mut self, net: &RunnableNetwork, event: &RunEvent) -> Vec<ExecEvent> {
        match event {
            RunEvent::ToolCallStarted {
                node_id,
                tool_call_id,
                name,
            } => {
                let arguments = tool_arguments(net, *node_id);
                let item = self.item(call_details(name, tool_call_id, arguments));
                self.calls.insert(*node_id, item.clone());
                vec![ExecEvent::ItemStarted { item }]
            }
            RunEvent::NodeFinished {
                node,
                message: Some(message),
            } => match message {
                Message::Ai { content, .. }
                    if node.kind.as_deref() == Some("chat") && !content.is_empty() =>
                {
                    vec![ExecEvent::ItemCompleted {
                        item: self.item(Details::AgentMessage {
                            text: content.clone(),
                        }),
                    }]
                }
                Message::Tool {
                    content,
                    tool_call_id,
                    name,
                    status,
                    ..
                } => self.tool_finished(net, node.node_id, tool_call_id, name, content, *status),
                _ => Vec::new(),
            },
            RunEvent::ApprovalNeeded { pending } => pending
                .iter()
                .map(|call| {
                    let item = self.item(approval_details(call));
                    self.approvals.insert(call.node_id, item.clone());
                    ExecEvent::ItemStarted { item }
                })
                .collect(),
            RunEvent::SummaryWritten {
                node,
                kept,
                summarized,
            } => {
                let text = net
                    .node(node.node_id)
                    .and_then(|n| n.output())
                    .map(|m| m.text().to_string())
                    .unwrap_or_default();
                vec![ExecEvent::ItemCompleted {
                    item: self.item(Details::Summary {
                        text,
                        kept: *kept,
                        summarized: *summarized,
                    }),
                }]
            }
            RunEvent::Hook {
                event,
                command,
                outcome,
                message,
                node_id,
            } => vec![ExecEvent::ItemCompleted {
                item: self.item(Details::Hook {
                    event: event.clone(),
                    command: command.clone(),
                    outcome: outcome.clone(),
                    message: message.clone(),
                    call_id: node_id
                        .and_then(|id| net.node(id))
                        .and_then(|n| n.downcast::<ToolNode>().map(|t| t.tool_call.id.clone())),
                }),
            }],
            RunEvent::NodeFailed { error, .. } => vec![self.error_item(error.clone())],
            RunEvent::EmptyAnswer(_) => {
                vec![self
                    .error_item("the model's answer was empty (no text, no tool call)".to_string())]
            }
            RunEvent::AnswerCutOff(_) => {
                vec![self
                    .error_item("the answer was cut off at the model's output limit".to_string())]
            }
            RunEvent::Done(done) => {
                let mut lines: Vec<ExecEvent> = self.end_todos();
                lines.push(ExecEvent::TurnCompleted {
                    usage: usage_of(done.usage.as_ref()),
                });
                lines
            }
            RunEvent::Error(failed) => {
                let mut lines: Vec<ExecEvent> = self.end_todos();
                lines.push(ExecEvent::TurnFailed {
                    error: ErrorBody {
                        message: failed.failure.message.clone(),
                    },
                });
                lines
            }
            _ => Vec::new(),
        }
    }

    fn error_item(&mut self, message: String) -> ExecEvent {
        ExecEvent::ItemCompleted {
            item: self.item(Details::Error { message }),
        }
    }

    /// A tool node's result: its item completes (started or not), and a
    /// `write_todos` that worked starts or updates the todo list.
    fn tool_finished(
        &mut self,
        net: &RunnableNetwork,
        node_id: NodeId,
        call_id: &str,
        name: &Option<String>,
        content: &str,
        status: ToolStatus,
    ) -> Vec<ExecEvent> {
        let mut item = match self.calls.remove(&node_id) {
            Some(item) => item,
            None => {
                let tool = name.clone().unwrap_or_default();
                let details = call_details(&tool, call_id, tool_arguments(net, node_id));
                self.item(details)
            }
        };
        let ok = status == ToolStatus::Ok;
        let mut todos = false;
        match &mut item.details {
            Details::CommandExecution {
                aggregated_output,
                exit_code,
                status,
                ..
            } => {
                let (output, code) = split_exit_code(content);
                *aggregated_output = output.to_string();
                *exit_code = code.or(ok.then_some(0));
                *status = if ok && *exit_code == Some(0) {
                    CallStatus::Completed
                } else {
                    CallStatus::Failed
                };
            }
            Details::ToolCall {
                tool,
                result,
                status,
                ..
            } => {
                todos = ok && tool == "write_todos";
                *result = Some(content.to_string());
                *status = if ok {
                    CallStatus::Completed
                } else {
                    CallStatus::Failed
                };
            }
            _ => {}
        }
        let mut lines = vec![ExecEvent::ItemCompleted { item }];
        if todos {
            let items = todo_entries(net);
            match self.todos.take() {
                Some(mut list) => {
                    list.details = Details::TodoList { items };
                    self.todos = Some(list.clone());
                    lines.push(ExecEvent::ItemUpdated { item: list });
                }
                None => {
                    let list = self.item(Details::TodoList { items });
                    self.todos = Some(list.clone());
                    lines.push(ExecEvent::ItemStarted { item: list });
                }
            }
        }
        lines
    }

    /// At a turn's end the todo list (if any) completes, as it stands.
    fn end_todos(&mut self) -> Vec<ExecEvent> {
        self.todos
            .take()
            .map(|item| ExecEvent::ItemCompleted { item })
            .into_iter()
            .collect()
    }

    /// Writes one event: a JSON line on stdout, or progress on stderr.
    fn write(&self, event: &ExecEvent) {
        if self.json {
            out(&format!("{}\n", json_line(event)));
        } else if let Some(line) = progress_line(event) {
            eprintln!("{line}");
        }
    }
}

/// `event` as one JSON line (no line end): U+2028 and U+2029, which JSON
/// allows raw in strings but some line readers split at, are escaped.
pub(crate) fn json_line(event: &ExecEvent) -> String {
    let text = serde_json::to_string(event).unwrap_or_else(|e| {
        format!(
            r#"{{"type":"error","message":"an event could not be written: {}"}}"#,
            e.to_string().replace(['"', '\\'], "'")
        )
    });
    text.replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// What the stream says on stderr without `--json`.
fn progress_line(event: &ExecEvent) -> Option<String> {
    let ExecEvent::ItemCompleted { item } = event else {
        return match event {
            ExecEvent::ItemStarted { item } => match &item.details {
                Details::ApprovalRequest {
                    tool,
                    arguments,
                    reason,
                    ..
                } => Some(format!(
                    "approval needed: {tool} {}{}",
                    short_args(&arguments.to_string()),
                    reason
                        .as_ref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()
                )),
                _ => None,
            },
            _ => None,
        };
    };
    match &item.details {
        Details::CommandExecution {
            command, exit_code, ..
        } => Some(match exit_code {
            Some(code) => format!("$ {command} (exit code {code})"),
            None => format!("$ {command} (no exit code)"),
        }),
        Details::ToolCall {
            tool,
            arguments,
            status,
            ..
        } => Some(format!(
            "{tool} {} {}",
            short_args(&arguments.to_string()),
            if *status == CallStatus::Completed {
                "ok"
            } else {
                "error"
            }
        )),
        Details::TodoList { items } => Some(format!(
            "todos: {} of {} done",
            items.iter().filter(|t| t.completed).count(),
            items.len()
        )),
        Details::ApprovalRequest { tool, status, .. } => Some(match status {
            ApprovalStatus::Approved => format!("approved {tool}"),
            _ => format!("{tool} waits for an approval nobody here can give"),
        }),
        Details::Summary { summarized, .. } => {
            Some(format!("summary written ({summarized} messages)"))
        }
        Details::Hook {
            event,
            outcome,
            message,
            ..
        } => Some(format!("hook {event}: {outcome} {message}")),
        Details::Error { message } => Some(format!("warning: {message}")),
        Details::AgentMessage { .. } | Details::Warning { .. } | Details::Rewind { .. } => None,
    }
}

/// The arguments of tool node `node_id` as JSON (their raw text when they
/// are not JSON).
fn tool_arguments(net: &RunnableNetwork, node_id: NodeId) -> Value {
    net.node(node_id)
        .and_then(|n| n.downcast::<ToolNode>().map(|t| t.tool_call.clone()))
        .map(|call| {
            call.parsed_arguments()
                .unwrap_or(Value::String(call.arguments))
        })
        .unwrap_or(Value::Null)
}

/// A tool call in progress: `execute` is a command execution.
fn call_details(tool: &str, call_id: &str, arguments: Value) -> Details {
    if tool == "execute"
        && let Some(command) = arguments.get("command").and_then(Value::as_str)
    {
        return Details::CommandExecution {
            call_id: call_id.to_string(),
            command: command.to_string(),
            aggregated_output: String::new(),
            exit_code: None,
            status: CallStatus::InProgress,
        };
    }
    Details::ToolCall {
        tool: tool.to_string(),
        call_id: call_id.to_string(),
        arguments,
        result: None,
        status: CallStatus::InProgress,
    }
}

fn approval_details(call: &PendingCall) -> Details {
    Details::ApprovalRequest {
        tool: call.tool_call.name.clone(),
        call_id: call.tool_call.id.clone(),
        arguments: call
            .tool_call
            .parsed_arguments()
            .unwrap_or_else(|_| Value::String(call.tool_call.arguments.clone())),
        reason: call.reason.clone(),
        allowed: call
            .allowed
            .iter()
            .filter_map(|kind| serde_json::to_value(kind).ok())
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        status: ApprovalStatus::Pending,
    }
}

/// `execute`'s output and exit code: a failed command's output ends with
/// `Exit code: N`.
fn split_exit_code(content: &str) -> (&str, Option<i32>) {
    if let Some((output, last)) = content.rsplit_once("Exit code: ")
        && let Ok(code) = last.trim().parse::<i32>()
        && (output.is_empty() || output.ends_with('\n'))
    {
        return (output.strip_suffix('\n').unwrap_or(output), Some(code));
    }
    (content, None)
}

fn todo_entries(net: &RunnableNetwork) -> Vec<TodoEntry> {
    todos_of(net)
        .into_iter()
        .map(|todo| TodoEntry {
            completed: todo.status == TodoStatus::Completed,
            text: todo.content,
            status: todo.status,
        })
        .collect()
}

/// A turn's usage from a run's token counts (`prompt_tokens`,
/// `cache_read_tokens`, `completion_tokens`, `cost_usd`).
fn usage_of(usage: Option<&Value>) -> Usage {
    let count = |key: &str| {
        usage
            .and_then(|u| u.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Usage {
        input_tokens: count("prompt_tokens"),
        cached_input_tokens: count("cache_read_tokens"),
        output_tokens: count("completion_tokens"),
        cost_usd: usage
            .and_then(|u| u.get("cost_usd"))
            .and_then(Value::as_f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_command_keeps_its_exit_code_apart_from_its_output() {
        assert_eq!(split_exit_code("hi\nExit code: 3"), ("hi", Some(3)));
        assert_eq!(split_exit_code("Exit code: 1"), ("", Some(1)));
        assert_eq!(split_exit_code("hi\n"), ("hi\n", None));
    }

    #[test]
    fn separators_some_line_readers_split_at_are_escaped() {
        let line = json_line(&ExecEvent::Error {
            message: "a\u{2028}b\u{2029}c\nd\u{0}".to_string(),
        });
        assert!(!line.contains('\u{2028}') && !line.contains('\n'), "{line}");
        let back: Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(back["message"], "a\u{2028}b\u{2029}c\nd\u{0}");
    }
}
