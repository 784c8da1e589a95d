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
//! after every turn. A resumed session rebuilds its agent from the
//! blueprint stored in it (`AgentSpec`) when it has one, else from the
//! options given; a run that was interrupted or killed (nodes that have not
//! run yet, or calls waiting for approval) is finished first, without
//! recomputing what had run. Ctrl-C stops a run; the chat saves and ends
//! with exit code 130.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use clap::Args;
use lc_agent_modifiers::spec::AgentSpec;

use crate::interrupt::{Interrupt, INTERRUPTED};
use crate::run::{
    agent, attach_mcp, checkpoint, finish, flush_memory, mark_user, model, sessions, show_progress,
    turn, usage, with_memory, AgentArgs, Failure,
};

/// `lc-agent chat` arguments.
#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The session to resume (its full id).
    #[arg(long)]
    pub session: Option<String>,
    /// The agent, its model and where the session goes.
    #[command(flatten)]
    pub agent: AgentArgs,
}

async fn chat(args: ChatArgs) -> Result<(), Failure> {
    let main = model(&args.agent)?;
    let list = sessions(&args.agent).await?;
    let (net, mcp, memory) = match &args.session {
        Some(id) => {
            let id = id
                .parse()
                .map_err(|e| usage(format!("`{id}` is not a session id: {e}")))?;
            let net = list.load(id).await.map_err(|e| (1, e.to_string()))?;
            let builder = match AgentSpec::from_network(&net) {
                Some(spec) => {
                    let spec = spec.map_err(|e| (1, e.to_string()))?;
                    let main = main.clone();
                    spec.builder(move |_, _| Ok(main.clone()))
                        .map_err(|e| (1, e.to_string()))?
                }
                None => agent(&args.agent, main)?.0,
            };
            let builder = with_memory(builder, &args.agent)?;
            builder.attach(&net).map_err(|e| (1, e.to_string()))?;
            mark_user(&net, &args.agent);
            let spec = AgentSpec::from_network(&net).and_then(Result::ok);
            let mcp = attach_mcp(&net, &args.agent, spec.as_ref()).await?;
            (net, mcp, builder.memory_modifier().cloned())
        }
        None => {
            let (builder, spec) = agent(&args.agent, main)?;
            let net = builder.build().map_err(|e| usage(e.to_string()))?;
            mark_user(&net, &args.agent);
            if let Some(spec) = &spec {
                spec.store_in(&net).map_err(|e| usage(e.to_string()))?;
            }
            net.set_name("chat");
            let mcp = attach_mcp(&net, &args.agent, spec.as_ref()).await?;
            (net, mcp, builder.memory_modifier().cloned())
        }
    };
    checkpoint(&net, &list)?;
    let interrupt = Interrupt::watch();
    eprintln!("session {} (type /exit to end)", net.id());
    let screen = show_progress(&net);
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut outcome = Ok(());
    if args.session.is_some() && !net.pending().is_empty() {
        eprintln!("finishing the interrupted run");
        match finish(&net, args.agent.yes, &mut lines, &interrupt).await {
            Ok(answer) => screen.answer(&answer),
            Err((code, message)) if code == 3 || code == INTERRUPTED => {
                outcome = Err((code, message));
            }
            Err((_, message)) => eprintln!("error: {message}"),
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
        match turn(&net, &line, args.agent.yes, &mut lines, &interrupt).await {
            Ok(answer) => screen.answer(&answer),
            Err((code, message)) if code == 3 || code == INTERRUPTED => {
                outcome = Err((code, message));
                break;
            }
            // A failed turn is reported; the chat goes on (the failed
            // node is retried by the next turn's run).
            Err((_, message)) => eprintln!("error: {message}"),
        }
        if let Err(e) = list.save(&net).await {
            eprintln!("error: the session could not be saved: {e}");
        }
    }
    if let Some(mcp) = mcp {
        mcp.disconnect().await;
    }
    flush_memory(memory).await;
    list.save(&net).await.map_err(|e| (1, e.to_string()))?;
    eprintln!("session {} saved", net.id());
    outcome
}

/// Runs `lc-agent chat`.
pub fn run(args: ChatArgs) -> ExitCode {
    crate::run::block_on(chat(args))
}
