//! `lc-agent mcp`: the file tools as an MCP server, for any MCP
//! client.
//!
//! ```text
//! lc-agent mcp login NAME (--mcp FILE | --agent FILE)              OAuth login to a remote server (mcp_login.rs)
//! lc-agent mcp --root DIR [--shell [--sandbox MODE]]               stdio (the client spawns this)
//! lc-agent mcp --root DIR [--shell [--sandbox MODE]] --http ADDR   streamable HTTP on http://ADDR/mcp
//!              [--allow|--deny|--ask OPS:GLOBS]...                 path rules (an `ask` refuses)
//!              [--settings FILE | --no-hooks]                      PreToolUse / PostToolUse hooks
//! ```
//!
//! The tools are confined to DIR exactly as `FilesystemBackend` confines
//! them and print the spec's text; `--shell` adds `execute`, which runs
//! commands in DIR without asking, in the sandbox `--sandbox` names
//! (default `workspace-write`; see `Workspace`). Over HTTP, `LC_AGENT_TOKEN` (when set)
//! is the bearer token every request must carry; it is required for an
//! address off loopback. Once listening, the server prints
//! `serving MCP on http://HOST:PORT/mcp` on stderr (so `--http
//! 127.0.0.1:0` picks a free port and says which). Exit codes: 0 the client
//! left (stdio) or Ctrl-C (HTTP); 1 serving failed; 2 bad usage.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use lc_agent_deepagent::mcp::FileToolServer;
use lc_agent_deepagent::mcp::{check_token, MCP_HTTP_PATH, TOKEN_ENV};
use lc_agent_deepagent::Workspace;
use lc_agent_filesystem::SandboxMode;

use crate::error::{CliError, CliResult};
use lc_agent::error_chain;

/// `lc-agent mcp` arguments.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct McpArgs {
    /// `login`: authorize lc-agent with a remote server (without one,
    /// serve the file tools).
    #[command(subcommand)]
    pub(crate) command: Option<McpCommand>,
    /// The directory the tools work in (confined).
    #[arg(long, value_name = "DIR", required = true)]
    pub(crate) root: Option<PathBuf>,
    /// Serve `execute` too (commands run in --root without asking).
    #[arg(long)]
    pub(crate) shell: bool,
    /// With --shell: the sandbox commands run in — `workspace-write`
    /// (default), `read-only`, or `full` (no sandbox, on purpose).
    #[arg(long, value_name = "MODE", requires = "shell")]
    pub(crate) sandbox: Option<SandboxMode>,
    /// Serve streamable HTTP on this address (`127.0.0.1:8090`,
    /// `localhost:8090`) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<String>,
    /// Path rules: --allow, --deny, --ask (an `ask` refuses here: nobody
    /// can approve).
    #[command(flatten)]
    pub(crate) permissions: crate::permissions::PermissionArgs,
    /// The `PreToolUse` / `PostToolUse` hooks every call meets (the
    /// user's, the root's `.lc-agent/settings.json`, `--settings FILE`).
    #[command(flatten)]
    pub(crate) hooks: crate::hooks::HookArgs,
}

/// The subcommands of `lc-agent mcp`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum McpCommand {
    /// Log in to an OAuth-protected MCP server named in an `mcpServers`
    /// file or a blueprint (browser flow; the tokens are stored for
    /// `run`, `chat`, `exec` and `serve`).
    Login(crate::mcp_login::LoginArgs),
}

/// The address of `--http`: an IP and port, or a host name and port.
async fn address(text: &str) -> CliResult<SocketAddr> {
    let usage = || {
        CliError::usage(format!(
            "--http {text}: not an address (give HOST:PORT, such as 127.0.0.1:8090)"
        ))
    };
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    tokio::net::lookup_host(text)
        .await
        .map_err(|_| usage())?
        .next()
        .ok_or_else(usage)
}

/// Runs `lc-agent mcp`.
pub(crate) async fn run(args: McpArgs) -> CliResult {
    // Its stdin is not a person's: an untrusted project is refused, not asked about.
    crate::trust::no_questions();
    if let Some(McpCommand::Login(login)) = args.command {
        return crate::mcp_login::run(login).await;
    }
    let Some(root) = args.root.clone() else {
        return Err(CliError::usage("--root: give a directory"));
    };
    // Nobody to ask here: with --shell the client's commands run as asked.
    let mode = args.sandbox.unwrap_or_default();
    if args.shell && mode == SandboxMode::Full {
        crate::args::warn_unconfined();
    }
    let workspace = Workspace::directory(&root)
        .shell(args.shell)
        .sandbox(mode)
        .execute_approval(false);
    let backend = workspace
        .open_directory()
        .map_err(|e| CliError::usage(e.to_string()))?
        .ok_or_else(|| CliError::usage("--root: give a directory"))?;
    let backend = args.permissions.rules()?.guard(backend, false);
    let mut server = FileToolServer::shared(backend.resolve(&lc_agent::RunnableNetwork::new()));
    if let Some(hooks) = args.hooks.modifier(Some(&root))? {
        server = server.with_hooks(hooks);
    }
    let failed = |e: lc_agent_deepagent::mcp::McpError| CliError::failed(error_chain(&e));
    match &args.http {
        None => server.serve_stdio().await.map_err(failed),
        Some(text) => {
            let addr = address(text).await?;
            let token = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty());
            check_token(addr, token.as_deref()).map_err(|e| CliError::usage(e.to_string()))?;
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| CliError::failed(format!("cannot listen on {addr}: {e}")))?;
            let bound = listener
                .local_addr()
                .map_err(|e| CliError::failed(format!("cannot listen on {addr}: {e}")))?;
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
