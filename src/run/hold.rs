//! Held nodes: work that waits for someone outside the run, such as a
//! tool call waiting for a human's approval.
//!
//! ```text
//!  node.hold("approval")  ─▶ metadata["held"] = "approval"   (saved)
//!  invoke()               ─▶ runs everything else; the held node and
//!                            the nodes below it wait; returns normally
//!  net.held()             ─▶ the waiting nodes (also after a reload)
//!  node.release()         ─▶ the next invoke runs it
//! ```

use crate::network::RunnableNetwork;
use crate::node::NodeRef;

/// The node metadata key that holds a node back (its value says why).
pub const HELD_KEY: &str = "held";

impl NodeRef {
    /// Holds the node back: `invoke` leaves it (and the nodes below it)
    /// pending until [`NodeRef::release`]. Saved with the node.
    pub fn hold(&self, reason: impl Into<String>) {
        self.set_metadata(HELD_KEY, serde_json::Value::String(reason.into()));
    }

    /// Lets a held node run at the next `invoke`.
    pub fn release(&self) {
        self.edit_metadata(|m| m.shift_remove(HELD_KEY));
    }

    /// Why the node is held, if it is.
    pub fn held(&self) -> Option<String> {
        self.metadata_get(HELD_KEY)
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
    }
}

impl RunnableNetwork {
    /// Pending nodes that are held back, in order.
    pub fn held(&self) -> Vec<NodeRef> {
        self.pending()
            .into_iter()
            .filter(|n| n.held().is_some() && !n.is_invoked())
            .collect()
    }
}

/// The nodes of a pending order that may run: not held, and below no held
/// node of the order.
pub(crate) fn ready(order: Vec<NodeRef>) -> Vec<NodeRef> {
    let mut blocked = std::collections::HashSet::new();
    order
        .into_iter()
        .filter(|n| {
            let waits = n.held().is_some() || n.parent_ids().iter().any(|p| blocked.contains(p));
            if waits {
                blocked.insert(n.id());
            }
            !waits
        })
        .collect()
}
