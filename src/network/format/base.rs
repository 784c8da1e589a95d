//! What a store holds of a network as of its last save or load
//! ([`SaveBase`]): recorded while writing (`write.rs`), kept by the network,
//! and compared by the next incremental save (`journal.rs`). It names no
//! network, so the network can hold it without a cycle.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::files::Files;

/// A node's id (`crate::node::NodeId`, named here without that module).
type NodeId = uuid::Uuid;

/// What a store holds of a network as of its last save or load.
pub(crate) struct SaveBase {
    /// Which store (and session) this describes.
    pub(super) store: String,
    /// The stored revision.
    pub(super) revision: u64,
    /// Bytes of the stored snapshot and of the journal after it.
    pub(super) snapshot_len: u64,
    pub(super) journal_len: u64,
    /// One mark per node, in the graph's order.
    pub(super) nodes: Vec<NodeMark>,
    /// The graph's count of removals when the marks were taken: while it
    /// stays, mark `i` is still node `i`'s.
    pub(super) removals: u64,
    pub(super) head: Head,
    pub(super) metadata: Map<String, Value>,
    pub(super) files: Files,
    pub(super) files_gen: u64,
    /// The hashes of the kept file contents (a hash names one content).
    pub(super) snapshots: BTreeSet<String>,
    pub(super) snapshots_gen: u64,
}

impl SaveBase {
    /// Bytes the store holds for the session (snapshot and journal).
    pub(crate) fn stored_len(&self) -> u64 {
        self.snapshot_len + self.journal_len
    }
}

#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Head {
    pub(super) name: String,
    pub(super) default_node: Option<String>,
    pub(super) chat_model_name: Option<String>,
}

/// One node as last saved: its id, its version, and its JSON when it was
/// pending (a pending node's kind may change its fields without a version).
pub(crate) struct NodeMark {
    pub(super) id: NodeId,
    pub(super) version: u64,
    pub(super) json: Option<Box<str>>,
}

impl NodeMark {
    pub(super) fn new(id: NodeId, version: u64, json: Option<&RawValue>) -> Self {
        Self {
            id,
            version,
            json: json.map(|r| r.get().into()),
        }
    }

    /// Whether the node is still as marked: the same version and, for a
    /// pending node, the same JSON (`None` for an invoked node).
    pub(super) fn matches(&self, version: u64, json: Option<&str>) -> bool {
        self.version == version && self.json.as_deref() == json
    }
}
