//! `lc-agent run "TASK"`: one task for a deep agent, from a terminal.
//!
//! ```text
//! lc-agent run "Rename foo to bar" [--root DIR [--shell]] [--model NAME | --script FILE.json]
//!              [--agent FILE.toml] [--mcp FILE.json] [--skills DIR] [--yes]
//!              [--sessions DIR | --redis URL] [--user NAME] [--memory]
//!              [--record FILE.jsonl | --replay FILE.jsonl [--replay-match PARTS]]
//! ```
//!
//! `--record FILE` writes every request to the model and its answer to a
//! cassette (JSON lines, secrets erased); `--replay FILE` answers from it
//! instead of a model (no server, no key), and fails naming what differs
//! when a request is not the recorded one (the same flags on `chat` and
//! `serve`).
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
//! The session keeps the agent's blueprint (workspace, skills, MCP servers,
//! memory; see `agent.rs`), so `lc-agent chat --session ID` continues with
//! the same agent without repeating the flags.
//!
//! On a terminal the answer is rendered Markdown, a spinner shows until
//! the first token and a footer gives the tokens, cost and context of the
//! run (`console.rs`); piped, stdout is the plain text it always was. An
//! answer cut off at the model's output limit is a warning that says how
//! to continue it (`lc-agent chat --session ID`, then `/continue`).
//!
//! Exit codes (`error.rs`): 0 the run finished; 1 it failed (the message
//! says why; the session is saved), or the model's final answer was empty
//! (a warning and an error line say so); 2 bad usage; 3 a call waits for
//! approval and stdin ended (the session is saved with the pending call);
//! 130 Ctrl-C stopped it (the session is saved with what ran).

use std::io::BufRead;

use clap::Args;

use crate::agent::{Agent, AgentArgs};
use crate::error::{CliError, CliResult};
use crate::input::Piped;
use crate::interrupt::Interrupt;

/// `lc-agent run` arguments.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The task.
    pub(crate) task: String,
    /// The agent, its model and where the session goes.
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
}

/// Runs `lc-agent run`: the task, then the answer on stdout unless it was
/// streamed there already.
pub(crate) async fn run(args: RunArgs) -> CliResult {
    let agent = Agent::open(&args.agent, None).await?;
    agent.screen.set_continue_hint(format!(
        "; `lc-agent chat --session {}` then /continue goes on",
        agent.net.id()
    ));
    let interrupt = Interrupt::watch();
    let stdin = std::io::stdin();
    let mut input = Piped(stdin.lock().lines());
    let outcome = agent.turn(&args.task, &mut input, &interrupt).await;
    let empty = outcome.is_ok() && agent.answered_empty();
    if outcome.is_ok() && !empty {
        agent.write_title_if_due().await;
    }
    let screen = agent.screen.clone();
    let id = agent.net.id();
    if let Err(e) = agent.close().await {
        eprintln!("error: {}", e.message);
    }
    let answer = outcome?;
    if empty {
        return Err(CliError::failed(format!(
            "the model's answer was empty (no text, no tool call); \
             `lc-agent chat --session {id}` asks again"
        )));
    }
    screen.answer(&answer);
    Ok(())
}
