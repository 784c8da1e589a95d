//! Executing one run on this server: take it (status `running`), load its
//! session with its agent and a [`CheckpointModifier`] (saved after every
//! node), invoke, number and store its events as they happen, renew the
//! lease and watch for a cancel meanwhile, and settle the record.
//!
//! ```text
//!  execute(delivery)
//!    transition queued|running ─▶ running   (else: cancelled or over: ack, nothing to do)
//!    claim (this process) ▸ load ▸ attach agent ▸ + CheckpointModifier ▸ events ─▶ publisher
//!    select { invoke | cancel | wall-clock limit | hand back }
//!      invoke    ─▶ done (answer) | waiting (held calls) | failed
//!      cancel    ─▶ drop the node in flight and the nodes it added that never ran, save ─▶ cancelled
//!      limit     ─▶ the same ─▶ failed ("took longer than ...")
//!      hand back ─▶ save as it stands ─▶ queued again (another server, or the next start)
//!    approval_needed / stopped / done | error ─▶ settle ─▶ ack
//! ```

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use lc_agent::{
    revision_of, Attachments, CheckpointModifier, CheckpointPolicy, Events, NetworkEvent, NodeId,
    SteeringModifier, UsageExt,
};
use lc_agent::{NetworkList, RunnableNetwork};
use lc_agent_deepagent::{pending_approvals, PendingApproval};
use serde_json::json;
use tokio::sync::{mpsc, Notify};
use uuid::Uuid;

use super::event::{NumberedEvent, RunDone, RunErrorEvent, RunEvent};
use super::inbox::RunInbox;
use super::pending::PendingCall;
use super::record::{Run, RunStatus};
use super::service::{Local, Runs};
use super::store::{Delivery, RunError};
use super::takeover::{Held, Taken};
use crate::error::{ApiError, RunFailure};
use crate::hub::Claim;

/// What goes to the publisher.
enum Out {
    Network(NetworkEvent),
    Event(RunEvent),
    /// The run is over with the network: the publisher lets it go (so the
    /// session cache can hand it to the next request at once).
    Release,
    Close,
}

/// Numbers events and writes them to the store as they come, in batches.
struct Publisher {
    tx: mpsc::UnboundedSender<Out>,
    task: tokio::task::JoinHandle<u64>,
}

impl Publisher {
    /// `bare`: a `store: false` run's events, which carry no message
    /// (what the response needs is the text, the end and the answer).
    fn start(
        runs: &Arc<Runs>,
        held: &Held,
        net: Option<RunnableNetwork>,
        last: u64,
        bare: bool,
    ) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Out>();
        let runs = runs.clone();
        let held = held.clone();
        let run = held.delivery.run;
        // What the session had used when the run started: `run_finished`
        // says what the run used.
        let usage_before = net.as_ref().map(UsageExt::usage);
        let mut net = net;
        let task = tokio::spawn(async move {
            let mut seq = last;
            let mut closed = false;
            while !closed {
                let Some(first) = rx.recv().await else { break };
                let mut batch = vec![first];
                while let Ok(more) = rx.try_recv() {
                    batch.push(more);
                }
                let mut events = Vec::with_capacity(batch.len());
                for out in batch {
                    let event = match out {
                        Out::Close => {
                            closed = true;
                            continue;
                        }
                        Out::Release => {
                            net = None;
                            continue;
                        }
                        Out::Event(event) => event,
                        Out::Network(e) => {
                            match net.as_ref().and_then(|n| RunEvent::from_network(n, &e)) {
                                Some(RunEvent::RunFinished {
                                    outcome,
                                    duration_ms,
                                    error,
                                    held,
                                    usage: _,
                                }) => RunEvent::RunFinished {
                                    outcome,
                                    duration_ms,
                                    error,
                                    held,
                                    usage: net.as_ref().zip(usage_before.as_ref()).map(
                                        |(n, before)| {
                                            crate::usage::priced(n, &n.usage().since(before))
                                        },
                                    ),
                                },
                                Some(RunEvent::NodeFinished { node, .. }) if bare => {
                                    RunEvent::NodeFinished {
                                        node,
                                        message: None,
                                    }
                                }
                                Some(event) => event,
                                None => continue,
                            }
                        }
                    };
                    seq += 1;
                    events.push(NumberedEvent { seq, event });
                }
                if held.taken.is_set() {
                    // Another server runs it now: its events are that one's.
                    continue;
                }
                // A store that cannot be reached is waited out: a
                // follower must find every event, the end above all (it
                // is waited for longer: the run is over, only its end
                // must reach the store).
                let end = events.iter().any(|e| e.event.is_end());
                let patience = if end {
                    (runs.settings.store_patience * 4).max(END_PATIENCE)
                } else {
                    runs.settings.store_patience
                };
                let appended = super::patience::patiently(
                    patience,
                    "a run's events",
                    super::patience::store_unreachable,
                    || {
                        runs.store
                            .append_held(&runs.consumer, &held.delivery, &events)
                    },
                )
                .await;
                match appended {
                    Ok(()) => {}
                    Err(RunError::Lost(_)) => {
                        tracing::warn!(run = %run, "another server took this run over (the store was out of reach longer than the lease): stopped here");
                        held.taken.set();
                    }
                    Err(e) => {
                        tracing::error!(run = %run, error = %lc_agent::error_chain(&e), "a run's events could not be stored");
                    }
                }
                runs.wake(run);
            }
            seq
        });
        Self { tx, task }
    }

    fn send(&self, event: RunEvent) {
        let _ = self.tx.send(Out::Event(event));
    }

    /// Lets the network go once the events sent so far are read.
    fn release(&self) {
        let _ = self.tx.send(Out::Release);
    }

    async fn close(self) -> u64 {
        let _ = self.tx.send(Out::Close);
        self.task.await.unwrap_or(0)
    }
}

/// How long a `store: false` run's record and events are kept after it
/// ends: long enough for its response to be read.
const EPHEMERAL_KEEP: Duration = Duration::from_secs(60);

/// How the invoke ended.
enum Ending {
    Finished(Result<lc_agent::Message, lc_agent::NetworkError>),
    Cancelled,
    TimedOut(Duration),
    HandedBack,
    /// Another server took the run over (`Taken`).
    TakenOver,
}

/// How long a run's end event is waited out for a store that cannot be
/// reached at least: the run is over, and its end must not be lost (a
/// follower waits for it).
const END_PATIENCE: Duration = Duration::from_secs(300);

impl Runs {
    /// Executes the run of `delivery` (see the [module docs](self)).
    pub(crate) async fn execute(self: Arc<Self>, delivery: Delivery) {
        if super::takeover::settle_ended(&self, &delivery).await {
            return;
        }
        let Some(run) = take(&self, &delivery).await else {
            let _ = self.store.ack(&delivery).await;
            return;
        };
        self.execute_taken(delivery, run).await;
    }

    /// Executes `run`, taken (status `running`) with `delivery`.
    pub(crate) async fn execute_taken(self: Arc<Self>, delivery: Delivery, run: Run) {
        execute_taken(self, delivery, run).await;
    }
}

/// Executes `run`, taken (status `running`) with `delivery`.
async fn execute_taken(state: Arc<Runs>, delivery: Delivery, mut run: Run) {
    let runs = &*state;
    let id = delivery.run;
    run.status = RunStatus::Running;
    run.attempts += 1;
    let now = chrono::Utc::now();
    run.started_at.get_or_insert(now);
    if let Some(ready) = run.prepared_at {
        run.queue_ms = Some((now - ready).num_microseconds().unwrap_or(0).max(0) as f64 / 1000.0);
    }
    run.server = Some(runs.consumer.clone());
    if let Err(e) = runs.store.put(&run).await {
        tracing::error!(run = %id, error = %e, "cannot write a run's record");
    }
    let cancel = Arc::new(Notify::new());
    let taken = Arc::new(Taken::default());
    let inbox = RunInbox::new();
    runs.local.lock().insert(
        id,
        Local {
            cancel: cancel.clone(),
            inbox: inbox.clone(),
        },
    );
    // The lease: renewed while the run goes on; a cancel asked of another
    // server, and an answer to a request for input given on another,
    // reach this one here.
    let lease = {
        let (state, delivery, cancel, taken, inbox, session) = (
            state.clone(),
            delivery.clone(),
            cancel.clone(),
            taken.clone(),
            inbox.clone(),
            run.session,
        );
        tokio::spawn(async move {
            let every = (state.settings.lease / 3).max(Duration::from_millis(50));
            let poll = every.min(Duration::from_millis(500));
            let mut since_renew = Duration::ZERO;
            loop {
                tokio::time::sleep(poll).await;
                since_renew += poll;
                if since_renew >= every {
                    since_renew = Duration::ZERO;
                    match state.store.renew(&state.consumer, &delivery).await {
                        Ok(()) => {}
                        Err(RunError::Lost(_)) => {
                            tracing::warn!(run = %delivery.run, "another server took this run over (its lease was not renewed in time): stopped here");
                            taken.set();
                            return;
                        }
                        Err(e) => {
                            tracing::warn!(run = %delivery.run, error = %e, "cannot renew a run's lease")
                        }
                    }
                }
                if let Ok(true) = state.store.cancel_requested(delivery.run).await {
                    cancel.notify_one();
                }
                // Answers to its requests for input given on other servers.
                if state.store.shares_input() && state.holds_input(delivery.run) {
                    state.take_answers(delivery.run).await;
                }
                // Messages kept for it through another server.
                if state.store.shares_input() {
                    state.poll_inbox(session, &inbox).await;
                }
            }
        })
    };
    let held = Held {
        delivery: delivery.clone(),
        taken: taken.clone(),
    };
    let handed_back = run_session(&state, &mut run, &cancel, &held, &inbox).await;
    lease.abort();
    runs.local.lock().remove(&id);
    if taken.is_set() {
        // Another server runs it now (from its last checkpoint): its end,
        // its record and its queue entry are that server's to write.
        runs.wake(id);
        return;
    }
    if handed_back {
        if let Err(e) = runs.store.put(&run).await {
            tracing::error!(run = %id, error = %e, "cannot write a handed-back run");
        }
        if let Err(e) = runs.store.enqueue(id).await {
            tracing::error!(run = %id, error = %e, "cannot queue a handed-back run again (its lease will expire)");
            runs.wake(id);
            return;
        }
    } else {
        // `store: false`: the record and events stay only while a
        // response (or the SDK's retry of it) may still read them.
        let keep = if run.ephemeral {
            runs.settings.keep.min(EPHEMERAL_KEEP)
        } else {
            runs.settings.keep
        };
        let settled = super::patience::patiently(
            runs.settings.store_patience,
            "a run's end",
            super::patience::store_unreachable,
            || runs.store.settle(&run, keep),
        )
        .await;
        if let Err(e) = settled {
            tracing::error!(run = %id, error = %e, "cannot write a run's end");
        }
        if run.ephemeral {
            // Nothing of it stays past its time, also on a server that
            // starts no other run.
            let store = runs.store.clone();
            tokio::spawn(async move {
                tokio::time::sleep(keep + Duration::from_secs(1)).await;
                store.sweep().await;
            });
            // `store: false`: the session was the run's alone.
            match state.hub.list(&run.user) {
                Ok(list) => {
                    if let Err(e) = list.delete(run.session).await {
                        tracing::warn!(run = %id, session = %run.session, error = %lc_agent::error_chain(&e), "cannot remove the session of a `store: false` run");
                    }
                }
                Err(e) => {
                    tracing::warn!(run = %id, error = %e, "cannot remove the session of a `store: false` run")
                }
            }
        }
    }
    if let Err(e) = runs.store.ack(&delivery).await {
        tracing::warn!(run = %id, error = %e, "cannot acknowledge a run");
    }
    runs.wake(id);
    runs.forget_waker(id);
}

/// Takes the run (status `running`) once its input is saved in its
/// session; `None` when there is nothing to run: it was cancelled or is
/// over, the request was refused (the run is gone), or the server that
/// took the request died before saving the input (after a lease the
/// session says so: it does not name the run), and the run is failed.
async fn take(state: &Arc<Runs>, delivery: &Delivery) -> Option<Run> {
    let runs = &**state;
    let id = delivery.run;
    let since = tokio::time::Instant::now();
    loop {
        let waker = runs.waker(id);
        let notified = waker.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let taken = runs
            .store
            .transition(
                id,
                &[RunStatus::Queued, RunStatus::Running],
                RunStatus::Running,
            )
            .await;
        match taken {
            Ok(Some(run)) => return Some(run),
            // Cancelled while queued, or over (its server died after
            // settling it, before the ack), or gone: nothing to run.
            Ok(None) | Err(RunError::NotFound(_)) => return None,
            Err(RunError::NotPrepared(_)) if since.elapsed() >= runs.settings.lease => {
                return never_prepared(state, id).await;
            }
            Err(RunError::NotPrepared(_)) => {}
            Err(e) => {
                tracing::warn!(run = %id, error = %e, "cannot take a run");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        let _ = tokio::time::timeout(Duration::from_millis(50), notified).await;
    }
}

/// A run still not prepared after a lease: when the session names it, its
/// input was saved (the server died just after): it is taken; otherwise
/// it is failed, saying so.
async fn never_prepared(state: &Arc<Runs>, id: Uuid) -> Option<Run> {
    let runs = &**state;
    let mut run = runs.store.get(id).await.ok().flatten()?;
    let saved = match state.hub.list(&run.user) {
        Ok(list) => list
            .load(run.session)
            .await
            .ok()
            .and_then(|net| net.metadata_value(super::record::RUN_KEY))
            .is_some_and(|named| named == json!(id)),
        Err(_) => false,
    };
    if saved {
        runs.store.prepared(id).await.ok()?;
        return runs
            .store
            .transition(
                id,
                &[RunStatus::Queued, RunStatus::Running],
                RunStatus::Running,
            )
            .await
            .ok()
            .flatten();
    }
    tracing::warn!(run = %id, "a run whose input was never saved (its server stopped first) is failed");
    finish(&mut run, RunStatus::Failed, Some(NOT_SAVED.to_string()));
    let _ = runs.store.settle(&run, runs.settings.keep).await;
    runs.wake(id);
    None
}

/// The error of a run whose server died before it saved the input.
pub(crate) const NOT_SAVED: &str =
    "the server that took this run stopped before its input was saved (nothing of it ran): send it again";

/// Runs the session of `run` to its end, updating `run`; whether it was
/// handed back instead (then `run` is queued again).
async fn run_session(
    state: &Arc<Runs>,
    run: &mut Run,
    cancel: &Arc<Notify>,
    held: &Held,
    inbox: &RunInbox,
) -> bool {
    let last = state.store.last_seq(run.id).await.unwrap_or(0);
    let opened = open(state, run, inbox).await;
    let (net, list, claim) = match opened {
        Ok(parts) => parts,
        Err(e) => {
            let publisher = Publisher::start(state, held, None, last, run.ephemeral);
            let failure = RunFailure::from(&e);
            let message = failure.message.clone();
            publisher.send(RunEvent::Error(RunErrorEvent {
                failure,
                revision: None,
                run: run.id,
                usage: None,
            }));
            publisher.close().await;
            finish(run, RunStatus::Failed, Some(message));
            return false;
        }
    };
    run.prices = crate::usage::own_prices(&net);
    let publisher = Publisher::start(state, held, Some(net.clone()), last, run.ephemeral);
    {
        let tx = publisher.tx.clone();
        net.on_event(move |e| {
            let _ = tx.send(Out::Network(e.clone()));
        });
    }
    // The MCP servers' requests for input of the session's calls: into
    // this run's events, until the invoke is over (input.rs).
    {
        let tx = publisher.tx.clone();
        state.open_desk(
            run.session,
            run.id,
            &run.user,
            run.ephemeral,
            Arc::new(move |event| {
                let _ = tx.send(Out::Event(event));
            }),
        );
    }
    net.set_streaming(true);
    // Where the run starts: the nodes added from here on are the run's,
    // and so are the pending ones (a call held for approval runs in this
    // run). Nothing here walks the whole session.
    let mark = net.additions();
    let pending_before = net.pending();
    let usage_before = net.usage();
    let active = crate::metrics::ActiveRun::start();
    let limit = state.settings.time_limit;
    let hand_back = state.hand_back.clone();
    let ending = tokio::select! {
        outcome = state.invoke_steered(run, &net, inbox) => Ending::Finished(outcome),
        () = cancel.notified() => Ending::Cancelled,
        () = async {
            match limit {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        } => Ending::TimedOut(limit.unwrap_or_default()),
        () = async {
            loop {
                let notified = hand_back.notified();
                if state.handing_back.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                notified.await;
            }
        } => Ending::HandedBack,
        () = held.taken.wait() => Ending::TakenOver,
    };
    if matches!(ending, Ending::TakenOver) {
        // Nothing more of it is written here: not a save (the other
        // server goes on from the last checkpoint), not an event.
        state.close_desk(run.session, run.id).await;
        drop(claim);
        publisher.close().await;
        return false;
    }
    state.close_desk(run.session, run.id).await;
    let used = net.usage().since(&usage_before);
    run.usage.merge(&used);
    let stopped =
        matches!(ending, Ending::Cancelled | Ending::TimedOut(_)).then(|| drop_unrun(&net, mark));
    let mut save_error = None;
    if !matches!(ending, Ending::Finished(_)) {
        // The invoke was cut short: its last checkpoint may be older than
        // what ran; save what stands.
        let saved = lc_agent::save_patiently(
            list.as_ref(),
            &net,
            state.settings.store_patience,
            "the run's last save",
        )
        .await;
        if let Err(e) = saved {
            save_error = Some(ApiError::from(e));
        }
    }
    if save_error.is_none() {
        // Saved: the messages that joined leave the inbox.
        state.drop_joined(run, inbox).await;
    }
    drop(claim);
    if matches!(ending, Ending::HandedBack) {
        publisher.send(RunEvent::HandedBack {
            server: state.consumer.clone(),
        });
        publisher.close().await;
        run.status = RunStatus::Queued;
        tracing::info!(run = %run.id, "handed back at shutdown");
        return true;
    }
    let pending = pending_approvals(&net);
    let revision = revision_of(&net);
    let (status, error) = match (&ending, &save_error) {
        (_, Some(e)) => {
            tracing::error!(run = %run.id, session = %run.session, error = %lc_agent::error_chain(e), "the run's final save failed");
            (RunStatus::Failed, Some(RunFailure::from(e)))
        }
        (Ending::Finished(Err(e)), _) => (RunStatus::Failed, Some(failure(run.session, e))),
        (Ending::TimedOut(limit), _) => (
            RunStatus::Failed,
            Some(RunFailure::new(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "the run took longer than its limit of {} s and was stopped",
                    limit.as_secs()
                ),
            )),
        ),
        (Ending::Cancelled, _) => (RunStatus::Cancelled, None),
        // `store: false`: nothing is kept, so nothing can wait for a decision.
        _ if !pending.is_empty() && run.ephemeral => (
            RunStatus::Cancelled,
            Some(RunFailure::new(
                StatusCode::CONFLICT,
                "the run stopped at a call that needs approval: with `store: false` no session is kept to decide on",
            )),
        ),
        _ if !pending.is_empty() => (RunStatus::Waiting, None),
        _ => (RunStatus::Done, None),
    };
    let answer = match &ending {
        Ending::Finished(Ok(reply)) if pending.is_empty() => reply.text().to_string(),
        _ => String::new(),
    };
    let cut_off = matches!(ending, Ending::Finished(Ok(_))) && pending.is_empty() && {
        // The answering chat node: the last one this run ran.
        net.nodes_added_since(mark)
            .iter()
            .rev()
            .find(|n| n.kind() == lc_agent::ChatNode::KIND && n.is_invoked())
            .is_some_and(|n| n.metadata_value("cut_off") == Some(json!(true)))
    };
    if let Some(removed) = stopped {
        publisher.send(RunEvent::Stopped { removed });
    }
    let pending_list: Vec<PendingCall> = pending.iter().map(PendingCall::from).collect();
    if !pending.is_empty() && error.is_none() {
        publisher.send(RunEvent::ApprovalNeeded {
            pending: pending_list.clone(),
        });
    }
    let prices = crate::usage::prices_for(&net);
    let usage = Some(run.usage.priced(&prices));
    let ran = crate::metrics::ran_in_run(&net, &pending_before, mark);
    active.finish(&ran, status.as_str(), &used, &prices);
    drop((ran, pending_before));
    // The run is over with the network: every hold on it goes before the
    // end is told, so the session cache (which keeps it since the last
    // save) hands it to the next request instead of reading the session
    // again (a turn would cost a load of the whole session).
    publisher.release();
    drop(net);
    match &error {
        Some(failure) => publisher.send(RunEvent::Error(RunErrorEvent {
            failure: failure.clone(),
            revision: Some(revision),
            run: run.id,
            usage,
        })),
        None => publisher.send(RunEvent::Done(RunDone {
            answer: answer.clone(),
            revision: Some(revision),
            stopped: stopped.is_some(),
            pending_approvals: pending_list.clone(),
            run: run.id,
            status,
            usage,
            cut_off,
        })),
    }
    publisher.close().await;
    // `store: false`: the answer went out in the `done` event only.
    run.answer = (status == RunStatus::Done && !run.ephemeral).then_some(answer);
    run.pending = if status == RunStatus::Waiting {
        pending_list
    } else {
        Vec::new()
    };
    finish(run, status, error.map(|f| f.message));
    log_pending(run.id, &pending);
    false
}

fn log_pending(run: Uuid, pending: &[PendingApproval]) {
    if !pending.is_empty() {
        tracing::debug!(run = %run, calls = pending.len(), "a run waits for decisions");
    }
}

/// The status and message of a failed invoke: a session store's refusal
/// (a checkpoint over a copy saved elsewhere: 409; a deleted session: 404)
/// keeps its own status, anything else is the model's or a tool's (502).
fn failure(session: Uuid, e: &lc_agent::NetworkError) -> RunFailure {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(list) = err.downcast_ref::<lc_agent::ListError>() {
            tracing::error!(%session, error = %lc_agent::error_chain(e), "the run could not save its session");
            return match list {
                lc_agent::ListError::Conflict { .. } => RunFailure::new(
                    StatusCode::CONFLICT,
                    format!("the run could not save the session: {list}"),
                ),
                lc_agent::ListError::Deleted { .. } | lc_agent::ListError::NotFound { .. } => {
                    RunFailure::new(
                        StatusCode::NOT_FOUND,
                        format!("the run could not save the session: {list}"),
                    )
                }
                _ => RunFailure::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the run could not save the session: the session store is unavailable",
                ),
            };
        }
        source = err.source();
    }
    crate::error::run_failed(session, e)
}

/// Sets the end of `run`.
fn finish(run: &mut Run, status: RunStatus, error: Option<String>) {
    run.status = status;
    run.error = error;
    if status.is_final() {
        run.finished_at = Some(chrono::Utc::now());
    }
}

/// Claims (in this process), loads and prepares the session of `run`.
async fn open(
    state: &Arc<Runs>,
    run: &Run,
    inbox: &RunInbox,
) -> Result<(RunnableNetwork, Arc<dyn NetworkList>, Claim), ApiError> {
    let list = state.hub.list(&run.user)?;
    // A rename or delete of the session here holds it for a moment.
    let claim = state
        .hub
        .claim_within(run.session, &list, Duration::from_secs(5))
        .await?;
    let (net, _agent) = state.hub.open(&run.user, &list, run.session).await?;
    // The input is saved (by the request, or a run's earlier part): the
    // first checkpoint is after the first node that does work.
    net.add_modifier(
        CheckpointModifier::new(list.clone())
            .policy(CheckpointPolicy::EachNode)
            .input_saved()
            .patience(state.settings.store_patience),
    )
    .map_err(|e| ApiError::internal("the run's checkpoints cannot be attached", e))?;
    // Messages sent while it runs (steer.rs).
    net.add_modifier(SteeringModifier::new(inbox.inbox.clone()))
        .map_err(|e| ApiError::internal("the run's inbox cannot be attached", e))?;
    inbox.watch(&net);
    claim.track(&net);
    Ok((net, list, claim))
}

/// After a stop: takes out the nodes added since `mark` that never ran
/// (newest first, so each is a leaf when it goes); how many.
fn drop_unrun(net: &RunnableNetwork, mark: u64) -> usize {
    let unrun: Vec<NodeId> = net
        .nodes_added_since(mark)
        .iter()
        .filter(|n| !n.is_invoked())
        .map(|n| n.id())
        .collect();
    let mut removed = 0;
    for id in unrun.into_iter().rev() {
        match net.remove_node(id) {
            Ok(_) => removed += 1,
            Err(e) => tracing::warn!(node = %id, error = %e, "a stopped run's pending node stays"),
        }
    }
    removed
}
