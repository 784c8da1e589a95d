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
//!
//!  any MCP client ── stdio | HTTP + bearer ──▶ FileToolServer ─▶ filesystem::run_tool ─▶ Backend
//! ```
//!
//! Layout: [`config`] (the `mcpServers` file, `${VAR}` references; plain
//! data, always built), and with the `mcp` feature: [`connection`] (one
//! server: connect, list, call, reconnect), [`tool`] ([`McpTool`]),
//! [`tools`] ([`McpTools`], the modifier), [`content`] (results as text),
//! [`server`] ([`FileToolServer`]), [`error`] ([`McpError`]).

pub mod config;
#[cfg(feature = "mcp")]
pub mod connection;
#[cfg(feature = "mcp")]
pub mod content;
#[cfg(feature = "mcp")]
pub mod error;
#[cfg(feature = "mcp")]
pub mod server;
#[cfg(feature = "mcp")]
pub mod tool;
#[cfg(feature = "mcp")]
pub mod tools;

pub use config::{ConfigError, McpConfig, McpEndpoint, McpServerConfig};
#[cfg(feature = "mcp")]
pub use connection::{RemoteTool, ServerConnection};
#[cfg(feature = "mcp")]
pub use error::McpError;
#[cfg(feature = "mcp")]
pub use server::FileToolServer;
#[cfg(feature = "mcp")]
pub use tool::McpTool;
#[cfg(feature = "mcp")]
pub use tools::McpTools;
