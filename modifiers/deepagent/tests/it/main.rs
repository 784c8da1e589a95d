//! The agent layer's integration tests, one module per concern, in one
//! test binary (built with the `mcp` and `memory` features: the crate's
//! dev-dependency on itself turns them on). Tests that need an external
//! program carry `#[needs(...)]` (`lc-agent-test-support`): where it is
//! missing they are listed as ignored, with the reason. The real-model
//! tests are a binary of their own (`tests/real_model.rs`); the MCP fake
//! server is `tests/mcp/fake_server.py`.
//!
//! # Layout
//!
//! - `common` — helpers shared by the modules (tool results of a network).
//! - `approvals` — calls held for a person, decided, edited, rejected.
//! - `approvals_across_processes` — asked in one process, decided in another.
//! - `checkpoint_resume` — checkpoints and resume after `kill -9`.
//! - `checkpoint_subagent` — checkpoints reach into sub-agents.
//! - `deep_agent` — the `DeepAgent` preset and its re-attachment.
//! - `deep_agent_e2e` — one scripted end-to-end run of the preset.
//! - `mcp_client` — `McpTools` against real MCP servers.
//! - `memory_agent` — `MemoryModifier` across sessions of a user.
//! - `memory_meaning` — memory found by meaning: embeddings stored, hybrid search, every backend.
//! - `memory_store` — `MemoryStore` on every backend.
//! - `modes` — permission modes: plan, accept-edits, bypass.
//! - `permissions` — path rules on agents: deny, ask held naming the rule, sub-agents, blueprint.
//! - `project_memory` — `AGENTS.md` files in the prompt: order, budget, changes, blueprint.
//! - `resilience` — `[resilience]`: model fallback, tool retry, call limits.
//! - `fetch_url` — `fetch_url` against a loopback server: pages, redirects, caps.
//! - `skills` — skills discovery and the prompt section.
//! - `spec` — `AgentSpec`: build, store, rebuild.
//! - `subagent_safeguards` — a sub-agent under its parent's safeguards.
//! - `subagent_specs` — a sub-agent's own model, tools allow-list and approvals.
//! - `subagents` — sub-agent tasks and their file changes.
//! - `summarization` — summaries by tokens, turns and the window.
//! - `supervisor` — a supervisor's routes.
//! - `todos` — the todo list.
//! - `tool_args` — one wording for argument errors of every built-in tool.

// Test code: a failed step is a failed test.
#![allow(clippy::unwrap_used, unreachable_pub)]

mod approvals;
mod approvals_across_processes;
mod checkpoint_resume;
mod checkpoint_subagent;
mod common;
mod deep_agent;
mod deep_agent_e2e;
mod fetch_url;
mod hooks;
mod mcp_client;
mod memory_agent;
mod memory_meaning;
mod memory_store;
mod modes;
mod permissions;
mod project_memory;
mod resilience;
mod skills;
mod spec;
mod subagent_safeguards;
mod subagent_specs;
mod subagents;
mod summarization;
mod supervisor;
mod todos;
mod tool_args;
