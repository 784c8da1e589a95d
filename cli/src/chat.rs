//! `lc-agent chat [--session ID]`: a conversation with the deep agent that
//! resumes a saved session.
//!
//! ```text
//! lc-agent chat [--session ID] [--root DIR] [--model NAME | --script FILE.json]
//!               [--agent FILE] [--skills DIR] [--yes] [--sessions DIR | --redis URL]
//!               [--user NAME] [--memory] [--no-color] [-v | -q]
//! ```
//!
//! **On a terminal** (stdin and stderr are one) the chat is interactive:
//! line editing and history per user (`input.rs`: Up/Down, Ctrl-R, Tab
//! completes commands and paths under `--root`, Alt-Enter or a trailing
//! `\` for multi-line input), slash commands that never reach the model
//! (`/help`, `/model`, `/tokens`, `/todos`, `/files`, `/sessions`,
//! `/resume`, `/new`, `/compact`, `/rewind`, `/undo`, `/continue`, `/approve`,
//! `/exit`; `commands.rs`), Markdown answers, a spinner and a footer per
//! turn (`console.rs`), approvals with a diff preview (`approve.rs`).
//! Ctrl-C cancels the turn in flight (what ran is saved, the prompt
//! returns); Ctrl-C twice or Ctrl-D quits and prints
//! `lc-agent chat --session <id>`. Resuming prints the last turns.
//!
//! **Piped** (scripts, tests), each line read on stdin is a turn (`/exit`
//! or the end of stdin ends the chat); the answer is printed on stdout,
//! progress and approval questions on stderr — exactly as before; the
//! slash commands work too (their output is on stdout). Ctrl-C stops a
//! run; the chat saves and ends with exit code 130.
//!
//! The session is saved after every node (a checkpoint) and after every
//! turn; a new session the model never answered is not kept. A new
//! session is titled by its first message (`sessions list`, the web
//! page). `--session` takes a session id or a unique prefix of one. A
//! resumed session rebuilds its agent from the blueprint stored in it
//! (workspace, skills, MCP servers, memory; see `agent.rs`); a flag given
//! on resume replaces the stored setting and a `note:` line on stderr says
//! so. A run that was interrupted or killed (nodes that have not run yet,
//! or calls waiting for approval) is finished first, without recomputing
//! what had run. An answer cut off at the model's output limit is a
//! warning that says to type `/continue`; an empty answer is a warning.
//! A message too long for the model's context window fails the turn; the
//! failed call is taken out (sent again it would fail again) and the
//! error says the way on: `/undo` takes the message back, `/compact`
//! summarizes the conversation with it.

use std::io::{BufRead, IsTerminal};
use std::sync::{Arc, Mutex};

use clap::Args;
use lc_agent::Message;

use crate::agent::{Agent, AgentArgs};
use crate::commands::{self, Action};
use crate::console::{out, paint, render_markdown};
use crate::error::{CliError, CliResult, Kind};
use crate::input::{Editor, Input, Piped, Read};
use crate::interrupt::Interrupt;

/// `lc-agent chat` arguments.
#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    /// The session to resume (its id, or a unique prefix of it); its agent
    /// comes from the session, and flags given replace those settings.
    #[arg(long)]
    pub(crate) session: Option<String>,
    /// The agent, its model and where the session goes.
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
}

/// Runs `lc-agent chat`.
pub(crate) async fn run(args: ChatArgs) -> CliResult {
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let mut agent = open(&args.agent, args.session.as_deref(), interactive).await?;
    if interactive {
        let root = args.agent.workspace.root.clone();
        let mut editor = Editor::new(&args.agent.user, root, commands::COMMANDS)
            .map_err(|e| CliError::failed(format!("the terminal cannot be edited: {e}")))?;
        let resume = Arc::new(Mutex::new(resume_line(&agent)));
        let interrupt = Interrupt::watch_turns(resume.clone());
        banner(&agent, args.session.is_some());
        let outcome = converse(&args, &mut agent, &mut editor, &interrupt, &resume).await;
        let id = agent.net.id().to_string();
        if agent.close().await? {
            eprintln!("{}", resume_line_of(&id));
        }
        return outcome;
    }
    let interrupt = Interrupt::watch();
    eprintln!("session {} (type /exit to end)", agent.net.id());
    let stdin = std::io::stdin();
    let mut input = Piped(stdin.lock().lines());
    let resume = Arc::new(Mutex::new(String::new()));
    let outcome = converse(&args, &mut agent, &mut input, &interrupt, &resume).await;
    agent.close().await?;
    outcome
}

async fn open(args: &AgentArgs, session: Option<&str>, interactive: bool) -> CliResult<Agent> {
    let agent = Agent::open(args, session).await?;
    agent.screen.set_continue_hint(if interactive {
        "; type /continue to go on"
    } else {
        "; send /continue to go on"
    });
    Ok(agent)
}

/// `lc-agent chat --session <id>`.
fn resume_line(agent: &Agent) -> String {
    resume_line_of(&agent.net.id().to_string())
}

fn resume_line_of(id: &str) -> String {
    format!("to resume: lc-agent chat --session {id}")
}

/// The first lines of an interactive chat: the session, the model, the
/// last turns of a resumed session.
fn banner(agent: &Agent, resumed: bool) {
    let color = agent.screen.look().color;
    let model = &agent.model_name;
    let id = agent.net.id().to_string();
    eprintln!(
        "{} · session {} · model {} · /help lists the commands",
        paint(color, "1", "lc-agent chat"),
        &id[..8],
        model
    );
    if resumed {
        let name = agent.net.name();
        if !name.is_empty() {
            eprintln!("{}", paint(color, "2", &format!("resuming “{name}”")));
        }
        last_turns(agent, 3);
    }
}

/// Prints the last `turns` exchanges of the conversation.
fn last_turns(agent: &Agent, turns: usize) {
    let color = agent.screen.look().color;
    let messages: Vec<Message> = agent
        .net
        .history()
        .to_vec()
        .into_iter()
        .filter(|m| {
            matches!(m, Message::Human { .. })
                || matches!(m, Message::Ai { content, .. } if !content.trim().is_empty())
        })
        .cloned()
        .collect();
    let humans: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::Human { .. }))
        .map(|(i, _)| i)
        .collect();
    let start = humans.len().checked_sub(turns).map_or(0, |i| humans[i]);
    for m in &messages[start..] {
        match m {
            Message::Human { content, .. } => {
                eprintln!("{} {}", paint(color, "1;36", "›"), content)
            }
            other => {
                let text = other.text();
                if agent.screen.look().markdown {
                    out(&render_markdown(text));
                } else {
                    out(&format!("{text}\n"));
                }
            }
        }
    }
}

/// The turn loop: lines become turns or commands until the input ends,
/// `/exit`, or (piped) a turn that ends the chat.
async fn converse(
    args: &ChatArgs,
    agent: &mut Agent,
    input: &mut dyn Input,
    interrupt: &Interrupt,
    resume: &Mutex<String>,
) -> CliResult {
    let interactive = input.interactive();
    if args.session.is_some() && !agent.net.pending().is_empty() {
        eprintln!("finishing the interrupted run");
        step(agent, None, input, interrupt).await?;
    }
    let prompt = if interactive {
        paint(agent.screen.look().color, "1;36", "› ")
    } else {
        "> ".to_string()
    };
    let mut ctrl_c = false;
    loop {
        let line = match input.read(&prompt) {
            Read::Line(line) => line,
            Read::Interrupted if ctrl_c => break,
            Read::Interrupted => {
                ctrl_c = true;
                eprintln!("(Ctrl-C again or Ctrl-D quits)");
                continue;
            }
            Read::End => break,
        };
        ctrl_c = false;
        let line = line.trim().to_string();
        if line.is_empty() {
            continue;
        }
        input.remember(&line);
        let text = if commands::is_command(&line) {
            match commands::run(agent, &line, input).await {
                Action::Stay => continue,
                Action::Quit => break,
                Action::Run => None,
                Action::Send(text) => Some(text),
                Action::Switch(session) => {
                    let next = open(&args.agent, session.as_deref(), interactive).await;
                    match next {
                        Ok(next) => {
                            let old = std::mem::replace(agent, next);
                            old.close().await?;
                            if let Ok(mut r) = resume.lock() {
                                *r = resume_line(agent);
                            }
                            if interactive {
                                banner(agent, session.is_some());
                            } else {
                                eprintln!("session {}", agent.net.id());
                            }
                        }
                        Err(e) => eprintln!("error: {}", e.message),
                    }
                    continue;
                }
            }
        } else {
            Some(line)
        };
        step(agent, text.as_deref(), input, interrupt).await?;
        if let Err(e) = agent.save().await {
            eprintln!("error: {}", e.message);
        }
    }
    Ok(())
}

/// One turn (`text`), or what is pending (`None`); reports how it went.
/// `Err` only for what ends a piped chat (a call left waiting for
/// approval, Ctrl-C).
async fn step(
    agent: &Agent,
    text: Option<&str>,
    input: &mut dyn Input,
    interrupt: &Interrupt,
) -> CliResult {
    let interactive = input.interactive();
    if interactive && text.is_some() && !agent.net.held().is_empty() {
        // A call left waiting for approval is asked again first.
        if let Err(e) = agent.finish(input, interrupt).await {
            return report(agent, e, interactive, interrupt).await;
        }
    }
    let outcome = match text {
        Some(text) => agent.turn(text, input, interrupt).await,
        None => agent.finish(input, interrupt).await,
    };
    match outcome {
        Ok(answer) => {
            agent.screen.answer(&answer);
            agent.write_title_if_due().await;
            Ok(())
        }
        Err(e) => report(agent, e, interactive, interrupt).await,
    }
}

/// Says how a failed turn ended; `Err` when it ends a piped chat.
async fn report(agent: &Agent, e: CliError, interactive: bool, interrupt: &Interrupt) -> CliResult {
    match (e.kind, interactive) {
        (Kind::Interrupted, true) => {
            agent.cancel_turn().await;
            interrupt.reset();
            eprintln!("turn cancelled; the session keeps what ran");
            Ok(())
        }
        (Kind::AwaitingApproval, true) => {
            eprintln!("the call waits for approval; it is asked again with your next message");
            Ok(())
        }
        (Kind::AwaitingApproval | Kind::Interrupted, false) => Err(e),
        _ => {
            eprintln!("error: {}", crate::error::in_cli_terms(&e.message));
            if e.is_context_overflow() {
                // Sent again it fails again: the failed call is taken out
                // (the message stays), and the way on is said.
                agent.cancel_turn().await;
                eprintln!(
                    "the way out: /undo takes the message back (then send a shorter one, or \
                     a file's path instead of its text), or /compact summarizes the \
                     conversation, the message included"
                );
            }
            Ok(())
        }
    }
}
