//! # lc-agent-server: the agent over HTTP
//!
//! An axum server that runs lc-agent's deep agent for any client: OpenAI
//! clients (`/v1/chat/completions` runs the whole agent loop here and
//! answers with the final answer), tool clients (`/v1/tools`,
//! `/v1/tools/execute`), the session API with server-sent events, and a
//! web page. Sessions live in the session lists (JSON by default, Redis to
//! share them between server processes); a session is loaded for each
//! request and saved after it, so any process can serve any session and
//! the lists' revisions turn a conflicting run into a 409.
//!
//! ```text
//!  client ─▶ router (app.rs: body limit, timeout, CORS, guard) ─▶ User (bearer token)
//!     ─▶ handlers/  one file per API: openai, sessions, runs, input, tools, usage, metrics, web
//!          ─▶ Runs (runs/): submit(user, target, Input) (reserve ▸ load ▸ input ▸ save ▸ queue)
//!               ─▶ any server's worker: invoke, checkpoint per node, RunEvents (numbered, stored)
//!               ─▶ events(run, after): the RunEvents as they come (SSE, chat completions)
//!          ─▶ SessionHub (hub.rs): lists per user, claims, a session's agent (the blueprint)
//! ```
//!
//! [`RunEvent`] is the one protocol of what a run emits: the worker writes
//! it, the stores keep it numbered ([`NumberedEvent`]), and every reader
//! (the chat completions, the session and runs APIs' SSE, the web page,
//! `lc-agent runs show --events`) gets it typed.
//!
//! # Layout
//!
//! ```text
//! lib.rs        this map and the public root (every public type is re-exported here)
//! config.rs     ServerConfig, Tokens (LC_AGENT_TOKEN), RunSettings; sessions are a ListConfig
//! error.rs      ApiError: status codes and OpenAI-shaped error bodies (one shape everywhere;
//!               internals logged with their sources, never sent); RunFailure
//! logging.rs    init_logging: the `lc-agent serve` subscriber (RUST_LOG, text or JSON lines)
//! metrics.rs    the metrics recorder: requests, runs, model and tool calls, tokens, gauges
//! usage.rs      usage and cost as the API shows them (OpenAI's usage object, priced totals)
//! caps.rs       SessionCaps: a session's own files capped per file and in total (a call
//!               over a cap is undone and told so)
//! hub.rs        SessionHub: session lists per user, claims, building a session's agent, titles
//! modes.rs      permission modes on the server: which a client may ask for (bypass only
//!               when the operator allows it), the warning a run in bypass starts with
//! runs/         the runs service: RunEvent (event.rs), records, the stores (in process, or a
//!               Redis Stream with leases), submit with an Input, the worker, the dispatcher,
//!               the event streams, MCP servers' requests for input held for the person
//!               (input.rs, desk.rs) (runs/mod.rs has its own map)
//! state.rs      AppState: the configuration, the hub and the runs, shared by every request
//! access.rs     request ids, the request span, one access-log line per request
//! auth.rs       User: the bearer token's user (401 otherwise); ?token= only for event streams
//! guard.rs      Host / Origin / content-type / size checks, security headers (CSP, frames)
//! body.rs       OptionalJson: a JSON body that may be left out (400 / 422 otherwise)
//! handlers/     the HTTP handlers, one file per API, side by side (handlers/mod.rs lists them)
//! app.rs        the router and its layers
//! connections.rs Connections: the open connections (capped), the idle ones closed to make
//!               room (oldest of the most crowded address), refusals logged at a bounded rate
//! client_addr.rs the client's address: the peer, or what a --trusted-proxy says it forwarded for
//! slots.rs      request slots per client (user or address) with a reserve, 429 + Retry-After
//!               past a bounded wait; a body must arrive whole within body_timeout (408)
//! serve.rs      check_bind, serve: connection limits, silent/header/idle timeouts, graceful
//!               shutdown
//! ```
//!
//! The modules import each other only downward, never in a cycle (read
//! from their `use crate::` lines); a floor uses only the floors below it:
//!
//! ```text
//!  7  serve.rs
//!  6  app.rs
//!  5  handlers/*            (sse.rs, refusal.rs, graph.rs: helpers of the handlers beside them)
//!  4  auth.rs  guard.rs  access.rs  body.rs      (request plumbing; auth ─▶ access, state)
//!     slots.rs              (uses config.rs, connections.rs, client_addr.rs, error.rs)
//!  3  state.rs              (AppState: config + hub + runs)
//!  2  runs/                 inside, each file only below it: pending ◀ record ◀ event ◀ desk,
//!                           store ◀ local, redis, inbox ◀ service ◀ input, steer ◀ worker ◀ dispatch, submit, stream
//!                           (mod.rs only declares and re-exports)
//!  1  hub.rs                (SessionHub; uses caps.rs)
//!     modes.rs              (uses config.rs, error.rs)
//!  0  caps.rs  config.rs  connections.rs  client_addr.rs  error.rs  logging.rs  metrics.rs  usage.rs
//!                           (no crate imports at all)
//! ```
//!
//! ```no_run
//! use std::sync::Arc;
//! use lc_agent::{ScriptedChatModel, Turn};
//! use lc_agent_server::{serve, AppState, ServerConfig};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // A scripted stand-in model: it answers every turn with "Hello!".
//! let model = Arc::new(ScriptedChatModel::new([Turn::text("Hello!")]).cycled());
//! let state = AppState::new(ServerConfig::new(model))?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! serve(listener, state, async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(()) }
//! ```
mod access;
mod app;
mod auth;
mod body;
mod caps;
mod client_addr;
mod config;
mod connections;
mod error;
mod guard;
mod handlers;
mod hub;
mod logging;
mod metrics;
mod modes;
mod runs;
mod serve;
mod slots;
mod state;
mod usage;

pub use app::router;
pub use auth::User;
pub use config::{ConfigError, RunSettings, ServerConfig, Tokens, ANONYMOUS_USER};
pub use error::{ApiError, BoxError, RunFailure};
pub use logging::{init_logging, LogFormat, LoggingError};
pub use runs::{
    open_store, Delivery, InputRequest, NodeInfo, NumberedEvent, Outcome, PendingCall,
    PendingInput, RedisRuns, Run, RunDone, RunError, RunErrorEvent, RunEvent, RunResult, RunStatus,
    RunStore, Runs, Steer,
};
pub use serve::{check_bind, serve, ServeError};
pub use state::AppState;
