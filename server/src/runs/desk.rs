//! [`InputDesk`]: what a server holds of MCP servers' requests for input
//! (`input.rs` works it): the runs executing here that can ask, each with
//! the way into its event stream, and the requests waiting for a person.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use lc_agent_deepagent::mcp::Elicitation;
use uuid::Uuid;

use super::event::RunEvent;

/// Sends an event into a run's event stream.
pub(crate) type EventSender = Arc<dyn Fn(RunEvent) + Send + Sync>;

/// The runs that can ask (by session) and the requests held (by id).
#[derive(Default)]
pub(crate) struct InputDesk {
    pub(super) runs: HashMap<Uuid, RunDesk>,
    pub(super) held: HashMap<Uuid, Held>,
}

/// A run executing here, as requests for input reach it.
pub(super) struct RunDesk {
    pub(super) run: Uuid,
    pub(super) user: String,
    pub(super) ephemeral: bool,
    pub(super) send: EventSender,
}

/// A request waiting for its person.
pub(super) struct Held {
    pub(super) run: Uuid,
    pub(super) session: Uuid,
    pub(super) user: String,
    pub(super) asked_at: DateTime<Utc>,
    pub(super) request: Elicitation,
}
