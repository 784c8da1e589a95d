//! What an editor sees of a session: the run's [`RunEvent`]s (the one
//! event protocol) as ACP `session/update`s, and a saved session's
//! history replayed as updates when it is loaded.
//!
//! ```text
//!  RunEvent::Text                    ─▶ agent_message_chunk            (streamed, word by word)
//!  RunEvent::NodeFinished chat       ─▶ agent_message_chunk            (only when nothing streamed)
//!  RunEvent::ApprovalNeeded          ─▶ tool_call {status: pending}    (then session/request_permission)
//!  RunEvent::ToolCallStarted         ─▶ tool_call {status: in_progress} | tool_call_update
//!  RunEvent::NodeFinished tool       ─▶ tool_call_update {completed | failed, content, rawOutput}
//!    write_todos that worked         ─▶ plan {entries}                 (the whole todo list)
//!  RunEvent::AnswerCutOff            ─▶ (the turn stops with stopReason max_tokens)
//! ```
//!
//! A tool call's id is its tool node's id (unique in the session however
//! the model numbers its calls); its kind comes from the tool (`read_file`
//! read, `write_file`/`edit_file` edit, `delete` delete, `ls`/`glob`/`grep`
//! search, `execute` execute, `write_todos` think, others other), its
//! locations are the absolute paths of the file it names (with the line a
//! `read_file` starts at), and `write_file` carries its content as a diff.
//! A replayed call's id is the model's call id (the session's saved
//! messages do not name nodes).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    Content, ContentBlock, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use lc_agent::{Message, NodeId, RunnableNetwork, ToolNode, ToolStatus};
use lc_agent_deepagent::{todos_of, TodoStatus};
use lc_agent_server::RunEvent;
use serde_json::Value;

use crate::console::short_args;

/// Turns one session's run events into updates (see the [module
/// docs](self)).
#[derive(Debug, Default)]
pub(crate) struct Updates {
    /// The workspace root (locations are absolute under it).
    root: Option<PathBuf>,
    /// Tool nodes the editor has been told of.
    announced: HashSet<NodeId>,
    /// Chat nodes whose text streamed.
    streamed: HashSet<NodeId>,
    /// An answer was cut off at the model's limit.
    cut_off: bool,
}

impl Updates {
    /// Updates for a session whose files are under `root` (if on disk).
    pub(crate) fn new(root: Option<PathBuf>) -> Self {
        Self {
            root,
            ..Self::default()
        }
    }

    /// Whether an answer was cut off since the last call (and forgets it).
    pub(crate) fn take_cut_off(&mut self) -> bool {
        std::mem::take(&mut self.cut_off)
    }

    /// The updates `event` (of `net`) makes.
    pub(crate) fn on_run_event(
        &mut self,
        net: &RunnableNetwork,
        event: &RunEvent,
    ) -> Vec<SessionUpdate> {
        match event {
            RunEvent::Text { node_id, text } if !text.is_empty() => {
                self.streamed.insert(*node_id);
                vec![agent_text(text)]
            }
            RunEvent::ApprovalNeeded { pending } => pending
                .iter()
                .filter_map(|call| self.announce(net, call.node_id, ToolCallStatus::Pending))
                .collect(),
            RunEvent::ToolCallStarted { node_id, .. } => {
                match self.announce(net, *node_id, ToolCallStatus::InProgress) {
                    Some(update) => vec![update],
                    None => vec![status_update(*node_id, ToolCallStatus::InProgress)],
                }
            }
            RunEvent::NodeFinished {
                node,
                message: Some(message),
            } => match message {
                Message::Ai { content, .. }
                    if node.kind.as_deref() == Some("chat")
                        && !content.is_empty()
                        && !self.streamed.contains(&node.node_id) =>
                {
                    vec![agent_text(content)]
                }
                Message::Tool {
                    content,
                    name,
                    status,
                    ..
                } => {
                    let mut updates: Vec<SessionUpdate> = self
                        .announce(net, node.node_id, ToolCallStatus::InProgress)
                        .into_iter()
                        .collect();
                    updates.push(finished(node.node_id.to_string(), content, *status));
                    if *status == ToolStatus::Ok && name.as_deref() == Some("write_todos") {
                        updates.push(plan_of(net));
                    }
                    updates
                }
                _ => Vec::new(),
            },
            RunEvent::AnswerCutOff(_) => {
                self.cut_off = true;
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// The tool calls the editor knows that were taken out before they
    /// ran (a cancel): they end `failed`.
    pub(crate) fn stopped(&mut self, nodes: &[NodeId]) -> Vec<SessionUpdate> {
        nodes
            .iter()
            .filter(|id| self.announced.contains(id))
            .map(|id| status_update(*id, ToolCallStatus::Failed))
            .collect()
    }

    /// A `tool_call` for tool node `node_id` in this status, the first
    /// time; `None` once the editor knows it.
    pub(crate) fn announce(
        &mut self,
        net: &RunnableNetwork,
        node_id: NodeId,
        status: ToolCallStatus,
    ) -> Option<SessionUpdate> {
        if !self.announced.insert(node_id) {
            return None;
        }
        let call = net
            .node(node_id)
            .and_then(|n| n.downcast::<ToolNode>().map(|t| t.tool_call.clone()))?;
        let args = call
            .parsed_arguments()
            .unwrap_or_else(|_| Value::String(call.arguments.clone()));
        Some(SessionUpdate::ToolCall(
            tool_call(node_id.to_string(), &call.name, &args, self.root.as_deref()).status(status),
        ))
    }

    /// The fields that describe tool node `node_id` to a permission
    /// request.
    pub(crate) fn describe(
        root: Option<&Path>,
        net: &RunnableNetwork,
        node_id: NodeId,
    ) -> ToolCallUpdate {
        let call = net
            .node(node_id)
            .and_then(|n| n.downcast::<ToolNode>().map(|t| t.tool_call.clone()));
        let fields = match call {
            Some(call) => {
                let args = call
                    .parsed_arguments()
                    .unwrap_or_else(|_| Value::String(call.arguments.clone()));
                let full = tool_call(String::new(), &call.name, &args, root);
                ToolCallUpdateFields::new()
                    .title(full.title)
                    .kind(full.kind)
                    .status(ToolCallStatus::Pending)
                    .locations(full.locations)
                    .content(full.content)
                    .raw_input(args)
            }
            None => ToolCallUpdateFields::new(),
        };
        ToolCallUpdate::new(node_id.to_string(), fields)
    }
}

/// A chunk of the agent's answer.
fn agent_text(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        text,
    ))))
}

/// A chunk of the person's message (replayed).
fn user_text(text: &str) -> SessionUpdate {
    SessionUpdate::UserMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        text,
    ))))
}

/// A tool call's new status.
pub(crate) fn status_update(node_id: NodeId, status: ToolCallStatus) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        node_id.to_string(),
        ToolCallUpdateFields::new().status(status),
    ))
}

/// A tool call's end: its result as content and raw output.
fn finished(id: String, content: &str, status: ToolStatus) -> SessionUpdate {
    let status = if status == ToolStatus::Ok {
        ToolCallStatus::Completed
    } else {
        ToolCallStatus::Failed
    };
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        id,
        ToolCallUpdateFields::new()
            .status(status)
            .content(vec![ToolCallContent::Content(Content::new(
                ContentBlock::Text(TextContent::new(content)),
            ))])
            .raw_output(Value::String(content.to_string())),
    ))
}

/// The todo list as a plan (the whole list: a plan update replaces it).
pub(crate) fn plan_of(net: &RunnableNetwork) -> SessionUpdate {
    let entries = todos_of(net)
        .into_iter()
        .map(|todo| {
            let status = match todo.status {
                TodoStatus::Pending => PlanEntryStatus::Pending,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Completed => PlanEntryStatus::Completed,
            };
            PlanEntry::new(todo.content, PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}

/// A tool call as the editor shows it: title, kind, locations, input.
fn tool_call(id: String, tool: &str, args: &Value, root: Option<&Path>) -> ToolCall {
    let arg = |key: &str| args.get(key).and_then(Value::as_str);
    let (kind, title) = match tool {
        "read_file" => (
            ToolKind::Read,
            format!("Read {}", arg("file_path").unwrap_or("")),
        ),
        "write_file" => (
            ToolKind::Edit,
            format!("Write {}", arg("file_path").unwrap_or("")),
        ),
        "edit_file" => (
            ToolKind::Edit,
            format!("Edit {}", arg("file_path").unwrap_or("")),
        ),
        "delete" => (
            ToolKind::Delete,
            format!("Delete {}", arg("path").unwrap_or("")),
        ),
        "ls" => (
            ToolKind::Search,
            format!("List {}", arg("path").unwrap_or("/")),
        ),
        "glob" => (
            ToolKind::Search,
            format!("Find {}", arg("pattern").unwrap_or("")),
        ),
        "grep" => (
            ToolKind::Search,
            format!("Search for {}", arg("pattern").unwrap_or("")),
        ),
        "execute" => (
            ToolKind::Execute,
            format!("Run `{}`", arg("command").unwrap_or("")),
        ),
        "write_todos" => (ToolKind::Think, "Update the plan".to_string()),
        "task" => (
            ToolKind::Other,
            format!("Delegate: {}", arg("description").unwrap_or("")),
        ),
        other => (
            ToolKind::Other,
            format!("{other} {}", short_args(&args.to_string())),
        ),
    };
    let file = ["file_path", "path"].iter().find_map(|key| arg(key));
    let mut locations = Vec::new();
    if let (Some(root), Some(file)) = (root, file)
        && matches!(
            tool,
            "read_file" | "write_file" | "edit_file" | "delete" | "ls" | "glob" | "grep"
        )
        && let Ok(normal) = lc_agent_filesystem::path::normalize(file)
    {
        let absolute = root.join(normal.trim_start_matches('/'));
        let line = (tool == "read_file")
            .then(|| args.get("offset").and_then(Value::as_u64))
            .flatten()
            .and_then(|offset| u32::try_from(offset + 1).ok());
        locations.push(ToolCallLocation::new(absolute.clone()).line(line));
    }
    let mut content = Vec::new();
    if tool == "write_file"
        && let (Some(location), Some(text)) = (locations.first(), arg("content"))
    {
        content.push(ToolCallContent::Diff(Diff::new(
            location.path.clone(),
            text,
        )));
    }
    ToolCall::new(id, title.trim_end())
        .kind(kind)
        .locations(locations)
        .content(content)
        .raw_input(args.clone())
}

/// A saved session's conversation as updates, oldest first: the person's
/// messages, the agent's answers, each tool call with its result, and the
/// plan as it stands.
pub(crate) fn replay(net: &RunnableNetwork, root: Option<&Path>) -> Vec<SessionUpdate> {
    let history = net.history();
    let mut updates = Vec::new();
    // Calls without a result (a turn cancelled while they waited).
    let mut unanswered: Vec<String> = Vec::new();
    for message in history.to_vec() {
        match message {
            Message::Human { content, .. } => updates.push(user_text(content)),
            Message::Ai {
                content,
                tool_calls,
            } => {
                if !content.is_empty() {
                    updates.push(agent_text(content));
                }
                for call in tool_calls {
                    let args = call
                        .parsed_arguments()
                        .unwrap_or_else(|_| Value::String(call.arguments.clone()));
                    updates.push(SessionUpdate::ToolCall(
                        tool_call(call.id.clone(), &call.name, &args, root)
                            .status(ToolCallStatus::InProgress),
                    ));
                    unanswered.push(call.id.clone());
                }
            }
            Message::Tool {
                content,
                tool_call_id,
                status,
                ..
            } => {
                unanswered.retain(|id| id != tool_call_id);
                updates.push(finished(tool_call_id.clone(), content, *status));
            }
            Message::System { .. } => {}
        }
    }
    for id in unanswered {
        updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id,
            ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
        )));
    }
    if !todos_of(net).is_empty() {
        updates.push(plan_of(net));
    }
    updates
}
