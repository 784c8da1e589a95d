//! A supervisor (LC Agent's multi-agent network): a chat model that sees
//! named route networks as tools and calls them until it can answer.
//!
//! ```text
//!  outer: human ─▶ NetworkNode(supervisor network) ─▶ ... (its final answer)
//!  supervisor network:
//!    system: instructions
//!    chat (step `supervisor`) ─▶ route tool {prompt}
//!        └─▶ NetworkNode (routed: sees the outer conversation + the prompt)
//!              ─▶ tool node: the route's last answer ─▶ chat ... until no tool call
//! ```
//!
//! A route is a network built fresh for each call (its own system prompt,
//! model, tools, or another supervisor: supervisors nest). The same route
//! with the same arguments twice is refused with a loop error the model
//! reads, and the supervisor's turns are capped.

use std::sync::Arc;

use async_trait::async_trait;
use indexmap::IndexMap;
use lc_agent::{
    ChatNode, HumanNode, NetworkInput, NetworkModifier, NetworkNode, NodeRef, Result,
    RunnableNetwork, SystemNode, Tool, ToolContext, ToolError, ToolNode, ToolOutput, TypedTool,
};
use serde::Deserialize;
use serde_json::{json, Value};

/// The model step of the supervisor's chat nodes.
pub(crate) const SUPERVISOR_STEP: &str = "supervisor";

/// The metadata key on a route's sub-network node naming the call it serves.
pub(crate) const ROUTE_CALL_KEY: &str = "route_call_id";

/// The supervisor's model turns by default.
pub(crate) const DEFAULT_MAX_ITERATIONS: usize = 10;

type Build = Arc<dyn Fn() -> RunnableNetwork + Send + Sync>;

/// A named route: a description for the supervisor and how to build the
/// network that answers it (with `default_node("chat")`, so the prompt
/// gets an answer).
#[derive(Clone)]
pub struct Route {
    name: String,
    description: String,
    build: Build,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("name", &self.name)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

impl Route {
    /// A route called `name` (the tool's name) whose network `build` makes.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        build: impl Fn() -> RunnableNetwork + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            build: Arc::new(build),
        }
    }
}

/// Builds a supervisor network.
#[derive(Debug, Clone)]
pub struct Supervisor {
    name: String,
    instructions: String,
    routes: IndexMap<String, Route>,
    max_iterations: usize,
}

impl Supervisor {
    /// A supervisor with these instructions and no routes yet.
    pub fn new(instructions: impl Into<String>) -> Self {
        Self {
            name: SUPERVISOR_STEP.to_string(),
            instructions: instructions.into(),
            routes: IndexMap::new(),
            max_iterations: DEFAULT_MAX_ITERATIONS,
        }
    }

    /// The network's name (default `supervisor`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Adds a route.
    pub fn route(mut self, route: Route) -> Self {
        self.routes.insert(route.name.clone(), route);
        self
    }

    /// Caps the supervisor's model turns (default 10).
    pub fn max_iterations(mut self, n: usize) -> Self {
        self.max_iterations = n;
        self
    }

    /// The supervisor network; put it in a graph with
    /// [`NetworkNode::new`] (it sees the outer conversation and its final
    /// answer joins it), or make it a route of another supervisor.
    pub fn build(self) -> RunnableNetwork {
        let net = RunnableNetwork::builder()
            .name(self.name.clone())
            .step_limit(self.max_iterations)
            .modifier(SupervisorModifier {
                routes: Arc::new(self.routes),
            })
            .build();
        {
            let _scope = net.enter();
            SystemNode::new(self.instructions);
        }
        net
    }
}

/// The arguments of a route's tool (read by [`lc_agent::tool_args`]).
#[derive(Deserialize)]
struct RouteArgs {
    prompt: String,
}

/// The tool of one route.
#[derive(Debug, Clone)]
struct RouteTool {
    name: String,
    description: String,
}

/// Earlier calls of the same route with the same arguments, before `call`.
fn repeated(network: &RunnableNetwork, node: &NodeRef) -> bool {
    let Some(tool) = node.downcast::<ToolNode>() else {
        return false;
    };
    let args = tool.tool_call.parsed_arguments().ok();
    network.nodes().iter().any(|other| {
        other.id() != node.id()
            && other.is_invoked()
            && other.downcast::<ToolNode>().is_some_and(|o| {
                o.tool_call.name == tool.tool_call.name
                    && o.tool_call.parsed_arguments().ok() == args
            })
    })
}

impl TypedTool for RouteTool {
    /// Each route's tool is named after its route (see `name`).
    const NAME: &'static str = "route";
    type Args<'a> = RouteArgs;

    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "What to ask of this route."}},
            "required": ["prompt"],
            "additionalProperties": false
        })
    }

    async fn call(
        &self,
        _args: Self::Args<'_>,
        ctx: &ToolContext,
    ) -> std::result::Result<ToolOutput, ToolError> {
        let Some(routed) = crate::delegation::serving(ctx, ROUTE_CALL_KEY) else {
            let looping = ctx
                .network
                .node(ctx.node_id)
                .is_some_and(|n| repeated(&ctx.network, &n));
            return Err(ToolError::Failed(if looping {
                format!(
                    "`{}` was already called with these arguments: the answer will not change. \
                     Use the answers you have, or ask something else.",
                    self.name
                )
            } else {
                "the route did not run (attach the supervisor's modifier)".to_string()
            }));
        };
        let answer = crate::delegation::last_answer(&routed);
        Ok(ToolOutput::ok(answer.unwrap_or_else(|| {
            "(the route finished without an answer)".to_string()
        })))
    }
}

/// Offers the routes as tools and runs each call as a routed sub-network.
#[derive(Debug, Clone)]
struct SupervisorModifier {
    routes: Arc<IndexMap<String, Route>>,
}

impl SupervisorModifier {
    /// Puts a routed sub-network before a route call that has not run
    /// (not before a repeated one: the tool answers that with the loop
    /// error).
    fn wire(&self, network: &RunnableNetwork, child: &NodeRef) -> Result<()> {
        let Some(tool) = child.downcast::<ToolNode>() else {
            return Ok(());
        };
        let call = &tool.tool_call;
        let Some(route) = self.routes.get(&call.name) else {
            return Ok(());
        };
        let Some(args) = call
            .parsed_arguments()
            .ok()
            .and_then(|a| lc_agent::tool_args::parse::<RouteArgs>(&call.name, &a).ok())
        else {
            return Ok(());
        };
        if child.is_invoked() || repeated(network, child) {
            return Ok(());
        }
        let inner = (route.build)();
        {
            let _scope = inner.enter();
            HumanNode::new(args.prompt);
        }
        let logic = NetworkNode::with_input(inner, NetworkInput::Routed);
        let name = format!("route:{}", route.name);
        crate::delegation::run_before(network, child, logic, name, ROUTE_CALL_KEY)
    }
}

#[async_trait]
impl NetworkModifier for SupervisorModifier {
    fn id(&self) -> &str {
        "supervisor"
    }

    /// After the tool loop (-100) added the tool nodes.
    fn priority(&self) -> i32 {
        0
    }

    /// The supervisor answers whatever its network ends with: its
    /// instructions (run inside an outer conversation) or a prompt (run as
    /// another supervisor's route).
    async fn on_begin_invoke(&self, network: &RunnableNetwork) -> Result<()> {
        // Route calls a person edited have lost their sub-network.
        for call in crate::delegation::unwired_calls(network, ROUTE_CALL_KEY) {
            self.wire(network, &call)?;
        }
        let Some(leaf) = network.current_leaf() else {
            return Ok(());
        };
        let asks =
            leaf.downcast::<SystemNode>().is_some() || leaf.downcast::<HumanNode>().is_some();
        if asks {
            network.add(
                ChatNode {
                    step: Some(SUPERVISOR_STEP.to_string()),
                    ..ChatNode::default()
                },
                &[leaf.id()],
            )?;
        }
        Ok(())
    }

    async fn on_post_invoke(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        if node.downcast::<ChatNode>().is_some() {
            for child in network.children(node.id()) {
                self.wire(network, &child)?;
            }
        }
        Ok(())
    }

    fn tools(&self, _network: &RunnableNetwork) -> Vec<Arc<dyn Tool>> {
        self.routes
            .values()
            .map(|r| {
                Arc::new(RouteTool {
                    name: r.name.clone(),
                    description: r.description.clone(),
                }) as Arc<dyn Tool>
            })
            .collect()
    }
}
