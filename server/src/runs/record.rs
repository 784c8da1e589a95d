//! [`Run`]: one run of a session as a record — who asked, what state it
//! is in, when it started and ended, what it cost.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::pending::PendingCall;

/// The session metadata key naming the run whose input it holds last.
pub(crate) const RUN_KEY: &str = "run";

/// Where a run is.
///
/// ```text
///  queued ─▶ running ─▶ done | failed | cancelled
///               │  ▲
///               ▼  │ (decisions)
///             waiting ─▶ cancelled
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Waiting for a server to take it.
    Queued,
    /// A server runs it.
    Running,
    /// It stopped at a tool call that needs a person's decision; the
    /// decisions (`POST .../runs {"decisions": [...]}`) run it on.
    Waiting,
    /// The agent answered.
    Done,
    /// It failed (`error` says why).
    Failed,
    /// Someone cancelled it.
    Cancelled,
}

impl RunStatus {
    /// The status as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::Waiting => "waiting",
            RunStatus::Done => "done",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// Reads the API's spelling.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "queued" => RunStatus::Queued,
            "running" => RunStatus::Running,
            "waiting" => RunStatus::Waiting,
            "done" => RunStatus::Done,
            "failed" => RunStatus::Failed,
            "cancelled" => RunStatus::Cancelled,
            _ => return None,
        })
    }

    /// Whether the run holds its session (queued, running or waiting): a
    /// second run of the session is refused meanwhile.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            RunStatus::Queued | RunStatus::Running | RunStatus::Waiting
        )
    }

    /// Whether the run is over for good (done, failed or cancelled).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            RunStatus::Done | RunStatus::Failed | RunStatus::Cancelled
        )
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One run of a session (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// The run's id.
    pub id: Uuid,
    /// The session it runs.
    pub session: Uuid,
    /// Whose session.
    pub user: String,
    /// Where it is.
    pub status: RunStatus,
    /// What started it: `message`, `decisions`, `continue` or `completion`.
    #[serde(default)]
    pub input: String,
    /// When it was asked for.
    pub created_at: DateTime<Utc>,
    /// When a server first took it.
    #[serde(default)]
    pub started_at: Option<DateTime<Utc>>,
    /// When it ended (done, failed or cancelled).
    #[serde(default)]
    pub finished_at: Option<DateTime<Utc>>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// What its model calls used (sub-agents included), by model; the
    /// API shows it priced.
    #[serde(default)]
    pub usage: lc_agent::UsageTotals,
    /// The final answer (when done).
    #[serde(default)]
    pub answer: Option<String>,
    /// The calls it waits for (when waiting), as `approval_needed` lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingCall>,
    /// How many times a server started it (more than one: it was handed
    /// over, or resumed after a crash or a restart).
    #[serde(default)]
    pub attempts: u32,
    /// The server running it (or that ran it last).
    #[serde(default)]
    pub server: Option<String>,
    /// Its input is saved in the session: a server may run it. (A run
    /// whose server died before that is failed after a while, never run
    /// without its input.)
    #[serde(default)]
    pub prepared: bool,
    /// When its input was saved.
    #[serde(default)]
    pub prepared_at: Option<DateTime<Utc>>,
    /// How long it waited, after its input was saved, for a server to
    /// take it (the queue's own latency; the last time it was taken).
    #[serde(default)]
    pub queue_ms: Option<f64>,
    /// `store: false` (a chat completion's): its session is the run's own
    /// copy, removed when the run ends; nothing of it is kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ephemeral: bool,
    /// The session blueprint's own `[prices]`, which price its usage on
    /// top of the server's table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<lc_agent::Prices>,
}

impl Run {
    /// A new queued run of `user`'s `session`.
    pub fn new(session: Uuid, user: &str, input: &str) -> Self {
        Self {
            id: Uuid::new_v4(),
            session,
            user: user.to_string(),
            status: RunStatus::Queued,
            input: input.to_string(),
            created_at: Utc::now(),
            started_at: None,
            finished_at: None,
            error: None,
            usage: lc_agent::UsageTotals::default(),
            answer: None,
            pending: Vec::new(),
            attempts: 0,
            server: None,
            prepared: false,
            prepared_at: None,
            queue_ms: None,
            ephemeral: false,
            prices: None,
        }
    }
}
