//! The agent layer of lc-agent: modifiers, the deep agent, its blueprint and
//! how an agent is composed; the file tools and their backends.
//!
//! A modifier watches a network run and grows it; the ones here give chat
//! nodes file tools, a plan, sub-agents, approvals, summaries, skills,
//! memory and MCP tools, and [`deep_agent`] puts them on one network:
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
//!   caller's overrides, noted); [`AgentContext`](compose::AgentContext) (sessions, user).
//! - [`workspace`]: [`Workspace`](workspace::Workspace), *where the file tools work*
//!   (session files, a directory, a shell) opened into a backend, and the rule that a
//!   shell holds `execute` for approval. A new kind of workspace is a change there.
//! - [`approvals`]: tool calls that wait for a person's decision (approve,
//!   edit, reject, respond), held in the graph ([`ApprovalModifier`](approvals::ApprovalModifier)).
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
//!   ([`SummarizationModifier`](summarization::SummarizationModifier)).
//! - [`tokens`]: `TokenCounter`, `TiktokenCounter` (feature `tokens`), `ApproxCounter`,
//!   and [`ContextWindows`](tokens::ContextWindows) per model.
//! - [`skills`]: `SKILL.md` folders listed in the system prompt
//!   ([`SkillsModifier`](skills::SkillsModifier)); malformed files are skipped with a warning.
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
//! - [`filesystem`]: the filesystem modifier, its tools and backends (its
//!   module docs draw how they connect):
//!   - [`filesystem::modifier`]: `FilesystemModifier`, offers the tools, adds the prompt section, evicts.
//!   - [`filesystem::prompt`]: the system-prompt section about the file tools.
//!   - [`filesystem::evict`]: huge tool results to `/large_tool_results/<id>` and their preview.
//!   - [`filesystem::tools`]: the seven tools, one type each (`TypedTool`s: their
//!     arguments are read, and argument errors worded, by the core's `lc_agent::tool_args`),
//!     `run_tool`, and `is_offered`, the one rule for which tools a model is offered.
//!     - `tools/ls.rs`: `Ls` and `format_ls`.
//!     - `tools/read_file.rs`: `ReadFile` and `format_read`.
//!     - `tools/write_file.rs`: `WriteFile`.
//!     - `tools/edit_file.rs`: `EditFile`.
//!     - `tools/glob.rs`: `Glob`.
//!     - `tools/grep.rs`: `Grep` and `format_grep`.
//!     - `tools/execute.rs`: `Execute` and `format_execute`.
//!   - [`filesystem::path`]: virtual paths: normalisation and the rejection rules.
//!   - [`filesystem::backend`]: the `Backend` trait, what it returns, `FsError`.
//!   - [`filesystem::state`]: `StateBackend`, files in the network's `files`.
//!   - [`filesystem::store`]: `StoreBackend` over a `Store` (in memory or Redis).
//!   - `filesystem/map_backend.rs`: the shared logic of map-backed backends (state, store).
//!   - [`filesystem::disk`]: `FilesystemBackend`, a directory confined with cap-std
//!     (`disk/write.rs`: how it writes, through in-root links, atomically).
//!   - [`filesystem::atomic`]: crash-safe writes: temp file, fsync, rename (never a torn file).
//!   - [`filesystem::shell`]: `LocalShellBackend`, a directory plus `execute`.
//!   - [`filesystem::composite`]: `CompositeBackend`, routes paths by prefix.
//!   - [`filesystem::glob`]: `GlobPattern`, the `glob` tool's patterns.
//!   - [`filesystem::gitignore`]: `IgnoreRules`, `.gitignore` files.
//!   - [`filesystem::grep`]: `GrepEngine`, the regex search, and the invalid-regex note.
//!   - [`filesystem::encoding`]: UTF-8, UTF-16 (BOM) or binary, from a file's first bytes.
//!   - [`filesystem::paging`]: `page`, the streaming line window of `read_file`.
//!   - [`filesystem::edit`]: `plan_edit`, where `edit_file` replaces (CRLF-aware).
#![deny(missing_docs)]

pub mod approvals;
pub mod compose;
pub mod deep_agent;
mod delegation;
pub mod filesystem;
pub mod mcp;
#[cfg(feature = "memory")]
pub mod memory;
pub mod skills;
pub mod spec;
pub mod subagents;
pub mod summarization;
pub mod supervisor;
pub mod todos;
pub mod tokens;
pub mod workspace;
