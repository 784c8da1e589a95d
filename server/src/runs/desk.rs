//! [`InputDesk`]: what a server holds of MCP servers' requests for input
//! (`input.rs` works it): the runs executing here that can ask, each with
//! the way into its event stream, and the requests waiting for a person;
//! [`PendingInput`], such a request as its person sees it.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use lc_agent_deepagent::mcp::Elicitation;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::event::{InputRequest, RunEvent};

/// Sends an event into a run's event stream.
pub(crate) type EventSender = Arc<dyn Fn(RunEvent) + Send + Sync>;

/// A request for input waiting for its person, as `GET /api/sessions/{id}`
/// lists it (`pending_input`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PendingInput {
    /// The request's fields, as `input_requested` sent them.
    #[serde(flatten)]
    pub request: InputRequest,
    /// The run whose tool call waits.
    pub run: Uuid,
    /// When it was asked.
    pub asked_at: DateTime<Utc>,
}

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

impl Held {
    /// The request `id` as its person sees it.
    pub(super) fn pending(&self, id: Uuid) -> PendingInput {
        PendingInput {
            request: InputRequest {
                id,
                server: self.request.server().to_string(),
                message: self.request.message().to_string(),
                requested_schema: self.request.requested_schema().clone(),
            },
            run: self.run,
            asked_at: self.asked_at,
        }
    }
}
