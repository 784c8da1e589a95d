//! The inbox of a running session: messages sent while it runs, waiting
//! for the run's next node boundary.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::message::ContentPart;

/// How a message sent during a run joins it (LangGraph's double-texting
/// strategies, Codex's steer).
///
/// ```
/// use lc_agent::SteerMode;
///
/// assert_eq!(SteerMode::default(), SteerMode::Inject);
/// assert_eq!(SteerMode::Interrupt.to_string(), "interrupt");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SteerMode {
    /// A human message before the run's next model call: the agent reads
    /// it on its next turn and goes on (the default).
    #[default]
    Inject,
    /// A human turn after the run's answer: the agent finishes what it is
    /// doing first, then answers it.
    Queue,
    /// Stops the run at its next boundary, keeping everything that ran:
    /// calls that have not started are answered "not run" and never run;
    /// the message (when it has text) is the next turn. Without text it
    /// only stops the run.
    Interrupt,
}

impl SteerMode {
    /// Its name (`inject`, `queue`, `interrupt`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SteerMode::Inject => "inject",
            SteerMode::Queue => "queue",
            SteerMode::Interrupt => "interrupt",
        }
    }
}

impl std::fmt::Display for SteerMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message sent to a session while it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteerMessage {
    /// Its id (the human node it becomes records it: `metadata["steer"]`).
    pub id: Uuid,
    /// What the person said (empty: an interrupt that only stops).
    #[serde(default)]
    pub(crate) text: String,
    /// Images (and text) after the text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) parts: Vec<ContentPart>,
    /// How it joins the run.
    #[serde(default)]
    pub(crate) mode: SteerMode,
    /// When it was sent (RFC 3339).
    pub(crate) sent_at: String,
}

impl SteerMessage {
    /// A message that joins the run as `mode` says, sent now.
    pub fn new(text: impl Into<String>, mode: SteerMode) -> Self {
        Self {
            id: Uuid::new_v4(),
            text: text.into(),
            parts: Vec::new(),
            mode,
            sent_at: crate::files::now_rfc3339(),
        }
    }

    /// The same message with parts after its text.
    #[must_use]
    pub fn parts(mut self, parts: Vec<ContentPart>) -> Self {
        self.parts = parts;
        self
    }

    /// Whether it says anything (an interrupt may not: it only stops).
    pub(crate) fn is_empty(&self) -> bool {
        self.text.trim().is_empty() && self.parts.is_empty()
    }
}

/// A session's inbox: messages sent while it runs, consumed by its
/// [`SteeringModifier`](crate::SteeringModifier) at the run's node
/// boundaries. Clones share one inbox; any task may send.
///
/// A run's caller closes it when the run is over ([`Inbox::close_if_empty`]):
/// a message sent then is refused (handed back) and starts a turn of its
/// own, so none is left behind between "nothing waits" and "the run ended".
///
/// ```
/// use lc_agent::{Inbox, SteerMessage, SteerMode};
///
/// let inbox = Inbox::default();
/// inbox.send(SteerMessage::new("also check the tests", SteerMode::Inject)).unwrap();
/// assert!(!inbox.close_if_empty());           // a message waits: the run goes on
/// let empty = Inbox::default();
/// assert!(empty.close_if_empty());            // the run may end now
/// let late = SteerMessage::new("too late", SteerMode::Queue);
/// assert!(empty.send(late).is_err());         // handed back: a turn of its own
/// ```
#[derive(Debug, Clone, Default)]
pub struct Inbox(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    waiting: VecDeque<SteerMessage>,
    closed: bool,
}

impl Inbox {
    /// Sends a message to the run: its id, or the message back when the
    /// inbox is closed (no run is going on: send it as a turn of its own).
    /// A message whose id waits already is not added twice.
    #[allow(clippy::result_large_err)]
    pub fn send(&self, message: SteerMessage) -> Result<Uuid, SteerMessage> {
        let mut state = self.0.lock();
        if state.closed {
            return Err(message);
        }
        let id = message.id;
        if !state.waiting.iter().any(|m| m.id == id) {
            state.waiting.push_back(message);
        }
        Ok(id)
    }

    /// Whether no message waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.lock().waiting.is_empty()
    }

    /// Opens the inbox for a run (a new inbox is open).
    pub(crate) fn open(&self) {
        self.0.lock().closed = false;
    }

    /// Closes the inbox when no message waits (the run may end); false
    /// when one does (the run should go on: invoke again).
    pub fn close_if_empty(&self) -> bool {
        let mut state = self.0.lock();
        if state.waiting.is_empty() {
            state.closed = true;
        }
        state.closed
    }

    /// Takes the waiting messages `take` chooses, oldest first (the others
    /// keep their order).
    pub(crate) fn take(&self, take: impl Fn(&SteerMessage) -> bool) -> Vec<SteerMessage> {
        let mut state = self.0.lock();
        let mut taken = Vec::new();
        let mut kept = VecDeque::with_capacity(state.waiting.len());
        for m in state.waiting.drain(..) {
            if take(&m) {
                taken.push(m);
            } else {
                kept.push_back(m);
            }
        }
        state.waiting = kept;
        taken
    }

    /// Whether a waiting message is an interrupt.
    pub(crate) fn interrupts(&self) -> bool {
        (self.0.lock().waiting.iter()).any(|m| m.mode == SteerMode::Interrupt)
    }
}
