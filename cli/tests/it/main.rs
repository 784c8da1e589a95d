//! The CLI's integration tests, one binary: the real `lc-agent` run as
//! users run it (offline: a `--script`ed model or a stand-in server on
//! loopback). One module per subject; what they share is in `common` and
//! in the crate `lc-agent-test-support`. The terminal (tmux) and trace
//! (Phoenix) tests are binaries of their own (`tests/terminal.rs`,
//! `tests/otel.rs`; see Cargo.toml).
#![allow(clippy::unwrap_used, unreachable_pub)]

mod common;
mod model_server;

mod acp;
mod attach;
mod blueprint;
mod chat_commands;
mod command_rules;
mod console;
mod exec;
mod exec_schema;
mod file_limits;
mod file_memory;
mod hooks;
mod lc_agent_import;
mod mcp;
mod mcp_hostile;
mod mcp_oauth;
mod mcp_sandbox;
mod modes;
mod permissions;
mod project_memory;
mod protected_paths;
mod provider;
mod record_replay;
mod resume;
mod run;
mod runs;
mod runs_acceptance;
mod sandbox;
mod sandbox_deny;
mod sandbox_network;
mod sandbox_policy;
mod serve;
mod serve_logs;
mod session_bounds;
mod sessions_fork;
mod sessions_prune;
mod sessions_rewind;
mod small_window;
mod steer;
mod subagent_approvals;
mod tool;
mod trust;
