//! The agent layer of lc-agent: modifiers, the deep agent, its blueprint and
//! how an agent is composed. The file tools, their backends and the
//! filesystem modifier live in their own crate, `lc-agent-filesystem`
//! ([`lc_agent_filesystem`]); this crate puts them on agents.
//!
//! A modifier watches a network run and grows it; the ones here give chat
//! nodes a plan, sub-agents, approvals, summaries, skills, memory and MCP
//! tools, and [`deep_agent`] puts them on one network with the file tools:
//!
//! ```text
//!  Blueprint (compose.rs) ─▶ AgentSpec (spec.rs) ─▶ DeepAgentBuilder ─▶ RunnableNetwork
//!     Workspace (workspace.rs) ─▶ Backend ◀── FilesystemModifier ◀── chat node's tool calls
//!     approvals · todos · subagents · supervisor · summarization · skills · memory · mcp
//! ```
//!
//! ## Layout
//!
//! - [`deep_agent`]: the preset ([`DeepAgent`](deep_agent::DeepAgent)) that puts
//!   the file tools, todos, sub-agents, approvals, model routes, summaries,
//!   skills and memory on one network.
//! - [`spec`]: [`AgentSpec`](spec::AgentSpec), the serializable blueprint (TOML or
//!   JSON, kept in the session's metadata) that builds a deep agent and
//!   re-attaches it to a loaded session.
//! - [`compose`]: [`Blueprint::resolve`](compose::Blueprint::resolve), *which agent*
//!   a session runs with (the stored blueprint wins, else the caller's, then the
//!   caller's overrides, noted); [`AgentContext`](compose::AgentContext) (sessions, user;
//!   in `context.rs`, which the blueprint reads too).
//! - [`workspace`]: [`Workspace`](workspace::Workspace), *where the file tools work*
//!   (session files, a directory, a shell) opened into a backend, and the rule that a
//!   shell holds `execute` for approval. A new kind of workspace is a change there.
//! - [`approvals`]: tool calls that wait for a person's decision (approve,
//!   edit, reject, respond), held in the graph ([`ApprovalModifier`](approvals::ApprovalModifier)).
//! - [`bearer`]: the one rule of serving over HTTP with a bearer token (a loopback
//!   bind may go without one; `Authorization: Bearer`, compared in constant time),
//!   used by lc-agent-server and the MCP HTTP server.
//! - [`subagents`]: the `task` tool; each task runs as an isolated
//!   sub-network in the graph, under its parent's safeguards (approvals,
//!   eviction, offered tools, summaries) ([`SubAgentModifier`](subagents::SubAgentModifier)).
//! - `delegation.rs`: how a sub-network answers a tool call (wired before
//!   the call, found by the call's id, its last answer as the result), for
//!   sub-agents, routes and approvals.
//! - [`supervisor`]: a supervisor network whose chat model calls named route
//!   networks as tools ([`Supervisor`](supervisor::Supervisor)); routes see the
//!   outer conversation, repeated calls are refused, turns are capped.
//! - [`summarization`]: summaries of long conversations: triggers (context-window
//!   fraction, tokens, human turns), the cut that never splits a tool call, the
//!   `summary` step's model, `/conversation_history/<session-id>.md`
//!   ([`SummarizationModifier`](summarization::SummarizationModifier)); a summary on
//!   demand ([`compact`](summarization::compact), a chat's `/compact`).
//! - [`tokens`]: `TokenCounter`, `TiktokenCounter` (feature `tokens`), `ApproxCounter`,
//!   and [`ContextWindows`](tokens::ContextWindows) per model.
//! - [`skills`]: `SKILL.md` folders listed in the system prompt
//!   ([`SkillsModifier`](skills::SkillsModifier)); malformed files are skipped with a warning.
//! - [`titles`]: session titles written by the `title` step's model after the first
//!   answer ([`write_title`](titles::write_title)); opt-in by a route.
//! - [`todos`]: the todo list, `write_todos` and its prompt section
//!   ([`TodoListModifier`](todos::TodoListModifier)), kept in the network's metadata.
//! - [`mcp`]: MCP both ways (the `mcp` cargo feature; `mcp/config.rs` is always built):
//!   - `mcp/config.rs`: `McpConfig`, the `mcpServers` file, `${VAR}` references.
//!   - `mcp/tools.rs`: `McpTools`, the modifier offering the servers' tools (name clashes prefixed).
//!   - `mcp/connection.rs`: `ServerConnection`, one server: connect, list, call, reconnect, list_changed.
//!   - `mcp/tool.rs`: `McpTool`, one server tool as a `Tool`; failures as `Error: ...` results.
//!   - `mcp/content.rs`: tool results as text (images, audio, resources described).
//!   - `mcp/server.rs`: `FileToolServer`, the file tools served over stdio or HTTP + bearer token.
//!   - `mcp/error.rs`: `McpError`.
//! - `memory` (feature `memory`): long-term memory across sessions, per user
//!   (its module docs draw how the parts connect):
//!   - `memory/entry.rs`: `MemoryEntry {id, user, kind, text, tags, created_at}`, `MemoryQuery`, `MemoryHit`.
//!   - `memory/error.rs`: `MemoryError`.
//!   - `memory/backend.rs`: the `MemoryBackend` trait (a per-user append-only log) and `InMemoryBackend`.
//!   - `memory/file.rs`: `JsonFileBackend`, JSON lines appended under a lock and fsynced (kill-safe).
//!   - `memory/redis.rs`: `RedisMemoryBackend`, a list per user, hash-tagged like the sessions.
//!   - `memory/index.rs`: the tantivy index (RAM or on disk): relevance × recency, filtered by user.
//!   - `memory/store.rs`: `MemoryStore`, a backend plus the index that follows it (rebuilt when stale).
//!   - `memory/modifier.rs`: `MemoryModifier`: memories in the prompt, turns stored, background summaries.
//!   - `memory/tools.rs`: the `remember` and `recall` tools; `user_of` (the session's user).
//! - The file tools, their backends and `FilesystemModifier` are the
//!   `lc-agent-filesystem` crate ([`lc_agent_filesystem`]; its crate docs draw
//!   how they connect).

pub mod approvals;
pub mod bearer;
pub mod compose;
mod context;
pub mod deep_agent;
mod delegation;
pub mod mcp;
#[cfg(feature = "memory")]
pub mod memory;
pub mod skills;
pub mod spec;
pub mod subagents;
pub mod summarization;
pub mod supervisor;
pub mod titles;
pub mod todos;
pub mod tokens;
pub mod workspace;
