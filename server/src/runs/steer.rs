//! Steering a session's run: a message sent while its run goes on is kept
//! in the session's inbox (the store: `inbox/<session>.json`, or a Redis
//! list), answered 202 with its id, and read by the run at its next node
//! boundary (lc-agent's `SteeringModifier`: inject, queue, interrupt).
//!
//! ```text
//!  POST message, session busy ─▶ store.steer (kept only while the run holds the
//!     session and goes on) ─▶ 202 {id, mode, run}; this server's run gets it at once,
//!     another server's within its lease poll
//!  worker: open ─▶ inbox minus what the graph has (steer ids) ─▶ Inbox ─▶ SteeringModifier
//!     invoke ▸ saved ▸ drop the messages that joined ▸ any waiting? invoke again
//!     ▸ store.close_inbox (none waits: no more are kept) ▸ the run ends
//! ```
//!
//! Nothing is lost to a `kill -9`: a message is in the store before its
//! 202, and leaves it only once the graph that holds it is saved; the
//! server that takes the run over reads it again (and skips those whose
//! ids the saved graph has).

use lc_agent::{steered_ids, RunnableNetwork, SteerMessage};
use uuid::Uuid;

use super::inbox::RunInbox;
use super::record::Run;
use super::service::Runs;
use super::store::{RunError, Steer};

/// What became of a message for a busy session.
pub(crate) enum Steered {
    /// Kept for this run (which reads it at its next boundary).
    Kept(Box<Run>),
    /// The run is ending: once the session is free the message starts a run.
    Ending,
    /// The run waits for decisions (they come first: 409).
    Waiting,
}

impl Runs {
    /// A message for `session`, whose active run is `holder`.
    pub(crate) async fn steer(
        &self,
        session: Uuid,
        holder: Uuid,
        message: &SteerMessage,
    ) -> Result<Steered, RunError> {
        match self.store.steer(session, holder, message).await? {
            Steer::Kept => {
                if let Some(local) = self.local.lock().get(&holder) {
                    local.inbox.give(message.clone());
                }
                let run = self
                    .store
                    .get(holder)
                    .await?
                    .ok_or(RunError::NotFound(holder))?;
                Ok(Steered::Kept(Box::new(run)))
            }
            Steer::Ending => Ok(Steered::Ending),
            Steer::Waiting => Ok(Steered::Waiting),
        }
    }

    /// Waits (a few seconds at most) until `holder` no longer holds
    /// `session`: a run that is ending.
    pub(crate) async fn wait_free(&self, session: Uuid, holder: Uuid) {
        for _ in 0..400 {
            match self.store.active_of(session).await {
                Ok(Some(active)) if active == holder => {}
                _ => return,
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
    }

    /// The messages of `run`'s session inbox not yet in `net`, given to
    /// `inbox` (those the saved graph has are taken out of the store).
    pub(crate) async fn pull_inbox(&self, run: &Run, net: &RunnableNetwork, inbox: &RunInbox) {
        let waiting = match self.store.inbox(run.session).await {
            Ok(waiting) => waiting,
            Err(e) => {
                tracing::warn!(run = %run.id, error = %e, "cannot read the session's inbox");
                return;
            }
        };
        if waiting.is_empty() {
            inbox
                .seeded
                .store(true, std::sync::atomic::Ordering::SeqCst);
            return;
        }
        let joined = {
            let joined = inbox.joined.lock();
            let known = inbox.given.lock();
            let fresh = waiting
                .iter()
                .any(|m| !known.contains(&m.id) && !joined.contains(&m.id));
            if !fresh {
                drop((joined, known));
                inbox
                    .seeded
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                return;
            }
            joined.clone()
        };
        // Walked only when a message is new to this run: one the graph
        // holds already joined before a restart.
        let in_graph = steered_ids(net);
        let mut done = Vec::new();
        for message in waiting {
            if in_graph.contains(&message.id) && !joined.contains(&message.id) {
                done.push(message.id);
            } else if !joined.contains(&message.id) {
                inbox.give(message);
            }
        }
        if !done.is_empty()
            && let Err(e) = self.store.inbox_drop(run.session, &done).await
        {
            tracing::warn!(run = %run.id, error = %e, "cannot take read messages out of the inbox");
        }
        inbox
            .seeded
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The messages another server kept for `run` meanwhile, given to
    /// its inbox (from the lease's poll, once the run read the store).
    pub(crate) async fn poll_inbox(&self, session: Uuid, inbox: &RunInbox) {
        if !inbox.seeded.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let Ok(waiting) = self.store.inbox(session).await else {
            return;
        };
        for message in waiting {
            if !inbox.joined.lock().contains(&message.id) {
                inbox.give(message);
            }
        }
    }

    /// Takes the messages that joined the run out of the store (the
    /// graph that holds them is saved).
    pub(crate) async fn drop_joined(&self, run: &Run, inbox: &RunInbox) {
        let joined = inbox.joined.lock().clone();
        if joined.is_empty() {
            return;
        }
        if let Err(e) = self.store.inbox_drop(run.session, &joined).await {
            tracing::warn!(run = %run.id, error = %e, "cannot take read messages out of the inbox");
        }
    }

    /// Invokes `net` until no message waits: a run that ends with one
    /// sent after its last boundary goes on with it; none is kept for it
    /// once it ends (`close_inbox`).
    pub(crate) async fn invoke_steered(
        &self,
        run: &Run,
        net: &RunnableNetwork,
        inbox: &RunInbox,
    ) -> lc_agent::Result<lc_agent::Message> {
        if let Err(e) = self.store.open_inbox(run.id).await {
            tracing::warn!(run = %run.id, error = %e, "cannot open the session's inbox");
        }
        loop {
            self.pull_inbox(run, net, inbox).await;
            let result = net.invoke().await;
            let held = !net.held().is_empty();
            if result.is_err() || held {
                return result;
            }
            // Saved at the invoke's end: what joined leaves the store.
            self.drop_joined(run, inbox).await;
            if inbox.waiting() {
                continue;
            }
            match self.store.close_inbox(run.session, run.id).await {
                Ok(false) => continue,
                Ok(true) => return result,
                Err(e) => {
                    tracing::warn!(run = %run.id, error = %e, "cannot close the session's inbox");
                    return result;
                }
            }
        }
    }
}
