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
//!  client ─▶ router (body limit, timeout, CORS) ─▶ User (bearer token)
//!     ├─ openai.rs     /v1/models, /v1/chat/completions ─┐
//!     ├─ sessions.rs   /api/sessions/...  (SSE events)  ─┼─▶ runs/: submit (reserve ▸ load ▸ input ▸
//!     ├─ runs/http.rs  /api/runs/..., /api/sessions/{id}/runs ┘  save ▸ queue) ─▶ any server's worker:
//!     ├─ tools_api.rs  /v1/tools[/execute] (ToolExecutor)        invoke, checkpoint per node, events
//!     └─ web.rs        /, /assets/*  (embedded page)             (state.rs: lists, claims, agents)
//! ```
//!
//! # Layout
//!
//! ```text
//! lib.rs        this map
//! config.rs     ServerConfig, Tokens (LC_AGENT_TOKEN); sessions are a ListConfig, files a Workspace
//! state.rs      AppState: session lists per user, run claims, building a session's agent
//! auth.rs       User: the bearer token's user (401 otherwise); ?token= only for event streams
//! error.rs      ApiError: status codes and OpenAI-shaped error bodies (one shape everywhere;
//!               internals logged, never sent)
//! guard.rs      Host / Origin / content-type / size checks, security headers (CSP, frames)
//! access.rs     request ids, the request span, one access-log line per request
//! logging.rs    init_logging: the `lc-agent serve` subscriber (RUST_LOG, text or JSON lines)
//! body.rs       OptionalJson: a JSON body that may be left out (400 / 422 otherwise)
//! runs/         durable runs: records, numbered events, the queue (in process, or a Redis
//!               Stream with leases), the dispatcher and worker, the run endpoints (runs/mod.rs)
//! events.rs     a run's NetworkEvents as SSE JSON
//! graph.rs      a session's graph for the page (node states, sub-networks) and one node in full
//! openai.rs     /v1/models[/{id}], /v1/chat/completions (streamed or not; real usage)
//! usage.rs      usage and cost as the API shows them; GET /api/usage (a user, a time range)
//! metrics.rs    GET /metrics (Prometheus): requests, runs, model and tool calls, tokens, gauges
//! tools_api.rs  /v1/tools, /v1/tools/execute
//! sessions.rs   /api/sessions: list (paged, searched), create, show, rename, delete, node,
//!               messages, approvals, continue a cut-off answer, stop a run
//! web.rs        the embedded web page (assets/: index.html, app.js, style.css, vendor/)
//! app.rs        the router and its layers
//! serve.rs      check_bind, serve: connection limit, header/idle timeouts, graceful shutdown
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
#![deny(missing_docs)]

mod access;
mod app;
mod auth;
mod body;
pub mod config;
pub mod error;
pub mod guard;
mod handlers;
mod hub;
pub mod logging;
mod metrics;
pub mod runs;
pub mod serve;
mod state;
mod usage;

pub use app::router;
pub use auth::User;
pub use config::{ConfigError, RunSettings, ServerConfig, Tokens, ANONYMOUS_USER};
pub use error::ApiError;
pub use runs::{Outcome, RunEvent};
pub use serve::{check_bind, serve, ServeError};
pub use state::AppState;
