//! Building an agent from its blueprint: models resolved by name, the
//! backend, sub-agents (their tools checked against the agent's), memory,
//! skills, approvals and routes onto a [`DeepAgentBuilder`].

use std::sync::Arc;

use lc_agent::ChatModel;

use super::*;
use crate::context::AgentContext;
use crate::decisions::Decisions;
use crate::deep_agent::{DeepAgent, DeepAgentBuilder, MAIN_MODEL};
use crate::subagents::SubAgent;

impl AgentSpec {
    /// The agent, with models made by `resolve` (the usual one is
    /// `|_, model| model.open()`, see [`ModelSpec::open`]), in the default
    /// [`AgentContext`] (memory without a `dir` in the user's data
    /// directory).
    pub fn builder(
        &self,
        resolve: impl Fn(&str, &ModelSpec) -> Result<Arc<dyn ChatModel>, SpecError>,
    ) -> Result<DeepAgentBuilder, SpecError> {
        self.builder_in(resolve, &AgentContext::default())
    }

    /// The agent, with models made by `resolve`, where `context` says
    /// (see [`Blueprint`](crate::Blueprint)).
    pub(crate) fn builder_in(
        &self,
        resolve: impl Fn(&str, &ModelSpec) -> Result<Arc<dyn ChatModel>, SpecError>,
        context: &AgentContext,
    ) -> Result<DeepAgentBuilder, SpecError> {
        if !self.models.contains_key(MAIN_MODEL) {
            return Err(SpecError::Invalid(format!(
                "no `{MAIN_MODEL}` model: add [models.{MAIN_MODEL}] with its `model` name"
            )));
        }
        let known = |name: &str| -> Result<(), SpecError> {
            if self.models.contains_key(name) {
                Ok(())
            } else {
                Err(SpecError::Invalid(format!(
                    "no model named `{name}` in [models]"
                )))
            }
        };
        let mut agent = DeepAgent::builder().name(self.name.clone());
        for (name, spec) in &self.models {
            agent = agent.model_shared(name.clone(), resolve(name, spec)?);
        }
        // A sub-agent's `provider:model` is a model of its own, made by the
        // same resolver, under the name of its step.
        for sub in &self.subagents {
            if let Some(model) = sub
                .model
                .as_deref()
                .filter(|m| !self.models.contains_key(*m))
            {
                let spec = provider_model(model).ok_or_else(|| {
                    SpecError::Invalid(format!(
                        "sub-agent `{}`: model `{model}` is neither a name in [models] \
                         nor `provider:model` (providers: openai, anthropic)",
                        sub.name
                    ))
                })?;
                let name = format!("subagent:{}", sub.name);
                agent = agent.model_shared(name.clone(), resolve(&name, &spec)?);
            }
        }
        if let Some(instructions) = &self.instructions {
            agent = agent.instructions(instructions.clone());
        }
        agent = agent.workspace(&self.backend)?;
        agent = agent.permissions(self.permissions.clone());
        for sub in &self.subagents {
            let mut agent_sub = SubAgent::new(sub.name.clone(), sub.description.clone());
            if let Some(instructions) = &sub.instructions {
                agent_sub = agent_sub.instructions(instructions.clone());
            }
            if let Some(model) = &sub.model {
                agent_sub = agent_sub.model(if self.models.contains_key(model) {
                    model.clone()
                } else {
                    format!("subagent:{}", sub.name)
                });
            }
            if let Some(tools) = &sub.tools {
                agent_sub = agent_sub.allow_tools(tools.iter().cloned());
            }
            if let Some(schema) = &sub.output_schema {
                agent_sub = agent_sub.output_schema(output_schema(
                    &format!("sub-agent `{}`: output_schema", sub.name),
                    schema,
                )?);
            }
            for (tool, decisions) in &sub.interrupt_on {
                if decisions.is_empty() {
                    return Err(SpecError::Invalid(format!(
                        "sub-agent `{}`: interrupt_on.{tool} allows no decision \
                         (say which: approve, edit, reject, respond)",
                        sub.name
                    )));
                }
                agent_sub = agent_sub
                    .interrupt_on(tool.clone(), Decisions::only(decisions.iter().copied()));
            }
            agent = agent.subagent(agent_sub);
        }
        for (tool, decisions) in &self.interrupt_on {
            agent = agent.interrupt_on(tool.clone(), Decisions::only(decisions.iter().copied()));
        }
        for (step, model) in &self.routes {
            known(model)?;
            agent = agent.route_model(step.clone(), model.clone());
        }
        if let Some(resilience) = &self.resilience {
            for model in resilience.fallbacks.values().flatten() {
                known(model)?;
            }
            agent = agent.resilience(resilience.clone());
        }
        for (step, schema) in &self.output_schemas {
            agent = agent.output_schema(
                step.clone(),
                output_schema(&format!("output_schemas.{step}"), schema)?,
            );
        }
        if let Some(limit) = self.step_limit {
            agent = agent.step_limit(limit);
        }
        if let Some(mode) = self.mode {
            agent = agent.permission_mode(mode);
        }
        agent = agent.line_tools(self.line_tools).file_limits(self.files);
        if let Some(skills) = &self.skills {
            if let Some(dir) = &skills.dir {
                agent = agent.skills_dir(dir.clone());
            }
            for route in &skills.routes {
                agent = agent.skills(route.clone());
            }
        }
        if self.project_memory.enabled {
            agent =
                agent.modifier_shared(Arc::new(crate::project_memory::ProjectMemory::from_spec(
                    &self.project_memory,
                    self.backend.root(),
                )));
        }
        if let Some(fetch) = &self.fetch_url {
            agent = agent.tool(fetch.tool());
        }
        if let Some(config) = &self.summarization {
            // A model's own window (`context_window`, `--context-window`)
            // is the one its summaries keep to, unless [summarization]
            // names one for it.
            let mut config = config.clone();
            for (name, model) in &self.models {
                if let Some(tokens) = model.context_window
                    && config.context_windows.own_window(name).is_none()
                {
                    config.context_windows = config.context_windows.with(name.clone(), tokens);
                }
            }
            agent = agent.summarization(config);
        }
        if let Some(memory) = &self.memory {
            agent = with_memory(agent, memory, context)?;
        }
        self.check_subagent_tools(&agent)?;
        Ok(agent)
    }

    /// Every tool a sub-agent's allow-list names is one the agent has
    /// (with MCP servers, other names are taken as theirs: they connect
    /// later).
    fn check_subagent_tools(&self, agent: &DeepAgentBuilder) -> Result<(), SpecError> {
        if self.subagents.iter().all(|s| s.tools.is_none()) {
            return Ok(());
        }
        if !self.mcp_servers.is_empty() {
            return Ok(());
        }
        let mut known = agent.tool_names()?;
        if let Some((sub, tool)) = agent.unknown_subagent_tools(&known).first() {
            known.sort();
            return Err(SpecError::Invalid(format!(
                "sub-agent `{sub}`: tools: the agent has no tool `{tool}` (its tools: {})",
                known.join(", ")
            )));
        }
        Ok(())
    }
}

/// `schema` as an output schema (`what` names it in the error).
fn output_schema(
    what: &str,
    schema: &serde_json::Value,
) -> Result<lc_agent::OutputSchema, SpecError> {
    lc_agent::OutputSchema::new(schema.clone())
        .map_err(|e| SpecError::Invalid(format!("{what}: {e}")))
}

/// The memory of a blueprint: in its `dir`, else beside the sessions (in
/// Redis when they are in Redis, else the default directory).
#[cfg(feature = "memory")]
fn with_memory(
    agent: DeepAgentBuilder,
    spec: &MemorySpec,
    context: &AgentContext,
) -> Result<DeepAgentBuilder, SpecError> {
    use crate::memory::{MemoryModifier, MemoryStore};
    let store = match (&spec.dir, &context.sessions) {
        (Some(dir), _) => MemoryStore::open(dir)?,
        (None, lc_agent::ListConfig::Redis { url, .. }) => MemoryStore::redis(url.clone())?,
        (None, _) => MemoryStore::open_default()?,
    };
    let store = match &spec.embedder {
        Some(embedder) => store.with_embedder(embedder.open()?),
        None => store,
    };
    let mut memory = MemoryModifier::new(store);
    if let Some(user) = &context.user {
        memory = memory.default_user(user.clone());
    }
    if let Some(k) = spec.top_k {
        memory = memory.top_k(k);
    }
    if let Some(n) = spec.summary_every {
        memory = memory.summary_every(n);
    }
    Ok(agent.memory(memory))
}

#[cfg(not(feature = "memory"))]
fn with_memory(
    _agent: DeepAgentBuilder,
    _spec: &MemorySpec,
    _context: &AgentContext,
) -> Result<DeepAgentBuilder, SpecError> {
    Err(SpecError::Invalid(
        "`memory` needs lc-agent-deepagent built with the `memory` feature".to_string(),
    ))
}
