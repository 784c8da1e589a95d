//! `lc-agent chat [--session ID]`: a conversation with the deep agent, one
//! line per turn, that resumes a saved session.
//!
//! ```text
//! lc-agent chat [--session ID] [--root DIR] [--model NAME | --script FILE.json]
//!               [--agent FILE] [--skills DIR] [--yes] [--sessions DIR | --redis URL]
//!               [--user NAME] [--memory]
//! ```
//!
//! Each line read on stdin is a turn (`/exit` or the end of stdin ends the
//! chat); the answer is printed on stdout, progress and approval questions
//! on stderr. The session is saved after every node (a checkpoint) and
//! after every turn. `--session` takes a session id or a unique prefix of
//! one. A resumed session rebuilds its agent from the blueprint stored in it
//! (workspace, skills, MCP servers, memory; see `agent.rs`); a flag given
//! on resume replaces the stored setting and a `note:` line on stderr says
//! so. A run that was interrupted or killed (nodes that have not run yet,
//! or calls waiting for approval) is finished first, without recomputing
//! what had run. Ctrl-C stops a run; the chat saves and ends with exit
//! code 130.

use std::io::{BufRead, Write};

use clap::Args;

use crate::agent::{Agent, AgentArgs};
use crate::console::show_progress;
use crate::error::{CliResult, Kind};
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

/// Whether a failed turn ends the chat (else it is reported and the chat
/// goes on: the failed node is retried by the next turn's run).
fn ends_chat(kind: Kind) -> bool {
    matches!(kind, Kind::AwaitingApproval | Kind::Interrupted)
}

/// Runs `lc-agent chat`.
pub(crate) async fn run(args: ChatArgs) -> CliResult {
    let agent = Agent::open(&args.agent, args.session.as_deref(), "chat").await?;
    let interrupt = Interrupt::watch();
    eprintln!("session {} (type /exit to end)", agent.net.id());
    let screen = show_progress(&agent.net);
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut outcome = Ok(());
    if args.session.is_some() && !agent.net.pending().is_empty() {
        eprintln!("finishing the interrupted run");
        match agent.finish(&mut lines, &interrupt).await {
            Ok(answer) => screen.answer(&answer),
            Err(e) if ends_chat(e.kind) => outcome = Err(e),
            Err(e) => eprintln!("error: {}", e.message),
        }
    }
    while outcome.is_ok() {
        eprint!("> ");
        let _ = std::io::stderr().flush();
        let Some(Ok(line)) = lines.next() else {
            break;
        };
        let line = line.trim().to_string();
        if line == "/exit" {
            break;
        }
        if line.is_empty() {
            continue;
        }
        match agent.turn(&line, &mut lines, &interrupt).await {
            Ok(answer) => screen.answer(&answer),
            Err(e) if ends_chat(e.kind) => {
                outcome = Err(e);
                break;
            }
            Err(e) => eprintln!("error: {}", e.message),
        }
        if let Err(e) = agent.save().await {
            eprintln!("error: {}", e.message);
        }
    }
    agent.close().await?;
    outcome
}
