//! Tools: functions a chat model can call.
//!
//! A [`Tool`] has a name, a description and a JSON-schema for its
//! parameters (together a [`ToolSpec`], what the model sees), and an async
//! [`Tool::call`]. Errors are results: whatever goes wrong (unknown tool,
//! arguments that are not JSON, arguments of the wrong shape, a timeout, a
//! failure inside the tool) becomes a tool message starting with `Error: `
//! that the model reads on its next turn.
//!
//! Write a tool as a [`TypedTool`]: a name, a description, a schema and a
//! `call` that receives its arguments already read into a struct. Every
//! [`TypedTool`] is a [`Tool`] (a blanket impl), and its arguments are read
//! by [`tool_args::parse`], the one place where
//! argument errors are worded, so every such tool reports a mistake the
//! same way:
//!
//! ```text
//!  Error: Invalid arguments for <tool>: not valid JSON (<parser error>)
//!  Error: Invalid arguments for <tool>: expected a JSON object, got <json>
//!  Error: Invalid arguments for <tool>: missing required argument `k`
//!  Error: Invalid arguments for <tool>: `k` must be a string, got <json>
//!  Error: Invalid arguments for <tool>: unknown argument `x`, expected `a` or `b`
//! ```
//!
//! (see [`tool_args`] for the whole table). Implement
//! [`Tool`] directly only for a tool whose arguments have no fixed shape
//! (an MCP server's tool, a closure in [`FnTool`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;
use crate::message::ToolStatus;
use crate::network::RunnableNetwork;
use crate::node::NodeId;
use crate::tool_args;

/// What the model sees of a tool: an OpenAI-style function description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The function name.
    pub name: String,
    /// What the tool does, written for a model.
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

/// What a tool returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text the model reads.
    pub content: String,
    /// Success or error.
    pub status: ToolStatus,
    /// What follows the text (an image `read_file` returns); empty for
    /// text results.
    pub parts: Vec<crate::ContentPart>,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            status: ToolStatus::Ok,
            parts: Vec::new(),
        }
    }

    /// An error result; `Error: ` is prepended unless already there.
    pub fn error(content: impl Into<String>) -> Self {
        let content = content.into();
        let content = if content.starts_with("Error: ") {
            content
        } else {
            format!("Error: {content}")
        };
        Self {
            content,
            status: ToolStatus::Error,
            parts: Vec::new(),
        }
    }
}

impl ToolOutput {
    /// A successful result with parts after its text (an image, say).
    pub fn with_parts(content: impl Into<String>, parts: Vec<crate::ContentPart>) -> Self {
        Self {
            parts,
            ..Self::ok(content)
        }
    }
}

impl From<String> for ToolOutput {
    fn from(content: String) -> Self {
        ToolOutput::ok(content)
    }
}

impl From<&str> for ToolOutput {
    fn from(content: &str) -> Self {
        ToolOutput::ok(content)
    }
}

/// Where a tool call runs: the network, the tool node and the call id.
#[derive(Clone)]
pub struct ToolContext {
    /// The network the tool node belongs to (for state such as `files`).
    pub network: RunnableNetwork,
    /// The tool node running the call.
    pub node_id: NodeId,
    /// The model's id for this call.
    pub tool_call_id: String,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("node_id", &self.node_id)
            .field("tool_call_id", &self.tool_call_id)
            .finish_non_exhaustive()
    }
}

/// A function the model can call.
///
/// ```
/// use lc_agent::{Tool, ToolContext, ToolError, ToolOutput};
/// use serde_json::{json, Value};
///
/// struct Add;
///
/// #[async_trait::async_trait]
/// impl Tool for Add {
///     fn name(&self) -> &str { "add" }
///     fn description(&self) -> &str { "Adds two integers `a` and `b`." }
///     fn parameters(&self) -> Value {
///         json!({"type": "object",
///                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
///                "required": ["a", "b"]})
///     }
///     async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
///         let arg = |k: &str| args[k].as_i64().ok_or_else(|| ToolError::InvalidArguments {
///             tool: "add".into(), reason: format!("`{k}` must be an integer"),
///         });
///         Ok(ToolOutput::ok((arg("a")? + arg("b")?).to_string()))
///     }
/// }
/// ```
#[async_trait]
pub trait Tool: Send + Sync {
    /// The function name the model calls.
    fn name(&self) -> &str;
    /// What the tool does, for the model.
    fn description(&self) -> &str;
    /// JSON schema of the arguments object.
    fn parameters(&self) -> Value;
    /// Runs the call. `args` is always a parsed JSON value.
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// How long a call may take before it becomes a timeout error result.
    fn timeout(&self) -> Option<std::time::Duration> {
        None
    }

    /// Whether [`Tool::spec`] stays the same for the life of this tool
    /// object. A network then reads it once and shares it with every turn
    /// while its tools stay the same (default `false`: read every turn,
    /// for a tool whose description or schema follows some state).
    fn fixed_spec(&self) -> bool {
        false
    }

    /// The spec the model sees.
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_string(),
            description: self.description().to_string(),
            parameters: self.parameters(),
        }
    }
}

/// A tool with typed arguments, the way to write one: what it is called,
/// what the model reads about it, and a `call` that receives its
/// arguments as a struct. Every `TypedTool` is a [`Tool`]: the blanket impl
/// reads the model's JSON into [`Args`](TypedTool::Args) with
/// [`tool_args::parse`] (one wording for every argument error), then calls
/// [`TypedTool::call`].
///
/// ```
/// use lc_agent::{
///     HumanNode, Message, RunnableNetwork, ScriptedChatModel, ToolContext, ToolError,
///     ToolOutput, Turn, TypedTool,
/// };
/// use serde::Deserialize;
/// use serde_json::{json, Value};
///
/// /// Adds two integers.
/// struct Add;
///
/// #[derive(Deserialize)]
/// struct AddArgs {
///     a: i64,
///     b: i64,
/// }
///
/// impl TypedTool for Add {
///     const NAME: &'static str = "add";
///     type Args<'a> = AddArgs;
///
///     fn description(&self) -> &str {
///         "Adds two integers `a` and `b`."
///     }
///
///     fn parameters(&self) -> Value {
///         json!({"type": "object",
///                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
///                "required": ["a", "b"], "additionalProperties": false})
///     }
///
///     async fn call(&self, args: Self::Args<'_>, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::ok((args.a + args.b).to_string()))
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = ScriptedChatModel::new([
///     Turn::call("c1", "add", json!({"a": 2, "b": 3})),
///     Turn::call("c2", "add", json!({"a": 2})),
///     Turn::call("c3", "add", json!({"a": 2, "b": "3"})),
///     Turn::call("c4", "add", json!({"a": 2, "b": 3, "c": 4})),
///     Turn::text("Done."),
/// ]);
/// let net = RunnableNetwork::builder()
///     .default_node("chat").chat_model("m").model("m", model).tool(Add).build();
/// { let _s = net.enter(); HumanNode::new("Add 2 and 3"); }
/// net.invoke().await.unwrap();
/// let results: Vec<String> = net.nodes().iter()
///     .filter_map(|n| match n.output().as_deref() {
///         Some(Message::Tool { content, .. }) => Some(content.clone()),
///         _ => None,
///     })
///     .collect();
/// assert_eq!(results, [
///     "5",
///     "Error: Invalid arguments for add: missing required argument `b`",
///     "Error: Invalid arguments for add: `b` must be an integer, got \"3\"",
///     "Error: Invalid arguments for add: unknown argument `c`, expected `a` or `b`",
/// ]);
/// # });
/// ```
pub trait TypedTool: Send + Sync {
    /// The function name the model calls (unless [`name`](TypedTool::name)
    /// is overridden, for a tool made once per route or per server).
    const NAME: &'static str;

    /// The arguments: a struct deriving `Deserialize`, read by the rules
    /// of [`tool_args`] (fields in declared order, optional ones as
    /// `Option`, unknown keys refused). It may borrow strings from the
    /// model's JSON (`type Args<'a> = ReadArgs<'a>` with `&'a str` fields:
    /// a file's content is not copied); an owned struct is written
    /// `type Args<'a> = AddArgs`. Either way, [`call`](TypedTool::call)
    /// names its parameter `args: Self::Args<'_>`.
    type Args<'a>: Deserialize<'a> + Send
    where
        Self: 'a;

    /// The name the model calls: [`NAME`](TypedTool::NAME) unless overridden.
    fn name(&self) -> &str {
        Self::NAME
    }

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// JSON schema of the arguments object (say
    /// `"additionalProperties": false`: unknown keys are refused).
    fn parameters(&self) -> Value;

    /// How long a call may take before it becomes a timeout error result.
    fn timeout(&self) -> Option<std::time::Duration> {
        None
    }

    /// Whether the name, description and parameters stay the same for the
    /// life of this tool object ([`Tool::fixed_spec`]; default `false`).
    fn fixed_spec(&self) -> bool {
        false
    }

    /// Runs one call with its arguments read. `Err` is an error result the
    /// model reads.
    fn call(
        &self,
        args: Self::Args<'_>,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

#[async_trait]
impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        TypedTool::name(self)
    }

    fn description(&self) -> &str {
        TypedTool::description(self)
    }

    fn parameters(&self) -> Value {
        TypedTool::parameters(self)
    }

    fn timeout(&self) -> Option<std::time::Duration> {
        TypedTool::timeout(self)
    }

    fn fixed_spec(&self) -> bool {
        TypedTool::fixed_spec(self)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let parsed = tool_args::parse::<T::Args<'_>>(TypedTool::name(self), &args)?;
        TypedTool::call(self, parsed, ctx).await
    }
}

type ToolFuture = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send>>;
type ToolFn = dyn Fn(Value, ToolContext) -> ToolFuture + Send + Sync;

/// A tool made from a closure: the quickest way to expose a function.
///
/// ```
/// use lc_agent::{FnTool, ToolOutput};
/// use serde_json::json;
///
/// let echo = FnTool::new(
///     "echo",
///     "Returns `text` unchanged.",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
///     |args, _ctx| async move { Ok(ToolOutput::ok(args["text"].as_str().unwrap_or_default())) },
/// );
/// # let _ = echo;
/// ```
pub struct FnTool {
    spec: ToolSpec,
    timeout: Option<std::time::Duration>,
    func: Arc<ToolFn>,
}

impl FnTool {
    /// A tool named `name` that runs `func`.
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        func: F,
    ) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        Self {
            spec: ToolSpec {
                name: name.into(),
                description: description.into(),
                parameters,
            },
            timeout: None,
            func: Arc::new(move |args, ctx| Box::pin(func(args, ctx))),
        }
    }

    /// Sets the call timeout.
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

#[async_trait]
impl Tool for FnTool {
    fn name(&self) -> &str {
        &self.spec.name
    }
    fn description(&self) -> &str {
        &self.spec.description
    }
    fn parameters(&self) -> Value {
        self.spec.parameters.clone()
    }
    fn timeout(&self) -> Option<std::time::Duration> {
        self.timeout
    }
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }
    fn fixed_spec(&self) -> bool {
        true
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        (self.func)(args, ctx.clone()).await
    }
}
