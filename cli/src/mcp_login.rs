//! `lc-agent mcp login NAME`: authorizes lc-agent with an OAuth-protected
//! MCP server named in an `mcpServers` file or a blueprint.
//!
//! ```text
//! lc-agent mcp login NAME (--mcp FILE.json | --agent FILE) [--scope S]... [--no-browser]
//! ```
//!
//! The authorization URL is printed on stderr and opened in a browser when
//! one can be (`$BROWSER`, else `xdg-open` with a display, `open` on
//! macOS); the authorization server redirects to a listener on
//! `http://127.0.0.1:PORT/callback`. With the browser on another machine,
//! paste the address it was redirected to on stdin. The tokens go to
//! `$LC_AGENT_HOME/mcp-tokens.json` (mode 0600), never into a session;
//! `run`, `chat`, `exec` and `serve` use them and refresh them. Exit codes:
//! 0 logged in; 1 the authorization failed; 2 bad usage.

use std::path::PathBuf;

use clap::Args;
use lc_agent::error_chain;
use lc_agent_deepagent::mcp::{McpConfig, McpLogin};
use lc_agent_deepagent::AgentSpec;

use crate::error::{CliError, CliResult};

/// `lc-agent mcp login` arguments.
#[derive(Debug, Args)]
pub(crate) struct LoginArgs {
    /// The server's name in the configuration.
    pub(crate) name: String,
    /// The `mcpServers` JSON file that names it.
    #[arg(long, value_name = "FILE.json")]
    pub(crate) mcp: Option<PathBuf>,
    /// Or the agent blueprint that names it (its `mcp_servers`).
    #[arg(long, value_name = "FILE", conflicts_with = "mcp")]
    pub(crate) agent: Option<PathBuf>,
    /// A scope to ask for (repeatable; default: what the server asks for).
    #[arg(long = "scope", value_name = "SCOPE")]
    pub(crate) scopes: Vec<String>,
    /// Only print the URL; do not try to open a browser.
    #[arg(long)]
    pub(crate) no_browser: bool,
}

/// Runs `lc-agent mcp login`.
pub(crate) async fn run(args: LoginArgs) -> CliResult {
    let config = match (&args.mcp, &args.agent) {
        (Some(path), _) => McpConfig::from_file(path).map_err(|e| {
            CliError::usage(format!("--mcp {}: {}", path.display(), error_chain(&e)))
        })?,
        (None, Some(path)) => AgentSpec::from_file(path)
            .and_then(|spec| spec.mcp_config())
            .map_err(|e| {
                CliError::usage(format!("--agent {}: {}", path.display(), error_chain(&e)))
            })?,
        (None, None) => {
            return Err(CliError::usage(
                "give the configuration that names the server: --mcp FILE.json or --agent FILE",
            ))
        }
    };
    let Some(server) = config.mcp_servers.get(&args.name) else {
        let names: Vec<&str> = config.mcp_servers.keys().map(String::as_str).collect();
        return Err(CliError::usage(format!(
            "no MCP server `{}` in the configuration (it has: {})",
            args.name,
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )));
    };
    let failed = |e: lc_agent_deepagent::mcp::McpError| CliError::failed(error_chain(&e));
    let login = McpLogin::start(&args.name, server, &args.scopes)
        .await
        .map_err(failed)?;
    let opened = !args.no_browser && open_browser(login.url());
    eprintln!(
        "{} to authorize lc-agent with MCP server `{}`:\n\n  {}\n\n(waiting for the redirect; with the browser on another machine, paste the address it was sent to here)",
        if opened { "Your browser was opened; if it did not show the page, open this URL" } else { "Open this URL" },
        args.name,
        login.url()
    );
    let scopes = login.finish(pasted_url()).await.map_err(failed)?;
    let file = login_file_note(&scopes);
    crate::console::outln(&format!("Logged in to MCP server `{}`{file}", args.name));
    Ok(())
}

fn login_file_note(scopes: &[String]) -> String {
    if scopes.is_empty() {
        String::new()
    } else {
        format!(" (scopes: {})", scopes.join(" "))
    }
}

/// The first line on stdin that looks like a URL (none when stdin ends).
async fn pasted_url() -> Option<String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    // A plain thread: a blocking read must not hold the runtime at exit.
    std::thread::spawn(move || {
        let mut line = String::new();
        while std::io::stdin().read_line(&mut line).ok()? > 0 {
            let text = line.trim();
            if text.starts_with("http://") || text.starts_with("https://") {
                let _ = tx.send(text.to_string());
                return Some(());
            }
            line.clear();
        }
        None
    });
    rx.await.ok()
}

/// Tries to open `url` in a browser; whether a browser program started.
fn open_browser(url: &str) -> bool {
    let program = match std::env::var("BROWSER") {
        Ok(browser) if !browser.trim().is_empty() => browser,
        _ if cfg!(target_os = "macos") => "open".to_string(),
        _ if std::env::var_os("DISPLAY").is_some()
            || std::env::var_os("WAYLAND_DISPLAY").is_some() =>
        {
            "xdg-open".to_string()
        }
        _ => return false,
    };
    std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}
