//! Starting runs: [`Runs::submit`] with an [`Input`] (a message,
//! decisions, a continue, a chat completion's turn) on a [`Target`]
//! session, the one way every endpoint starts a run; [`Runs::cancel`];
//! and the retries of a request that reattach to the run it started.
//!
//! ```text
//!  submit(user, target, input)
//!    check the input (400) ▸ reserve the session in the store (409 naming its active run;
//!    decisions for a waiting run resume it; 429 when the user has --max-user-runs)
//!    ▸ load ▸ input.apply ▸ save (the session names its run) ▸ prepared ▸ queue
//!    (a server with room takes the run as it queues it and runs it at once)
//! ```
//!
//! One rule for a message while calls wait for a decision: it is refused
//! (409, naming the waiting calls and the run); decisions come first, so a
//! tool call always gets its result before the next human turn. A message
//! while the session's run is queued or running joins that run (steer.rs:
//! kept in the session's inbox, 202 with its id); one that comes as the run
//! ends waits until it has ended, then starts a run.

use std::sync::Arc;

use lc_agent::{
    ContentPart, NetworkList, OutputSchemaExt, RunnableNetwork, SteerMessage, SteerMode,
};
use lc_agent_deepagent::{decide, pending_approvals, Decision, DecisionKind};
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::event::{NumberedEvent, RunDone, RunEvent};
use super::pending::PendingCall;
use super::record::{Run, RunStatus, RUN_KEY};
use super::service::Runs;
use super::steer::Steered;
use super::store::RunError;
use crate::error::ApiError;
use crate::hub::name_from;

/// A request to start a run that was refused.
#[derive(Debug)]
pub(crate) enum Refused {
    /// An error answer.
    Api(ApiError),
    /// 409: the session's active run, or calls waiting for decisions.
    Busy {
        /// What the client is told.
        message: String,
        /// The session's active run and its status, when known.
        run: Option<(Uuid, Option<RunStatus>)>,
        /// The calls waiting for a decision.
        pending: Option<Vec<PendingCall>>,
    },
    /// 429: the user has as many runs as the server allows.
    TooMany(String),
}

impl<E: Into<ApiError>> From<E> for Refused {
    fn from(e: E) -> Self {
        Refused::Api(e.into())
    }
}

/// What a run is asked to do with a session.
pub(crate) enum Target {
    /// An existing session.
    Session(Uuid),
    /// A new session, saved with its first run.
    New(RunnableNetwork),
    /// A session only for this run (`store: false`): saved with it,
    /// removed when it ends.
    Ephemeral(RunnableNetwork),
}

/// What a run starts from.
#[derive(Debug)]
pub(crate) enum Input {
    /// A person's message, its text and the parts after it (images, read
    /// by handlers/parts.rs): a new human turn (refused while calls wait
    /// for a decision); it names a session that has no name yet. While
    /// the session's run goes on, it joins that run as its mode says
    /// (steer.rs: 202); without a mode it is refused then (409).
    Message(String, Vec<ContentPart>, Option<SteerMode>),
    /// Decisions on the calls that wait for one: they resume the session's
    /// waiting run.
    Decisions(Vec<DecisionIn>),
    /// Asks a cut-off answer to go on.
    Continue,
    /// A chat completion's last user message, its text and image parts
    /// (`None`: the new session holds the request's messages already),
    /// and the schema its `response_format` gives the final answer (set as
    /// the session's `chat` step schema; `None` removes one an earlier
    /// request set), and the sampling it asks of the run's model calls
    /// (empty: the model's own settings).
    Completion(
        Option<(String, Vec<ContentPart>)>,
        Option<lc_agent::OutputSchema>,
        lc_agent::Sampling,
    ),
}

impl Input {
    /// What started the run, as its record says (`message`, `decisions`,
    /// `continue`, `completion`).
    fn label(&self) -> &'static str {
        match self {
            Input::Message(..) => "message",
            Input::Decisions(_) => "decisions",
            Input::Continue => "continue",
            Input::Completion(..) => "completion",
        }
    }

    /// 400 for an input with nothing in it.
    fn check(&self) -> Result<(), Refused> {
        match self {
            // An interrupt may say nothing: it only stops the run.
            Input::Message(text, parts, mode)
                if text.trim().is_empty()
                    && parts.is_empty()
                    && *mode != Some(SteerMode::Interrupt) =>
            {
                Err(bad("`content` is empty"))
            }
            Input::Decisions(d) if d.is_empty() => Err(bad("`decisions` is empty")),
            _ => Ok(()),
        }
    }

    /// Writes the input into the session.
    fn apply(self, net: &RunnableNetwork) -> Result<(), Refused> {
        match self {
            Input::Message(text, parts, _) => {
                // A message that is only an image names the session so.
                let title = if text.trim().is_empty() {
                    "An image".to_string()
                } else {
                    text.clone()
                };
                add_message(net, text, parts)?;
                // A person's message asks no sampling a completion set.
                lc_agent_deepagent::set_sampling(net, None);
                name_from(net, &title);
                Ok(())
            }
            Input::Completion(said, schema, sampling) => {
                net.set_output_schema(lc_agent::CHAT_STEP, schema);
                lc_agent_deepagent::set_sampling(net, Some(&sampling));
                match said {
                    Some((text, parts)) => add_message(net, text, parts),
                    None => Ok(()),
                }
            }
            Input::Decisions(decisions) => apply_decisions(net, decisions),
            Input::Continue => {
                let added = net
                    .continue_cut_off()
                    .map_err(|e| ApiError::internal("a cut-off answer cannot go on", e))?;
                if added.is_none() {
                    return Err(bad(
                        "the newest answer is complete: there is nothing to continue",
                    ));
                }
                Ok(())
            }
        }
    }
}

fn bad(message: &str) -> Refused {
    Refused::Api(ApiError::BadRequest(message.to_string()))
}

/// A run that was queued.
pub(crate) struct Submitted {
    /// The run (for decisions on a waiting run: that run, queued again).
    pub(crate) run: Run,
    /// Its events after this one are this submission's.
    pub(crate) after: u64,
    /// A message for the session's run going on: kept in its inbox (the
    /// run is that one), read at its next node boundary.
    pub(crate) steered: Option<SteerMessage>,
}

impl Runs {
    /// Starts a run of `user`'s session (see the [module docs](self)).
    /// `id` names the run (an idempotency key chose it) or a new id is
    /// made.
    pub(crate) async fn submit(
        self: &Arc<Self>,
        user: &str,
        target: Target,
        input: Input,
        id: Option<Uuid>,
    ) -> Result<Submitted, Refused> {
        input.check()?;
        let list = self.hub.list(user)?;
        if let Input::Message(text, parts, Some(SteerMode::Interrupt)) = &input
            && text.trim().is_empty()
            && parts.is_empty()
        {
            // Only a stop: for the session's run, never a run of its own.
            let Target::Session(session) = &target else {
                return Err(bad(
                    "an interrupt with nothing to say needs a session's run",
                ));
            };
            self.hub.owned(&list, *session).await?;
            return self.stop_by_message(user, *session, &input).await;
        }
        let session = match &target {
            Target::Session(id) => *id,
            Target::New(net) | Target::Ephemeral(net) => net.id(),
        };
        if let Target::Session(id) = &target {
            // Ownership first: another user's session is not found, whatever
            // its state, before any run of it is looked at or reserved.
            self.hub.owned(&list, *id).await?;
        }
        let mut run = Run::new(session, user, input.label());
        run.ephemeral = matches!(target, Target::Ephemeral(_));
        if let Some(id) = id {
            run.id = id;
        }
        // A server with room takes the run as it queues it (the dispatcher
        // does not stand between): it runs as soon as its input is saved.
        let room = if self.draining.load(std::sync::atomic::Ordering::SeqCst) {
            None
        } else {
            self.permits.clone().try_acquire_owned().ok()
        };
        let created = loop {
            let created = match &room {
                Some(_) => {
                    self.store
                        .create_taking(&run, self.settings.per_user, &self.consumer)
                        .await
                }
                None => self
                    .store
                    .create(&run, self.settings.per_user)
                    .await
                    .map(|()| None),
            };
            // A message for a session whose run goes on joins that run.
            if let (Err(RunError::Busy { run: holder, .. }), Input::Message(..)) =
                (&created, &input)
                && let Some(message) = steer_message(&input)
            {
                match self.steer(session, *holder, &message).await? {
                    Steered::Kept(holder) => {
                        return Ok(Submitted {
                            run: *holder,
                            after: 0,
                            steered: Some(message),
                        });
                    }
                    Steered::Ending => {
                        self.wait_free(session, *holder).await;
                        continue;
                    }
                    Steered::Waiting => {}
                }
            }
            break created;
        };
        let mut mine = None;
        match created {
            Ok(Some(delivery)) => {
                if let Some(permit) = room {
                    if delivery.run == run.id {
                        mine = Some((delivery, permit));
                    } else {
                        // An older run was next in the queue: run it here.
                        let runs = self.clone();
                        tokio::spawn(async move {
                            runs.execute(delivery).await;
                            drop(permit);
                        });
                    }
                }
            }
            Ok(None) => {}
            Err(RunError::Busy { run: holder, .. }) => {
                if matches!(input, Input::Decisions(_))
                    && let Ok(Some(waiting)) = self.store.get(holder).await
                    && waiting.status == RunStatus::Waiting
                    && waiting.user == user
                {
                    return self.resume(&list, waiting, input).await;
                }
                return Err(self.busy(session, holder).await);
            }
            Err(e @ RunError::UserFull { .. }) => return Err(Refused::TooMany(e.to_string())),
            Err(e) => return Err(e.into()),
        }
        let prepared = async {
            let net = match target {
                Target::Session(id) => self.hub.load(&list, id).await?,
                Target::New(net) | Target::Ephemeral(net) => net,
            };
            input.apply(&net)?;
            // The session names its run: a server that finds the run not
            // marked prepared (this one died) knows from the session whether
            // the input was saved.
            net.set_metadata(RUN_KEY, json!(run.id));
            list.save(&net).await?;
            if mine.is_none() {
                self.store.prepared(run.id).await?;
                self.wake(run.id);
            }
            Ok::<(), Refused>(())
        }
        .await;
        if let Err(refusal) = prepared {
            if let Err(e) = self.store.abandon(&run).await {
                tracing::error!(run = %run.id, error = %e, "a refused run could not be forgotten");
            }
            if let Some((delivery, _permit)) = mine {
                let _ = self.store.ack(&delivery).await;
            }
            return Err(refusal);
        }
        if let Some((delivery, permit)) = mine {
            // Taken when it was queued: it runs now, here; its record says it
            // is prepared when its worker writes it (a server that dies first
            // leaves a run that the session names: see `never_prepared`).
            let mut taken = run.clone();
            taken.status = RunStatus::Running;
            taken.prepared = true;
            taken.prepared_at = Some(chrono::Utc::now());
            let runs = self.clone();
            tokio::spawn(async move {
                runs.execute_taken(delivery, taken).await;
                drop(permit);
            });
        }
        Ok(Submitted {
            run,
            after: 0,
            steered: None,
        })
    }

    /// Decisions for a waiting run: the session gets them and the same run
    /// is queued again.
    async fn resume(
        &self,
        list: &Arc<dyn NetworkList>,
        waiting: Run,
        input: Input,
    ) -> Result<Submitted, Refused> {
        let net = self.hub.load(list, waiting.session).await?;
        input.apply(&net)?;
        net.set_metadata(RUN_KEY, json!(waiting.id));
        list.save(&net).await?;
        let after = self.store.last_seq(waiting.id).await?;
        // Queued again (and on the queue) in one step.
        let Some(run) = self
            .store
            .transition(waiting.id, &[RunStatus::Waiting], RunStatus::Queued)
            .await?
        else {
            return Err(self.busy(waiting.session, waiting.id).await);
        };
        Ok(Submitted {
            run,
            after,
            steered: None,
        })
    }

    /// An interrupt with nothing to say: it stops the session's run at
    /// its next node boundary (409 when none goes on).
    async fn stop_by_message(
        &self,
        user: &str,
        session: Uuid,
        input: &Input,
    ) -> Result<Submitted, Refused> {
        let nothing = || {
            Refused::Api(ApiError::Conflict(format!(
                "no run of session {session} is going on: there is nothing to interrupt"
            )))
        };
        let message = steer_message(input).ok_or_else(nothing)?;
        let Some(holder) = self.store.active_of(session).await? else {
            return Err(nothing());
        };
        match self.steer(session, holder, &message).await? {
            Steered::Kept(run) if run.user == user => Ok(Submitted {
                run: *run,
                after: 0,
                steered: Some(message),
            }),
            Steered::Waiting => Err(self.busy(session, holder).await),
            _ => Err(nothing()),
        }
    }

    /// The 409 of a session whose run `holder` is active.
    async fn busy(&self, session: Uuid, holder: Uuid) -> Refused {
        let run = self.store.get(holder).await.ok().flatten();
        let status = run.as_ref().map(|r| r.status);
        if let Some(run) = run.filter(|r| r.status == RunStatus::Waiting) {
            let calls: Vec<String> = run.pending.iter().map(PendingCall::describe).collect();
            return Refused::Busy {
                message: format!(
                    "session {session} waits for decisions on {}: send them first (POST /api/sessions/{session}/runs {{\"decisions\": [...]}}); run {holder}",
                    calls.join("; ")
                ),
                run: Some((holder, Some(RunStatus::Waiting))),
                pending: Some(run.pending),
            };
        }
        Refused::Busy {
            message: format!("session {session} has a run in progress: {holder}; try again when it ends, or cancel it (POST /api/runs/{holder}/cancel)"),
            run: Some((holder, status)),
            pending: None,
        }
    }

    /// Cancels `run`: at once when it is queued or waiting, else asks the
    /// server running it (this one, or another through the store).
    pub(crate) async fn cancel(&self, run: Run) -> Result<Run, ApiError> {
        let store = &self.store;
        let id = run.id;
        for from in [RunStatus::Queued, RunStatus::Waiting] {
            if let Some(mut cancelled) = store.transition(id, &[from], RunStatus::Cancelled).await?
            {
                if from == RunStatus::Waiting {
                    self.reject_waiting(&cancelled).await?;
                }
                cancelled.finished_at = Some(chrono::Utc::now());
                let seq = store.last_seq(id).await? + 1;
                let revision = match self.hub.list(&run.user) {
                    Ok(list) => list.stored_revision(run.session).await.ok().flatten(),
                    Err(_) => None,
                };
                let event = RunEvent::Done(RunDone {
                    answer: String::new(),
                    revision,
                    stopped: true,
                    pending_approvals: Vec::new(),
                    run: id,
                    status: RunStatus::Cancelled,
                    usage: None,
                    cut_off: false,
                });
                store.append(id, &[NumberedEvent { seq, event }]).await?;
                store.settle(&cancelled, self.settings.keep).await?;
                self.wake(id);
                return Ok(cancelled);
            }
        }
        store.request_cancel(id).await?;
        if let Some(local) = self.local.lock().get(&id) {
            local.cancel.notify_one();
        }
        Ok(store.get(id).await?.unwrap_or(run))
    }

    /// A cancelled waiting run: its calls are rejected, so the session's
    /// next turn finds them answered.
    async fn reject_waiting(&self, run: &Run) -> Result<(), ApiError> {
        let list = self.hub.list(&run.user)?;
        let net = match self.hub.load(&list, run.session).await {
            Ok(net) => net,
            // Its session was deleted: nothing is left to reject.
            Err(ApiError::NotFound(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        for p in pending_approvals(&net) {
            decide(
                &net,
                p.node_id,
                Decision::Reject("the run was cancelled".to_string()),
            )
            .map_err(|e| ApiError::internal("a waiting call cannot be rejected", e))?;
        }
        list.save(&net).await?;
        Ok(())
    }

    /// The run an earlier try of a request started, if this is a retry of
    /// it: the same idempotency `key`, or (no key) a retry (`retry` > 0,
    /// the OpenAI SDK's `x-stainless-retry-count`) of the same `body`.
    /// Else remembers this request as run `id` for `ttl`.
    ///
    /// A try that started no run (refused with 429, say) does not consume
    /// the key: the next try finds no run behind it and takes the key. A
    /// key that named a run is bound to its body: another body with it is
    /// refused (422) rather than answered with the first run's answer.
    pub(crate) async fn earlier_try(
        &self,
        user: &str,
        key: Option<&str>,
        retry: u32,
        body: &[u8],
        id: Uuid,
        ttl: std::time::Duration,
    ) -> Result<Option<Run>, ApiError> {
        let slot = match key {
            Some(key) => format!("key:{}", fingerprint("", key.as_bytes())),
            None => format!("body:{}", fingerprint(user, body)),
        };
        // The key with this very body.
        let keyed_body = key.map(|key| format!("key-body:{}", fingerprint(key, body)));
        if key.is_none() && retry == 0 {
            // A first try: the same body sent again later is a new request,
            // and so is one sent at the same moment (16 clients posting the
            // same "hello"): a first try never joins a run. The slot becomes
            // this request's, for its own retries; when a concurrent first
            // try took it between the two calls, it is taken over once.
            self.store.forget(user, &slot).await?;
            if self.store.remember(user, &slot, id, ttl).await?.is_some() {
                self.store.forget(user, &slot).await?;
                let _ = self.store.remember(user, &slot, id, ttl).await?;
            }
            return Ok(None);
        }
        let Some(earlier) = self.store.remember(user, &slot, id, ttl).await? else {
            if let Some(keyed_body) = &keyed_body {
                self.store.forget(user, keyed_body).await?;
                self.store.remember(user, keyed_body, id, ttl).await?;
            }
            return Ok(None);
        };
        let Some(run) = self.store.get(earlier).await?.filter(|r| r.user == user) else {
            // The earlier try started no run (it was refused), or its run
            // is gone: this try takes the key.
            self.store.forget(user, &slot).await?;
            self.store.remember(user, &slot, id, ttl).await?;
            if let Some(keyed_body) = &keyed_body {
                self.store.forget(user, keyed_body).await?;
                self.store.remember(user, keyed_body, id, ttl).await?;
            }
            return Ok(None);
        };
        if let (Some(key), Some(keyed_body)) = (key, &keyed_body) {
            match self.store.remember(user, keyed_body, id, ttl).await? {
                Some(bound) if bound == earlier => {}
                other => {
                    if other.is_none() {
                        self.store.forget(user, keyed_body).await?;
                    }
                    return Err(ApiError::Unprocessable(format!(
                        "the Idempotency-Key `{key}` was used for another request (run {earlier}) \
                         with a different body: send that request's body again to get its \
                         answer, or use a new key for a new request"
                    )));
                }
            }
        }
        Ok(Some(run))
    }
}

/// The message a message input is for a run going on.
fn steer_message(input: &Input) -> Option<SteerMessage> {
    match input {
        Input::Message(text, parts, Some(mode)) => {
            Some(SteerMessage::new(text.clone(), *mode).parts(parts.clone()))
        }
        _ => None,
    }
}

/// FNV-1a, 64 bits: the same request reads the same on every server.
fn fingerprint(user: &str, body: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in user.as_bytes().iter().chain([0u8].iter()).chain(body) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Adds `text` and the `parts` after it as a new human turn of a session:
/// refused while calls wait for a decision (see the [module docs](self)).
fn add_message(
    net: &RunnableNetwork,
    text: String,
    parts: Vec<ContentPart>,
) -> Result<(), Refused> {
    refuse_while_waiting(net)?;
    let _scope = net.enter();
    lc_agent::HumanNode::with_parts(text, parts);
    Ok(())
}

/// 409 when calls of `net` wait for a decision.
fn refuse_while_waiting(net: &RunnableNetwork) -> Result<(), Refused> {
    let pending: Vec<PendingCall> = pending_approvals(net)
        .iter()
        .map(PendingCall::from)
        .collect();
    if pending.is_empty() {
        return Ok(());
    }
    let calls: Vec<String> = pending.iter().map(PendingCall::describe).collect();
    Err(Refused::Busy {
        message: format!(
            "session {} waits for decisions on {}: send them first (POST /api/sessions/{}/runs {{\"decisions\": [...]}})",
            net.id(),
            calls.join("; "),
            net.id()
        ),
        run: None,
        pending: Some(pending),
    })
}

/// One decision of a request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecisionIn {
    node_id: Uuid,
    decision: DecisionKind,
    /// The new arguments of an `edit`.
    #[serde(default)]
    arguments: Option<Value>,
    /// The reason of a `reject`, the result of a `respond`.
    #[serde(default)]
    message: Option<String>,
}

/// Writes `decisions` to the waiting calls of `net` (400 for a decision
/// that does not fit; nothing is saved then).
fn apply_decisions(net: &RunnableNetwork, decisions: Vec<DecisionIn>) -> Result<(), Refused> {
    for d in decisions {
        let decision = match d.decision {
            DecisionKind::Approve => Decision::Approve,
            DecisionKind::Edit => Decision::Edit(
                d.arguments
                    .ok_or_else(|| bad("an `edit` needs `arguments`"))?,
            ),
            DecisionKind::Reject => {
                Decision::Reject(d.message.unwrap_or_else(|| "rejected".to_string()))
            }
            DecisionKind::Respond => Decision::Respond(
                d.message
                    .ok_or_else(|| bad("a `respond` needs `message`"))?,
            ),
        };
        decide(net, d.node_id, decision).map_err(|e| bad(&e.to_string()))?;
    }
    Ok(())
}
