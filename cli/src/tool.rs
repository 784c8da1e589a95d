//! `lc-agent tool`: runs one file-tool call from a shell, or lists the
//! deep agent's tools as OpenAI definitions (`--list [--root DIR [--shell]]`).
//!
//! Exit codes: 0 the call succeeded, 1 the tool returned an error, 2 usage
//! error (unknown tool, arguments that are not a JSON object, bad flags,
//! neither `--root` nor `--state`, or an unreadable state file).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use lc_agent::{openai_tools, RunnableNetwork, ScriptedChatModel, ToolStatus, Turn};
use lc_agent_modifiers::deep_agent::DeepAgent;
use lc_agent_modifiers::filesystem::tools::TOOL_NAMES;
use lc_agent_modifiers::filesystem::{
    run_tool, Backend, FilesystemBackend, LocalShellBackend, StateBackend,
};

/// Arguments of `lc-agent tool`. To run a call, one of `--root` and
/// `--state` is required: a tool never runs against a directory nobody named.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("backend").args(["root", "state"])))]
pub struct ToolArgs {
    /// Print the deep agent's tools (file tools over --root or the
    /// session's files, `execute` with --shell, write_todos, task) as
    /// OpenAI tool definitions (JSON) instead of running a call.
    #[arg(long, conflicts_with = "state")]
    list: bool,
    /// Tool name: ls, read_file, write_file, edit_file, glob, grep, execute.
    #[arg(required_unless_present = "list")]
    name: Option<String>,
    /// Arguments as a JSON object.
    #[arg(default_value = "{}")]
    args: String,
    /// Run against a directory (FilesystemBackend, virtual mode).
    #[arg(long, value_name = "DIR", conflicts_with = "state")]
    root: Option<PathBuf>,
    /// Run against the files of a saved network JSON (StateBackend); the file is written back.
    #[arg(long, value_name = "FILE.json")]
    state: Option<PathBuf>,
    /// With --root: use a LocalShellBackend, so `execute` can run commands.
    #[arg(long, conflicts_with = "state")]
    shell: bool,
}

fn usage(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("lc-agent tool: {message}");
    ExitCode::from(2)
}

/// The deep agent's tools as OpenAI definitions, one JSON array.
fn list(args: &ToolArgs) -> ExitCode {
    // Listing needs the agent's tools only: its model is never asked.
    let mut agent = DeepAgent::builder().model(ScriptedChatModel::new(Vec::<Turn>::new()));
    if let Some(root) = &args.root {
        let opened = if args.shell {
            LocalShellBackend::new(root).map(|b| agent.backend(b))
        } else {
            FilesystemBackend::new(root).map(|b| agent.backend(b))
        };
        agent = match opened {
            Ok(agent) => agent,
            Err(e) => return usage(format!("cannot open root {}: {e}", root.display())),
        };
    }
    let net = match agent.build() {
        Ok(net) => net,
        Err(e) => return usage(e.to_string()),
    };
    match serde_json::to_string_pretty(&openai_tools(&agent.offered_tools(&net))) {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => usage(e.to_string()),
    }
}

/// Runs the subcommand.
pub fn run(args: ToolArgs) -> ExitCode {
    if args.list {
        return list(&args);
    }
    let Some(name) = args.name.clone() else {
        return usage("give a tool name, or --list");
    };
    if !TOOL_NAMES.contains(&name.as_str()) {
        return usage(format!(
            "unknown tool `{}` (tools: {})",
            name,
            TOOL_NAMES.join(", ")
        ));
    }
    let call_args: serde_json::Value = match serde_json::from_str(&args.args) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(other) => return usage(format!("arguments must be a JSON object, got {other}")),
        Err(e) => return usage(format!("arguments are not valid JSON: {e}")),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return usage(format!("cannot start the runtime: {e}")),
    };
    runtime.block_on(async move {
        match &args.state {
            Some(state) => run_on_state(state, &name, &call_args).await,
            None => {
                let Some(root) = args.root.clone() else {
                    return usage("give --root DIR or --state FILE.json");
                };
                let backend: Arc<dyn Backend> = if args.shell {
                    match LocalShellBackend::new(&root) {
                        Ok(b) => Arc::new(b),
                        Err(e) => {
                            return usage(format!("cannot open root {}: {e}", root.display()))
                        }
                    }
                } else {
                    match FilesystemBackend::new(&root) {
                        Ok(b) => Arc::new(b),
                        Err(e) => {
                            return usage(format!("cannot open root {}: {e}", root.display()))
                        }
                    }
                };
                call(&*backend, &name, &call_args).await
            }
        }
    })
}

async fn call(backend: &dyn Backend, name: &str, args: &serde_json::Value) -> ExitCode {
    match run_tool(backend, name, args).await {
        Some(out) => {
            println!("{}", out.content);
            if out.status == ToolStatus::Ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        None => usage(format!("unknown tool `{name}`")),
    }
}

async fn run_on_state(state: &Path, name: &str, args: &serde_json::Value) -> ExitCode {
    let text = match std::fs::read_to_string(state) {
        Ok(t) => t,
        Err(e) => return usage(format!("cannot read {}: {e}", state.display())),
    };
    let network = match RunnableNetwork::from_json(&text) {
        Ok(n) => n,
        Err(e) => return usage(format!("{} is not a saved network: {e}", state.display())),
    };
    let code = call(&StateBackend::new(network.clone()), name, args).await;
    let saved = match network.to_json() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("lc-agent tool: cannot save the network: {e}");
            return ExitCode::from(1);
        }
    };
    if saved != text {
        if let Err(e) = write_atomically(state, &saved) {
            eprintln!("lc-agent tool: cannot write {}: {e}", state.display());
            return ExitCode::from(1);
        }
    }
    code
}

fn write_atomically(target: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(target).map_err(|e| e.error)?;
    Ok(())
}
