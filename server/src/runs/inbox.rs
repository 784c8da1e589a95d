//! [`RunInbox`]: a run's side of its session's inbox (steer.rs): the
//! messages given to the run's [`Inbox`] and those that joined its graph.

use std::collections::HashSet;
use std::sync::Arc;

use lc_agent::{Events, Inbox, NetworkEvent, RunnableNetwork, SteerMessage};
use parking_lot::Mutex;
use uuid::Uuid;

/// A run's side of its session's inbox: the messages given to its
/// [`Inbox`], and those that joined the graph.
#[derive(Clone)]
pub(crate) struct RunInbox {
    pub(crate) inbox: Inbox,
    pub(crate) given: Arc<Mutex<HashSet<Uuid>>>,
    pub(crate) joined: Arc<Mutex<Vec<Uuid>>>,
    /// Set once the run read the store's inbox against its graph: from
    /// then on a new message there is new to it.
    pub(crate) seeded: Arc<std::sync::atomic::AtomicBool>,
}

impl RunInbox {
    pub(crate) fn new() -> Self {
        Self {
            inbox: Inbox::default(),
            given: Arc::default(),
            joined: Arc::default(),
            seeded: Arc::default(),
        }
    }

    /// Gives `message` to the run (once).
    pub(crate) fn give(&self, message: SteerMessage) {
        if self.given.lock().insert(message.id) {
            let _ = self.inbox.send(message);
        }
    }

    /// Watches `net` for the messages that join it.
    pub(crate) fn watch(&self, net: &RunnableNetwork) {
        let joined = self.joined.clone();
        net.on_event(move |e| {
            if let NetworkEvent::Steered { id, .. } = e {
                joined.lock().push(*id);
            }
        });
    }

    /// Whether a message given has not joined yet.
    pub(crate) fn waiting(&self) -> bool {
        let joined = self.joined.lock();
        self.given.lock().iter().any(|id| !joined.contains(id))
    }
}
