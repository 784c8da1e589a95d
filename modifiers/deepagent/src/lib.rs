//! The agent layer of lc-agent: modifiers, the deep agent, its blueprint and
//! how an agent is composed. The file tools, their backends and the
//! filesystem modifier live in their own crate, `lc-agent-filesystem`
//! ([`lc_agent_filesystem`]); this crate puts them on agents.
//!
//! A modifier watches a network run and grows it; the ones here give chat
//! nodes a plan, sub-agents, approvals, summaries, skills, memory and MCP
//! tools, and [`DeepAgent`] puts them on one network with the file tools:
//!
//! ```text
//!  Blueprint (compose.rs) ─▶ AgentSpec (spec.rs) ─▶ DeepAgentBuilder ─▶ RunnableNetwork
//!     Workspace (workspace.rs) ─▶ Backend ◀── FilesystemModifier ◀── chat node's tool calls
//!     approvals · todos · subagents · supervisor · summarization · skills · memory · mcp
//! ```
//!
//! ## Layout
//!
//! The types are re-exported flat at the crate root (`use
//! lc_agent_deepagent::{DeepAgent, AgentSpec, Workspace}`); the modules
//! are private, one file per concept. Two features keep a public module as
//! their namespace, because they are subsystems with many parts of their
//! own: [`mcp`] (the `mcp` cargo feature) and `memory` (the `memory` cargo
//! feature).
//!
//! - `deep_agent.rs`: the preset ([`DeepAgent`], [`DeepAgentBuilder`]) that puts
//!   the file tools, todos, sub-agents, approvals, model routes, summaries,
//!   skills and memory on one network.
//! - `lean.rs`: the lean prompt for a model with a small context window
//!   (under [`LEAN_BELOW`] tokens): short instructions and tool
//!   descriptions, no `glob`, `delete`, `write_todos` or `task`
//!   ([`DeepAgentBuilder::context_window`], [`DeepAgentBuilder::lean_notice`]).
//! - `window_fit.rs`: fitting a small window the way its server counts (the
//!   estimate calibrated by each answer's `usage.prompt_tokens`, a bounded
//!   `max_tokens`); the summaries use it.
//! - `prices.rs`: one price source for every door ([`session_prices`]):
//!   the blueprint's `[prices]` over the price file over the built-ins.
//! - `stuck.rs`: stuck detection ([`StuckDetector`]): the same call again,
//!   two calls alternating, failed calls or empty answers turn after turn;
//!   the model is told once, then the run stops (`NetworkError::Stuck`).
//! - `spec.rs`: [`AgentSpec`], the serializable blueprint (TOML or
//!   JSON, kept in the session's metadata) that builds a deep agent and
//!   re-attaches it to a loaded session (`spec/build.rs`: the building).
//! - `compose.rs`: [`Blueprint::resolve`], *which agent*
//!   a session runs with (the stored blueprint wins, else the caller's, then the
//!   caller's [`Overrides`], noted); [`AgentContext`] (sessions, user;
//!   in `context.rs`, which the blueprint reads too).
//! - `workspace.rs`: [`Workspace`], *where the file tools work*
//!   (session files, a directory, a shell) opened into a backend, and the rule that a
//!   shell holds `execute` for approval. A new kind of workspace is a change there.
//! - `decisions.rs`: what a person may decide about a held call ([`Decisions`],
//!   [`DecisionKind`]) and what they decided ([`Decision`]).
//! - `approvals.rs`: tool calls that wait for a person's decision (approve,
//!   edit, reject, respond), held in the graph ([`ApprovalModifier`],
//!   [`pending_approvals`], [`decide`]).
//! - `modes.rs`: permission modes (`plan`, `default`, `accept-edits`, `bypass`), kept in
//!   the session's metadata and applied before the approval rules; plan mode's
//!   `exit_plan_mode` ([`PermissionMode`], [`permission_mode`], [`set_permission_mode`]).
//! - `hooks/`: the user's hook commands in the Claude Code settings format
//!   ([`HooksModifier`], [`HookSettings`]): `mod.rs` the modifier (which event fires
//!   where, what a decision does), `settings.rs` the files (event → matcher → command),
//!   `events.rs` exit codes and JSON answers, `runner.rs` one command (stdin, timeout,
//!   process group).
//! - `permissions.rs`: path rules on agents: the backend guarded, and calls an `ask`
//!   rule covers held for approval naming the rule ([`PathRulesModifier`]).
//! - `bearer.rs`: the one rule of serving over HTTP with a bearer token (a loopback
//!   bind may go without one; `Authorization: Bearer`, compared in constant time),
//!   used by lc-agent-server and the MCP HTTP server ([`bind_allowed`],
//!   [`bearer_token`], [`same_token`]).
//! - `subagents.rs`: the `task` tool; each task runs as an isolated
//!   sub-network in the graph, under its parent's safeguards (approvals,
//!   eviction, offered tools, summaries) ([`SubAgentModifier`], [`SubAgent`]).
//! - `subagent_limits.rs`: a sub-agent's tools allow-list and added approval
//!   rules, kept in its network's metadata; they only tighten down the nesting.
//! - `delegation.rs`: how a sub-network answers a tool call (wired before
//!   the call, found by the call's id, its last answer as the result), for
//!   sub-agents, routes and approvals.
//! - `fetch_url.rs`: the `fetch_url` tool ([`FetchUrl`], blueprint [`FetchUrlSpec`]): a web
//!   page as Markdown, hosts from an allow-list only, size and time caps.
//! - `supervisor.rs`: a supervisor network whose chat model calls named route
//!   networks as tools ([`Supervisor`], [`Route`]); routes see the
//!   outer conversation, repeated calls are refused, turns are capped.
//! - `summarization.rs`: summaries of long conversations: triggers (context-window
//!   fraction, tokens, human turns), the cut that never splits a tool call, the
//!   `summary` step's model, `/conversation_history/<session-id>.md`
//!   ([`SummarizationModifier`], [`SummarizationConfig`]); a summary on
//!   demand ([`compact`], a chat's `/compact`).
//! - `tokens.rs`: [`TokenCounter`], [`TiktokenCounter`] (feature `tokens`), [`ApproxCounter`],
//!   and [`ContextWindows`] per model.
//! - `project_memory.rs`: `AGENTS.md` (and the other names a blueprint gives) from
//!   the workspace root up to the repository root and the user's configuration
//!   directory, in the system prompt within a token budget ([`ProjectMemory`],
//!   [`ProjectMemorySpec`]).
//! - `resilience.rs`: the blueprint's `[resilience]` ([`ResilienceSpec`]): model fallbacks per
//!   step, tools retried, call limits per tool and per model (the core keeps them in the
//!   network's metadata).
//! - `sampling.rs`: a run's requested sampling (a client's `temperature`, `max_tokens`,
//!   `stop`, …) in the session's metadata, put on its model calls ([`set_sampling`]).
//! - `skills.rs`: `SKILL.md` folders listed in the system prompt
//!   ([`SkillsModifier`]); malformed files are skipped with a warning.
//! - `titles.rs`: session titles written by the `title` step's model after the first
//!   answer ([`write_title`]); opt-in by a route.
//! - `todos.rs`: the todo list, `write_todos` and its prompt section
//!   ([`TodoListModifier`], [`todos_of`]), kept in the network's metadata.
//! - [`mcp`]: MCP both ways (the `mcp` cargo feature; `mcp/config.rs` is always built):
//!   - `mcp/config.rs`: `McpConfig`, the `mcpServers` file, `${VAR}` references.
//!   - `mcp/tools.rs`: `McpTools`, the modifier offering the servers' tools (name clashes prefixed).
//!   - `mcp/sessions.rs`: `McpSessions`, the same servers with connections per session (`serve`).
//!   - `mcp/connection.rs`: `ServerConnection`, one server: connect, list, call, reconnect, list_changed.
//!   - `mcp/tool.rs`: `McpTool`, one server tool as a `Tool`; failures as `Error: ...` results.
//!   - `mcp/content.rs`: tool results as text (images, audio, resources described).
//!   - `mcp/server.rs`: `FileToolServer`, the file tools served over stdio or HTTP + bearer token.
//!   - `mcp/resources.rs`: the workspace files as its resources (list, read, template, subscribe) and its log messages.
//!   - `mcp/oauth.rs`, `mcp/tokens.rs`: OAuth for remote servers (`McpLogin`), the token file.
//!   - `mcp/elicitation.rs`: `Elicitation`, a server asking the person for input (the form, its checks).
//!   - `mcp/error.rs`: `McpError`.
//! - `memory` (feature `memory`): long-term memory across sessions, per user
//!   (its module docs draw how the parts connect):
//!   - `memory/entry.rs`: `MemoryEntry {id, user, kind, text, tags, created_at, embedding?}`, `MemoryEmbedding`, `MemoryQuery`, `MemoryHit`.
//!   - `memory/error.rs`: `MemoryError`.
//!   - `memory/backend.rs`: the `MemoryBackend` trait (a per-user append-only log) and `InMemoryBackend`.
//!   - `memory/file.rs`: `JsonFileBackend`, JSON lines appended under a lock and fsynced (kill-safe).
//!   - `memory/redis.rs`: `RedisMemoryBackend`, a list per user, hash-tagged like the sessions.
//!   - `memory/index.rs`: the tantivy index (RAM or on disk): relevance × recency, filtered by user.
//!   - `memory/store.rs`: `MemoryStore`, a backend plus the index that follows it (rebuilt when stale);
//!     with an embedder, vectors too and hybrid search (reciprocal rank fusion).
//!   - `memory/vectors.rs`: the entries' vectors per user in RAM, cosine search (exact, or sign bits then exact).
//!   - `memory/modifier.rs`: `MemoryModifier`: memories in the prompt, turns stored, background summaries.
//!   - `memory/tools.rs`: the `remember` and `recall` tools; `user_of` (the session's user).
//! - The file tools, their backends and `FilesystemModifier` are the
//!   `lc-agent-filesystem` crate ([`lc_agent_filesystem`]; its crate docs draw
//!   how they connect).

mod approvals;
mod bearer;
mod compose;
mod context;
mod decisions;
mod deep_agent;
mod delegation;
mod fetch_url;
mod hooks;
mod lean;
pub mod mcp;
#[cfg(feature = "memory")]
pub mod memory;
mod modes;
mod permissions;
mod prices;
mod project_memory;
mod resilience;
mod sampling;
mod skills;
mod spec;
mod stuck;
mod subagent_limits;
mod subagents;
mod summarization;
mod supervisor;
mod titles;
mod todos;
mod tokens;
mod window_fit;
mod workspace;

pub use approvals::{decide, pending_approvals, ApprovalError, ApprovalModifier, PendingApproval};
pub use bearer::{bearer_token, bind_allowed, same_token};
pub use compose::{Blueprint, Override, Overrides, Setting};
pub use context::AgentContext;
pub use decisions::{Decision, DecisionKind, Decisions};
pub use deep_agent::{DeepAgent, DeepAgentBuilder, BASE_PROMPT, MAIN_MODEL};
pub use fetch_url::{FetchUrl, FetchUrlSpec};
pub use hooks::{HookDecision, HookSettings, HookSettingsError, HooksModifier};
pub use lean::LEAN_BELOW;
pub use modes::{
    permission_mode, set_permission_mode, PermissionMode, UnknownMode, BYPASS_WARNING, MODE_KEY,
};
pub use permissions::PathRulesModifier;
pub use prices::{session_prices, session_prices_in};
pub use project_memory::{ProjectMemory, ProjectMemorySpec};
pub use resilience::{CallLimitsSpec, ClearToolResultsSpec, ResilienceSpec, ToolRetrySpec};
pub use sampling::{sampling_of, set_sampling, SAMPLING_KEY};
pub use skills::{Skill, SkillError, SkillsModifier};
pub use spec::{
    AgentSpec, EmbedderSpec, MemorySpec, ModelSpec, SkillsSpec, SpecError, SubAgentSpec,
    AGENT_SPEC_KEY,
};
pub use stuck::{StuckDetector, STOP_AFTER, STUCK_ID, STUCK_WARNING, WARN_AFTER};
pub use subagents::{SubAgent, SubAgentModifier, TASK};
pub use summarization::{
    compact, summarizer_of, CompactError, Compaction, SummarizationConfig, SummarizationModifier,
    SummaryError, SUMMARY_STEP,
};
pub use supervisor::{Route, Supervisor};
pub use titles::{title_of, write_title, TitleError, TITLE_KEY, TITLE_STEP};
pub use todos::{todos_of, Todo, TodoListModifier, TodoStatus, TODOS_KEY, TODOS_PROMPT};
#[cfg(feature = "tokens")]
pub use tokens::TiktokenCounter;
pub use tokens::{
    counter_for_model, ApproxCounter, ContextWindows, Encoding, TokenCounter, TokenError,
    TokenizerUsage,
};
pub use workspace::{SandboxTable, Workspace, WorkspaceError};
