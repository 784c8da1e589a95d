//! [`McpError`]: what can go wrong reaching an MCP server or serving one.
//! A tool call never returns it: calls turn every failure into an
//! `Error: ...` result the model reads.

use super::config::ConfigError;

/// A boxed cause from the MCP SDK.
pub(super) type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Errors of connecting to, listing or serving MCP servers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The configuration is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The server's program could not be started.
    #[error("MCP server `{server}`: cannot start `{command}`")]
    Spawn {
        /// The server.
        server: String,
        /// The program.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The server's program cannot be confined in the agent's sandbox.
    #[error(
        "MCP server `{server}`: cannot start `{command}` in the sandbox: {reason}; or mark \
         the server `\"sandbox\": \"full\"` in its configuration to run it unconfined"
    )]
    Sandbox {
        /// The server.
        server: String,
        /// The program.
        command: String,
        /// Why.
        reason: String,
    },
    /// The MCP handshake failed (the program exited, the URL did not answer...).
    #[error("MCP server `{server}`: cannot connect{stderr}")]
    Connect {
        /// The server.
        server: String,
        /// The last lines the program wrote to stderr, if any (`: ...`).
        stderr: String,
        /// Why.
        #[source]
        source: Cause,
    },
    /// `tools/list` failed.
    #[error("MCP server `{server}`: cannot list its tools")]
    ListTools {
        /// The server.
        server: String,
        /// Why.
        #[source]
        source: Cause,
    },
    /// The server did not answer in time.
    #[error("MCP server `{server}`: no answer to {what} within {seconds} s")]
    Timeout {
        /// The server.
        server: String,
        /// What was asked.
        what: String,
        /// The limit.
        seconds: f64,
    },
    /// Serving failed (stdio closed badly, the address could not be bound...).
    #[error("MCP server: {what}")]
    Serve {
        /// What failed.
        what: String,
        /// Why.
        #[source]
        source: Cause,
    },
    /// The server wants an OAuth token and none is stored (or the stored
    /// one was refused and could not be refreshed).
    #[error("MCP server `{server}` needs authorization: run `lc-agent mcp login {server}`")]
    LoginNeeded {
        /// The server.
        server: String,
    },
    /// The server wants a token with more scopes than the stored one has.
    #[error("MCP server `{server}` needs more access ({scope}): run `lc-agent mcp login {server}` again")]
    InsufficientScope {
        /// The server.
        server: String,
        /// The scope it asked for (or "a wider scope").
        scope: String,
    },
    /// The OAuth flow failed (discovery, registration, the code exchange...).
    #[error("MCP server `{server}`: authorization failed")]
    Auth {
        /// The server.
        server: String,
        /// Why.
        #[source]
        source: Cause,
    },
    /// A non-loopback address without a bearer token.
    #[error("refusing to serve MCP on {addr} without a bearer token: set LC_AGENT_TOKEN (required off loopback)")]
    TokenRequired {
        /// The address asked for.
        addr: std::net::SocketAddr,
    },
}
