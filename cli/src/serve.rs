//! `lc-agent serve`: the agent over HTTP (OpenAI-compatible chat
//! completions, tool endpoints, the session API, the web page).
//!
//! ```text
//! lc-agent serve [--addr 127.0.0.1:8080] [--root DIR [--shell]] [--model NAME | --script FILE.json]
//!                [--agent FILE] [--sessions DIR | --redis URL] [--cors ORIGIN]... [--body-limit BYTES]
//!                [--timeout SECS] [--mcp FILE.json]
//! ```
//!
//! The model is `OPENAI_BASE_URL` / `OPENAI_API_KEY` / `OPENAI_MODEL` (or
//! `--model`); `--script` replays a scripted model offline, over and over.
//! `LC_AGENT_TOKEN` (`user:token,...`) turns on bearer tokens, and is
//! required to bind a non-loopback address. The first line on stderr is
//! `listening on http://ADDR` (the real port when `--addr` ends in `:0`).
//! Ctrl-C or SIGTERM stops accepting, lets runs finish for a grace period
//! and saves the sessions still running. `--mcp` (and the blueprint's
//! `mcp_servers`) connects MCP servers once, at start: every session's
//! agent gets their tools, and `/v1/tools` lists them.
//!
//! Exit codes: 0 after a shutdown, 1 the server failed, 2 bad usage.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use lc_agent_modifiers::spec::AgentSpec;
use lc_agent_server::{check_bind, serve, AppState, ServerConfig, SessionStore, Tokens};

use crate::run::{mcp_tools, openai_model, script_model, usage, Failure};

/// `lc-agent serve` arguments.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// The file tools work in this directory (`<DIR>/<user>` with tokens);
    /// default: each session's own files.
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Allow `execute` in --root (each call waits for an approval).
    #[arg(long, requires = "root")]
    pub shell: bool,
    /// The model name (default `OPENAI_MODEL`).
    #[arg(long, conflicts_with = "script")]
    pub model: Option<String>,
    /// Replay this scripted model (offline), from the start once it ends.
    #[arg(long)]
    pub script: Option<PathBuf>,
    /// The blueprint of new sessions' agents (TOML, or JSON by its extension).
    #[arg(long)]
    pub agent: Option<PathBuf>,
    /// The JSON session list's directory (default `$LC_AGENT_HOME/sessions`).
    #[arg(long, conflicts_with = "redis")]
    pub sessions: Option<PathBuf>,
    /// Keep sessions in Redis (share them between server processes).
    #[arg(long)]
    pub redis: Option<String>,
    /// Allow browser pages of this origin (CORS is off otherwise).
    #[arg(long)]
    pub cors: Vec<String>,
    /// The largest request body, in bytes.
    #[arg(long, default_value_t = 2 * 1024 * 1024)]
    pub body_limit: usize,
    /// Seconds a request may take to answer (a streamed answer is not cut).
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// MCP servers whose tools every session's agent gets (an `mcpServers`
    /// JSON file).
    #[arg(long)]
    pub mcp: Option<PathBuf>,
}

fn config(args: &ServeArgs) -> Result<ServerConfig, Failure> {
    let model: Arc<dyn lc_agent::ChatModel> = match &args.script {
        Some(path) => Arc::new(script_model(path)?.cycled()),
        None => openai_model(args.model.as_deref())?,
    };
    let tokens = Tokens::from_env().map_err(|e| usage(e.to_string()))?;
    check_bind(args.addr, &tokens).map_err(|e| usage(e.to_string()))?;
    let sessions = match &args.redis {
        Some(url) => SessionStore::Redis(url.clone()),
        None => SessionStore::Json(
            args.sessions
                .clone()
                .unwrap_or_else(lc_agent::JsonNetworkList::default_root),
        ),
    };
    let mut config = ServerConfig::new(model)
        .sessions(sessions)
        .tokens(tokens)
        .body_limit(args.body_limit)
        .request_timeout(Duration::from_secs(args.timeout));
    if let Some(root) = &args.root {
        config = config.root(root.clone()).shell(args.shell);
    }
    if let Some(path) = &args.agent {
        config = config.spec(AgentSpec::from_file(path).map_err(|e| usage(e.to_string()))?);
    }
    for origin in &args.cors {
        config = config.cors_origin(origin.clone());
    }
    Ok(config)
}

/// Resolves on Ctrl-C or SIGTERM. Both handlers are installed before this
/// returns, so a signal that comes as soon as the server says it listens
/// is never lost (nor kills the process).
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{signal, SignalKind};
        (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        )
    };
    async move {
        #[cfg(unix)]
        match signals {
            (Ok(mut int), Ok(mut term)) => {
                tokio::select! {
                    _ = int.recv() => {},
                    _ = term.recv() => {},
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

async fn serve_args(args: ServeArgs) -> Result<(), Failure> {
    let mut config = config(&args)?;
    let spec = match &args.agent {
        Some(path) => Some(AgentSpec::from_file(path).map_err(|e| usage(e.to_string()))?),
        None => None,
    };
    let mcp = mcp_tools(spec.as_ref(), args.mcp.as_deref()).await?;
    if let Some(tools) = &mcp {
        config = config.modifier_shared(Arc::new(tools.clone()));
    }
    let state = AppState::new(config).map_err(|e| usage(e.to_string()))?;
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|e| (1, format!("cannot listen on {}: {e}", args.addr)))?;
    let addr = listener.local_addr().map_err(|e| (1, e.to_string()))?;
    let stop = shutdown_signal();
    eprintln!("listening on http://{addr}");
    let served = serve(listener, state, stop).await;
    if let Some(tools) = mcp {
        tools.disconnect().await;
    }
    served.map_err(|e| (1, e.to_string()))?;
    eprintln!("stopped");
    Ok(())
}

/// Runs `lc-agent serve`.
pub fn run(args: ServeArgs) -> ExitCode {
    crate::run::block_on(serve_args(args))
}
