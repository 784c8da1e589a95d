//! One run of a session, shared by the session API and the OpenAI
//! endpoint: claim it, load it with its agent, change it, save (the claim
//! save: a stale copy gets 409 before any work), run, save again.
//!
//! ```text
//!  Session::open(user, id) ─▶ claim (409 if running here) ─▶ load (404 / 403) ─▶ attach agent
//!  .human(text) / decide(..) ─▶ .commit()   save at the loaded revision (409 if saved elsewhere)
//!  .run()      ─▶ invoke (streaming on) ─▶ save ─▶ RunEnd {answer, pending, revision, error, stopped}
//!  .stream()   ─▶ the same, its events as they happen (Item::Event ... Item::End)
//! ```
//!
//! A stop ([`AppState::stop`], `POST /api/sessions/{id}/stop`) ends the
//! run at once: the node in flight is dropped (a model call or a tool call
//! cut short leaves no output), the nodes this run added that never ran are
//! taken out again, and the session is saved with everything that ran. The
//! next message goes on from there.

use std::collections::HashSet;
use std::sync::Arc;

use lc_agent::{revision_of, NetworkList};
use lc_agent::{HumanNode, NetworkEvent, NodeId, RunnableNetwork};
use lc_agent_deepagent::approvals::{pending_approvals, PendingApproval};
use lc_agent_deepagent::deep_agent::DeepAgentBuilder;
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::error::ApiError;
use crate::state::{AppState, Claim};

/// A session claimed for a run, with its agent attached.
pub(crate) struct Session {
    pub(crate) net: RunnableNetwork,
    pub(crate) list: Arc<dyn NetworkList>,
    pub(crate) agent: DeepAgentBuilder,
    claim: Claim,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub(crate) struct RunEnd {
    /// The final answer (empty when the run failed or waits).
    pub(crate) answer: String,
    /// Calls waiting for a decision.
    pub(crate) pending: Vec<PendingApproval>,
    /// The saved revision.
    pub(crate) revision: u64,
    /// What failed, with the status a plain request would get.
    pub(crate) error: Option<(u16, String)>,
    /// Someone stopped the run: the nodes it added that had not run were
    /// taken out (how many).
    pub(crate) stopped: Option<usize>,
    /// What the run's model calls used (sub-agents included).
    pub(crate) usage: lc_agent::UsageTotals,
}

/// What a streamed run yields.
pub(crate) enum Item {
    /// Something happened in the network.
    Event(NetworkEvent),
    /// Calls wait for a decision (sent before the end).
    Approvals(Vec<PendingApproval>),
    /// Someone stopped the run; this many nodes that had not run were taken
    /// out (sent before the end).
    Stopped(usize),
    /// The run is over (saved).
    End(RunEnd),
}

impl Session {
    /// Claims and loads `user`'s session `id`.
    pub(crate) async fn open(
        state: &Arc<AppState>,
        user: &str,
        id: Uuid,
    ) -> Result<Self, ApiError> {
        let list = state.list(user)?;
        let claim = state.claim(user, id, &list)?;
        let (net, agent) = state.open(user, &list, id).await?;
        claim.track(&net);
        Ok(Self {
            net,
            list,
            agent,
            claim,
        })
    }

    /// A new session of `user`, claimed (saved by [`Session::commit`]).
    pub(crate) fn create(state: &Arc<AppState>, user: &str, name: &str) -> Result<Self, ApiError> {
        let list = state.list(user)?;
        let net = state.new_session(user, name)?;
        let claim = state.claim(user, net.id(), &list)?;
        claim.track(&net);
        let (agent, _) = state.agent_for(user, Some(&net))?;
        Ok(Self {
            net,
            list,
            agent,
            claim,
        })
    }

    /// Adds what the person said.
    pub(crate) fn human(&self, text: &str) {
        let _scope = self.net.enter();
        HumanNode::new(text);
    }

    /// Saves the session as it stands: 409 when another process saved it
    /// since it was loaded (nothing is written then).
    pub(crate) async fn commit(&self) -> Result<u64, ApiError> {
        Ok(self.list.save(&self.net).await?.revision)
    }

    /// Runs until the agent answers, fails or waits for a decision, then
    /// saves.
    async fn run(&self) -> RunEnd {
        self.net.set_streaming(true);
        let before: HashSet<NodeId> = self.net.nodes().iter().map(|n| n.id()).collect();
        let usage_before = self.net.usage();
        let active = crate::metrics::ActiveRun::start();
        let outcome = tokio::select! {
            outcome = self.net.invoke() => Some(outcome),
            () = self.claim.stopped() => None,
        };
        let stopped = outcome.is_none().then(|| self.drop_unrun(&before));
        let saved = self.list.save(&self.net).await;
        let pending = pending_approvals(&self.net);
        let mut end = RunEnd {
            answer: String::new(),
            pending,
            revision: revision_of(&self.net),
            error: None,
            stopped,
            usage: self.net.usage().since(&usage_before),
        };
        match outcome {
            Some(Ok(reply)) if end.pending.is_empty() => end.answer = reply.text().to_string(),
            Some(Ok(_)) | None => {}
            Some(Err(e)) => end.error = Some(crate::error::run_failed(self.net.id(), &e)),
        }
        if let Err(e) = saved {
            let e = ApiError::from(e);
            tracing::error!(session = %self.net.id(), error = %lc_agent::error_chain(&e), "the run's final save failed");
            end.error = Some((e.status().as_u16(), e.public_message()));
        }
        active.finish(&self.net, &before, &end);
        end
    }

    /// After a stop: takes out the nodes added since `before` that never
    /// ran (newest first, so each is a leaf when it goes); how many.
    fn drop_unrun(&self, before: &HashSet<NodeId>) -> usize {
        let unrun: Vec<NodeId> = self
            .net
            .nodes()
            .iter()
            .filter(|n| !before.contains(&n.id()) && !n.is_invoked())
            .map(|n| n.id())
            .collect();
        let mut removed = 0;
        for id in unrun.into_iter().rev() {
            match self.net.remove_node(id) {
                Ok(_) => removed += 1,
                Err(e) => {
                    tracing::warn!(node = %id, error = %e, "a stopped run's pending node stays")
                }
            }
        }
        removed
    }

    /// Runs in a task of its own (it finishes and saves even when the
    /// client goes away); the events arrive as they happen, then the end.
    pub(crate) fn stream(self) -> mpsc::UnboundedReceiver<Item> {
        let (tx, rx) = mpsc::unbounded_channel();
        let events = tx.clone();
        self.net.on_event(move |e| {
            let _ = events.send(Item::Event(e.clone()));
        });
        tokio::spawn(async move {
            let end = self.run().await;
            if let Some(removed) = end.stopped {
                let _ = tx.send(Item::Stopped(removed));
            }
            if !end.pending.is_empty() {
                let _ = tx.send(Item::Approvals(end.pending.clone()));
            }
            let _ = tx.send(Item::End(end));
            drop(self.claim);
        });
        rx
    }
}
