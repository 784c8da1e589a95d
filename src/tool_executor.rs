//! Tools outside a chat: their OpenAI definitions ([`openai_tools`]) and a
//!
//! (The full description is on the [`ToolExecutor`] docs.)

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use futures::FutureExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::message::{ToolCall, ToolStatus};
use crate::network::RunnableNetwork;
use crate::tool::{Tool, ToolContext};
use crate::tool_call::run_tool_call;

/// The OpenAI tool definitions (`{"type": "function", "function": {...}}`)
/// of `tools`, in their order.
///
/// ```
/// use lc_agent::{openai_tools, FnTool, Tool, ToolOutput};
/// use serde_json::json;
/// use std::sync::Arc;
///
/// let echo: Arc<dyn Tool> = Arc::new(FnTool::new("echo", "Echoes `text`.",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}}),
///     |args, _| async move { Ok(ToolOutput::ok(args["text"].to_string())) }));
/// let defs = openai_tools(&[echo]);
/// assert_eq!(defs[0]["type"], "function");
/// assert_eq!(defs[0]["function"]["name"], "echo");
/// assert_eq!(defs[0]["function"]["parameters"]["type"], "object");
/// ```
pub fn openai_tools(tools: &[Arc<dyn Tool>]) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            let spec = tool.spec();
            json!({
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": spec.parameters,
                }
            })
        })
        .collect()
}

/// The result of one call run by a [`ToolExecutor`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolExecution {
    /// The call's id, as given (empty when the call had none).
    pub tool_call_id: String,
    /// The tool's name, as given (empty when the call had none).
    pub function_name: String,
    /// Whether the tool did its work.
    pub success: bool,
    /// What the tool returned, on success.
    pub result: Option<String>,
    /// What went wrong (`Error: ...`, the text a model would read).
    pub error: Option<String>,
    /// How long the call took, in milliseconds.
    pub execution_time_ms: f64,
}

/// An OpenAI tool call object, read leniently (see [`ToolExecutor::execute_openai`]).
#[derive(Deserialize)]
struct OpenAiCall {
    #[serde(default)]
    id: Option<String>,
    function: OpenAiFunction,
}

#[derive(Deserialize)]
struct OpenAiFunction {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

/// Reads one OpenAI tool call object: the call, or (id, name, why not).
fn read_call(index: usize, value: &Value) -> Result<ToolCall, (String, String, String)> {
    let id = value
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("call_{index}"));
    let name = value
        .pointer("/function/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let call: OpenAiCall = serde_json::from_value(value.clone()).map_err(|e| {
        (
            id.clone(),
            name.clone(),
            format!("Error: tool call {index} is not an OpenAI tool call object ({{\"id\", \"type\": \"function\", \"function\": {{\"name\", \"arguments\"}}}}): {e}"),
        )
    })?;
    let arguments = match call.function.arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text,
        Some(object @ Value::Object(_)) => object.to_string(),
        Some(other) => {
            return Err((
                id,
                name,
                format!("Error: the arguments of tool call {index} must be a JSON object or a string holding one, got `{other}`"),
            ))
        }
    };
    Ok(ToolCall {
        id: call.id.unwrap_or(id),
        name: call.function.name,
        arguments,
    })
}

/// Tools outside a chat: their OpenAI definitions ([`openai_tools`]) and a
/// [`ToolExecutor`] that runs a batch of OpenAI-style tool calls
/// concurrently, without a chat model or a graph to grow.
///
/// ```text
///  [Arc<dyn Tool>] ──▶ openai_tools() ──▶ [{"type": "function", "function": {name, description, parameters}}]
///
///  [{id, type, function: {name, arguments}}, ...] ──▶ ToolExecutor::execute_openai
///        each call at once (run_tool_call: unknown tool, bad JSON, timeout → error results)
///        ──▶ [{tool_call_id, function_name, success, result, error, execution_time_ms}, ...]
/// ```
///
/// The tools see a network as their context ([`ToolContext::network`]): a
/// scratch one by default, or a session's ([`ToolExecutor::with_network`]),
/// so file tools over the session's own files read and write those. A call
/// that cannot be read (no function name, arguments that are neither a
/// JSON string nor an object) gets its own error entry; the others still
/// run. Nothing here panics on input, and a panicking tool becomes an
/// error entry too.
///
/// Runs batches of tool calls against a set of tools, concurrently (see
/// the docs above).
///
/// ```
/// use lc_agent::{FnTool, ToolExecutor, ToolOutput};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let executor = ToolExecutor::new([FnTool::new("upper", "Upper-cases `text`.",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}}),
///     |args, _| async move { Ok(ToolOutput::ok(args["text"].as_str().unwrap_or("").to_uppercase())) })]);
/// let results = executor.execute_openai(&[
///     json!({"id": "a", "type": "function", "function": {"name": "upper", "arguments": "{\"text\": \"hi\"}"}}),
///     json!({"id": "b", "type": "function", "function": {"name": "nope", "arguments": "{}"}}),
/// ]).await;
/// assert_eq!(results[0].result.as_deref(), Some("HI"));
/// assert!(!results[1].success);
/// assert!(results[1].error.as_deref().unwrap().starts_with("Error: Unknown tool"));
/// # });
/// ```
#[derive(Clone)]
pub struct ToolExecutor {
    tools: Vec<Arc<dyn Tool>>,
    network: RunnableNetwork,
}

impl std::fmt::Debug for ToolExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolExecutor")
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("network", &self.network.id())
            .finish()
    }
}

impl ToolExecutor {
    /// An executor of these tools, over a scratch network.
    pub fn new<T: Tool + 'static>(tools: impl IntoIterator<Item = T>) -> Self {
        Self::from_shared(
            tools
                .into_iter()
                .map(|t| Arc::new(t) as Arc<dyn Tool>)
                .collect::<Vec<_>>(),
        )
    }

    /// An executor of shared tools, over a scratch network.
    pub fn from_shared(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        Self {
            tools: tools.into_iter().collect(),
            network: RunnableNetwork::new(),
        }
    }

    /// Runs the calls in `network` (the [`ToolContext::network`] the tools see).
    #[must_use]
    pub fn with_network(mut self, network: RunnableNetwork) -> Self {
        self.network = network;
        self
    }

    /// The tools, in the order they are offered.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// Runs the calls concurrently; one result per call, in their order.
    pub async fn execute(&self, calls: &[ToolCall]) -> Vec<ToolExecution> {
        futures::future::join_all(calls.iter().map(|call| self.run_one(call))).await
    }

    /// Runs OpenAI tool call objects (`{"id", "type": "function",
    /// "function": {"name", "arguments"}}`; `arguments` a JSON string or
    /// an object) concurrently; a call that cannot be read gets an error
    /// entry of its own.
    pub async fn execute_openai(&self, calls: &[Value]) -> Vec<ToolExecution> {
        let runs = calls.iter().enumerate().map(|(index, value)| async move {
            match read_call(index, value) {
                Ok(call) => self.run_one(&call).await,
                Err((tool_call_id, function_name, error)) => ToolExecution {
                    tool_call_id,
                    function_name,
                    success: false,
                    result: None,
                    error: Some(error),
                    execution_time_ms: 0.0,
                },
            }
        });
        futures::future::join_all(runs).await
    }

    async fn run_one(&self, call: &ToolCall) -> ToolExecution {
        let ctx = ToolContext {
            network: self.network.clone(),
            node_id: uuid::Uuid::new_v4(),
            tool_call_id: call.id.clone(),
        };
        let started = Instant::now();
        let output = AssertUnwindSafe(run_tool_call(&self.tools, call, &ctx))
            .catch_unwind()
            .await;
        let execution_time_ms = started.elapsed().as_secs_f64() * 1000.0;
        let (success, result, error) = match output {
            Ok(out) if out.status == ToolStatus::Ok => (true, Some(out.content), None),
            Ok(out) => (false, None, Some(out.content)),
            Err(_) => (
                false,
                None,
                Some(format!("Error: the tool `{}` panicked", call.name)),
            ),
        };
        ToolExecution {
            tool_call_id: call.id.clone(),
            function_name: call.name.clone(),
            success,
            result,
            error,
            execution_time_ms,
        }
    }
}
