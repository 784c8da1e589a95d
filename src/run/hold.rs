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
//!
//! A node held (or answered, `set_output`) after its run began but
//! before it started — by a pre-invoke hook, or by a sibling's post-invoke
//! hook in the same pass — does not run: held, it waits; answered, it is
//! done (run/invoke.rs). Budgets and steering stop work this way.
//!
//! A sub-network node whose inner network stopped with held work holds
//! itself ([`HELD_INSIDE`]): the outer `invoke` stops too (not an error),
//! and the nodes below it (a `task`'s tool result) wait. Once something
//! inside can go on again (a decision released a nested call), the next
//! outer `invoke` releases it ([`settle`]) and runs it again: its inner
//! network runs only what it had not run.

use crate::network::{Ordered, RunnableNetwork};
use crate::node::NodeRef;

/// The node metadata key that holds a node back (its value says why).
pub(crate) const HELD_KEY: &str = "held";

/// The reason a sub-network node holds itself: its inner network holds
/// work (a nested call waiting for a decision, say).
pub const HELD_INSIDE: &str = "sub-network";

impl NodeRef {
    /// Holds the node back: `invoke` leaves it (and the nodes below it)
    /// pending until [`NodeRef::release`]. Saved with the node.
    pub fn hold(&self, reason: impl Into<String>) {
        self.set_metadata(HELD_KEY, serde_json::Value::String(reason.into()));
    }

    /// Lets a held node run at the next `invoke`.
    pub fn release(&self) {
        self.edit_metadata(|m| m.remove(HELD_KEY));
    }

    /// Why the node is held, if it is.
    pub fn held(&self) -> Option<String> {
        self.metadata_get(HELD_KEY)
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
    }
}

/// Releases the sub-network nodes held for [`HELD_INSIDE`] whose inner
/// networks can go on (something released inside, at any depth).
pub(crate) fn settle(network: &RunnableNetwork) {
    for node in network.pending_nested() {
        let Some(sub) = node.logic().inner_network() else {
            continue;
        };
        if node.held().as_deref() != Some(HELD_INSIDE) {
            continue;
        }
        settle(sub);
        if !ready(sub.pending_in_order()).is_empty() {
            node.release();
        }
    }
}

/// The nodes of a pending order that may run: not held, and below no held
/// node of the order.
pub(crate) fn ready(mut order: Ordered) -> Ordered {
    let mut blocked = crate::node::IdSet::default();
    order.retain(|n| {
        let waits = n.held().is_some()
            || (!blocked.is_empty()
                && n.with_parent_ids(|ps| ps.iter().any(|p| blocked.contains(p))));
        if waits {
            blocked.insert(n.id());
        }
        !waits
    });
    order
}
