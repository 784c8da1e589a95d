//! `lc-agent run "TASK"`: one task for a deep agent, from a terminal.
//!
//! ```text
//! lc-agent run "Rename foo to bar" [--root DIR [--shell]] [--model NAME | --script FILE.json]
//!              [--agent FILE.toml] [--mcp FILE.json] [--skills DIR] [--yes]
//!              [--sessions DIR | --redis URL] [--user NAME] [--memory]
//! ```
//!
//! `--mcp` adds the tools of the MCP servers of an `mcpServers` JSON file
//! (as desktop MCP clients write it) to those of the blueprint's
//! `mcp_servers`; a server that cannot be reached is a warning on stderr
//! and the run goes on without its tools.
//!
//! The model is `OPENAI_BASE_URL` / `OPENAI_API_KEY` / `OPENAI_MODEL` (or
//! `--model`); `--script` replays a scripted model offline (a JSON list of
//! turns `{"content": "...", "tool_calls": [{"id", "name", "arguments"}]}`).
//! The model's text streams to stdout as it is written (a line per turn);
//! one progress line per tool call goes to stderr (name, status,
//! duration), and one per summary written; the final answer is the last
//! thing printed on stdout. `--skills DIR` lists the skills in DIR
//! (folders with a `SKILL.md`) in the system prompt and mounts DIR at
//! `/skills`, where the model reads them; with `--agent`, the stored
//! blueprint keeps it. A call that needs approval (`interrupt_on` of
//! `--agent`, or `execute` with `--shell`) is asked on stdin, offering
//! what the call allows: `y` approves, `n` rejects, `e` then a JSON line
//! edits the arguments, `r` then a line answers in the tool's place;
//! `--yes` approves everything. The session is saved in every case (JSON
//! list by default, `--redis` for Redis): after every node while it runs
//! (a checkpoint, so even a killed process loses at most the node in
//! flight; `lc-agent chat --session ID` finishes an interrupted run), and
//! at the end.
//!
//! `--memory` gives the agent long-term memory for `--user` (relevant
//! memories and the latest summary in its prompt, every turn stored, a
//! summary every 8 turns, `remember` and `recall`): in Redis with
//! `--redis`, else in `$LC_AGENT_HOME/memory` (or the user's data
//! directory). The process waits for a summary being written before it
//! exits.
//!
//! Exit codes: 0 the run finished; 1 it failed (the message says why; the
//! session is saved); 2 bad usage; 3 a call waits for approval and stdin
//! ended (the session is saved with the pending call); 130 Ctrl-C stopped
//! it (the session is saved with what ran).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use lc_agent::list::{JsonNetworkList, NetworkList, RedisNetworkList};
use lc_agent::{
    ChatModel, HumanNode, NetworkEvent, OpenAiChatModel, RunnableNetwork, ScriptedChatModel,
    ToolCall, Turn,
};
use lc_agent_modifiers::approvals::{decide, pending_approvals, Decision, DecisionKind, Decisions};
use lc_agent_modifiers::checkpoint::{CheckpointModifier, CheckpointPolicy};
use lc_agent_modifiers::deep_agent::{DeepAgent, DeepAgentBuilder};
use lc_agent_modifiers::filesystem::{tools::TOOL_NAMES, FilesystemBackend, LocalShellBackend};
use lc_agent_modifiers::mcp::{McpConfig, McpTools};
use lc_agent_modifiers::memory::{MemoryModifier, MemoryStore, USER_KEY};
use lc_agent_modifiers::spec::AgentSpec;
use serde::Deserialize;
use serde_json::Value;

use crate::interrupt::{Interrupt, INTERRUPTED};

/// `lc-agent run` arguments.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task.
    pub task: String,
    /// The agent, its model and where the session goes.
    #[command(flatten)]
    pub agent: AgentArgs,
}

/// What `run` and `chat` share: the agent, its model, the session store.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Work on this directory (confined); default: the session's own files.
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Allow `execute` in --root (each call asks for approval).
    #[arg(long, requires = "root")]
    pub shell: bool,
    /// The model name (default `OPENAI_MODEL`).
    #[arg(long, conflicts_with = "script")]
    pub model: Option<String>,
    /// Replay this scripted model (offline).
    #[arg(long)]
    pub script: Option<PathBuf>,
    /// An agent blueprint (TOML, or JSON by its extension).
    #[arg(long)]
    pub agent: Option<PathBuf>,
    /// MCP servers whose tools the agent gets (an `mcpServers` JSON file).
    #[arg(long)]
    pub mcp: Option<PathBuf>,
    /// Skills: folders with a SKILL.md in this directory (mounted at /skills).
    #[arg(long)]
    pub skills: Option<PathBuf>,
    /// Approve every call that asks.
    #[arg(long)]
    pub yes: bool,
    /// The JSON session list's directory (default `$LC_AGENT_HOME/sessions`).
    #[arg(long, conflicts_with = "redis")]
    pub sessions: Option<PathBuf>,
    /// Keep the session in Redis.
    #[arg(long)]
    pub redis: Option<String>,
    /// The user (namespace) of the session, and whose memories `--memory` uses.
    #[arg(long, default_value = "default")]
    pub user: String,
    /// Long-term memory across sessions (in Redis with --redis).
    #[arg(long)]
    pub memory: bool,
}

#[derive(Deserialize)]
struct ScriptTurn {
    #[serde(default)]
    content: String,
    #[serde(default)]
    tool_calls: Vec<ScriptCall>,
    /// How long the model takes to answer, in milliseconds.
    #[serde(default)]
    delay_ms: u64,
}

#[derive(Deserialize)]
struct ScriptCall {
    id: String,
    name: String,
    #[serde(default)]
    arguments: Value,
}

/// An exit code and what to say.
pub(crate) type Failure = (u8, String);

pub(crate) fn usage(message: impl Into<String>) -> Failure {
    (2, message.into())
}

/// The scripted model of a `--script` file.
pub(crate) fn script_model(path: &std::path::Path) -> Result<ScriptedChatModel, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
    let turns: Vec<ScriptTurn> = serde_json::from_str(&text)
        .map_err(|e| usage(format!("{} is not a script: {e}", path.display())))?;
    let turns = turns.into_iter().map(|t| Turn {
        content: t.content,
        tool_calls: t
            .tool_calls
            .into_iter()
            .map(|c| ToolCall::new(c.id, c.name, c.arguments))
            .collect(),
        delay: (t.delay_ms > 0).then(|| std::time::Duration::from_millis(t.delay_ms)),
    });
    Ok(ScriptedChatModel::new(turns))
}

pub(crate) fn model(args: &AgentArgs) -> Result<Arc<dyn ChatModel>, Failure> {
    match &args.script {
        Some(path) => Ok(Arc::new(script_model(path)?)),
        None => openai_model(args.model.as_deref()),
    }
}

/// The OpenAI-compatible model of `OPENAI_*`, named `name` or
/// `OPENAI_MODEL`.
pub(crate) fn openai_model(name: Option<&str>) -> Result<Arc<dyn ChatModel>, Failure> {
    let mut builder = OpenAiChatModel::builder();
    if let Some(name) = name {
        builder = builder.model(name.to_string());
    }
    Ok(Arc::new(builder.build().map_err(|e| usage(e.to_string()))?))
}

/// Runs a command's future on a new runtime: exit 0 when it succeeds, its
/// code and message on stderr when it fails.
pub(crate) fn block_on(
    command: impl std::future::Future<Output = Result<(), Failure>>,
) -> ExitCode {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, message)) => {
            eprintln!("error: {message}");
            ExitCode::from(code)
        }
    }
}

pub(crate) fn agent(
    args: &AgentArgs,
    main: Arc<dyn ChatModel>,
) -> Result<(DeepAgentBuilder, Option<AgentSpec>), Failure> {
    let (mut builder, mut spec) = match &args.agent {
        Some(path) => {
            let spec = AgentSpec::from_file(path).map_err(|e| usage(e.to_string()))?;
            let main = main.clone();
            let builder = spec
                .builder(move |_, _| Ok(main.clone()))
                .map_err(|e| usage(e.to_string()))?;
            (builder, Some(spec))
        }
        None => (DeepAgent::builder().model_shared("main", main), None),
    };
    if let Some(root) = &args.root {
        let io = |e: std::io::Error| usage(format!("cannot open {}: {e}", root.display()));
        builder = if args.shell {
            builder
                .backend(LocalShellBackend::new(root).map_err(io)?)
                .interrupt_on("execute", Decisions::all())
        } else {
            builder.backend(FilesystemBackend::new(root).map_err(io)?)
        };
    }
    if let Some(dir) = &args.skills {
        // Absolute, so that a session resumed elsewhere finds it again.
        let dir = std::fs::canonicalize(dir)
            .ok()
            .filter(|d| d.is_dir())
            .ok_or_else(|| usage(format!("--skills {}: not a directory", dir.display())))?;
        builder = builder.skills_dir(dir.clone());
        if let Some(spec) = &mut spec {
            spec.skills.get_or_insert_with(Default::default).dir = Some(dir);
        }
    }
    Ok((with_memory(builder, args)?, spec))
}

/// Adds `--memory` to an agent that has no memory yet.
pub(crate) fn with_memory(
    builder: DeepAgentBuilder,
    args: &AgentArgs,
) -> Result<DeepAgentBuilder, Failure> {
    if !args.memory || builder.memory_modifier().is_some() {
        return Ok(builder);
    }
    let store = match &args.redis {
        Some(url) => MemoryStore::redis(url.clone()),
        None => MemoryStore::open_default(),
    }
    .map_err(|e| usage(format!("--memory: {e}")))?;
    Ok(builder.memory(MemoryModifier::new(store).default_user(args.user.clone())))
}

/// Records the user in a session that names none (memory reads it).
pub(crate) fn mark_user(net: &RunnableNetwork, args: &AgentArgs) {
    if net.metadata_value(USER_KEY).is_none() {
        net.set_metadata(USER_KEY, Value::String(args.user.clone()));
    }
}

/// Waits for the memory summaries being written.
pub(crate) async fn flush_memory(memory: Option<MemoryModifier>) {
    if let Some(memory) = memory {
        memory.flush().await;
    }
}

/// Attaches the MCP servers of the blueprint and of `--mcp` to `net`
/// (connected now; an unreachable one is a warning). The tools, to
/// disconnect at the end, when there are servers.
pub(crate) async fn attach_mcp(
    net: &RunnableNetwork,
    args: &AgentArgs,
    spec: Option<&AgentSpec>,
) -> Result<Option<McpTools>, Failure> {
    let tools = mcp_tools(spec, args.mcp.as_deref()).await?;
    if let Some(tools) = &tools {
        net.add_modifier(tools.clone())
            .map_err(|e| (1, e.to_string()))?;
    }
    Ok(tools)
}

/// The MCP servers of a blueprint and of an `mcpServers` file, connected
/// (an unreachable one is a warning); `None` when there are none. Their
/// tools are named `<server>_<tool>` where they clash with the agent's own.
pub(crate) async fn mcp_tools(
    spec: Option<&AgentSpec>,
    file: Option<&std::path::Path>,
) -> Result<Option<McpTools>, Failure> {
    let mut config = match spec {
        Some(spec) => spec.mcp_config().map_err(|e| usage(e.to_string()))?,
        None => McpConfig::default(),
    };
    if let Some(path) = file {
        config.merge(McpConfig::from_file(path).map_err(|e| usage(error_chain(&e)))?);
    }
    if config.is_empty() {
        return Ok(None);
    }
    let tools = McpTools::new(config)
        .reserve_names(TOOL_NAMES.iter().copied().chain(["task", "write_todos"]));
    for failure in tools.connect().await {
        eprintln!("warning: {}", error_chain(&failure));
    }
    Ok(Some(tools))
}

/// An error and its causes, `: `-joined.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

pub(crate) async fn sessions(args: &AgentArgs) -> Result<Arc<dyn NetworkList>, Failure> {
    let failed = |e: lc_agent::list::ListError| usage(e.to_string());
    Ok(match &args.redis {
        Some(url) => Arc::new(
            RedisNetworkList::builder()
                .url(url.clone())
                .user(args.user.clone())
                .build()
                .map_err(failed)?,
        ),
        None => {
            let root = args
                .sessions
                .clone()
                .unwrap_or_else(JsonNetworkList::default_root);
            Arc::new(
                JsonNetworkList::new(root)
                    .with_user(&args.user)
                    .map_err(failed)?,
            )
        }
    })
}

fn short(args: &str) -> String {
    let one_line: String = args
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    if one_line.chars().count() > 60 {
        format!("{}...", one_line.chars().take(57).collect::<String>())
    } else {
        one_line
    }
}

/// The lines a person types (stdin), shared by the chat prompt and the
/// approval questions.
pub(crate) type Lines<'a> = dyn Iterator<Item = std::io::Result<String>> + 'a;

/// Asks about every pending call; `false` when stdin ended first.
///
/// The question offers the decisions the call allows: `y` approve, `n`
/// reject, `e` edit (then a JSON line of new arguments), `r` respond
/// (then a line that becomes the call's result). An answer that is not
/// allowed, or arguments that are not a JSON object, ask again.
pub(crate) fn ask(
    net: &RunnableNetwork,
    yes: bool,
    lines: &mut Lines<'_>,
) -> Result<bool, Failure> {
    for pending in pending_approvals(net) {
        let call = &pending.tool_call;
        if yes {
            eprintln!("approved {} {}", call.name, short(&call.arguments));
            decide(net, pending.node_id, Decision::Approve).map_err(|e| (1, e.to_string()))?;
            continue;
        }
        let letters: String = pending
            .allowed
            .iter()
            .map(|kind| match kind {
                DecisionKind::Approve => "y",
                DecisionKind::Reject => "n",
                DecisionKind::Edit => "e",
                DecisionKind::Respond => "r",
            })
            .collect::<Vec<_>>()
            .join("/");
        loop {
            let Some(answer) = prompt(
                &format!(
                    "approve {} {}? [{letters}] ",
                    call.name,
                    short(&call.arguments)
                ),
                lines,
            ) else {
                return Ok(false);
            };
            let decision = match answer.trim() {
                "y" | "yes" => Decision::Approve,
                "e" | "edit" => {
                    let Some(json) = prompt("new arguments (JSON): ", lines) else {
                        return Ok(false);
                    };
                    match serde_json::from_str(&json) {
                        Ok(args) => Decision::Edit(args),
                        Err(e) => {
                            eprintln!("not JSON arguments: {e}");
                            continue;
                        }
                    }
                }
                "r" | "respond" => {
                    let Some(text) = prompt("the call's result: ", lines) else {
                        return Ok(false);
                    };
                    Decision::Respond(text)
                }
                "n" | "no" => Decision::Reject("the user said no".to_string()),
                other => {
                    eprintln!("`{other}` is not one of [{letters}]");
                    continue;
                }
            };
            match decide(net, pending.node_id, decision) {
                Ok(()) => break,
                // Not allowed for this tool, or not an object: ask again.
                Err(e) => eprintln!("{e}"),
            }
        }
    }
    Ok(true)
}

/// Writes a question on stderr and reads the answer line.
fn prompt(question: &str, lines: &mut Lines<'_>) -> Option<String> {
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    lines.next()?.ok()
}

/// Runs the task; the answer when it still has to be printed (`None`: it
/// was streamed).
async fn run_task(args: RunArgs) -> Result<Option<String>, Failure> {
    let main = model(&args.agent)?;
    let (builder, spec) = agent(&args.agent, main)?;
    let list = sessions(&args.agent).await?;
    let net = builder.build().map_err(|e| usage(e.to_string()))?;
    mark_user(&net, &args.agent);
    if let Some(spec) = &spec {
        spec.store_in(&net).map_err(|e| usage(e.to_string()))?;
    }
    let mcp = attach_mcp(&net, &args.agent, spec.as_ref()).await?;
    if net.name().is_empty() {
        net.set_name(args.task.chars().take(60).collect::<String>());
    }
    checkpoint(&net, &list)?;
    let interrupt = Interrupt::watch();
    let screen = show_progress(&net);
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let outcome = turn(&net, &args.task, args.agent.yes, &mut lines, &interrupt)
        .await
        .map(|answer| (!screen.showed(&answer)).then_some(answer));
    flush_memory(builder.memory_modifier().cloned()).await;
    match list.save(&net).await {
        Ok(info) => eprintln!("session {} saved", info.id),
        Err(e) => eprintln!("error: the session could not be saved: {e}"),
    }
    if let Some(mcp) = mcp {
        mcp.disconnect().await;
    }
    outcome
}

/// Saves the session after every node while it runs, so a killed process
/// loses at most the node in flight.
pub(crate) fn checkpoint(
    net: &RunnableNetwork,
    list: &Arc<dyn NetworkList>,
) -> Result<(), Failure> {
    net.add_modifier(CheckpointModifier::new(list.clone()).policy(CheckpointPolicy::EachNode))
        .map_err(|e| (1, e.to_string()))
}

/// What the screen shows of a run: the answer text streamed on stdout as
/// the model writes it (a line per chat turn), one progress line per tool
/// call on stderr.
#[derive(Clone, Default)]
pub(crate) struct Screen {
    /// The text of the latest streamed turn (shown already).
    streamed: Arc<std::sync::Mutex<(Option<lc_agent::NodeId>, String)>>,
}

impl Screen {
    /// Whether `answer` is what the latest turn streamed (then it is on
    /// the screen already).
    pub(crate) fn showed(&self, answer: &str) -> bool {
        self.streamed
            .lock()
            .map(|s| s.0.is_some() && s.1 == answer)
            .unwrap_or(false)
    }

    /// Prints the answer unless it was streamed.
    pub(crate) fn answer(&self, answer: &str) {
        if !self.showed(answer) {
            println!("{answer}");
        }
    }
}

/// Streams the network's answers and reports its tool calls.
pub(crate) fn show_progress(net: &RunnableNetwork) -> Screen {
    net.set_streaming(true);
    let screen = Screen::default();
    let state = screen.streamed.clone();
    net.on_event(move |event| match event {
        NetworkEvent::Delta {
            node_id,
            delta: lc_agent::StreamDelta::Text(text),
        } if !text.is_empty() => {
            if let Ok(mut s) = state.lock() {
                if s.0 != Some(*node_id) {
                    *s = (Some(*node_id), String::new());
                }
                s.1.push_str(text);
            }
            print!("{text}");
            let _ = std::io::stdout().flush();
        }
        NetworkEvent::NodeInvoked { node_id } => {
            let ended = state.lock().is_ok_and(|s| s.0 == Some(*node_id));
            if ended {
                println!();
            }
        }
        NetworkEvent::ToolCallFinished {
            name,
            elapsed,
            status,
            ..
        } => {
            let mark = if *status == lc_agent::ToolStatus::Ok {
                "ok"
            } else {
                "error"
            };
            eprintln!("  {name} {mark} ({:.1} ms)", elapsed.as_secs_f64() * 1000.0);
        }
        NetworkEvent::SummaryWritten {
            kept, summarized, ..
        } => {
            eprintln!("  summary written ({summarized} messages summarized, {kept} kept)");
        }
        _ => {}
    });
    screen
}

/// One turn: the person's text, the run, the approvals it asks for.
pub(crate) async fn turn(
    net: &RunnableNetwork,
    text: &str,
    yes: bool,
    lines: &mut Lines<'_>,
    interrupt: &Interrupt,
) -> Result<String, Failure> {
    {
        let _scope = net.enter();
        HumanNode::new(text);
    }
    finish(net, yes, lines, interrupt).await
}

/// Runs what the network has not run yet (a new turn, or a run that was
/// interrupted or killed), asking for the approvals it needs, until it
/// answers, fails, or Ctrl-C stops it.
pub(crate) async fn finish(
    net: &RunnableNetwork,
    yes: bool,
    lines: &mut Lines<'_>,
    interrupt: &Interrupt,
) -> Result<String, Failure> {
    loop {
        let invoked = tokio::select! {
            invoked = net.invoke() => invoked,
            () = interrupt.interrupted() => {
                break Err((INTERRUPTED, "interrupted; the session keeps what ran".into()));
            }
        };
        match invoked {
            Err(e) => break Err((1, e.to_string())),
            Ok(reply) if net.held().is_empty() => break Ok(reply.text().to_string()),
            Ok(_) => match ask(net, yes, lines) {
                Ok(true) => continue,
                Ok(false) => {
                    break Err((
                        3,
                        "a call waits for approval and stdin ended; the session keeps it".into(),
                    ))
                }
                Err(e) => break Err(e),
            },
        }
    }
}

/// Runs `lc-agent run`.
pub fn run(args: RunArgs) -> ExitCode {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run_task(args)) {
        Ok(answer) => {
            if let Some(answer) = answer {
                println!("{answer}");
            }
            ExitCode::SUCCESS
        }
        Err((code, message)) => {
            eprintln!("error: {message}");
            ExitCode::from(code)
        }
    }
}
