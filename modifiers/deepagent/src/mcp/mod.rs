//! MCP (Model Context Protocol), both ways, with the official SDK (`rmcp`):
//! any MCP server's tools in a network ([`McpTools`]), and the file tools
//! served to any MCP client ([`FileToolServer`], `lc-agent mcp`).
//!
//! ```text
//!  mcp.json {"mcpServers": {...}} ─▶ McpConfig ─▶ McpTools (a NetworkModifier)
//!                                                   │ one ServerConnection per server
//!   chat node ◀── tools(): McpTool per server tool ─┤   stdio: spawned program
//!   tool node ──▶ McpTool::call ─▶ tools/call ──────┘   HTTP:  streamable HTTP
//!                  result text (non-text parts described) | Error: ... (server named)
//!                  elicitation/create during a call ─▶ Elicitation ─▶ with_elicitation's
//!                  channel (a person answers) | declined when there is none
//!
//!  any MCP client ── stdio | HTTP + bearer ──▶ FileToolServer ─▶ filesystem::run_tool ─▶ Backend
//!                                                 resources (file:///<path>) ─────────────▶ the same Backend
//! ```
//!
//! Layout (the types are re-exported here, the files are private):
//! `config.rs` ([`McpConfig`]: the `mcpServers` file, `${VAR}` references;
//! plain data, always built), and with the `mcp` feature: `connection.rs`
//! (`ServerConnection`, one server: connect, list, call, reconnect),
//! `tool.rs` ([`McpTool`]), `tools.rs` ([`McpTools`], the modifier),
//! `confine.rs` ([`McpSandbox`]: stdio servers in the agent's sandbox
//! profile with a scrubbed environment, unless marked `"sandbox": "full"`),
//! `content.rs` ([`describe_result`], results as text), `server.rs`
//! ([`FileToolServer`]), `resources.rs` (the workspace files as its
//! resources, subscriptions, its log messages), `oauth.rs` (OAuth for
//! remote servers: [`McpLogin`], the authorized HTTP client), `tokens.rs`
//! (the token file, `$LC_AGENT_HOME/mcp-tokens.json`), `sessions.rs`
//! ([`McpSessions`]: a server's own connections per session, so a request
//! for input reaches the session that asked), `elicitation.rs` (always
//! built: [`Elicitation`], a server asking the person for input, the form
//! checked),
//! `error.rs` ([`McpError`]).

mod config;
#[cfg(feature = "mcp")]
mod confine;
#[cfg(feature = "mcp")]
mod connection;
#[cfg(feature = "mcp")]
mod content;
mod elicitation;
#[cfg(feature = "mcp")]
mod error;
#[cfg(feature = "mcp")]
mod oauth;
#[cfg(feature = "mcp")]
mod resources;
#[cfg(feature = "mcp")]
mod server;
#[cfg(feature = "mcp")]
mod sessions;
#[cfg(feature = "mcp")]
mod tokens;
#[cfg(feature = "mcp")]
mod tool;
#[cfg(feature = "mcp")]
mod tools;

pub use config::{
    ConfigError, McpConfig, McpEndpoint, McpOAuthConfig, McpServerConfig, OAuthSettings,
};
#[cfg(feature = "mcp")]
pub use confine::McpSandbox;
#[cfg(feature = "mcp")]
pub use content::describe_result;
pub use elicitation::{Elicitation, ElicitationAnswer, ElicitationField, FieldKind};
#[cfg(feature = "mcp")]
pub use error::McpError;
#[cfg(feature = "mcp")]
pub use oauth::McpLogin;
#[cfg(feature = "mcp")]
pub use server::{check_token, FileToolServer, MCP_HTTP_PATH, TOKEN_ENV};
#[cfg(feature = "mcp")]
pub use sessions::McpSessions;
#[cfg(feature = "mcp")]
pub use tool::McpTool;
#[cfg(feature = "mcp")]
pub use tools::McpTools;
