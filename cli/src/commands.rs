//! The chat's slash commands: lines that start with `/` are never sent to
//! the model.
//!
//! ```text
//!  "/todos" ─▶ Command::parse ─▶ run(agent) ─▶ stdout (what was asked)
//!                                          └─▶ Action: stay | quit | switch session | run (/continue)
//! ```
//!
//! An unknown `/word` says so and lists the commands; a line that starts
//! with `//` is sent as `/...` (the way to write a message that starts
//! with a slash).

use std::fmt::Write as _;

use lc_agent::{Attachments, ChatNode, ListQuery, ModelRoutes, UsageExt};
use lc_agent_deepagent::{todos_of, TodoStatus};

use crate::agent::Agent;
use crate::console::{out, usage_of, TurnStats};
use crate::input::Input;

/// Every command and what it does (for `/help` and Tab).
pub(crate) const COMMANDS: &[(&str, &str)] = &[
    ("/help", "this list"),
    (
        "/model",
        "the model; `/model NAME` switches to NAME (the session's provider)",
    ),
    (
        "/tokens",
        "tokens used in this session, its cost and how full the context is",
    ),
    ("/todos", "the agent's todo list"),
    ("/files", "the session's files"),
    ("/sessions", "your recent sessions"),
    (
        "/resume",
        "`/resume ID` continues another session (an id prefix is enough)",
    ),
    ("/new", "starts a new session"),
    (
        "/compact",
        "summarize the conversation now; the next request sends the summary instead",
    ),
    (
        "/rewind",
        "go back to before one of your messages: the conversation, the files, or both",
    ),
    (
        "/redo",
        "take back the last /rewind or /undo, until your next message",
    ),
    (
        "/undo",
        "take back your last message and the files its turn changed (/rewind of the last turn)",
    ),
    (
        "/continue",
        "go on with an answer cut off at the model's output limit",
    ),
    (
        "/approve",
        "`/approve all`, `/approve ask` or `/approve TOOL`: the approval policy",
    ),
    (
        "/mode",
        "the permission mode; `/mode plan|default|accept-edits|bypass` switches",
    ),
    ("/exit", "save and quit (Ctrl-D does the same)"),
];

/// What the chat does after a command.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Read the next line.
    Stay,
    /// Save and quit.
    Quit,
    /// Close this session and open another (`None`: a new one).
    Switch(Option<String>),
    /// Run what the network has pending (a `/continue` turn).
    Run,
    /// Send this text to the model (a `//` line).
    Send(String),
}

/// Whether `line` is a command (starts with one `/`).
pub(crate) fn is_command(line: &str) -> bool {
    line.starts_with('/')
}

/// Runs the command `line` (see [`COMMANDS`]).
pub(crate) async fn run(agent: &Agent, line: &str, input: &mut dyn Input) -> Action {
    if let Some(text) = line.strip_prefix("//") {
        return Action::Send(format!("/{text}"));
    }
    let mut words = line.split_whitespace();
    let name = words.next().unwrap_or("");
    let rest: Vec<&str> = words.collect();
    let rest = rest.join(" ");
    match name {
        "/help" | "/?" => {
            let mut text = String::from("Commands (never sent to the model):\n");
            for (name, what) in COMMANDS {
                let _ = writeln!(text, "  {name:<10} {what}");
            }
            text.push_str(
                "Keys: Up/Down history, Ctrl-R search, Tab completes commands and paths, \
                 Alt-Enter or a line ending in \\ goes on below, Ctrl-C cancels a turn, \
                 Ctrl-C twice or Ctrl-D quits.\n",
            );
            out(&text);
            Action::Stay
        }
        "/exit" | "/quit" => Action::Quit,
        "/new" => Action::Switch(None),
        "/resume" if rest.is_empty() => {
            out("give the session: /resume ID (see /sessions)\n");
            Action::Stay
        }
        "/resume" => Action::Switch(Some(rest)),
        "/model" => model(agent, &rest),
        "/mode" => {
            if crate::mode::command(&agent.net, &rest)
                && let Err(e) = agent.save().await
            {
                eprintln!("error: {}", e.message);
            }
            Action::Stay
        }
        "/tokens" => {
            out(&format!("{}\n", tokens(agent)));
            Action::Stay
        }
        "/todos" => {
            let todos = todos_of(&agent.net);
            if todos.is_empty() {
                out("no todos\n");
            }
            for todo in todos {
                let mark = match todo.status {
                    TodoStatus::Completed => "[x]",
                    TodoStatus::InProgress => "[~]",
                    _ => "[ ]",
                };
                out(&format!("{mark} {}\n", todo.content));
            }
            Action::Stay
        }
        "/files" => {
            let files = agent.net.files();
            let root = workspace_root(agent);
            if let Some(root) = &root {
                workspace_listing(root);
            } else if files.is_empty() {
                out("the session has no files of its own\n");
            }
            if root.is_some() && !files.is_empty() {
                out("the session's own files:\n");
            }
            for (path, file) in files.iter() {
                // `"a\n"` is kept as `["a", ""]`: one line.
                let mut lines = file.content.len();
                if file.content.last().is_some_and(String::is_empty) {
                    lines -= 1;
                }
                out(&format!("{path}  ({lines} lines)\n"));
            }
            Action::Stay
        }
        "/sessions" => {
            sessions(agent).await;
            Action::Stay
        }
        "/undo" => {
            crate::rewind::undo(agent, input).await;
            Action::Stay
        }
        "/rewind" => {
            crate::rewind::rewind(agent, &rest, input).await;
            Action::Stay
        }
        "/redo" => {
            crate::rewind::redo(agent).await;
            Action::Stay
        }
        "/continue" => match agent.net.continue_cut_off() {
            Ok(Some(_)) => Action::Run,
            Ok(None) => {
                out("the last answer is complete; nothing to continue\n");
                Action::Stay
            }
            Err(e) => {
                eprintln!("error: {e}");
                Action::Stay
            }
        },
        "/approve" => {
            if let Ok(mut policy) = agent.policy.lock() {
                match rest.as_str() {
                    "" => {}
                    "all" => policy.all = true,
                    "ask" => {
                        policy.all = false;
                        policy.tools.clear();
                    }
                    tool => {
                        let names = tool_names(agent);
                        if !names.iter().any(|n| n == tool) {
                            eprintln!(
                                "error: /approve: the agent has no tool `{tool}` (its tools: {}); \
                                 nothing changed",
                                names.join(", ")
                            );
                            return Action::Stay;
                        }
                        policy.tools.insert(tool.to_string());
                    }
                }
                out(&format!("approvals: {}\n", policy.describe()));
            }
            Action::Stay
        }
        "/compact" => {
            compact(agent).await;
            Action::Stay
        }
        other => {
            out(&format!(
                "unknown command {other}; /help lists them (start a message with // to send a slash)\n"
            ));
            Action::Stay
        }
    }
}

/// The names of the tools the agent may call (its own, its modifiers').
fn tool_names(agent: &Agent) -> Vec<String> {
    let mut names: Vec<String> = agent
        .net
        .tools()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The directory the file tools work in (`--root`), when the session has
/// one.
fn workspace_root(agent: &Agent) -> Option<std::path::PathBuf> {
    let spec = lc_agent_deepagent::AgentSpec::from_network(&agent.net)?.ok()?;
    spec.backend.root().map(std::path::Path::to_path_buf)
}

/// How many entries of the workspace `/files` shows at most.
const LISTED: usize = 50;

/// `/files` with `--root`: the workspace's top level (where the agent's
/// files are), directories first.
fn workspace_listing(root: &std::path::Path) {
    let mut entries: Vec<(bool, String)> = match std::fs::read_dir(root) {
        Ok(dir) => dir
            .flatten()
            .map(|e| {
                let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                (!is_dir, e.file_name().to_string_lossy().into_owned())
            })
            .collect(),
        Err(e) => {
            eprintln!("error: /files: cannot list {}: {e}", root.display());
            return;
        }
    };
    entries.sort();
    out(&format!(
        "the workspace {} (the file tools work here; {} entries at its top):\n",
        root.display(),
        entries.len()
    ));
    for (is_file, name) in entries.iter().take(LISTED) {
        out(&format!("  {name}{}\n", if *is_file { "" } else { "/" }));
    }
    if entries.len() > LISTED {
        out(&format!("  ... and {} more\n", entries.len() - LISTED));
    }
}

/// `/model [NAME]`.
fn model(agent: &Agent, name: &str) -> Action {
    let current = current_model(agent);
    if name.is_empty() {
        out(&format!("model: {current}\n"));
        return Action::Stay;
    }
    if current == "scripted" {
        out("a scripted model (--script) has no other models\n");
        return Action::Stay;
    }
    // The session's provider (and its server), as `--provider` and the
    // blueprint chose them; another model's window is its own.
    let main = lc_agent_deepagent::AgentSpec::from_network(&agent.net)
        .and_then(Result::ok)
        .and_then(|spec| spec.models.get(lc_agent_deepagent::MAIN_MODEL).cloned());
    let spec = lc_agent_deepagent::ModelSpec {
        model: name.to_string(),
        provider: Some(
            main.as_ref()
                .and_then(|m| m.provider)
                .unwrap_or_else(lc_agent::Provider::from_env),
        ),
        context_window: None,
        ..main.unwrap_or_default()
    };
    match spec.open() {
        Ok(model) => {
            agent.net.register_model_shared(name, model);
            agent.net.set_chat_model_name(Some(name.to_string()));
            out(&format!("model: {name} (was {current})\n"));
        }
        Err(e) => out(&format!(
            "cannot use {name}: {}\n",
            crate::error::in_cli_terms(&e.to_string())
        )),
    }
    Action::Stay
}

/// The chat model's name as the user knows it (not the name the agent
/// registers it under).
fn current_model(agent: &Agent) -> String {
    agent
        .net
        .chat_model_name()
        .filter(|n| n != lc_agent_deepagent::MAIN_MODEL)
        .unwrap_or_else(|| agent.model_name.clone())
}

/// `/compact`: a summary now, and what it saves.
async fn compact(agent: &Agent) {
    use lc_agent_deepagent::CompactError;
    // A turn that failed (a message too long for the model) is taken out
    // first: the summary covers what was said, the message included.
    agent.drop_failed_turn().await;
    match agent.compact().await {
        Ok(done) => out(&format!(
            "compacted: {} messages summarized by {}; the next request: {} -> {} tokens\n",
            done.summarized,
            if done.model == lc_agent_deepagent::MAIN_MODEL {
                current_model(agent)
            } else {
                done.model
            },
            crate::console::thousands(done.tokens_before as u64),
            crate::console::thousands(done.tokens_after as u64),
        )),
        Err(CompactError::Nothing) => out("nothing to compact yet\n"),
        Err(e) => eprintln!(
            "error: /compact: {}",
            crate::error::in_cli_terms(&lc_agent::error_chain(&e))
        ),
    }
}

/// `/tokens`: the session's usage (its totals, sub-agents included).
pub(crate) fn tokens(agent: &Agent) -> String {
    let mut stats = TurnStats::default();
    for (model, counts) in &agent.net.usage().by_model {
        stats.add_counts(model, counts, &agent.screen.prices());
    }
    // How full the context is: the latest call's prompt.
    stats.last_prompt = agent
        .net
        .nodes()
        .iter()
        .rev()
        .filter(|n| n.kind() == ChatNode::KIND)
        .find_map(usage_of)
        .map(|(_, usage)| usage.prompt_tokens);
    format!("session: {}", stats.describe(agent.screen.context_window()))
}

/// `/sessions`: the ten most recent.
async fn sessions(agent: &Agent) {
    let query = ListQuery {
        limit: 10,
        ..ListQuery::default()
    };
    match agent.list.list(&query).await {
        Ok(page) => {
            for s in page.sessions {
                let here = if s.id == agent.net.id() { "*" } else { " " };
                out(&format!(
                    "{here} {}  {}  {}\n",
                    &s.id.to_string()[..8],
                    s.updated_at.format("%Y-%m-%d %H:%M"),
                    s.name
                ));
            }
            out("(/resume ID continues one)\n");
        }
        Err(e) => eprintln!("error: the sessions cannot be listed: {e}"),
    }
}
