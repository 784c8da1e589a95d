//! `lc-agent tool`: runs one file-tool call from a shell (the line tools
//! too), or lists the deep agent's tools as OpenAI definitions (`--list
//! [--root DIR [--shell]] [--line-tools]`).
//!
//! The call meets the same checks as the agent's: the `PreToolUse` hooks
//! (the user's and the project's settings, `--settings FILE`; `--no-hooks`
//! reads none; a hook's `ask` refuses, nobody approves here; its
//! `updatedInput` is the call that runs), the path rules, then
//! `PostToolUse`; a failing hook is a warning on stderr.
//!
//! Exit codes: 0 the call succeeded, 1 the tool returned an error, 2 usage
//! error (unknown tool, arguments that are not a JSON object, bad flags,
//! neither `--root` nor `--state`, or an unreadable state file).

use std::path::{Path, PathBuf};

use lc_agent::{
    openai_tools, RunnableNetwork, Saving, ScriptedChatModel, ToolCall, ToolOutput, ToolStatus,
    Turn,
};
use lc_agent_deepagent::{DeepAgent, HooksModifier, Workspace};
use lc_agent_filesystem::{run_tool, Backend, FileLimits, StateBackend};
use lc_agent_filesystem::{LINE_TOOL_NAMES, TOOL_NAMES};

use crate::args::{FileLimitArgs, WorkspaceArgs};
use crate::console::outln;
use crate::error::{CliError, CliResult};
use crate::hooks::HookArgs;

/// Arguments of `lc-agent tool`. To run a call, one of `--root` and
/// `--state` is required: a tool never runs against a directory nobody named.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("backend").args(["root", "state"])))]
pub(crate) struct ToolArgs {
    /// Print the deep agent's tools (file tools over --root or the
    /// session's files, `execute` with --shell, write_todos, task) as
    /// OpenAI tool definitions (JSON) instead of running a call.
    #[arg(long, conflicts_with = "state")]
    list: bool,
    /// With --list: the line tools too (insert_lines, replace_lines,
    /// delete_lines), as the agent offers them with --line-tools.
    #[arg(long, requires = "list")]
    line_tools: bool,
    /// Tool name: ls, read_file, write_file, edit_file, glob, grep, delete,
    /// execute, or a line tool (insert_lines, replace_lines, delete_lines).
    #[arg(required_unless_present = "list")]
    name: Option<String>,
    /// Arguments as a JSON object.
    #[arg(default_value = "{}")]
    args: String,
    /// Run against a directory (`--shell`: `execute` runs commands there,
    /// without asking: the call is yours).
    #[command(flatten)]
    workspace: WorkspaceArgs,
    /// Run against the files of a saved network JSON (StateBackend); the file is written back.
    #[arg(long, value_name = "FILE.json")]
    state: Option<PathBuf>,
    /// The `PreToolUse` / `PostToolUse` hooks the call meets (the user's,
    /// the project's `.lc-agent/settings.json`, `--settings FILE`).
    #[command(flatten)]
    hooks: HookArgs,
    /// The file tools' size limits (--max-read-bytes, --max-write-bytes).
    #[command(flatten)]
    file_limits: FileLimitArgs,
}

/// The workspace of the flags (the caller runs the call: nobody to ask).
fn workspace(args: &ToolArgs) -> CliResult<Option<Workspace>> {
    Ok(args
        .workspace
        .workspace()?
        .map(|w| w.execute_approval(false)))
}

/// The deep agent's tools as OpenAI definitions, one JSON array.
fn list(args: &ToolArgs) -> CliResult {
    // Listing needs the agent's tools only: its model is never asked.
    let mut agent = DeepAgent::builder().model(ScriptedChatModel::new(Vec::<Turn>::new()));
    if let Some(workspace) = workspace(args)? {
        agent = agent
            .workspace(&workspace)
            .map_err(|e| CliError::usage(e.to_string()))?;
    }
    agent = agent
        .permissions(args.workspace.permissions.rules()?)
        .line_tools(args.line_tools);
    let net = agent.build().map_err(|e| CliError::usage(e.to_string()))?;
    let text = serde_json::to_string_pretty(&openai_tools(&agent.offered_tools(&net)))
        .map_err(|e| CliError::failed(e.to_string()))?;
    outln(&text);
    Ok(())
}

/// Runs the subcommand.
pub(crate) async fn run(args: ToolArgs) -> CliResult {
    if args.list {
        return list(&args);
    }
    let Some(name) = args.name.clone() else {
        return Err(CliError::usage("give a tool name, or --list"));
    };
    if !TOOL_NAMES.contains(&name.as_str()) && !LINE_TOOL_NAMES.contains(&name.as_str()) {
        return Err(CliError::usage(format!(
            "unknown tool `{}` (tools: {}, {})",
            name,
            TOOL_NAMES.join(", "),
            LINE_TOOL_NAMES.join(", ")
        )));
    }
    let call_args: serde_json::Value = match serde_json::from_str(&args.args) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(other) => {
            return Err(CliError::usage(format!(
                "arguments must be a JSON object, got {other}"
            )))
        }
        Err(e) => {
            return Err(CliError::usage(format!(
                "arguments are not valid JSON: {e}"
            )))
        }
    };
    let rules = args.workspace.permissions.rules()?;
    let limits = args.file_limits.over(FileLimits::default());
    let hooks = args.hooks.modifier(args.workspace.root.as_deref())?;
    let call_of = |net: &RunnableNetwork| Gate {
        hooks: hooks.as_ref(),
        network: net.clone(),
        call: ToolCall::new("call_0", name.clone(), call_args.clone()),
    };
    if let Some(state) = &args.state {
        return run_on_state(state, call_of, &rules, limits).await;
    }
    let Some(workspace) = workspace(&args)? else {
        return Err(CliError::usage("give --root DIR or --state FILE.json"));
    };
    let backend = workspace
        .open_directory()
        .map_err(|e| CliError::usage(e.to_string()))?
        .ok_or_else(|| CliError::usage("give --root DIR or --state FILE.json"))?;
    // Path rules: nobody to ask here, so an `ask` refuses.
    let network = RunnableNetwork::new();
    let backend = rules.guard(limits.apply(backend), false).resolve(&network);
    call(&*backend, call_of(&network)).await
}

/// A call and the hooks it meets, in the network the hooks name.
struct Gate<'a> {
    hooks: Option<&'a HooksModifier>,
    network: RunnableNetwork,
    call: ToolCall,
}

/// Runs the call through the hooks (a `PreToolUse` hook first, then the
/// backend's path rules, then `PostToolUse`) and prints what the model
/// would see; a tool error is exit code 1 (its text is on stdout already).
async fn call(backend: &dyn Backend, gate: Gate<'_>) -> CliResult {
    let run = |call: ToolCall| async move {
        let args = call.parsed_arguments().unwrap_or_default();
        run_tool(backend, &call.name, &args)
            .await
            .unwrap_or_else(|| ToolOutput::error(format!("Error: unknown tool `{}`", call.name)))
    };
    let out = match gate.hooks {
        Some(hooks) => {
            crate::hooks::report_on_stderr(&gate.network);
            hooks.run_call(&gate.network, gate.call, run).await
        }
        None => run(gate.call).await,
    };
    outln(&out.content);
    if out.status == ToolStatus::Ok {
        Ok(())
    } else {
        Err(CliError::failed(""))
    }
}

async fn run_on_state<'a>(
    state: &Path,
    call_of: impl Fn(&RunnableNetwork) -> Gate<'a>,
    rules: &lc_agent_filesystem::Permissions,
    limits: FileLimits,
) -> CliResult {
    let text = std::fs::read_to_string(state)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", state.display())))?;
    let network = RunnableNetwork::from_json(&text)
        .map_err(|e| CliError::usage(format!("{} is not a saved network: {e}", state.display())))?;
    let backend = rules
        .guard(limits.apply(StateBackend::new(network.clone())), false)
        .resolve(&network);
    let outcome = call(&*backend, call_of(&network)).await;
    let saved = network
        .to_json()
        .map_err(|e| CliError::failed(format!("cannot save the network: {e}")))?;
    if saved != text {
        network
            .save_to_file(state)
            .map_err(|e| CliError::failed(format!("cannot write {}: {e}", state.display())))?;
    }
    outcome
}
