//! [`DeepAgent`]: the preset that assembles the agent layer — file tools,
//! a todo list, sub-agents, approvals and model routing — on one network.
//!
//! ```text
//!  DeepAgent::builder()
//!    .model(..) .backend(..) .instructions(..) .subagent(..)
//!    .interrupt_on(..) .route_model(..) .tool(..) .memory(..)
//!    .summarization(..) .skills_dir(..) .skills(..)
//!    ├─ build()        a new network: system prompt + everything attached
//!    └─ attach(&net)   the same models, tools and modifiers on a loaded
//!                      session (they are never saved)
//! ```
//!
//! Every piece is also usable on its own: [`FilesystemModifier`],
//! [`TodoListModifier`], [`SubAgentModifier`], [`ApprovalModifier`],
//! [`SummarizationModifier`], [`SkillsModifier`] and the network's model
//! routes.

use std::sync::Arc;

use lc_agent::{
    Attachments, ChatModel, ModelRoutes, NetworkError, NetworkModifier, OutputSchemaExt, Result,
    RunnableNetwork, SystemNode, Tool, TypedTool, UsageExt,
};

use crate::approvals::ApprovalModifier;
use crate::decisions::Decisions;
use crate::modes::PermissionMode;
use crate::permissions::PathRulesModifier;
use crate::skills::{SkillsModifier, SKILLS_ROUTE};
use crate::subagents::{SubAgent, SubAgentModifier};
use crate::summarization::{SummarizationConfig, SummarizationModifier};
use crate::todos::TodoListModifier;
use crate::workspace::{Workspace, WorkspaceError};
use lc_agent_filesystem::{
    Backend, BackendSource, CompositeBackend, FileLimits, FilesystemBackend, FilesystemModifier,
    Permissions, StateBackend,
};
use lc_agent_filesystem::{Delete, Execute};

/// The name the preset registers its main model under.
pub const MAIN_MODEL: &str = "main";

/// The base of the system prompt, before the user's instructions.
pub const BASE_PROMPT: &str = "You are a capable agent. Work step by step: plan work of \
several steps, use your tools to look before you change anything, hand self-contained \
pieces of work to sub-agents, and finish with a short answer that says what you did.";

/// The deep-agent preset (see the module docs of `deep_agent.rs`).
#[derive(Debug, Clone, Copy)]
pub struct DeepAgent;

impl DeepAgent {
    /// Starts configuring a deep agent.
    pub fn builder() -> DeepAgentBuilder {
        DeepAgentBuilder::default()
    }
}

/// Configures a [`DeepAgent`].
#[derive(Default)]
#[must_use]
pub struct DeepAgentBuilder {
    name: String,
    models: Vec<(String, Arc<dyn ChatModel>)>,
    backend: Option<BackendSource>,
    instructions: Option<String>,
    subagents: SubAgentModifier,
    approvals: Option<ApprovalModifier>,
    /// What a shell workspace holds `execute` for, unless ruled otherwise.
    execute_rule: Option<Decisions>,
    routes: Vec<(String, String)>,
    resilience: Option<crate::resilience::ResilienceSpec>,
    output_schemas: Vec<(String, lc_agent::OutputSchema)>,
    tools: Vec<Arc<dyn Tool>>,
    step_limit: Option<usize>,
    summarization: Option<SummarizationConfig>,
    skills_dir: Option<std::path::PathBuf>,
    skill_roots: Vec<String>,
    #[cfg(feature = "memory")]
    memory: Option<crate::memory::MemoryModifier>,
    modifiers: Vec<Arc<dyn NetworkModifier>>,
    /// A new session's first permission mode.
    mode: Option<PermissionMode>,
    permissions: Permissions,
    /// The main model's window, when it is small enough for the lean
    /// prompt.
    lean: Option<usize>,
    /// Whether the line tools are offered too.
    line_tools: bool,
    /// The file tools' size limits.
    file_limits: FileLimits,
    /// A directory workspace's turn records (rewind anything).
    history: Option<lc_agent_filesystem::WorkspaceHistory>,
}

// Shared between tasks and threads: a promise the compiler keeps.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<DeepAgentBuilder>();
};

impl std::fmt::Debug for DeepAgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeepAgentBuilder")
            .field("name", &self.name)
            .field(
                "models",
                &self.models.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("subagents", &self.subagents)
            .field("routes", &self.routes)
            .field("summarization", &self.summarization)
            .field("skills_dir", &self.skills_dir)
            .field("skill_roots", &self.skill_roots)
            .finish_non_exhaustive()
    }
}

impl DeepAgentBuilder {
    /// The main model (registered as [`MAIN_MODEL`]).
    pub fn model(self, model: impl ChatModel + 'static) -> Self {
        self.model_named(MAIN_MODEL, model)
    }

    /// Another model, for [`DeepAgentBuilder::route_model`] or a
    /// sub-agent's `model`.
    pub fn model_named(self, name: impl Into<String>, model: impl ChatModel + 'static) -> Self {
        self.model_shared(name, Arc::new(model))
    }

    /// A shared model under `name` (`main` is the main one).
    pub(crate) fn model_shared(
        mut self,
        name: impl Into<String>,
        model: Arc<dyn ChatModel>,
    ) -> Self {
        self.models.push((name.into(), model));
        self
    }

    /// The permission mode of a session that has none yet (see
    /// [`PermissionMode`]; a session keeps its own when it is resumed).
    pub fn permission_mode(mut self, mode: PermissionMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Also offers the line tools (`insert_lines`, `replace_lines`,
    /// `delete_lines`): writes held and allowed as `edit_file` is; off by
    /// default, as their descriptions cost prompt tokens.
    pub fn line_tools(mut self, on: bool) -> Self {
        self.line_tools = on;
        self
    }

    /// The file tools' size limits: how much `read_file` returns, how large
    /// a file `write_file`, `edit_file` and the line tools may leave (see
    /// [`FileLimits`]; default [`FileLimits::default`]).
    pub fn file_limits(mut self, limits: FileLimits) -> Self {
        self.file_limits = limits;
        self
    }

    /// Where the file tools work (default: [`StateBackend`], the session's
    /// own files).
    pub fn backend(mut self, backend: impl Into<BackendSource>) -> Self {
        self.backend = Some(backend.into());
        self
    }

    /// Where the file tools work (see [`Workspace`](crate::Workspace)): its backend,
    /// and with a shell, `execute` waits for a person's decision unless
    /// the workspace says otherwise or an
    /// [`interrupt_on`](Self::interrupt_on) rule for `execute` replaces it.
    pub fn workspace(mut self, workspace: &Workspace) -> std::result::Result<Self, WorkspaceError> {
        self.backend = Some(workspace.open()?);
        self.execute_rule = workspace.execute_decisions();
        self.history = workspace
            .root()
            .map(lc_agent_filesystem::WorkspaceHistory::new);
        Ok(self)
    }

    /// Path rules for every file tool and `execute` (see
    /// [`Permissions`]): the backend is wrapped so that a `deny` rule
    /// refuses wherever a call comes from, and a call an `ask` rule covers
    /// waits for a person's approval, naming the rule. Sub-agents inherit
    /// them.
    pub fn permissions(mut self, rules: Permissions) -> Self {
        self.permissions = rules;
        self
    }

    /// The agent's own instructions, after the preset's base prompt.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// A named sub-agent (the general-purpose one is always there).
    pub fn subagent(mut self, agent: SubAgent) -> Self {
        self.subagents = self.subagents.subagent(agent);
        self
    }

    /// Calls of `tool` wait for a person's decision.
    pub fn interrupt_on(mut self, tool: impl Into<String>, decisions: Decisions) -> Self {
        self.approvals = Some(
            self.approvals
                .take()
                .unwrap_or_default()
                .interrupt_on(tool, decisions),
        );
        self
    }

    /// Routes a step (`chat`, `summary`, `subagent:<name>`, ...) to a
    /// registered model.
    pub fn route_model(mut self, step: impl Into<String>, model: impl Into<String>) -> Self {
        self.routes.push((step.into(), model.into()));
        self
    }

    /// Model fallbacks, tool retries and call limits (see
    /// [`ResilienceSpec`](crate::ResilienceSpec)).
    pub fn resilience(mut self, spec: crate::ResilienceSpec) -> Self {
        self.resilience = Some(spec);
        self
    }

    /// The JSON Schema the final answers of a step (`chat`, ...) must
    /// follow (see [`lc_agent::OutputSchema`]).
    pub fn output_schema(
        mut self,
        step: impl Into<String>,
        schema: lc_agent::OutputSchema,
    ) -> Self {
        self.output_schemas.push((step.into(), schema));
        self
    }

    /// A tool of the agent's own.
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Another modifier for the agent's networks (MCP tools, say); one
    /// instance is shared by every network the builder builds or attaches.
    pub fn modifier_shared(mut self, modifier: Arc<dyn NetworkModifier>) -> Self {
        self.modifiers.push(modifier);
        self
    }

    /// Summarizes the conversation when it grows (see
    /// [`SummarizationModifier`](crate::SummarizationModifier)); the history file is kept in the
    /// session's own files (where `read_file` finds it when the file tools
    /// work there), never in a directory workspace.
    pub fn summarization(mut self, config: SummarizationConfig) -> Self {
        self.summarization = Some(config);
        self
    }

    /// Skills from a directory on disk: mounted (confined) at `/skills`
    /// of the file tools, and listed in the system prompt (see
    /// [`SkillsModifier`](crate::SkillsModifier)).
    pub fn skills_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.skills_dir = Some(dir.into());
        self
    }

    /// Skills already in the agent's backend, under `root` (`/skills`,
    /// `/memories/skills`, ...).
    pub fn skills(mut self, root: impl Into<String>) -> Self {
        self.skill_roots.push(root.into());
        self
    }

    /// Long-term memory: relevant memories and the latest summary in the
    /// prompt, turns stored, summaries in the background, `remember` and
    /// `recall` (feature `memory`).
    #[cfg(feature = "memory")]
    pub fn memory(mut self, memory: crate::memory::MemoryModifier) -> Self {
        self.memory = Some(memory);
        self
    }

    /// The memory modifier, when there is one (to
    /// [`flush`](crate::memory::MemoryModifier::flush) its summaries
    /// before the process exits).
    #[cfg(feature = "memory")]
    pub fn memory_modifier(&self) -> Option<&crate::memory::MemoryModifier> {
        self.memory.as_ref()
    }

    /// The network's name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Model turns allowed in one `invoke`.
    pub fn step_limit(mut self, limit: usize) -> Self {
        self.step_limit = Some(limit);
        self
    }

    /// The main model's context window, as its server said: under
    /// [`LEAN_BELOW`](crate::LEAN_BELOW) tokens the agent runs lean (a
    /// short base prompt, short tool descriptions, no `glob`,
    /// `write_todos` or `task`; see [`lean_notice`](Self::lean_notice)).
    /// `None` (unknown) keeps the full agent.
    pub fn context_window(mut self, tokens: Option<usize>) -> Self {
        self.lean = tokens.filter(|&t| t < crate::lean::LEAN_BELOW);
        self
    }

    /// When the agent runs lean (see
    /// [`context_window`](Self::context_window)): one line saying what
    /// was left out and how to get the full set, for a program to show
    /// once.
    pub fn lean_notice(&self) -> Option<String> {
        self.lean.map(crate::lean::notice)
    }

    /// A new agent network: the system prompt, and everything attached.
    /// Fails without a main model.
    pub fn build(&self) -> Result<RunnableNetwork> {
        let net = RunnableNetwork::builder()
            .name(self.name.clone())
            .default_node("chat")
            .build();
        self.attach(&net)?;
        let base = if self.lean.is_some() {
            crate::lean::LEAN_BASE_PROMPT
        } else {
            BASE_PROMPT
        };
        let prompt = match &self.instructions {
            Some(own) => format!("{base}\n\n{own}"),
            None => base.to_string(),
        };
        {
            let _scope = net.enter();
            SystemNode::new(prompt);
        }
        Ok(net)
    }

    /// The tools the agent offers its model on `net` (built or attached
    /// by this builder): the network's tools as
    /// [`is_offered`](lc_agent_filesystem::is_offered) says
    /// (without `execute` when the backend cannot run commands, as the
    /// model's requests leave it out). [`lc_agent::openai_tools`] turns
    /// them into OpenAI definitions.
    pub fn offered_tools(&self, net: &RunnableNetwork) -> Vec<Arc<dyn Tool>> {
        let backend = self.backend_for(net);
        net.tools()
            .into_iter()
            .filter(|t| lc_agent_filesystem::is_offered(t.name(), backend.as_ref()))
            .collect()
    }

    /// The turn records of a directory workspace (set by
    /// [`workspace`](Self::workspace)): what rewinds and redo use to put
    /// back what the tools and the shell changed.
    pub fn workspace_history(&self) -> Option<&lc_agent_filesystem::WorkspaceHistory> {
        self.history.as_ref()
    }

    /// The backend the file tools use on `net` (the session's own files
    /// unless [`backend`](Self::backend) named another).
    /// Path rules apply (an `ask` is refused there: nobody approves).
    pub fn backend_for(&self, net: &RunnableNetwork) -> Arc<dyn Backend> {
        let backend = self
            .backend
            .clone()
            .unwrap_or_else(|| StateBackend::factory().into());
        let backend = self.file_limits.apply(backend);
        self.permissions.guard(backend, false).resolve(net)
    }

    /// The approval rules: the caller's; the workspace's for `execute`
    /// and the default for `delete` (every call waits for a person's
    /// decision), each unless the caller ruled on that tool.
    fn approvals(&self) -> ApprovalModifier {
        let defaults = [
            (<Execute as TypedTool>::NAME, self.execute_rule.clone()),
            (<Delete as TypedTool>::NAME, Some(Decisions::all())),
        ];
        let mut own = self.approvals.clone().unwrap_or_default();
        for (tool, rule) in defaults {
            if let (Some(rule), false) = (rule, own.rules_on(tool)) {
                own = own.interrupt_on(tool, rule);
            }
        }
        own
    }

    /// The names of the agent's tools (found by attaching to a scratch
    /// network; MCP tools that a caller connects later are not among
    /// them).
    pub(crate) fn tool_names(&self) -> Result<Vec<String>> {
        let scratch = RunnableNetwork::builder().build();
        self.attach(&scratch)?;
        Ok(scratch
            .tools()
            .iter()
            .map(|t| t.name().to_string())
            .collect())
    }

    /// The sub-agents' allow-listed tools that are not in `known` (nor
    /// their own), as `(sub-agent, tool)`.
    pub(crate) fn unknown_subagent_tools(&self, known: &[String]) -> Vec<(String, String)> {
        self.subagents.unknown_tools(known)
    }

    /// Attaches the models, tools, modifiers and routes to a network (a
    /// session loaded from a list, say); adds no nodes.
    pub fn attach(&self, net: &RunnableNetwork) -> Result<()> {
        if !self.models.iter().any(|(name, _)| name == MAIN_MODEL) {
            return Err(NetworkError::NoChatModel);
        }
        for (name, model) in &self.models {
            net.register_model_shared(name.clone(), model.clone());
        }
        net.set_chat_model_name(Some(MAIN_MODEL.to_string()));
        // A server that reports no usage: the tokenizer's estimate.
        net.set_usage_estimator(Arc::new(crate::tokens::TokenizerUsage));
        if let Some(limit) = self.step_limit {
            net.set_step_limit(Some(limit));
        }
        for (step, model) in &self.routes {
            net.set_model_route(step.clone(), model.clone());
        }
        if let Some(resilience) = &self.resilience {
            resilience.apply(net);
        }
        for (step, schema) in &self.output_schemas {
            net.set_output_schema(step.clone(), Some(schema.clone()));
        }
        for tool in &self.tools {
            net.add_tool_shared(tool.clone());
        }
        let mut backend = self
            .backend
            .clone()
            .unwrap_or_else(|| StateBackend::factory().into());
        let mut skill_roots = self.skill_roots.clone();
        if let Some(dir) = &self.skills_dir {
            backend = CompositeBackend::new(backend)
                .route(&format!("{SKILLS_ROUTE}/"), FilesystemBackend::new(dir)?)
                .into();
            skill_roots.insert(0, SKILLS_ROUTE.to_string());
        }
        if !self.permissions.checks_nothing() {
            // Every tool (and sub-agent) sees the guarded backend; `ask`
            // calls are held before they reach it.
            backend = self.permissions.guard(backend, true);
            net.add_modifier(PathRulesModifier::new(
                self.permissions.clone(),
                backend.clone(),
            ))?;
        }
        net.add_modifier(
            FilesystemModifier::new(backend.clone())
                .line_tools(self.line_tools)
                .limits(self.file_limits),
        )?;
        if let Some(history) = &self.history {
            net.add_modifier(history.clone())?;
        }
        net.add_modifier(TodoListModifier::new())?;
        net.add_modifier(self.subagents.clone())?;
        // Always there: the mode may hold `exit_plan_mode` or let calls through.
        net.add_modifier(crate::modes::ModeModifier)?;
        net.add_modifier(crate::sampling::SamplingModifier)?;
        net.add_modifier(self.approvals())?;
        if let (Some(mode), false) = (self.mode, crate::modes::has_mode(net)) {
            crate::modes::set_permission_mode(net, mode);
        }
        if let Some((first, more)) = skill_roots.split_first() {
            let skills = more.iter().fold(
                SkillsModifier::new(backend.clone(), first.clone()),
                |m, r| m.root(r.clone()),
            );
            net.add_modifier(skills)?;
        }
        if let Some(config) = &self.summarization {
            // The history file is the agent's own record: in the session's
            // files, never in a directory workspace (the user's project).
            net.add_modifier(SummarizationModifier::new(config.clone()))?;
        }
        #[cfg(feature = "memory")]
        if let Some(memory) = &self.memory {
            net.add_modifier(memory.clone())?;
        }
        if self.lean.is_some() {
            net.add_modifier(crate::lean::LeanPrompt)?;
        }
        // Always there: a model going round in circles is told, then stopped.
        net.add_modifier(crate::stuck::StuckDetector)?;
        for modifier in &self.modifiers {
            net.add_modifier_shared(modifier.clone())?;
        }
        Ok(())
    }
}
