//! The HTTP handlers, one file per API, side by side: each reads the
//! request, calls the services (the runs, the session hub) and writes the
//! answer. None imports another, except the helpers of this folder
//! (`sse.rs`, `refusal.rs`, `graph.rs`, `path_rules.rs`, `tool_hooks.rs`,
//! `parts.rs`, `sampling.rs`, `history.rs`).
//!
//! ```text
//!  openai.rs    /v1/models[/{id}], /v1/chat/completions (streamed or not; real usage)
//!  sampling.rs  a completion's temperature, max_tokens, stop, seed, ...: checked, passed through
//!  history.rs   a completion's messages; a stateless history as a new session's first nodes
//!  sessions.rs  /api/sessions: list (paged, searched), create, show, rename, delete, node,
//!               messages, approvals, continue a cut-off answer, stop a run
//!  branches.rs  /api/sessions/{id}/fork, /rewind, /diff/{other}: time travel
//!  runs.rs      /api/sessions/{id}/runs, /api/runs/{id}[/cancel|/events]
//!  input.rs     /api/sessions/{id}/input/{input}: answers an MCP server's request for input
//!  tools.rs     /v1/tools, /v1/tools/execute
//!  usage.rs     /api/usage (a user, a time range)
//!  metrics.rs   /metrics (the recorder's Prometheus text)
//!  web.rs       /, /assets/*, /favicon.ico (the embedded page)
//!  sse.rs       a run's events as SSE;  refusal.rs  the 409 / 429 of a refused run
//!  path_rules.rs  /v1/tools/execute refuses what an `ask` path rule covers (nobody approves)
//!  tool_hooks.rs  /v1/tools/execute runs the server's PreToolUse / PostToolUse hooks
//!  graph.rs     a session's graph for the page (node states, sub-networks) and one node in full
//!  parts.rs     the content parts (text, images) of a message sent to the session and runs
//!               APIs: read and checked (400 naming `parts[j]`)
//! ```

pub(crate) mod branches;
mod graph;
mod history;
pub(crate) mod input;
pub(crate) mod metrics;
pub(crate) mod openai;
mod parts;
mod path_rules;
mod refusal;
pub(crate) mod runs;
mod sampling;
pub(crate) mod sessions;
mod sse;
mod tool_hooks;
pub(crate) mod tools;
pub(crate) mod usage;
pub(crate) mod web;
