//! The server's integration tests, one binary: the server in the test
//! process on a loopback port (`lc_agent_test_support::server`), driven
//! over HTTP. One module per subject. The browser tests and the metrics
//! test are binaries of their own (`tests/browser/`, `tests/metrics.rs`;
//! see Cargo.toml).
#![allow(clippy::unwrap_used, unreachable_pub)]

mod blueprint_models;
mod branches;
mod conflicts;
mod disk_full;
mod doors;
mod endpoints;
mod events;
mod fair;
mod hardening;
mod hooks;
mod hostile_doors;
mod images;
mod mcp_input;
mod modes;
mod openai_history;
mod openai_retries;
mod openai_sdk_history;
mod openai_tool_history;
mod openai_truth;
mod ownership;
mod permissions;
mod redis_consumers;
mod redis_outage;
mod redis_takeover;
mod runs;
mod runs_redis;
mod sandbox;
mod session_api;
mod shutdown;
mod small_window;
mod storage;
mod structured;
mod subagent_approvals;
mod usage;
