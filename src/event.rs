//! Events a network reports while it changes and runs.

use std::sync::Arc;

use crate::model::StreamDelta;
use crate::node::NodeId;

/// Something that happened in a network.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum NetworkEvent {
    /// A node was added.
    NodeAdded {
        /// The new node.
        node_id: NodeId,
    },
    /// A node ran and has its output.
    NodeInvoked {
        /// The node that ran.
        node_id: NodeId,
    },
    /// A node was removed.
    NodeRemoved {
        /// The removed node.
        node_id: NodeId,
    },
    /// A piece of a streamed model answer.
    Delta {
        /// The chat node producing it.
        node_id: NodeId,
        /// The piece.
        delta: StreamDelta,
    },
}

pub(crate) type Callback = Arc<dyn Fn(&NetworkEvent) + Send + Sync>;
