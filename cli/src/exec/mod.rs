//! `lc-agent exec`: one prompt, run to completion with no terminal UI,
//! for scripts, CI and evaluation harnesses.
//!
//! ```text
//! lc-agent exec [PROMPT | -] [--json] [--output-schema FILE] [run's agent flags]
//! lc-agent exec resume SESSION [PROMPT | -] [--fork] [--rewind-to NODE] [--json] ...
//! ```
//!
//! The prompt is the argument, or stdin when it is `-` or absent and stdin
//! is not a terminal. `exec resume SESSION` continues a saved session (an
//! id or a unique prefix): with a prompt, as a new turn; without one, it
//! runs what the session had not run (a call left waiting, an interrupted
//! run). `--fork` continues a copy instead (a new session forked at the
//! original's current leaf; the original is left as it was).
//!
//! Nothing asks: a call that needs approval is decided by the session's
//! permission mode (`--mode`), its rules and `--yes`; one they leave
//! waiting ends the run with an `approval_request` item whose status is
//! `unanswered`, `turn.failed`, and exit code 3 (the session keeps the
//! call; `exec resume ID --yes` or `--mode` runs it).
//!
//! Without `--json`, progress lines go to stderr and the final answer to
//! stdout; with `--json`, stdout is the event stream and nothing else
//! (`events.rs`; warnings and notes stay on stderr). `--output-schema`:
//! see `output_schema.rs`.
//!
//! Exit codes: 0 answered; 1 failed (the model, a tool, an empty answer;
//! the session is saved); 2 bad usage; 3 a call needs an approval nobody
//! can give; 4 the answer is not valid against `--output-schema` after
//! the retries; 130 Ctrl-C.
//!
//! The stream is made from the run's [`RunEvent`]s (the one event
//! protocol), read off the network's events by a task that writes them in
//! order with exec's own (thread, turn, decisions).

mod events;
mod output_schema;

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use lc_agent::{
    Events, NetworkEvent, NetworkNode, NodeId, OutputSchema, OutputSchemaExt, RunnableNetwork,
    TimeTravelExt, UsageExt, UsageTotals, CHAT_STEP,
};
use lc_agent_deepagent::{decide, pending_approvals, Decision};
use lc_agent_server::{PendingCall, RunDone, RunErrorEvent, RunEvent, RunFailure, RunStatus};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::agent::{Agent, AgentArgs};
use crate::args::find_session;
use crate::console::{out, Look};
use crate::error::in_user_terms;
use crate::error::{CliError, CliResult, Kind};
use crate::interrupt::Interrupt;
use events::{ApprovalStatus, ExecEvent, ExecStream, FORMAT};

/// `lc-agent exec` arguments.
#[derive(Debug, Args)]
#[command(
    override_usage = "lc-agent exec [OPTIONS] [PROMPT | -]\n       \
                      lc-agent exec resume SESSION [PROMPT | -] [--fork] [OPTIONS]",
    after_help = "Exit codes: 0 answered; 1 failed (the model, a tool, an empty answer; the \
                  session is saved); 2 bad usage; 3 a call needs an approval that the mode, \
                  the rules and --yes do not give (nothing is asked; the session keeps the \
                  call); 4 the answer is not valid against --output-schema after 3 answers; \
                  130 Ctrl-C.\n\nWith --json, stdout is one JSON event per line (format \
                  lc-agent-exec/1: thread.started, turn.started, item.started/updated/completed, \
                  turn.completed with usage, turn.failed, error); see the README."
)]
pub(crate) struct ExecArgs {
    /// The prompt (`-` or none: read from stdin); or `resume SESSION
    /// [PROMPT]` to continue a saved session.
    #[arg(value_name = "PROMPT", num_args = 0..)]
    words: Vec<String>,
    /// Print the run as JSON lines on stdout (one event per line).
    #[arg(long)]
    json: bool,
    /// The final answer must be a JSON value valid against this JSON
    /// Schema (asked again with the errors, at most 3 answers).
    #[arg(long, value_name = "FILE")]
    output_schema: Option<PathBuf>,
    /// With `resume`: continue a copy of the session (a fork at its
    /// current leaf), leaving the original as it was.
    #[arg(long)]
    fork: bool,
    /// With `resume`: first rewind the session to this node (an id or
    /// unique prefix, nN, turn:N or start), the conversation and the files
    /// (what the shell changed too); a `rewind` item says what came back.
    #[arg(long, value_name = "NODE")]
    rewind_to: Option<String>,
    /// The agent, its model and where the session goes (as `run`).
    #[command(flatten)]
    agent: AgentArgs,
}

/// What the words name: the session to resume and the prompt.
fn words(words: &[String]) -> CliResult<(Option<&str>, Option<&str>)> {
    match words {
        [] => Ok((None, None)),
        [resume, rest @ ..] if resume == "resume" => match rest {
            [] => Err(CliError::usage("exec resume: which SESSION?")),
            [session] => Ok((Some(session), None)),
            [session, prompt] => Ok((Some(session), Some(prompt))),
            _ => Err(CliError::usage(
                "exec resume SESSION [PROMPT]: one prompt (quote it)",
            )),
        },
        [prompt] => Ok((None, Some(prompt))),
        _ => Err(CliError::usage("exec PROMPT: one prompt (quote it)")),
    }
}

/// The prompt: the argument, or stdin (`-`, or none and stdin not a
/// terminal). `None`: no prompt (allowed with `resume`).
fn prompt(arg: Option<&str>, resuming: bool) -> CliResult<Option<String>> {
    let stdin = std::io::stdin();
    let from_stdin = match arg {
        Some("-") => true,
        // An empty (or blank) prompt is no prompt, not a message to send.
        Some(text) if text.trim().is_empty() => {
            return Err(CliError::usage(
                "exec: the prompt is empty (give the message to send, or `-` to read it on stdin)",
            ));
        }
        Some(text) => return Ok(Some(text.to_string())),
        None => !stdin.is_terminal(),
    };
    if !from_stdin {
        return if resuming {
            Ok(None)
        } else {
            Err(CliError::usage(
                "exec: no prompt (give it as an argument, or on stdin)",
            ))
        };
    }
    let mut text = String::new();
    stdin
        .lock()
        .read_to_string(&mut text)
        .map_err(|e| CliError::usage(format!("exec: cannot read the prompt on stdin: {e}")))?;
    let text = text.trim();
    match (text.is_empty(), resuming) {
        (false, _) => Ok(Some(text.to_string())),
        (true, true) => Ok(None),
        (true, false) => Err(CliError::usage(
            "exec: no prompt (no argument, and stdin is empty)",
        )),
    }
}

/// Runs `lc-agent exec`.
pub(crate) async fn run(args: ExecArgs) -> CliResult {
    // Its stdin is not a person's: an untrusted project is refused, not asked about.
    crate::trust::no_questions();
    let (resume, prompt_arg) = words(&args.words)?;
    if args.fork && resume.is_none() {
        return Err(CliError::usage(
            "--fork continues a copy of a saved session: exec resume SESSION --fork",
        ));
    }
    let schema = args
        .output_schema
        .as_deref()
        .map(output_schema::read)
        .transpose()?;
    if args.rewind_to.is_some() && resume.is_none() {
        return Err(CliError::usage(
            "--rewind-to rewinds a saved session: exec resume SESSION --rewind-to NODE",
        ));
    }
    let prompt = prompt(prompt_arg, resume.is_some())?;
    let (resume, forked_from) = match (resume, args.fork) {
        (Some(session), true) => {
            let (fork, from) = fork(&args.agent, session).await?;
            (Some(fork), Some(from))
        }
        (session, _) => (session.map(str::to_string), None),
    };
    let look = Look {
        headless: true,
        ..Look::default()
    };
    let mut agent = Agent::open_with(&args.agent, resume.as_deref(), Some(look)).await?;
    // The stream names the session: it is kept however the turn ends, so
    // `exec resume ID` finds it.
    if args.json {
        agent.keep_always();
    }
    let feed = Feed::start(&agent.net, args.json);
    feed.send(Fed::Exec(ExecEvent::ThreadStarted {
        thread_id: agent.net.id().to_string(),
        format: FORMAT,
        forked_from,
    }));
    for warning in crate::trust::take_notices() {
        feed.send(Fed::Warning(warning));
    }
    if let Some(to) = &args.rewind_to {
        let node = crate::fork::find_target(&agent.net, to)
            .map_err(|e| CliError::usage(format!("--rewind-to: {e}")))?;
        let report = lc_agent_filesystem::rewind(
            &agent.net,
            agent.history.as_ref(),
            &*agent.backend,
            node,
            lc_agent_filesystem::RewindWhat::Both,
        )
        .await
        .map_err(|e| CliError::failed(format!("the rewind did not happen: {e}")))?;
        agent.save().await?;
        feed.send(Fed::Rewound(report));
    }
    let interrupt = Interrupt::watch();
    let outcome = drive(&agent, &feed, prompt, schema.as_ref(), &interrupt).await;
    feed.close().await;
    if outcome.is_ok() {
        agent.write_title_if_due().await;
    }
    if let Err(e) = agent.close().await {
        eprintln!("error: {}", e.message);
    }
    let answer = outcome?;
    if !args.json {
        out(&format!("{answer}\n"));
    }
    Ok(())
}

/// Forks `session` at its current leaf and saves the fork: its id and
/// the original's.
async fn fork(args: &AgentArgs, session: &str) -> CliResult<(String, String)> {
    let list = args.store.open(&args.user)?;
    let id = find_session(list.as_ref(), session).await?;
    let net = list
        .load(id)
        .await
        .map_err(|e| CliError::failed(e.to_string()))?;
    let leaf = net
        .current_leaf()
        .ok_or_else(|| CliError::failed(format!("session {id} is empty: nothing to fork")))?;
    let forked = net
        .fork_at(leaf.id())
        .map_err(|e| CliError::failed(e.to_string()))?;
    list.save(&forked)
        .await
        .map_err(|e| CliError::failed(format!("the fork could not be saved: {e}")))?;
    Ok((forked.id().to_string(), id.to_string()))
}

/// The turn, with `--output-schema` as the session's `chat` step schema
/// for this run (see `output_schema.rs`).
async fn drive(
    agent: &Agent,
    feed: &Feed,
    prompt: Option<String>,
    schema: Option<&OutputSchema>,
    interrupt: &Interrupt,
) -> CliResult<String> {
    let net = &agent.net;
    let before = net.output_schema_for_step(CHAT_STEP);
    if let Some(schema) = schema {
        net.set_output_schema(CHAT_STEP, Some(schema.clone()));
    }
    let result = turn(agent, feed, prompt, interrupt, Uuid::new_v4()).await;
    if schema.is_some() {
        net.set_output_schema(CHAT_STEP, before);
    }
    if let Err(e) = &result
        && e.kind == Kind::SchemaMismatch
    {
        feed.send(Fed::Exec(ExecEvent::Error {
            message: e.message.clone(),
        }));
    }
    result
}

/// One turn: `text` (if any) joins the session, the session runs until it
/// answers; `turn.completed` or `turn.failed` says how it ended.
async fn turn(
    agent: &Agent,
    feed: &Feed,
    text: Option<String>,
    interrupt: &Interrupt,
    run: Uuid,
) -> CliResult<String> {
    let net = &agent.net;
    feed.send(Fed::Exec(ExecEvent::TurnStarted {}));
    let before = net.usage();
    let result = match &text {
        Some(text) => match agent.attachments(text).await {
            Ok(parts) => agent.begin_turn(text, parts),
            Err(e) => Err(e),
        },
        None => Ok(false),
    };
    let result = match result {
        Ok(first) => run_until_answered(agent, feed, interrupt)
            .await
            .map(|answer| (first, answer)),
        Err(e) => Err(e),
    };
    let usage = usage_since(net, &before);
    let result = result.and_then(|(first, answer)| {
        if agent.answered_empty() || answer.is_empty() {
            Err(CliError::failed(format!(
                "the model's answer was empty (no text, no tool call); \
                 `lc-agent exec resume {} PROMPT` asks again",
                net.id()
            )))
        } else {
            if text.is_some() {
                agent.answered(first);
            }
            Ok(answer)
        }
    });
    match &result {
        Ok(answer) => feed.send(Fed::Run(RunEvent::Done(RunDone {
            answer: answer.clone(),
            revision: None,
            stopped: false,
            pending_approvals: Vec::new(),
            run,
            status: RunStatus::Done,
            usage: Some(usage),
            cut_off: false,
        }))),
        Err(e) => feed.send(Fed::Run(RunEvent::Error(RunErrorEvent {
            failure: RunFailure {
                message: e.message.clone(),
                status: 500,
            },
            revision: None,
            run,
            usage: Some(usage),
        }))),
    }
    result
}

/// Invokes until the session answers; calls waiting for approval are
/// approved by `--yes` or end the turn (nobody is asked).
async fn run_until_answered(
    agent: &Agent,
    feed: &Feed,
    interrupt: &Interrupt,
) -> CliResult<String> {
    let net = &agent.net;
    crate::mode::warn_if_bypass(net);
    loop {
        let invoked = tokio::select! {
            invoked = net.invoke() => invoked,
            () = interrupt.interrupted() => {
                return Err(CliError::new(
                    Kind::Interrupted,
                    "interrupted; the session keeps what ran",
                ));
            }
        };
        let reply = invoked.map_err(|e| {
            output_schema::mismatch(&e, net)
                .unwrap_or_else(|| CliError::failed(in_user_terms(&e)))
                .caused_by(e)
        })?;
        if net.held().is_empty() {
            return Ok(reply.text().to_string());
        }
        let pending = pending_approvals(net);
        feed.send(Fed::Run(RunEvent::ApprovalNeeded {
            pending: pending.iter().map(PendingCall::from).collect(),
        }));
        let mut waiting = Vec::new();
        for call in &pending {
            let name = &call.tool_call.name;
            let allowed = agent.policy.lock().map(|p| p.allows(name)).unwrap_or(false);
            if allowed {
                decide(net, call.node_id, Decision::Approve)
                    .map_err(|e| CliError::failed(e.to_string()))?;
                feed.send(Fed::Decided(call.node_id, ApprovalStatus::Approved));
            } else {
                feed.send(Fed::Decided(call.node_id, ApprovalStatus::Unanswered));
                waiting.push(name.clone());
            }
        }
        if !waiting.is_empty() {
            return Err(CliError::new(
                Kind::AwaitingApproval,
                format!(
                    "{} needs an approval that the permission mode, the rules and --yes do \
                     not give, and exec asks nobody; the session keeps the call \
                     (`lc-agent exec resume {} --yes`, or with --mode, runs it)",
                    waiting.join(", "),
                    net.id()
                ),
            ));
        }
    }
}

/// What the session used since `before`, as run events carry it, with
/// its cost at the session's prices (`cost_usd`, when its models have
/// one).
fn usage_since(net: &RunnableNetwork, before: &UsageTotals) -> serde_json::Value {
    let since = net.usage().since(before);
    let cost = lc_agent_deepagent::session_prices(net).cost(&since).usd;
    let mut usage = serde_json::to_value(since.all).unwrap_or_default();
    if let (Some(usd), Some(map)) = (cost, usage.as_object_mut()) {
        map.insert("cost_usd".into(), usd.into());
    }
    usage
}

/// Whether `event` is a tool call's start or result.
fn is_tool_call(event: &RunEvent) -> bool {
    match event {
        RunEvent::ToolCallStarted { .. } => true,
        RunEvent::NodeFinished {
            message: Some(message),
            ..
        } => matches!(message, lc_agent::Message::Tool { .. }),
        _ => false,
    }
}

/// What the writer task gets, in order.
enum Fed {
    /// An event of the network (made a [`RunEvent`] by the task).
    Network(NetworkEvent),
    /// An event of a sub-agent's network, by its path of `network` nodes
    /// from the session's (only its tool calls are written).
    Sub(Vec<NodeId>, NetworkEvent),
    /// A run event exec made (approvals needed, the turn's end).
    Run(RunEvent),
    /// An event of exec's own.
    Exec(ExecEvent),
    /// A decision on a call waiting for approval.
    Decided(NodeId, ApprovalStatus),
    /// A warning said on stderr, as an item of the stream too.
    Warning(String),
    /// A rewind done before the turn.
    Rewound(lc_agent_filesystem::RewindReport),
    /// Everything before was written.
    Flush(oneshot::Sender<()>),
}

/// The writer task's inbox: the network's events and exec's, in order.
struct Feed {
    tx: mpsc::UnboundedSender<Fed>,
    task: tokio::task::JoinHandle<()>,
    /// The session, which the event callbacks reach weakly (they live in
    /// it: a strong hold would keep it forever).
    _net: Arc<RunnableNetwork>,
}

/// The network at `path` (`network` node ids, one a level) below `net`.
fn sub_network(net: &RunnableNetwork, path: &[NodeId]) -> Option<RunnableNetwork> {
    let mut at = net.clone();
    for id in path {
        at = at
            .node(*id)?
            .downcast::<NetworkNode>()
            .map(|n| n.network().clone())?;
    }
    Some(at)
}

/// Queues the events of the network at `path` below `session` (the
/// session's own when `path` is empty), and watches every sub-agent it
/// starts the same way, as it is added (before it runs).
fn watch(session: &Arc<RunnableNetwork>, path: Vec<NodeId>, tx: mpsc::UnboundedSender<Fed>) {
    let Some(net) = sub_network(session, &path) else {
        return;
    };
    let weak = Arc::downgrade(session);
    net.on_event(move |event| {
        // The callback only queues: it may run with the graph locked.
        if let NetworkEvent::NodeAdded { node_id } = event
            && let Some(session) = weak.upgrade()
        {
            let mut below = path.clone();
            below.push(*node_id);
            let is_sub_agent = sub_network(&session, &path)
                .and_then(|net| net.node(*node_id))
                .is_some_and(|n| n.downcast::<NetworkNode>().is_some());
            if is_sub_agent {
                watch(&session, below, tx.clone());
            }
        }
        let fed = if path.is_empty() {
            Fed::Network(event.clone())
        } else {
            Fed::Sub(path.clone(), event.clone())
        };
        let _ = tx.send(fed);
    });
}

impl Feed {
    /// Starts the writer for `net`'s events.
    fn start(net: &RunnableNetwork, json: bool) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Fed>();
        let session = Arc::new(net.clone());
        watch(&session, Vec::new(), tx.clone());
        let net = net.clone();
        let task = tokio::spawn(async move {
            let mut stream = ExecStream::new(json);
            while let Some(fed) = rx.recv().await {
                match fed {
                    Fed::Network(event) => {
                        if let Some(event) = RunEvent::from_network(&net, &event) {
                            stream.on_run_event(&net, &event);
                        }
                    }
                    // A sub-agent's tool calls (its answer is its task's result).
                    Fed::Sub(path, event) => {
                        if let Some(sub) = sub_network(&net, &path)
                            && let Some(event) = RunEvent::from_network(&sub, &event)
                            && is_tool_call(&event)
                        {
                            stream.on_run_event(&sub, &event);
                        }
                    }
                    Fed::Run(event) => stream.on_run_event(&net, &event),
                    Fed::Exec(event) => stream.emit(event),
                    Fed::Decided(node_id, status) => stream.decided(node_id, status),
                    Fed::Warning(message) => stream.warning(message),
                    Fed::Rewound(report) => stream.rewound(report),
                    Fed::Flush(done) => {
                        let _ = done.send(());
                        break;
                    }
                }
            }
        });
        Self {
            tx,
            task,
            _net: session,
        }
    }

    fn send(&self, fed: Fed) {
        let _ = self.tx.send(fed);
    }

    /// Writes what is queued and stops the writer.
    async fn close(self) {
        let (done, written) = oneshot::channel();
        self.send(Fed::Flush(done));
        let _ = written.await;
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use super::words;

    #[test]
    fn resume_takes_a_session_and_maybe_a_prompt() {
        let w = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(words(&w(&[])).ok(), Some((None, None)));
        assert_eq!(words(&w(&["hi"])).ok(), Some((None, Some("hi"))));
        assert_eq!(
            words(&w(&["resume", "abc"])).ok(),
            Some((Some("abc"), None))
        );
        assert_eq!(
            words(&w(&["resume", "abc", "go on"])).ok(),
            Some((Some("abc"), Some("go on")))
        );
        assert!(words(&w(&["resume"])).is_err());
        assert!(words(&w(&["a", "b"])).is_err());
    }
}
