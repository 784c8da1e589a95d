//! [`RunStore`]: where run records, their events and the run queue live —
//! [`LocalRuns`](super::local::LocalRuns) in this process (with the JSON
//! session list), [`RedisRuns`](super::redis::RedisRuns) in Redis (shared
//! by every server of a deployment).

use std::time::Duration;

use async_trait::async_trait;
use lc_agent::SteerMessage;
use uuid::Uuid;

use super::event::NumberedEvent;
use super::record::{Run, RunStatus};
use crate::error::{ApiError, BoxError};

/// Errors of a run store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The session has an active run (queued, running or waiting).
    #[error("session {session} has a run in progress: {run}")]
    Busy {
        /// The session.
        session: Uuid,
        /// Its active run.
        run: Uuid,
    },
    /// The user has as many active runs as the server allows.
    #[error("{user} has {limit} runs queued or running; try again later")]
    UserFull {
        /// Whose runs.
        user: String,
        /// The per-user limit.
        limit: usize,
    },
    /// No such run.
    #[error("run {0} not found")]
    NotFound(Uuid),
    /// The run cannot start yet: its input is not saved (see
    /// [`Run::prepared`](super::Run::prepared)).
    #[error("run {0} is not prepared yet")]
    NotPrepared(Uuid),
    /// Another server took the run over: this one could not reach the
    /// store for longer than the lease, and stops it without a word (the
    /// other writes its events and its end).
    #[error("run {0} was taken over by another server")]
    Lost(Uuid),
    /// The store cannot be reached or read.
    #[error("run store: cannot {what}")]
    Store {
        /// What it could not do.
        what: String,
        /// Why.
        #[source]
        source: BoxError,
    },
}

impl RunError {
    /// The store could not do `what` because of `source`.
    pub(crate) fn store(what: impl Into<String>, source: impl Into<BoxError>) -> Self {
        RunError::Store {
            what: what.into(),
            source: source.into(),
        }
    }
}

/// What [`RunStore::steer`] did with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steer {
    /// Kept in the inbox: the run reads it at its next node boundary.
    Kept,
    /// The run is ending (or over, or another holds the session): the
    /// message was not kept; once the session is free it starts a run.
    Ending,
    /// The run waits for decisions (they come first).
    Waiting,
}

/// `Result` with [`RunError`].
pub type RunResult<T> = std::result::Result<T, RunError>;

/// A run taken from the queue by one server (acknowledged when it ends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The run.
    pub run: Uuid,
    /// The queue's id of the message (a Redis stream entry id).
    pub tag: String,
}

/// Run records, events and the queue (see the module's documentation).
///
/// Only the server that claimed a run writes its record ([`put`](Self::put))
/// and its events; others change a record only through
/// [`transition`](Self::transition) (compare and set on the status) or ask
/// for a cancel ([`request_cancel`](Self::request_cancel)).
#[async_trait]
pub trait RunStore: Send + Sync + 'static {
    /// Writes a new queued run, makes it its session's active run and
    /// queues it, in one step (a server that dies after it leaves a run
    /// that any server finds): [`RunError::Busy`] when the session has an
    /// active run, [`RunError::UserFull`] when the user has `per_user`.
    /// A server runs it only once it is [`prepared`](Self::prepared).
    async fn create(&self, run: &Run, per_user: usize) -> RunResult<()>;
    /// [`create`](Self::create), and in the same step takes the oldest
    /// queued run for `consumer` (a server with room that submits a run
    /// need not wait for its dispatcher): `Some` with the delivery taken —
    /// this run, then `running` already (its server runs it once its input
    /// is saved), or an older one (run it as the dispatcher would).
    /// Without a fast path (the default) it is `create`, taking nothing.
    async fn create_taking(
        &self,
        run: &Run,
        per_user: usize,
        consumer: &str,
    ) -> RunResult<Option<Delivery>> {
        let _ = consumer;
        self.create(run, per_user).await.map(|()| None)
    }
    /// Marks a run's input as saved in its session (see [`Run::prepared`]).
    async fn prepared(&self, id: Uuid) -> RunResult<()>;
    /// Forgets a run whose creation could not finish (and frees its session).
    async fn abandon(&self, run: &Run) -> RunResult<()>;
    /// A run.
    async fn get(&self, id: Uuid) -> RunResult<Option<Run>>;
    /// The active run of a session.
    async fn active_of(&self, session: Uuid) -> RunResult<Option<Uuid>>;
    /// A session's runs, newest first (those still kept).
    async fn of_session(&self, session: Uuid, limit: usize) -> RunResult<Vec<Run>>;
    /// A user's runs, newest first (those still kept).
    async fn of_user(&self, user: &str, limit: usize) -> RunResult<Vec<Run>>;
    /// Writes the record (its owner does, while it runs it).
    async fn put(&self, run: &Run) -> RunResult<()>;
    /// Sets the status to `to` when it is one of `from` (and, for
    /// `queued`, queues the run in the same step); the record after, or
    /// `None` when the status was another. `running` needs the run
    /// prepared ([`RunError::NotPrepared`] otherwise).
    async fn transition(
        &self,
        id: Uuid,
        from: &[RunStatus],
        to: RunStatus,
    ) -> RunResult<Option<Run>>;
    /// Writes a record that left `running` (waiting or final); a final one
    /// frees its session and is kept for `keep` (with its events).
    async fn settle(&self, run: &Run, keep: Duration) -> RunResult<()>;
    /// Removes the records (and events) kept past their time now, rather
    /// than at the next run's start (a store whose records expire by
    /// themselves, as Redis keys do, has nothing to do).
    async fn sweep(&self) {}
    /// Asks the server running it to cancel it.
    async fn request_cancel(&self, id: Uuid) -> RunResult<()>;
    /// Whether someone asked to cancel it.
    async fn cancel_requested(&self, id: Uuid) -> RunResult<bool>;
    /// Whether requests for input held by one server can be listed and
    /// answered through another (the `*_ask` / `*_answer` methods below;
    /// a store of one process needs none).
    fn shares_input(&self) -> bool {
        false
    }
    /// Lists request `input` of `run` (`ask`: its JSON) for the other
    /// servers.
    async fn put_ask(&self, run: Uuid, input: Uuid, ask: &serde_json::Value) -> RunResult<()> {
        let _ = (run, input, ask);
        Ok(())
    }
    /// Takes request `input` of `run` off the list (`None`: every one).
    async fn drop_ask(&self, run: Uuid, input: Option<Uuid>) -> RunResult<()> {
        let _ = (run, input);
        Ok(())
    }
    /// The requests of `run` listed, as [`put_ask`](Self::put_ask) wrote them.
    async fn asks(&self, run: Uuid) -> RunResult<Vec<serde_json::Value>> {
        let _ = run;
        Ok(Vec::new())
    }
    /// Leaves an answer for the server that holds a request of `run`.
    async fn post_answer(&self, run: Uuid, answer: &serde_json::Value) -> RunResult<()> {
        let _ = (run, answer);
        Ok(())
    }
    /// Takes the answers left for `run`'s requests.
    async fn take_answers(&self, run: Uuid) -> RunResult<Vec<serde_json::Value>> {
        let _ = run;
        Ok(Vec::new())
    }
    /// Keeps `message` in `session`'s inbox for its active run `run`, in
    /// one step with checking that `run` still holds the session and goes
    /// on ([`Steer`]): a message is never kept for a run that has ended.
    async fn steer(&self, session: Uuid, run: Uuid, message: &SteerMessage) -> RunResult<Steer>;
    /// The messages waiting in `session`'s inbox, oldest first.
    async fn inbox(&self, session: Uuid) -> RunResult<Vec<SteerMessage>>;
    /// Takes messages out of `session`'s inbox (they joined its graph,
    /// and that is saved).
    async fn inbox_drop(&self, session: Uuid, ids: &[Uuid]) -> RunResult<()>;
    /// Run `run` of `session` is about to end: false when a message waits
    /// in the inbox (the run goes on with it); else, in the same step, no
    /// message is kept for it any more ([`Steer::Ending`]).
    async fn close_inbox(&self, session: Uuid, run: Uuid) -> RunResult<bool>;
    /// Run `run` goes on (again: taken over, resumed): messages are kept
    /// for it.
    async fn open_inbox(&self, run: Uuid) -> RunResult<()>;
    /// Appends events (numbered by the caller, in order).
    async fn append(&self, id: Uuid, events: &[NumberedEvent]) -> RunResult<()>;
    /// The events after `after` (at most `max`).
    async fn events(&self, id: Uuid, after: u64, max: usize) -> RunResult<Vec<NumberedEvent>>;
    /// The number of the last event (0 when there is none).
    async fn last_seq(&self, id: Uuid) -> RunResult<u64>;
    /// Remembers that `user`'s request `key` is run `run` for `ttl`; the
    /// run it was already given, if any.
    async fn remember(
        &self,
        user: &str,
        key: &str,
        run: Uuid,
        ttl: Duration,
    ) -> RunResult<Option<Uuid>>;
    /// Forgets `user`'s request `key`.
    async fn forget(&self, user: &str, key: &str) -> RunResult<()>;
    /// Queues a run for any server of the deployment.
    async fn enqueue(&self, id: Uuid) -> RunResult<()>;
    /// How many runs wait in the queue for a server to take them (`None`
    /// when the store cannot say).
    async fn queue_depth(&self) -> RunResult<Option<u64>> {
        Ok(None)
    }
    /// Takes the next queued run for `consumer`, waiting at most `wait`.
    async fn claim(&self, consumer: &str, wait: Duration) -> RunResult<Option<Delivery>>;
    /// Takes a run whose server has not renewed its lease for `idle`.
    async fn reclaim(&self, consumer: &str, idle: Duration) -> RunResult<Option<Delivery>>;
    /// Renews the lease on a delivery; [`RunError::Lost`] when another
    /// server holds it now.
    async fn renew(&self, consumer: &str, delivery: &Delivery) -> RunResult<()>;
    /// Appends events of a run `consumer` executes with `delivery`, only
    /// while it holds the delivery ([`RunError::Lost`] once another server
    /// took it over); events already there (a retry) are left as they are.
    async fn append_held(
        &self,
        consumer: &str,
        delivery: &Delivery,
        events: &[NumberedEvent],
    ) -> RunResult<()> {
        let _ = consumer;
        self.append(delivery.run, events).await
    }
    /// Done with a delivery (the run ended, or waits).
    async fn ack(&self, delivery: &Delivery) -> RunResult<()>;
    /// `consumer` (this server, stopping) leaves the queue: what it still
    /// holds is queued again, then it is forgotten. False when it could
    /// not give everything back (it stays; its leases expire).
    async fn leave(&self, consumer: &str) -> RunResult<bool> {
        let _ = consumer;
        Ok(true)
    }
    /// Forgets the queue's consumers other than `consumer` that hold
    /// nothing and were silent for longer than `dead_after` (servers that
    /// died); returns how many.
    async fn prune(&self, consumer: &str, dead_after: Duration) -> RunResult<usize> {
        let _ = (consumer, dead_after);
        Ok(0)
    }
}

impl From<RunError> for ApiError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::NotFound(id) => ApiError::NotFound(format!("run {id} not found")),
            RunError::Busy { .. } | RunError::UserFull { .. } => ApiError::Conflict(e.to_string()),
            e @ RunError::Store { .. } => ApiError::internal("the run store failed", e),
            RunError::NotPrepared(id) => {
                ApiError::Conflict(format!("run {id} is not prepared yet"))
            }
            RunError::Lost(id) => {
                ApiError::Conflict(format!("run {id} was taken over by another server"))
            }
        }
    }
}
