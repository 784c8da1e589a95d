//! `lc-agent serve`: the agent over HTTP (OpenAI-compatible chat
//! completions, tool endpoints, the session API, the web page).
//!
//! ```text
//! lc-agent serve [--addr 127.0.0.1:8080] [--root DIR [--shell]] [--model NAME | --script FILE.json]
//!                [--agent FILE] [--sessions DIR | --redis URL] [--cors ORIGIN]... [--body-limit BYTES]
//!                [--timeout SECS] [--mcp FILE.json] [--record FILE.jsonl | --replay FILE.jsonl]
//!                [--allow-host HOST]... [--max-connections N] [--header-timeout SECS]
//!                [--max-requests N] [--max-client-requests N] [--body-timeout SECS]
//!                [--trusted-proxy CIDR]...
//!                [--session-ttl 30d] [--keep-snapshots N] [--session-cache N] [--log-format text|json]
//!                [--max-runs N] [--max-user-runs N] [--run-limit SECS] [--run-lease SECS]
//!                [--run-retention SECS] [--grace SECS] [--mode MODE] [--allow-bypass]
//!                [--skills DIR] [--memory] [--line-tools] [--fetch-url HOST]...
//! ```
//!
//! `--skills`, `--memory`, `--line-tools` and `--fetch-url` are `run`'s:
//! they join the blueprint of new sessions (over `--agent`'s).
//!
//! `--mode` is the permission mode of new sessions; a client may change a
//! session's (`PATCH /api/sessions/{id} {"mode"}`, the page's switcher),
//! except to `bypass`, which needs `--allow-bypass` (or `--mode bypass`).
//!
//! Every message, decision and completion is a run (queued, taken by any
//! server on the same sessions store, checkpointed after every node; see
//! `lc_agent_server::Runs`): `--max-runs` is how many this server runs at
//! once, `--max-user-runs` how many one user may have queued or running,
//! `--run-lease` how soon another server takes over a run whose server
//! died (Redis), `--grace` how long a shutdown waits before handing its
//! runs back.
//!
//! The model is `OPENAI_BASE_URL` / `OPENAI_API_KEY` / `OPENAI_MODEL` (or
//! `--model`), or with `--provider anthropic` (or only `ANTHROPIC_API_KEY`
//! set, or the blueprint's `provider`) `ANTHROPIC_*`; `--script` replays a
//! scripted model offline, over and over.
//! `LC_AGENT_TOKEN` (`user:token,...`) turns on bearer tokens, and is
//! required to bind a non-loopback address. The first line on stderr is
//! `listening on http://ADDR` (the real port when `--addr` ends in `:0`);
//! when the model's context window is small (under
//! `lc_agent_deepagent::LEAN_BELOW` tokens, as `run` and `chat` learn it)
//! the next says the agents run lean.
//! Ctrl-C or SIGTERM stops accepting, lets runs finish for a grace period
//! and saves the sessions still running. `--mcp` (and the blueprint's
//! `mcp_servers`) connects MCP servers once, at start, which names their
//! tools (`/v1/tools` lists them); a session's run then gets connections
//! of its own (closed after 10 idle minutes), so a server's request for
//! input (`elicitation/create`) reaches that session's person: an
//! `input_requested` event, answered on the page or with
//! `POST /api/sessions/{id}/input/{input}`. With tokens,
//! `--root DIR` gives each user `DIR/<user>`; the server's workspace wins
//! over one stored in a session's blueprint.
//!
//! Logs go to stderr (after the `listening on` line): one access line per
//! request with its request id, method, route, status, duration, user and
//! session; failures with their causes. `RUST_LOG` filters them,
//! `--log-format json` writes JSON lines. Without tokens the server
//! answers only its own loopback address (`--allow-host` adds names).
//! `--session-ttl 30d` (the old spelling `--retention` still works)
//! removes sessions not saved for 30 days (`s`, `m`, `h`, `d`);
//! `--keep-snapshots N` keeps each session's rewind snapshots of its last
//! N turns only.
//!
//! Exit codes: 0 after a shutdown, 1 the server failed, 2 bad usage.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use lc_agent_deepagent::mcp::{McpConfig, McpSessions};
use lc_agent_deepagent::AgentSpec;
use lc_agent_server::{check_bind, serve, AppState, RunSettings, ServerConfig, Tokens};
use lc_agent_server::{init_logging, LogFormat, LoggingError};

use crate::agent::connect;
use crate::args::{ModelArgs, StoreArgs, WorkspaceArgs};
use crate::error::{CliError, CliResult};
use lc_agent::error_chain;

/// `lc-agent serve` arguments.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(crate) addr: SocketAddr,
    /// Where the file tools work (`<DIR>/<user>` with tokens).
    #[command(flatten)]
    pub(crate) workspace: WorkspaceArgs,
    /// The chat model (a script replays from the start once it ends).
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// The blueprint of new sessions' agents (TOML, or JSON by its extension).
    #[arg(long, value_name = "FILE")]
    pub(crate) agent: Option<PathBuf>,
    /// Skills: folders with a SKILL.md in this directory (mounted at /skills).
    #[arg(long, value_name = "DIR")]
    pub(crate) skills: Option<PathBuf>,
    /// Long-term memory across each user's sessions.
    #[arg(long)]
    pub(crate) memory: bool,
    /// Also offer the line tools (insert_lines, replace_lines, delete_lines;
    /// they cost prompt tokens).
    #[arg(long)]
    pub(crate) line_tools: bool,
    /// Gives the agents the `fetch_url` tool for this host (repeatable;
    /// `*.domain` for its subdomains, `*` for any public host).
    #[arg(long = "fetch-url", value_name = "HOST")]
    pub(crate) fetch_url: Vec<String>,
    /// The permission mode of new sessions: `plan`, `default`,
    /// `accept-edits` or `bypass` (a client may change a session's with
    /// `PATCH /api/sessions/{id} {"mode"}` or the page).
    #[arg(long, value_name = "MODE")]
    pub(crate) mode: Option<lc_agent_deepagent::PermissionMode>,
    /// Let clients put a session in `bypass` mode (refused with 403
    /// otherwise; `--mode bypass` allows it too).
    #[arg(long)]
    pub(crate) allow_bypass: bool,
    /// Where sessions live (Redis shares them between server processes).
    #[command(flatten)]
    pub(crate) store: StoreArgs,
    /// Allow browser pages of this origin (CORS is off otherwise).
    #[arg(long)]
    pub(crate) cors: Vec<String>,
    /// The largest request body, in bytes.
    #[arg(long, default_value_t = 2 * 1024 * 1024)]
    pub(crate) body_limit: usize,
    /// Seconds a request may take to answer (a streamed answer is not cut).
    #[arg(long, default_value_t = 300)]
    pub(crate) timeout: u64,
    /// MCP servers whose tools every session's agent gets (an `mcpServers`
    /// JSON file).
    #[arg(long, value_name = "FILE.json")]
    pub(crate) mcp: Option<PathBuf>,
    /// Also answer requests whose Host is this name (`name` or
    /// `name:port`); without tokens only the server's loopback address is
    /// answered otherwise.
    #[arg(long, value_name = "HOST")]
    pub(crate) allow_host: Vec<String>,
    /// Connections open at once: a new one takes the place of the oldest
    /// idle one of the address with the most idle ones; when every
    /// connection is busy with a request, 429.
    #[arg(long, default_value_t = 4096)]
    pub(crate) max_connections: usize,
    /// Requests served at once, in all (the last 32 free slots go to
    /// clients holding none).
    #[arg(long, value_name = "N", default_value_t = 512)]
    pub(crate) max_requests: usize,
    /// Requests one client — a user (its token), else an address — may
    /// have served at once; more wait up to 10 s for a slot, then 429 with
    /// Retry-After.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub(crate) max_client_requests: usize,
    /// Seconds a request's whole body may take to arrive (then 408).
    #[arg(long, value_name = "SECS", default_value_t = 15)]
    pub(crate) body_timeout: u64,
    /// Trust the proxies of this network (e.g. 10.0.0.0/8, or one address):
    /// their `Forwarded` / `X-Forwarded-For` name the client, so users
    /// behind one proxy get request slots of their own.
    #[arg(long, value_name = "CIDR", value_parser = parse_cidr)]
    pub(crate) trusted_proxy: Vec<ipnet::IpNet>,
    /// The most bytes one file of a session's own files may hold (a call
    /// that would write more is undone and told so).
    #[arg(long, value_name = "BYTES", default_value_t = 8 << 20)]
    pub(crate) max_file_bytes: u64,
    /// The file tools' size limits for every session (--max-read-bytes,
    /// --max-write-bytes), whatever its blueprint says.
    #[command(flatten)]
    pub(crate) file_limits: crate::args::FileLimitArgs,
    /// The most bytes a session's own files may hold in all.
    #[arg(long, value_name = "BYTES", default_value_t = 32 << 20)]
    pub(crate) max_session_files_bytes: u64,
    /// Seconds a new connection may stay silent (send nothing) before it
    /// is closed.
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    pub(crate) silent_timeout: u64,
    /// Seconds a client may take to send its request headers (and a
    /// kept-alive connection may idle).
    #[arg(long, default_value_t = 10)]
    pub(crate) header_timeout: u64,
    /// Parsed sessions kept in memory (0: none).
    #[arg(long, default_value_t = 64)]
    pub(crate) session_cache: usize,
    /// The form of the log lines on stderr (RUST_LOG filters them).
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub(crate) log_format: String,
    /// Runs this server executes at once (more wait in the queue).
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_runs: u64,
    /// Queued and running runs one user may have (more get 429 with
    /// Retry-After).
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_user_runs: u64,
    /// Seconds a run may take once a server took it (0: no limit).
    #[arg(long, value_name = "SECS", default_value_t = 3600)]
    pub(crate) run_limit: u64,
    /// Seconds after which a run whose server stopped renewing its lease
    /// (it died) is taken over by another server on the same Redis.
    #[arg(long, value_name = "SECS", default_value_t = 15.0)]
    pub(crate) run_lease: f64,
    /// Seconds finished runs and their events are kept.
    #[arg(long, value_name = "SECS", default_value_t = 3600)]
    pub(crate) run_retention: u64,
    /// Seconds a run waits out a session or run store it cannot reach (a
    /// Redis restart) before it fails: its saves and events are tried
    /// again meanwhile.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub(crate) store_patience: f64,
    /// Seconds a shutdown waits for runs to finish before handing them
    /// back to the queue.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub(crate) grace: f64,
    /// The hooks every session's agent runs: the server's own settings
    /// files and `--settings FILE`, never a client's.
    #[command(flatten)]
    pub(crate) hooks: crate::hooks::HookArgs,
}

/// The blueprint of new sessions: `--agent`'s with `--skills`,
/// `--memory`, `--line-tools` and `--fetch-url` on top (as `run` folds
/// them); `None` when neither says anything.
fn with_flags(args: &ServeArgs, spec: Option<AgentSpec>) -> CliResult<Option<AgentSpec>> {
    let skills_dir = match &args.skills {
        Some(dir) => Some(
            std::fs::canonicalize(dir)
                .ok()
                .filter(|d| d.is_dir())
                .ok_or_else(|| {
                    CliError::usage(format!("--skills {}: not a directory", dir.display()))
                })?,
        ),
        None => None,
    };
    if skills_dir.is_none() && !args.memory && !args.line_tools && args.fetch_url.is_empty() {
        return Ok(spec);
    }
    let overrides = lc_agent_deepagent::Overrides {
        skills_dir,
        memory: args.memory,
        line_tools: args.line_tools,
        fetch_url: args.fetch_url.clone(),
        ..lc_agent_deepagent::Overrides::default()
    };
    let resolved =
        lc_agent_deepagent::Blueprint::resolve(None, Some(&spec.unwrap_or_default()), &overrides)
            .map_err(|e| CliError::usage(e.to_string()))?;
    Ok(Some(resolved.spec))
}

fn config(args: &ServeArgs, spec: Option<AgentSpec>) -> CliResult<ServerConfig> {
    let mut spec = with_flags(args, spec)?;
    let usage = |e: &dyn std::fmt::Display| CliError::usage(e.to_string());
    let tokens = Tokens::from_env().map_err(|e| usage(&e))?;
    check_bind(args.addr, &tokens).map_err(|e| usage(&e))?;
    let provider = match spec.as_mut() {
        Some(spec) => args.model.record_provider(spec),
        None => args.model.provider(None),
    };
    let declared = spec
        .as_ref()
        .and_then(|s| s.models.get(lc_agent_deepagent::MAIN_MODEL));
    let model = args
        .model
        .open_main(true, args.model.context_window(), provider, declared)?;
    let mut config = ServerConfig::new(model)
        .sessions(args.store.config())
        .tokens(tokens)
        .body_limit(args.body_limit)
        .request_timeout(Duration::from_secs(args.timeout))
        .max_connections(args.max_connections)
        .max_requests(args.max_requests)
        .max_client_requests(args.max_client_requests)
        .body_timeout(Duration::from_secs(args.body_timeout.max(1)))
        .max_file_bytes(args.max_file_bytes)
        .max_session_files_bytes(args.max_session_files_bytes)
        .file_limits(
            args.file_limits.max_read_bytes,
            args.file_limits.max_write_bytes,
        )
        .silent_timeout(Duration::from_secs(args.silent_timeout.max(1)))
        .header_timeout(Duration::from_secs(args.header_timeout.max(1)))
        .session_cache(args.session_cache)
        .summaries(!args.model.no_summaries)
        .project_memory(!args.model.no_project_memory)
        .shutdown_grace(seconds("--grace", args.grace)?)
        .runs(RunSettings {
            max_runs: usize::try_from(args.max_runs).unwrap_or(usize::MAX),
            per_user: usize::try_from(args.max_user_runs).unwrap_or(usize::MAX),
            time_limit: (args.run_limit > 0).then(|| Duration::from_secs(args.run_limit)),
            lease: seconds("--run-lease", args.run_lease)?,
            keep: Duration::from_secs(args.run_retention),
            store_patience: seconds("--store-patience", args.store_patience)?,
        });
    for net in &args.trusted_proxy {
        config = config.trusted_proxy(*net);
    }
    if let Some(age) = args.store.session_ttl {
        config = config.retention(age);
    }
    if let Some(turns) = args.store.keep_snapshots {
        config = config.snapshot_turns(turns);
    }
    for host in &args.allow_host {
        config = config.allow_host(host.clone());
    }
    if let Some(workspace) = args.workspace.workspace()? {
        config = config.workspace(workspace);
    }
    config = config.permissions(args.workspace.permissions.rules()?);
    if let Some(spec) = spec {
        config = config.spec(spec);
    }
    for origin in &args.cors {
        config = config.cors_origin(origin.clone());
    }
    if let Some(hooks) = args.hooks.modifier(args.workspace.root.as_deref())? {
        config = config.modifier_shared(std::sync::Arc::new(hooks));
    }
    if let Some(mode) = args.mode {
        config = config.default_mode(mode);
    }
    if args.allow_bypass || args.mode == Some(lc_agent_deepagent::PermissionMode::Bypass) {
        tracing::warn!(
            "clients may put sessions in bypass mode: no tool call asks for approval there"
        );
    }
    Ok(config.allow_bypass(args.allow_bypass))
}

/// A positive number of seconds, or a usage error naming the flag.
fn seconds(flag: &str, secs: f64) -> CliResult<Duration> {
    if secs.is_finite() && secs > 0.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(CliError::usage(format!(
            "{flag}: give a positive number of seconds, not {secs}"
        )))
    }
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

/// Runs `lc-agent serve`.
pub(crate) async fn run(args: ServeArgs) -> CliResult {
    let format: LogFormat = args.log_format.parse().map_err(CliError::usage)?;
    match init_logging(format) {
        Ok(()) => {}
        Err(e @ LoggingError::Filter(_)) => return Err(CliError::usage(e.to_string())),
        // Another part of the program set logging up already: keep it.
        Err(_) => {}
    }
    let spec = match &args.agent {
        Some(path) => Some(AgentSpec::from_file(path).map_err(|e| CliError::usage(e.to_string()))?),
        None => None,
    };
    let mut mcp_config = match &spec {
        Some(spec) => spec
            .mcp_config()
            .map_err(|e| CliError::usage(e.to_string()))?,
        None => McpConfig::default(),
    };
    if let Some(path) = &args.mcp {
        mcp_config.merge(
            McpConfig::from_file(path)
                .map_err(|e| CliError::usage(format!("--mcp: {}", error_chain(&e))))?,
        );
    }
    // MCP stdio servers run in the sandbox profile of the server's
    // workspace (the shell's), else its blueprint's.
    let mcp_workspace = args
        .workspace
        .workspace()?
        .or_else(|| spec.as_ref().map(|s| s.backend.clone()))
        .unwrap_or_default();
    let mut config = config(&args, spec)?;
    // Each session gets connections of its own, so a server's request for
    // input reaches the person of the session that asked (the page, the API).
    let (mcp, _) = connect(mcp_config, &mcp_workspace, false).await?;
    let mcp = mcp.map(McpSessions::from_tools);
    if let Some((tools, _)) = &mcp {
        config = config.modifier_shared(Arc::new(tools.clone()));
    }
    let state = AppState::new(config).map_err(|e| CliError::usage(e.to_string()))?;
    let mcp = mcp.map(|(tools, asks)| {
        state.ask_people(asks);
        tools
    });
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|e| CliError::failed(format!("cannot listen on {}: {e}", args.addr)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| CliError::failed(e.to_string()))?;
    let stop = shutdown_signal();
    eprintln!("listening on http://{addr}");
    // A small window: the agents run lean, said once, at start.
    if let Some(notice) = state.lean_notice().await {
        eprintln!("note: {notice}");
    }
    let served = serve(listener, state, stop).await;
    if let Some(tools) = mcp {
        tools.disconnect().await;
    }
    served.map_err(|e| CliError::failed(e.to_string()))?;
    eprintln!("stopped");
    Ok(())
}

/// `--trusted-proxy`: a network (`10.0.0.0/8`) or one address.
fn parse_cidr(text: &str) -> Result<ipnet::IpNet, String> {
    if let Ok(net) = text.parse::<ipnet::IpNet>() {
        return Ok(net);
    }
    text.parse::<std::net::IpAddr>()
        .map(ipnet::IpNet::from)
        .map_err(|_| format!("`{text}` is neither a network (10.0.0.0/8) nor an address"))
}
