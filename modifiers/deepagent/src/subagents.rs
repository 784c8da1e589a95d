//! Sub-agents: the `task` tool hands a piece of work to a sub-agent that
//! works in its own context, as a sub-network in the graph.
//!
//! ```text
//!  chat ──▶ task {description, subagent_type}          (the ToolLoop's tool node)
//!    │
//!    └──▶ NetworkNode (isolated) ──▶ tool node `task` ──▶ next chat
//!           system: the sub-agent's instructions
//!           human:  the task description (nothing of the parent's history)
//!           chat (step `subagent:<name>`) ⇄ tools ... final answer
//! ```
//!
//! After a chat node asks for tasks, [`SubAgentModifier`] puts an isolated
//! [`NetworkNode`] between the chat node and each `task` tool node; the
//! tool node then answers with the sub-agent's last non-empty AI text. The
//! sub-networks of one turn are siblings, so they run concurrently. They
//! are saved inside the parent's JSON (nothing vanishes when the run
//! ends), borrow the parent's models and tools (the file tools of a
//! `StateBackend` write the parent's files, so a sub-agent's file changes
//! are the parent's), and route their model through the step
//! `subagent:<name>`. A depth limit stops a sub-agent from spawning
//! sub-agents without end.
//!
//! Like deepagents' sub-agent specs (`name`, `description`,
//! `system_prompt`, `tools`, `model`, `interrupt_on`), a [`SubAgent`] may
//! have its own model ([`SubAgent::model`]), its own tools allow-list
//! ([`SubAgent::allow_tools`]: only those are offered to it, a call of
//! any other tool is answered with an error and never runs) and approval
//! rules of its own ([`SubAgent::interrupt_on`]), added to those it
//! inherits — see `subagent_limits.rs`: limits only tighten.
//!
//! **A sub-agent never escapes its parent's safeguards.** It is composed
//! from the same blueprint: the modifiers of the parent that guard a run
//! copy themselves into each task's network
//! ([`NetworkModifier::for_sub_network`]) — the approvals (a sub-agent's
//! `write_file` or `execute` waits for the decision its parent's
//! `interrupt_on` asks for), the file tools' eviction of huge results and
//! their offered-tools rule (no `execute` without a sandbox), the
//! summaries, the checkpoints, and this modifier itself (a task resumed
//! from a saved session starts tasks and has its own tools again). A
//! sub-agent may get more tools of its own ([`SubAgent::tool`]), fewer
//! tools ([`SubAgent::allow_tools`]) and more approvals
//! ([`SubAgent::interrupt_on`]); it never gets fewer safeguards (unlike
//! deepagents, where a sub-agent's `interrupt_on` replaces the main
//! agent's). When a call inside waits, the task's node waits
//! too and the parent's `invoke` stops; see [`crate::approvals`] for how
//! the nested call is listed, decided and resumed.

use std::sync::Arc;

use async_trait::async_trait;
use indexmap::IndexMap;
use lc_agent::{
    ChatNode, ChatRequest, HumanNode, NetworkInput, NetworkModifier, NetworkNode, NodeRef,
    OutputSchemaExt, Result, RunnableNetwork, SystemNode, Tool, ToolContext, ToolError, ToolNode,
    ToolOutput, TypedTool,
};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::decisions::Decisions;
use crate::delegation::{last_answer, run_before, serving, unwired_calls};
use crate::subagent_limits::Limits;

/// The tool's name.
pub const TASK: &str = "task";

/// The sub-agent every [`SubAgentModifier`] offers unless told otherwise.
pub(crate) const GENERAL_PURPOSE: &str = "general-purpose";

/// How deep sub-agents may nest by default (a task's sub-agent may start
/// tasks of its own down to this depth).
pub(crate) const DEFAULT_MAX_DEPTH: usize = 3;

/// The metadata key on a task's sub-network node naming the call it serves.
pub(crate) const TASK_CALL_KEY: &str = "task_call_id";

/// The instructions of the general-purpose sub-agent.
const GENERAL_PURPOSE_INSTRUCTIONS: &str = "You are a sub-agent working on one task for \
another agent. Do the task with the tools you have, then answer with a complete, \
self-contained report: it is the only thing the other agent will see of your work.";

/// A sub-agent: a name the model asks for, a description telling the
/// model when to, instructions, extra tools, an allow-list of tools,
/// approval rules and a model.
#[derive(Clone)]
pub struct SubAgent {
    name: String,
    description: String,
    instructions: String,
    tools: Vec<Arc<dyn Tool>>,
    allowed: Option<Vec<String>>,
    interrupt_on: std::collections::BTreeMap<String, Decisions>,
    model: Option<String>,
    output_schema: Option<lc_agent::OutputSchema>,
}

impl std::fmt::Debug for SubAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubAgent")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("model", &self.model)
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("allowed", &self.allowed)
            .field("interrupt_on", &self.interrupt_on)
            .field("output_schema", &self.output_schema)
            .finish()
    }
}

impl SubAgent {
    /// A sub-agent called `name`; `description` tells the model what it is
    /// good for.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            instructions: GENERAL_PURPOSE_INSTRUCTIONS.to_string(),
            tools: Vec::new(),
            allowed: None,
            interrupt_on: std::collections::BTreeMap::new(),
            model: None,
            output_schema: None,
        }
    }

    /// Its system prompt.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = instructions.into();
        self
    }

    /// A tool of its own (it also has the parent's tools).
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Tools of its own.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Only these tools (and its own, [`SubAgent::tool`]) are offered to
    /// it, and only these may it call: a call of another tool is answered
    /// with an error naming the tools it has, and never runs. A sub-agent
    /// it starts gets none of the tools this list leaves out. Default:
    /// every tool of the parent.
    pub fn allow_tools(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Its calls of `tool` wait for one of `decisions`, on top of the
    /// approval rules it inherits; for a tool an inherited rule already
    /// holds, the inherited rule stands (a sub-agent never loosens an
    /// approval). The network needs an
    /// [`ApprovalModifier`](crate::ApprovalModifier) (a [`DeepAgent`](crate::DeepAgent)
    /// attaches one).
    pub fn interrupt_on(mut self, tool: impl Into<String>, decisions: Decisions) -> Self {
        self.interrupt_on.insert(tool.into(), decisions);
        self
    }

    /// The model it uses (a name registered in the parent network); by
    /// default the route of step `subagent:<name>`, else the parent's model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The JSON Schema its final answer (the `task` result) must follow:
    /// asked of its model, checked and asked again as for any chat node
    /// (see [`lc_agent::OutputSchema`]).
    pub fn output_schema(mut self, schema: lc_agent::OutputSchema) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// The model step its chat nodes belong to.
    pub(crate) fn step(&self) -> String {
        format!("subagent:{}", self.name)
    }
}

/// The sub-agents of a modifier, shared with its copies in sub-networks.
#[derive(Debug, Clone)]
struct Agents {
    by_name: IndexMap<String, SubAgent>,
    max_depth: usize,
}

impl Agents {
    fn allowed(&self) -> String {
        self.by_name
            .keys()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn unknown(&self, name: &str) -> String {
        format!(
            "We cannot invoke subagent {name} because it does not exist, the only allowed types are [{}]",
            self.allowed()
        )
    }

    fn too_deep(&self) -> String {
        format!(
            "sub-agents may nest {} level(s) deep and this one is at the limit: do this task yourself",
            self.max_depth
        )
    }
}

/// The arguments of `task` (read by [`lc_agent::tool_args`]).
#[derive(Deserialize)]
struct TaskArgs {
    description: String,
    subagent_type: String,
}

fn parse_args(args: Value) -> std::result::Result<TaskArgs, ToolError> {
    lc_agent::tool_args::parse(TASK, &args)
}

/// The `task` tool: answers with the sub-agent's report (the sub-network
/// the modifier put before the tool node did the work).
#[derive(Debug, Clone)]
struct TaskTool {
    agents: Arc<Agents>,
}

impl TypedTool for TaskTool {
    const NAME: &'static str = TASK;
    type Args<'a> = TaskArgs;

    fn description(&self) -> &str {
        "Hand a self-contained task to a sub-agent, which works in its own context (it sees \
         only `description`, not this conversation) and reports back. Give every detail it \
         needs and say what to report. Several tasks in one turn run at the same time."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "The whole task: what to do, with every detail the sub-agent needs, and what to report."},
                "subagent_type": {"type": "string", "enum": self.agents.by_name.keys().collect::<Vec<_>>(), "description": "Which sub-agent does it."}
            },
            "required": ["description", "subagent_type"],
            "additionalProperties": false
        })
    }

    async fn call(
        &self,
        args: Self::Args<'_>,
        ctx: &ToolContext,
    ) -> std::result::Result<ToolOutput, ToolError> {
        if !self.agents.by_name.contains_key(&args.subagent_type) {
            return Err(ToolError::Failed(self.agents.unknown(&args.subagent_type)));
        }
        if std::iter::successors(ctx.network.outer(), RunnableNetwork::outer).count()
            >= self.agents.max_depth
        {
            return Err(ToolError::Failed(self.agents.too_deep()));
        }
        let inner = serving(ctx, TASK_CALL_KEY).ok_or_else(|| {
            ToolError::Failed(
                "the sub-agent did not run (attach the SubAgentModifier to this network)"
                    .to_string(),
            )
        })?;
        Ok(ToolOutput::ok(last_answer(&inner).unwrap_or_else(|| {
            "(the sub-agent finished without a report)".to_string()
        })))
    }
}

impl SubAgentModifier {
    /// Puts a sub-network before a `task` call that has not run.
    fn wire(&self, network: &RunnableNetwork, child: &NodeRef) -> Result<()> {
        let Some(tool) = child.downcast::<ToolNode>() else {
            return Ok(());
        };
        let call = &tool.tool_call;
        // Too deep: the task tool answers with the depth error.
        if call.name != TASK
            || child.is_invoked()
            || std::iter::successors(network.outer(), RunnableNetwork::outer).count()
                >= self.agents.max_depth
        {
            return Ok(());
        }
        // Bad arguments and unknown sub-agents are the tool's to report.
        let Some(args) = call
            .parsed_arguments()
            .ok()
            .and_then(|a| parse_args(a).ok())
        else {
            return Ok(());
        };
        let Some(agent) = self.agents.by_name.get(&args.subagent_type) else {
            return Ok(());
        };
        let inner = self.task_network(network, agent, &args.description);
        let logic = NetworkNode::with_input(inner, NetworkInput::Isolated);
        run_before(network, child, logic, agent.step(), TASK_CALL_KEY)
    }
}

/// Gives chat nodes the `task` tool and runs each task as an isolated
/// sub-network (see the module docs of `subagents.rs`).
#[derive(Debug, Clone)]
pub struct SubAgentModifier {
    id: String,
    agents: Arc<Agents>,
}

impl Default for SubAgentModifier {
    fn default() -> Self {
        Self::new()
    }
}

impl SubAgentModifier {
    /// The `general-purpose` sub-agent and a depth limit of
    /// 3 (id `subagents`).
    pub fn new() -> Self {
        let general = SubAgent::new(
            GENERAL_PURPOSE,
            "A sub-agent with the same tools as you, for research, searches and multi-step \
             work whose details would crowd your context.",
        );
        Self {
            id: "subagents".to_string(),
            agents: Arc::new(Agents {
                by_name: IndexMap::from([(GENERAL_PURPOSE.to_string(), general)]),
                max_depth: DEFAULT_MAX_DEPTH,
            }),
        }
    }

    fn agents_mut(&mut self) -> &mut Agents {
        Arc::make_mut(&mut self.agents)
    }

    /// Adds (or replaces) a named sub-agent.
    pub fn subagent(mut self, agent: SubAgent) -> Self {
        self.agents_mut().by_name.insert(agent.name.clone(), agent);
        self
    }

    /// How deep sub-agents may nest (1: sub-agents cannot start tasks).
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.agents_mut().max_depth = depth;
        self
    }

    /// The sub-agents' allow-lists: `(sub-agent, tool)` for each listed
    /// tool that is not in `known` nor one of the sub-agent's own.
    pub(crate) fn unknown_tools(&self, known: &[String]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for agent in self.agents.by_name.values() {
            for tool in agent.allowed.iter().flatten() {
                let own = agent.tools.iter().any(|t| t.name() == tool);
                if !own && !known.contains(tool) {
                    out.push((agent.name.clone(), tool.clone()));
                }
            }
        }
        out
    }

    /// The sub-network that does one task (in `outer`, whose limits it
    /// keeps).
    fn task_network(
        &self,
        outer: &RunnableNetwork,
        agent: &SubAgent,
        description: &str,
    ) -> RunnableNetwork {
        let mut builder = RunnableNetwork::builder()
            .name(agent.step())
            .default_node("chat")
            .modifier(self.clone());
        if let Some(model) = &agent.model {
            builder = builder.route_model(agent.step(), model.clone());
        }
        // The sub-agent's own tools come from the modifier (see `tools`),
        // so a task resumed from a saved session has them again.
        let inner = builder.build();
        if let Some(schema) = &agent.output_schema {
            inner.set_output_schema(agent.step(), Some(schema.clone()));
        }
        Limits::of(outer)
            .narrowed(
                agent.allowed.as_deref(),
                agent.tools.iter().map(|t| t.name().to_string()),
                &agent.interrupt_on,
            )
            .store_in(&inner);
        {
            let _scope = inner.enter();
            SystemNode::new(agent.instructions.clone());
            HumanNode::new(description);
            ChatNode::for_step(agent.step());
        }
        inner
    }
}

#[async_trait]
impl NetworkModifier for SubAgentModifier {
    fn id(&self) -> &str {
        &self.id
    }

    /// After the tool loop (priority -100) has added the tool nodes.
    fn priority(&self) -> i32 {
        0
    }

    /// Offers a sub-agent only its allowed tools (and the `task`
    /// section only when it may start tasks).
    async fn on_chat_request(
        &self,
        network: &RunnableNetwork,
        _node: &NodeRef,
        request: &mut ChatRequest,
    ) -> Result<()> {
        let limits = Limits::of(network);
        request.tools.retain(|t| limits.allows(&t.name));
        if !limits.allows(TASK) {
            return Ok(());
        }
        let list: Vec<String> = self
            .agents
            .by_name
            .values()
            .map(|a| format!("- `{}`: {}", a.name, a.description))
            .collect();
        request.system.push(format!(
            "## Sub-agents with `task`\n\nFor a self-contained piece of work whose details would \
             crowd this conversation, call `task` with a complete description; start several \
             tasks in one turn to run them at once. Available sub-agents:\n{}",
            list.join("\n")
        ));
        Ok(())
    }

    /// Wires the task calls that have no sub-network yet (an edited call).
    async fn on_begin_invoke(&self, network: &RunnableNetwork) -> Result<()> {
        for call in unwired_calls(network, TASK_CALL_KEY) {
            self.wire(network, &call)?;
        }
        Ok(())
    }

    async fn on_post_invoke(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        if node.downcast::<ChatNode>().is_some() {
            // A call of a tool the sub-agent may not call is answered
            // before anything else sees it (it never runs, nor waits).
            let limits = Limits::of(network);
            for child in network.children(node.id()) {
                if !limits.refuse(network, &child) {
                    self.wire(network, &child)?;
                }
            }
        }
        Ok(())
    }

    /// Sub-networks (a task's own, a route's) start tasks the same way;
    /// a task network loaded from a saved session gets its modifier back
    /// this way.
    fn for_sub_network(&self) -> Option<Arc<dyn NetworkModifier>> {
        Some(Arc::new(self.clone()))
    }

    /// `task`, and in a sub-agent's own network its own tools.
    fn tools(&self, network: &RunnableNetwork) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> = vec![Arc::new(TaskTool {
            agents: self.agents.clone(),
        })];
        let name = network.name();
        let own = name
            .strip_prefix("subagent:")
            .and_then(|name| self.agents.by_name.get(name))
            .map(|agent| agent.tools.clone());
        tools.extend(own.unwrap_or_default());
        tools
    }
}
