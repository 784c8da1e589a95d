//! `lc-agent runs`: list, show and cancel the runs of a server's
//! deployment, read straight from where they live (the JSON sessions
//! directory's `.runs/`, or Redis with `--redis`).
//!
//! ```text
//! lc-agent runs [--user NAME] [--sessions DIR | --redis URL [--prefix P]] list [--session ID] [--limit N]
//! lc-agent runs show <RUN> [--events]
//! lc-agent runs cancel <RUN>
//! ```
//!
//! `list` prints one line per run, newest first: id, status, session,
//! created, attempts, error. `show` prints the record as JSON (with
//! `--events`, its numbered events after it, one JSON line each).
//! `cancel` cancels a queued or waiting run at once (on Redis), and asks
//! the server running a run to stop it (it does within a second).

use std::time::Duration;

use clap::{Args, Subcommand};
use lc_agent_server::{open_store, Run, RunStatus, RunStore};

use crate::args::StoreArgs;
use crate::console::outln;
use crate::error::{CliError, CliResult};

/// Options of `lc-agent runs`.
#[derive(Debug, Args)]
pub(crate) struct RunsArgs {
    /// Whose runs.
    #[arg(long, global = true, default_value = "default")]
    pub(crate) user: String,
    /// Where the sessions (and so the runs) live.
    #[command(flatten)]
    pub(crate) store: StoreArgs,
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: RunsCommand,
}

/// `lc-agent runs` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum RunsCommand {
    /// Lists runs, newest first.
    List {
        /// Only the runs of this session.
        #[arg(long)]
        session: Option<String>,
        /// How many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Prints a run as JSON.
    Show {
        /// The run id.
        id: String,
        /// Print its events too (one JSON line each).
        #[arg(long)]
        events: bool,
    },
    /// Cancels a run.
    Cancel {
        /// The run id.
        id: String,
    },
}

fn failed(e: impl std::fmt::Display) -> CliError {
    CliError::failed(e.to_string())
}

fn uuid(text: &str, what: &str) -> CliResult<uuid::Uuid> {
    text.trim()
        .parse()
        .map_err(|_| CliError::usage(format!("`{text}` is not a {what} id")))
}

/// Runs `lc-agent runs`, printing to stdout.
pub(crate) async fn run(args: RunsArgs) -> CliResult {
    let config = args.store.config();
    let lists = config.open().map_err(|e| CliError::usage(e.to_string()))?;
    let store = open_store(&config, &lists, Duration::from_secs(3600)).map_err(failed)?;
    match args.command {
        RunsCommand::List { session, limit } => {
            let runs = match session {
                Some(s) => store.of_session(uuid(&s, "session")?, limit).await,
                None => store.of_user(&args.user, limit).await,
            }
            .map_err(failed)?;
            let runs: Vec<Run> = runs.into_iter().filter(|r| r.user == args.user).collect();
            if runs.is_empty() {
                outln("no runs");
            }
            for r in runs {
                outln(&format!(
                    "{}  {:<9}  session {}  {}  attempts {}{}",
                    r.id,
                    r.status,
                    r.session,
                    r.created_at.format("%Y-%m-%d %H:%M:%S"),
                    r.attempts,
                    r.error.map(|e| format!("  {e}")).unwrap_or_default()
                ));
            }
        }
        RunsCommand::Show { id, events } => {
            let id = uuid(&id, "run")?;
            let run = find(&*store, &args.user, id).await?;
            outln(&serde_json::to_string_pretty(&run).map_err(failed)?);
            if events {
                for e in store.events(id, 0, usize::MAX).await.map_err(failed)? {
                    outln(&serde_json::to_string(&e).map_err(failed)?);
                }
            }
        }
        RunsCommand::Cancel { id } => {
            let id = uuid(&id, "run")?;
            let run = find(&*store, &args.user, id).await?;
            if run.status.is_final() {
                return Err(CliError::failed(format!(
                    "run {id} is over ({}): there is nothing to cancel",
                    run.status
                )));
            }
            let said = cancel(
                &*store,
                &lists,
                run,
                matches!(config, lc_agent::ListConfig::Redis { .. }),
            )
            .await?;
            outln(&said);
        }
    }
    Ok(())
}

async fn find(store: &dyn RunStore, user: &str, id: uuid::Uuid) -> CliResult<Run> {
    match store.get(id).await.map_err(failed)? {
        Some(run) if run.user == user => Ok(run),
        _ => Err(CliError::failed(format!(
            "no run {id} of user {user} (finished runs are kept an hour)"
        ))),
    }
}

/// Cancels `run`; what happened, in words.
async fn cancel(
    store: &dyn RunStore,
    lists: &lc_agent::Lists,
    run: Run,
    shared: bool,
) -> CliResult<String> {
    // On Redis the record is the truth for every server: a queued or
    // waiting run is cancelled here and now. (With the JSON list the
    // serving process holds its queue: it is asked, like a running run.)
    if shared {
        for from in [RunStatus::Queued, RunStatus::Waiting] {
            let Some(mut done) = store
                .transition(run.id, &[from], RunStatus::Cancelled)
                .await
                .map_err(failed)?
            else {
                continue;
            };
            if from == RunStatus::Waiting {
                // The calls it waited for are rejected, so the session's
                // next turn finds them answered.
                let list = lists.user(&run.user).map_err(failed)?;
                let net = list.load(run.session).await.map_err(failed)?;
                for p in lc_agent_deepagent::pending_approvals(&net) {
                    lc_agent_deepagent::decide(
                        &net,
                        p.node_id,
                        lc_agent_deepagent::Decision::Reject("the run was cancelled".to_string()),
                    )
                    .map_err(failed)?;
                }
                list.save(&net).await.map_err(failed)?;
            }
            done.finished_at = Some(chrono_now());
            store
                .settle(&done, Duration::from_secs(3600))
                .await
                .map_err(failed)?;
            return Ok(format!("run {} cancelled (it was {from})", run.id));
        }
    }
    store.request_cancel(run.id).await.map_err(failed)?;
    Ok(format!(
        "run {} ({}): cancel requested; the server running it stops it within a second",
        run.id, run.status
    ))
}

fn chrono_now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}
