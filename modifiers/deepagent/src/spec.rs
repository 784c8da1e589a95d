//! [`AgentSpec`]: a serializable blueprint of a deep agent — model names,
//! instructions, backend, sub-agents, approvals, routes, memory; never secrets —
//! that builds the agent and re-attaches it to a loaded session. This file
//! holds the blueprint and how it is read and stored; `spec/build.rs` how
//! an agent is built from it.
//!
//! ```text
//!  agent.toml / agent.json ─▶ AgentSpec ─▶ DeepAgentBuilder ─▶ build() | attach(&loaded)
//!                                 │
//!                                 └─ store_in(&net): metadata["agent_spec"], saved with the
//!                                    session, so any process can resume it (from_network)
//! ```
//!
//! Models are named, not embedded: each entry says which model to ask
//! for, from which provider (`openai`, the default, or `anthropic`) and
//! optionally where; the key comes from the provider's variable
//! (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`) when the agent is built, or a
//! caller resolves names its own way. Each step can use a model of its
//! own provider (`routes`): every entry is opened as a model of its own,
//! at its own `base_url`, with the key of its own `api_key_env` (a
//! variable's name, never the key) when it says one. A caller that brings
//! its own main model (the CLI's `--model`, a server's) answers the `main`
//! name with it; the other names are still their own models
//! ([`Blueprint::with_main`](crate::compose::Blueprint::with_main)).
//!
//! ```toml
//! [models.main]
//! model = "claude-sonnet-4-5"
//! provider = "anthropic"
//!
//! [models.summary]
//! model = "qwen2.5:7b"
//! base_url = "http://127.0.0.1:11434/v1"
//!
//! [models.small]
//! model = "gpt-4o-mini"
//! api_key_env = "MY_OPENAI_KEY"
//!
//! [routes]
//! summary = "summary"
//! title = "small"
//! ```
//!
//! ```toml
//! name = "refactorer"
//! instructions = "You are a careful refactoring assistant."
//! backend = { kind = "directory", root = "./repo", shell = true }
//!
//! [models.main]
//! model = "qwen2.5-coder"
//! base_url = "http://127.0.0.1:8000/v1"
//! timeout_secs = 600  # one request's wait for the answer (a stream that produces tokens lives past it)
//!
//! [[subagents]]
//! name = "researcher"
//! description = "Finds facts in the code base"
//! system_prompt = "Search, read, and report with file names."
//! model = "openai:gpt-4o-mini"        # or a [models] name
//! tools = ["ls", "glob", "grep", "read_file", "execute"]  # only these
//! interrupt_on = { execute = ["approve", "reject"] }       # more approvals, never fewer
//! output_schema = { type = "object", properties = { files = { type = "array" } }, required = ["files"] }
//!
//! [output_schemas.chat]  # the agent's final answers: a JSON value valid against this schema
//! type = "object"
//! properties = { summary = { type = "string" } }
//! required = ["summary"]
//!
//! [interrupt_on]
//! execute = ["approve", "reject"]
//!
//! [mcp_servers.time]
//! command = "mcp-server-time"
//! [mcp_servers.web]
//! url = "http://127.0.0.1:3001/mcp"
//! headers = { Authorization = "Bearer ${WEB_TOKEN}" }
//!
//! [skills]
//! dir = "./skills"
//!
//! [project_memory]    # on by default with ["AGENTS.md"]; `project_memory = false` turns it off
//! files = ["AGENTS.md", "CLAUDE.md"]
//! max_tokens = 4000
//!
//! [[permissions]]     # path rules, first match wins (omitted operations/paths: all)
//! operations = ["write", "edit", "delete"]
//! paths = ["secrets/**", ".env"]
//! mode = "deny"
//!
//! [summarization]
//! every_human_turns = 8
//! context_windows = { models = { "qwen2.5-coder" = 32768 } }
//!
//! [memory]            # long-term memory (feature `memory`), all fields optional
//! top_k = 5
//! summary_every = 8
//! # search by meaning too (absent: by words only); any OpenAI-compatible /embeddings
//! embedder = { model = "nomic-embed-text", base_url = "http://127.0.0.1:11434/v1" }
//!
//! [prices.models."qwen2.5-coder"]   # USD per million tokens (see lc_agent::Prices)
//! input = 0.2
//! output = 0.6
//! ```
//!
//! A sub-agent (`[[subagents]]`, as deepagents' sub-agent specs) may have
//! its own `model` (a `[models]` name, or `provider:model` /
//! `provider/model` opened like a `[models]` entry), its own `tools`
//! allow-list (only those are offered to it and only those it may call;
//! a call of another is answered with an error, and a name the agent does
//! not have is an error when the blueprint is built) and its own
//! `interrupt_on`, added to the agent's: for a tool the agent already
//! holds, the agent's rule stands, so a sub-agent can never loosen an
//! approval. A sub-agent started by a sub-agent keeps both limits.
//!
//! MCP servers (`mcp_servers`, the entries of an `mcpServers` file) are
//! named here and connected by the caller ([`AgentSpec::mcp_config`], then
//! `McpTools` of the `mcp` feature); their secrets stay `${VAR}` references.

mod build;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use lc_agent::{ChatModel, ModelError, NetworkError, Provider, RunnableNetwork};
use serde::{Deserialize, Serialize};

use crate::decisions::DecisionKind;
use crate::mcp::{McpConfig, McpServerConfig};
use crate::summarization::SummarizationConfig;
use crate::workspace::{Workspace, WorkspaceError};

/// The session metadata key holding the agent's blueprint.
pub const AGENT_SPEC_KEY: &str = "agent_spec";

/// A model by name: what to ask the server for, and where.
///
/// Every entry is a model of its own: `[models.small]` with its own
/// `base_url` (or `provider`) is asked there, whatever the main model is.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// The model name the server serves.
    pub model: String,
    /// The protocol it is asked in (default: OpenAI-compatible). Recorded
    /// in a session's blueprint, so a resumed session asks the same
    /// provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Provider>,
    /// The endpoint (default: the provider's variable, `OPENAI_BASE_URL` or
    /// `ANTHROPIC_BASE_URL`, else the provider's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The environment variable holding its API key (default: the
    /// provider's, `OPENAI_API_KEY` or `ANTHROPIC_API_KEY`); the key itself
    /// is never in a blueprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// How many tokens the model reads at most (default: what its server
    /// says, else the table of known models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<usize>,
    /// How long one request may wait for the model's answer, in seconds
    /// (default: `LC_AGENT_MODEL_TIMEOUT`, else 120; the CLI's
    /// `--model-timeout` overrides it). A streamed answer that is still
    /// producing tokens lives past it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

/// A named sub-agent, as deepagents' sub-agent specs have them: its own
/// instructions (`system_prompt` is read too), model, tools allow-list and
/// approval rules (see the module docs of `spec.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubAgentSpec {
    /// The name the model asks for.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// Its system prompt.
    #[serde(
        default,
        alias = "system_prompt",
        skip_serializing_if = "Option::is_none"
    )]
    pub instructions: Option<String>,
    /// Its model: a name of [`AgentSpec::models`], else
    /// `provider:model` or `provider/model` (`openai:gpt-4o-mini`,
    /// `anthropic/claude-haiku-4-5`), opened as the `[models]` entries are.
    /// Default: the `subagent:<name>` route, else the main model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The only tools offered to it and that it may call (absent: every
    /// tool of the agent). A name the agent does not have is an error when
    /// the blueprint is built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Tools whose calls inside it wait for a person, added to the
    /// agent's own rules; a tool the agent already holds keeps the agent's
    /// rule (a sub-agent cannot loosen an approval).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub interrupt_on: BTreeMap<String, Vec<DecisionKind>>,
    /// The JSON Schema its final answer (the `task` result) must follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
}

/// Long-term memory (the `memory` feature; see
/// `lc_agent_deepagent::memory`): in `dir`, else beside the sessions (in
/// Redis when they are in Redis, else `$LC_AGENT_HOME/memory`). The user is
/// the session's `metadata["user"]`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    /// The store's directory (default: `$LC_AGENT_HOME/memory`, else the
    /// user's data directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// Memories put in each request (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<usize>,
    /// A summary every this many turns (default 8; 0: never), by the
    /// `summary` step's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_every: Option<usize>,
    /// Memories found by meaning too, with this embedding model (absent:
    /// by words only; see `lc_agent_deepagent::memory`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<EmbedderSpec>,
}

/// The embedding model of long-term memory: an OpenAI-compatible
/// `/embeddings` endpoint ([`lc_agent::OpenAiEmbedder`]), named like a
/// `[models]` entry; never a key, only the variable holding it.
///
/// ```
/// use lc_agent_deepagent::AgentSpec;
///
/// let spec = AgentSpec::from_toml(
///     "[models.main]\nmodel = \"m\"\n[memory]\nembedder = { model = \"nomic-embed-text\", base_url = \"http://127.0.0.1:11434/v1\" }",
/// )
/// .unwrap();
/// let embedder = spec.memory.unwrap().embedder.unwrap();
/// assert_eq!(embedder.model, "nomic-embed-text");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedderSpec {
    /// The embedding model the server serves (stored with every vector:
    /// another model's vectors are not compared).
    pub model: String,
    /// The endpoint (default: `OPENAI_BASE_URL`, else OpenAI's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The environment variable holding its API key (default:
    /// `OPENAI_API_KEY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// How long one request may wait, in seconds (default: as the
    /// models', `LC_AGENT_MODEL_TIMEOUT`, else 120).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

impl EmbedderSpec {
    /// The embedder this entry names (the key from `api_key_env`, else
    /// `OPENAI_API_KEY`).
    #[cfg(feature = "memory")]
    fn open(&self) -> Result<Arc<dyn lc_agent::Embedder>, SpecError> {
        let what =
            |why: &str| SpecError::Invalid(format!("memory embedder `{}`: {why}", self.model));
        if self.model.trim().is_empty() {
            return Err(what(
                "`model` is empty: name the embedding model its server serves",
            ));
        }
        let mut settings = lc_agent::HttpSettings::default().model(self.model.clone());
        if let Some(url) = &self.base_url {
            settings = settings.base_url(url.clone());
        }
        match self.timeout_secs {
            Some(0) => return Err(what("timeout_secs must be at least 1")),
            Some(secs) => settings = settings.timeout(std::time::Duration::from_secs(secs)),
            None => {}
        }
        if let Some(variable) = &self.api_key_env {
            let key = std::env::var(variable)
                .ok()
                .filter(|k| !k.trim().is_empty())
                .ok_or_else(|| {
                    what(&format!(
                        "its key variable {variable} (api_key_env) is not set"
                    ))
                })?;
            settings = settings.api_key(key);
        }
        let embedder = lc_agent::OpenAiEmbedder::new(settings).map_err(|e| what(&e.to_string()))?;
        Ok(Arc::new(embedder))
    }
}

/// Where the agent's skills are (see [`SkillsModifier`](crate::SkillsModifier)).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsSpec {
    /// A directory on disk, mounted at `/skills`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// Paths of the agent's backend that hold skill folders.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<String>,
}

/// The blueprint of a deep agent (see the module docs of `spec.rs`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// The session name.
    #[serde(default)]
    pub name: String,
    /// The agent's instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Models by the name the agent uses for them; `main` is required.
    #[serde(default)]
    pub models: BTreeMap<String, ModelSpec>,
    /// Where the file tools work (a shell workspace holds `execute` for
    /// approval unless it says `execute_approval = false`; an
    /// `interrupt_on.execute` entry replaces that rule).
    #[serde(default)]
    pub backend: Workspace,
    /// `[sandbox]`: folded into `backend` when read (see [`SandboxTable`](crate::SandboxTable)).
    #[serde(default, skip_serializing_if = "crate::SandboxTable::is_empty")]
    pub sandbox: crate::SandboxTable,
    /// Named sub-agents (the general-purpose one is always there).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<SubAgentSpec>,
    /// Tools whose calls wait for a person, with the decisions allowed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub interrupt_on: BTreeMap<String, Vec<DecisionKind>>,
    /// Step -> model name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub routes: BTreeMap<String, String>,
    /// Step -> the JSON Schema its final answers must follow (`chat` for
    /// the agent's own; see [`lc_agent::OutputSchema`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub output_schemas: BTreeMap<String, serde_json::Value>,
    /// Model turns allowed in one `invoke`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_limit: Option<usize>,
    /// MCP servers whose tools the agent gets (never secrets: `${VAR}`
    /// references are resolved when a server starts).
    #[serde(default, skip_serializing_if = "indexmap::IndexMap::is_empty")]
    pub mcp_servers: indexmap::IndexMap<String, McpServerConfig>,
    /// Skills listed in the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<SkillsSpec>,
    /// Project memory files (`AGENTS.md`) in the system prompt: on unless
    /// it says `false` (see [`ProjectMemorySpec`](crate::ProjectMemorySpec)).
    #[serde(
        default,
        skip_serializing_if = "crate::project_memory::ProjectMemorySpec::is_default"
    )]
    pub project_memory: crate::project_memory::ProjectMemorySpec,
    /// Summaries of long conversations (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarization: Option<SummarizationConfig>,
    /// Long-term memory, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemorySpec>,
    /// Prices of the models it uses, USD per million tokens, on top of the
    /// built-in table and the user's `prices.toml` (see
    /// [`lc_agent::Prices`]): `[prices.models."my-model"] input = 1.0,
    /// output = 2.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<lc_agent::Prices>,
    /// A new session's permission mode (`plan`, `default`, `accept-edits`,
    /// `bypass`; see [`PermissionMode`](crate::PermissionMode)); a session
    /// keeps its own once it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<crate::PermissionMode>,
    /// Also offer the line tools (`insert_lines`, `replace_lines`,
    /// `delete_lines`; `docs/line-tools.md`); off by default, as they cost
    /// prompt tokens.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub line_tools: bool,
    /// `[files]`: the file tools' size limits, `max_read_bytes` (what one
    /// `read_file` returns, default 256 KiB) and `max_write_bytes` (the
    /// largest file `write_file`, `edit_file` and the line tools may
    /// leave, default 4 GiB); see [`lc_agent_filesystem::FileLimits`].
    #[serde(
        default,
        skip_serializing_if = "lc_agent_filesystem::FileLimits::is_default"
    )]
    pub files: lc_agent_filesystem::FileLimits,
    /// Path rules (`[[permissions]]`: `operations`, `paths`, `mode`; see
    /// [`lc_agent_filesystem::Permissions`]), first match wins; inherited
    /// by sub-agents.
    #[serde(
        default,
        skip_serializing_if = "lc_agent_filesystem::Permissions::is_empty"
    )]
    pub permissions: lc_agent_filesystem::Permissions,
    /// `[fetch_url]`: the `fetch_url` tool, for the hosts its `allow`
    /// names (absent: no such tool; see [`FetchUrlSpec`](crate::FetchUrlSpec)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_url: Option<crate::FetchUrlSpec>,
    /// `[resilience]`: model fallbacks per step, tools retried, call
    /// limits (see [`ResilienceSpec`](crate::ResilienceSpec)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resilience: Option<crate::ResilienceSpec>,
}

/// Errors of reading or using a blueprint.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The TOML text is not a blueprint.
    #[error("invalid agent spec (TOML): {0}")]
    Toml(#[from] toml::de::Error),
    /// The JSON text is not a blueprint.
    #[error("invalid agent spec (JSON): {0}")]
    Json(#[from] serde_json::Error),
    /// No `main` model, or a name that no entry defines.
    #[error("agent spec: {0}")]
    Invalid(String),
    /// A model could not be made.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The blueprint file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The workspace (or the skills directory) could not be opened.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// Attaching failed.
    #[error(transparent)]
    Network(#[from] NetworkError),
    /// The memory store could not be opened.
    #[cfg(feature = "memory")]
    #[error("agent spec memory: {0}")]
    Memory(#[from] crate::memory::MemoryError),
}

impl AgentSpec {
    /// Reads a blueprint from TOML.
    pub fn from_toml(text: &str) -> Result<Self, SpecError> {
        toml::from_str::<Self>(text)?.folded()
    }

    /// Reads a blueprint from JSON.
    pub fn from_json(text: &str) -> Result<Self, SpecError> {
        serde_json::from_str::<Self>(text)?.folded()
    }

    /// `[sandbox]` folded into `backend`.
    fn folded(mut self) -> Result<Self, SpecError> {
        let table = std::mem::take(&mut self.sandbox);
        self.backend = self
            .backend
            .with_sandbox_table(&table)
            .map_err(|e| SpecError::Invalid(format!("[sandbox]: {e}")))?;
        Ok(self)
    }

    /// Reads a blueprint file: TOML unless its name ends in `.json`.
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<Self, SpecError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        if path.extension().is_some_and(|e| e == "json") {
            Self::from_json(&text)
        } else {
            Self::from_toml(&text)
        }
    }

    /// The blueprint stored in a session, if any.
    pub fn from_network(network: &RunnableNetwork) -> Option<Result<Self, SpecError>> {
        let value = network.metadata_value(AGENT_SPEC_KEY)?;
        Some(
            serde_json::from_value::<Self>(value)
                .map_err(SpecError::from)
                .and_then(Self::folded),
        )
    }

    /// Stores the blueprint in the session's metadata (saved with it).
    pub fn store_in(&self, network: &RunnableNetwork) -> Result<(), SpecError> {
        network.set_metadata(AGENT_SPEC_KEY, serde_json::to_value(self)?);
        Ok(())
    }

    /// The MCP servers, as an `mcpServers` configuration (checked).
    ///
    /// ```
    /// use lc_agent_deepagent::AgentSpec;
    ///
    /// let spec = AgentSpec::from_toml("[mcp_servers.time]\ncommand = \"mcp-server-time\"").unwrap();
    /// assert_eq!(spec.mcp_config().unwrap().mcp_servers.len(), 1);
    /// ```
    pub fn mcp_config(&self) -> Result<McpConfig, SpecError> {
        let config = McpConfig {
            mcp_servers: self.mcp_servers.clone(),
        };
        config
            .validate()
            .map_err(|e| SpecError::Invalid(e.to_string()))?;
        Ok(config)
    }
}

/// `provider:model` or `provider/model` as a model entry, when the prefix
/// is a provider's name (`openai`, `anthropic`); a model whose own name
/// starts so (`openai/gpt-oss-20b` on vLLM) needs a `[models]` entry.
fn provider_model(text: &str) -> Option<ModelSpec> {
    let at = text.find([':', '/'])?;
    let (provider, model) = (&text[..at], &text[at + 1..]);
    let provider: Provider = provider.parse().ok()?;
    (!model.trim().is_empty()).then(|| ModelSpec {
        model: model.to_string(),
        provider: Some(provider),
        ..ModelSpec::default()
    })
}

impl ModelSpec {
    /// The model this entry names, from its provider (key from
    /// `api_key_env`, else the provider's variable; endpoint from the entry
    /// or the provider's variable).
    pub fn open(&self) -> Result<Arc<dyn ChatModel>, SpecError> {
        let provider = self.provider.unwrap_or_default();
        let mut settings = lc_agent::HttpSettings::default().model(self.model.clone());
        if let Some(url) = &self.base_url {
            settings = settings.base_url(url.clone());
        }
        if let Some(tokens) = self.context_window {
            settings = settings.context_window(tokens);
        }
        if let Some(secs) = self.timeout_secs {
            if secs == 0 {
                return Err(SpecError::Invalid(format!(
                    "model `{}`: timeout_secs must be at least 1",
                    self.model
                )));
            }
            settings = settings.timeout(std::time::Duration::from_secs(secs));
        }
        if let Some(variable) = &self.api_key_env {
            let key = std::env::var(variable)
                .ok()
                .filter(|k| !k.trim().is_empty())
                .ok_or_else(|| {
                    SpecError::Invalid(format!(
                        "model `{}`: its key variable {variable} (api_key_env) is not set",
                        self.model
                    ))
                })?;
            settings = settings.api_key(key);
        }
        Ok(provider.open_with(settings)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deep_agent::MAIN_MODEL;

    #[test]
    fn a_models_timeout_round_trips_and_zero_is_refused() {
        let spec = AgentSpec::from_toml(
            "[models.main]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\ntimeout_secs = 600\n",
        )
        .expect("a blueprint");
        assert_eq!(spec.models[MAIN_MODEL].timeout_secs, Some(600));
        let json = serde_json::to_string(&spec).expect("as JSON");
        assert!(json.contains("\"timeout_secs\":600"), "{json}");
        assert_eq!(AgentSpec::from_json(&json).expect("from JSON"), spec);
        let net = RunnableNetwork::new();
        spec.store_in(&net).expect("stored");
        let stored = AgentSpec::from_network(&net)
            .expect("a stored blueprint")
            .expect("valid");
        assert_eq!(stored.models[MAIN_MODEL].timeout_secs, Some(600));
        assert!(spec.models[MAIN_MODEL].open().is_ok());

        let zero = ModelSpec {
            model: "m".to_string(),
            timeout_secs: Some(0),
            ..ModelSpec::default()
        };
        let error = zero.open().err().expect("refused");
        assert!(error.to_string().contains("timeout_secs"), "{error}");
    }
}
