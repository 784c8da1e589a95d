//! The todo list: a plan the model keeps with `write_todos`, stored in the
//! network's metadata (saved with the session, reloaded with it).
//!
//! ```text
//!  chat ──▶ write_todos {todos: [{content, status}]} ──▶ metadata["todos"]
//!    ▲                                                        │
//!    └──── system-prompt section: when to plan, the current list ◀┘
//! ```
//!
//! Each call replaces the whole list (the model sends it back with the
//! statuses changed), so the list in the metadata is always the latest
//! plan. A sub-agent's todos live in its own network.

use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{
    tool_args, ChatRequest, NetworkModifier, NodeRef, Result, RunnableNetwork, Tool, ToolContext,
    ToolError, ToolOutput, TypedTool,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The network metadata key holding the todo list.
pub const TODOS_KEY: &str = "todos";

/// The tool's name.
pub(crate) const WRITE_TODOS: &str = "write_todos";

/// The system-prompt section about planning.
pub const TODOS_PROMPT: &str = "## Planning with `write_todos`

For a task of three or more distinct steps, or when the user gives you a list of things to do, \
write a todo list with `write_todos` before you start, then keep it current: mark a todo \
`in_progress` when you begin it (one at a time), `completed` as soon as it is done, and add \
todos you discover. Each call replaces the whole list, so always send every todo. Skip the list \
for a simple question or a one-step task.";

/// One item of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Todo {
    /// What to do.
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
}

/// Where a todo stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// The todo list kept in a network (empty when there is none, or when the
/// stored value is not a list of todos).
pub fn todos_of(network: &RunnableNetwork) -> Vec<Todo> {
    match network.metadata_value(TODOS_KEY) {
        None => Vec::new(),
        Some(value) => serde_json::from_value(value).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "the network's todo list is malformed; ignoring it");
            Vec::new()
        }),
    }
}

/// The arguments of `write_todos` (read by [`lc_agent::tool_args`]).
#[derive(Deserialize)]
pub(crate) struct WriteTodosArgs {
    /// The whole list, in order.
    pub todos: Vec<Todo>,
}

/// The `write_todos` tool: replaces the network's todo list.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WriteTodos;

impl TypedTool for WriteTodos {
    const NAME: &'static str = WRITE_TODOS;
    type Args<'a> = WriteTodosArgs;

    fn description(&self) -> &str {
        "Write the todo list for the current task: the whole list each time, every todo with its \
         `content` and `status` (`pending`, `in_progress` or `completed`). Use it to plan work of \
         several steps and to show progress; keep one todo `in_progress` at a time."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The whole todo list, in order.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "description": "What to do."},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["content", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        })
    }

    async fn call(
        &self,
        args: Self::Args<'_>,
        ctx: &ToolContext,
    ) -> std::result::Result<ToolOutput, ToolError> {
        if let Some(i) = args.todos.iter().position(|t| t.content.trim().is_empty()) {
            return Err(tool_args::invalid(
                WRITE_TODOS,
                format!("`todos[{i}].content` must not be empty"),
            ));
        }
        let list = serde_json::to_value(&args.todos)
            .map_err(|e| ToolError::Failed(format!("the todo list cannot be stored: {e}")))?;
        ctx.network.set_metadata(TODOS_KEY, list.clone());
        Ok(ToolOutput::ok(format!("Updated todo list to {list}")))
    }
}

/// Gives chat nodes `write_todos` and the planning section of the system
/// prompt (with the current list, when there is one).
///
/// ```
/// use lc_agent::{Attachments, HumanNode, RunnableNetwork, ScriptedChatModel, Turn};
/// use lc_agent_deepagent::{todos_of, TodoListModifier, TodoStatus};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = ScriptedChatModel::new([
///     Turn::call("c1", "write_todos", json!({"todos": [
///         {"content": "Read the code", "status": "in_progress"},
///         {"content": "Write the fix", "status": "pending"}]})),
///     Turn::text("Planned."),
/// ]);
/// let net = RunnableNetwork::builder().default_node("chat").chat_model("m").model("m", model).build();
/// net.add_modifier(TodoListModifier::new()).unwrap();
/// { let _s = net.enter(); HumanNode::new("Fix the bug"); }
/// net.invoke().await.unwrap();
/// let todos = todos_of(&net);
/// assert_eq!(todos[0].status, TodoStatus::InProgress);
/// assert_eq!(todos[1].content, "Write the fix");
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct TodoListModifier {
    id: String,
}

impl TodoListModifier {
    /// The modifier (id `todos`).
    pub fn new() -> Self {
        Self {
            id: "todos".to_string(),
        }
    }
}

impl Default for TodoListModifier {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl NetworkModifier for TodoListModifier {
    fn id(&self) -> &str {
        &self.id
    }

    async fn on_chat_request(
        &self,
        network: &RunnableNetwork,
        _node: &NodeRef,
        request: &mut ChatRequest,
    ) -> Result<()> {
        let todos = todos_of(network);
        if todos.is_empty() {
            request.system.push(TODOS_PROMPT.to_string());
        } else {
            let list = serde_json::to_string(&todos)?;
            request
                .system
                .push(format!("{TODOS_PROMPT}\n\nThe current todo list: {list}"));
        }
        Ok(())
    }

    fn tools(&self, _network: &RunnableNetwork) -> Vec<Arc<dyn Tool>> {
        vec![Arc::new(WriteTodos)]
    }
}
