//! The core's integration tests, one module per concern, in one test
//! binary (one link of the dependency tree instead of one per file).
//! Tests that need an external program carry `#[needs(...)]`
//! (`lc-agent-test-support`): where it is missing they are listed as
//! ignored, with the reason. Two groups live in binaries of their own:
//! `tests/environment` (changes the process environment) and
//! `tests/real_model` (a real model server on CPU).
//!
//! # Layout
//!
//! - `anthropic` — `AnthropicChatModel` against a mock Messages API server.
//! - `checkpoint_input_saved` — the checkpoint saves a run's input first.
//! - `compat` — sessions written by every earlier version of the format load.
//! - `conformance` — the `NetworkList` conformance suite (not tests by
//!   itself: `list_json` and `list_redis` run it).
//! - `fork` — time travel: forks, branches, edits and rewinds.
//! - `graph` — building graphs: the scope guard, `>>`, removal, queries.
//! - `held_inside` — a sub-network holding held work holds the outer run.
//! - `hooks_and_specs` — the start and end hooks a run calls; shared tool specs.
//! - `incremental` — incremental saves: journal records, torn tails, old files.
//! - `invoke` — invocation: passes, modifiers, failures, the step limit.
//! - `lc_agent_import` — networks saved by NVIDIA's LC Agent, imported.
//! - `list_cache_retention` — `Lists`' session cache and retention.
//! - `list_json` — `JsonNetworkList`, across processes and kill -9.
//! - `list_redis` — `RedisNetworkList` on plain, TLS and Cluster servers
//!   (`list_redis_connections`: restarts, outages, URLs, Cluster, TLS).
//! - `network_input` — a sub-network's input from its parents.
//! - `openai` — `OpenAiChatModel` against a mock server replaying quirks.
//! - `patient_save` — `save_patiently`: a save that landed before an outage.
//! - `persist` — the saved format and its round trip.
//! - `properties` — property tests of save/load.
//! - `routing` — model routing by step.
//! - `steering` — messages sent during a run join it (inject, queue, interrupt).
//! - `telemetry` — the GenAI spans (feature `otel`).
//! - `tool_executor` — running tool calls outside a network.
//! - `typed_answers` — output schemas: response_format, forced tools, retries.
//! - `usage` — token usage summed up the tree, and prices.

// Test code: a failed step is a failed test.
#![allow(clippy::unwrap_used, unreachable_pub)]

mod anthropic;
mod checkpoint_input_saved;
mod compat;
mod conformance;
mod fork;
mod graph;
mod held_inside;
mod hooks_and_specs;
mod images;
mod incremental;
mod invoke;
mod invoke_tools;
mod lc_agent_import;
mod list_cache_retention;
mod list_json;
mod list_redis;
mod list_redis_connections;
mod network_input;
mod openai;
mod openai_failures;
mod openai_quirks;
mod openai_streaming;
mod patient_save;
mod persist;
mod properties;
mod routing;
mod steering;
#[cfg(feature = "otel")]
mod telemetry;
mod tool_executor;
mod transcript;
mod typed_answers;
mod usage;
