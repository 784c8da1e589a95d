//! `lc-agent mcp`: the seven file tools as an MCP server, for any MCP
//! client.
//!
//! ```text
//! lc-agent mcp --root DIR [--shell]                 stdio (the client spawns this)
//! lc-agent mcp --root DIR [--shell] --http ADDR     streamable HTTP on http://ADDR/mcp
//! ```
//!
//! The tools are confined to DIR exactly as `FilesystemBackend` confines
//! them and print the spec's text; `--shell` adds `execute`, which runs
//! commands in DIR without asking. Over HTTP, `LC_AGENT_TOKEN` (when set)
//! is the bearer token every request must carry; it is required for an
//! address off loopback. Once listening, the server prints
//! `serving MCP on http://HOST:PORT/mcp` on stderr (so `--http
//! 127.0.0.1:0` picks a free port and says which). Exit codes: 0 the client
//! left (stdio) or Ctrl-C (HTTP); 1 serving failed; 2 bad usage.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lc_agent_modifiers::filesystem::{FilesystemBackend, LocalShellBackend};
use lc_agent_modifiers::mcp::server::{check_token, MCP_HTTP_PATH, TOKEN_ENV};
use lc_agent_modifiers::mcp::FileToolServer;

use crate::run::{error_chain as chain, usage, Failure};

/// `lc-agent mcp` arguments.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// The directory the tools work in (confined).
    #[arg(long)]
    pub root: PathBuf,
    /// Serve `execute` too (commands run in --root without asking).
    #[arg(long)]
    pub shell: bool,
    /// Serve streamable HTTP on this address instead of stdio.
    #[arg(long)]
    pub http: Option<SocketAddr>,
}

async fn serve(args: McpArgs) -> Result<(), Failure> {
    let io = |e: std::io::Error| usage(format!("cannot open {}: {e}", args.root.display()));
    let server = if args.shell {
        FileToolServer::new(LocalShellBackend::new(&args.root).map_err(io)?)
    } else {
        FileToolServer::new(FilesystemBackend::new(&args.root).map_err(io)?)
    };
    let failed = |e: lc_agent_modifiers::mcp::McpError| (1, chain(&e));
    match args.http {
        None => server.serve_stdio().await.map_err(failed),
        Some(addr) => {
            let token = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty());
            check_token(addr, token.as_deref()).map_err(|e| usage(e.to_string()))?;
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| (1, format!("cannot listen on {addr}: {e}")))?;
            let bound = listener
                .local_addr()
                .map_err(|e| (1, format!("cannot listen on {addr}: {e}")))?;
            eprintln!("serving MCP on http://{bound}{MCP_HTTP_PATH}");
            let shutdown = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            server
                .serve_http(listener, token, shutdown)
                .await
                .map_err(failed)
        }
    }
}

/// Runs `lc-agent mcp`.
pub fn run(args: McpArgs) -> ExitCode {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, message)) => {
            eprintln!("error: {message}");
            ExitCode::from(code)
        }
    }
}
