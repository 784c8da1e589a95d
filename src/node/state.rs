//! What a node *has*: its mutable state, private behind methods.
//!
//! ```text
//!  NodeRef ──▶ NodeCell { id, logic, state: Mutex<NodeState> }
//!                                           │
//!      name · parents · invoked · outputs · metadata      (saved)
//!      history cache · network · seq · saved-JSON cache   (runtime)
//! ```
//!
//! Every change to a saved field goes through a method here, and each of
//! them drops the node's cached saved JSON; recording an output
//! ([`NodeRef::record_output`]) is written once.

use std::sync::{Arc, Weak};

use parking_lot::{Mutex, MutexGuard};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::metadata::Metadata;

use super::{NodeId, NodeLogic, NodeRef};
use crate::history::History;
use crate::message::Message;
use crate::network::NetworkInner;

/// The mutable state of one node.
pub(crate) struct NodeState {
    /// The display name; `None` while it is the kind's name (no copy of
    /// the kind per node).
    name: Option<String>,
    /// Most nodes have one parent: kept inline.
    parents: smallvec::SmallVec<[NodeId; 1]>,
    invoked: bool,
    outputs: Option<Arc<Message>>,
    metadata: Metadata,
    /// The conversation up to and including this node's output (a cache).
    history: Option<History>,
    network: Weak<NetworkInner>,
    /// Order of addition to its network (set when attached).
    seq: u64,
    /// The node's saved JSON, cached once it is invoked (saving is then a
    /// copy). Every change to a saved field drops it.
    saved: Option<Box<RawValue>>,
    /// Changes with every change to a saved field (parents included): an
    /// incremental save writes the nodes whose version moved since the
    /// last save.
    version: u64,
}

/// The source of node versions: unique across the process, so a node
/// replaced by another at the same place never shares a version with it.
static NEXT_VERSION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_version() -> u64 {
    NEXT_VERSION.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

pub(crate) struct NodeCell {
    pub(crate) id: NodeId,
    pub(crate) logic: Arc<dyn NodeLogic>,
    state: Mutex<NodeState>,
}

/// Read access to a node's saved fields under its lock, and the one
/// writable field saving needs: the cached JSON.
pub(crate) struct SavedFields<'a>(MutexGuard<'a, NodeState>, &'a str);

impl SavedFields<'_> {
    pub(crate) fn name(&self) -> &str {
        self.0.name.as_deref().unwrap_or(self.1)
    }

    pub(crate) fn invoked(&self) -> bool {
        self.0.invoked
    }

    pub(crate) fn outputs(&self) -> &Option<Arc<Message>> {
        &self.0.outputs
    }

    pub(crate) fn metadata(&self) -> &Metadata {
        &self.0.metadata
    }

    /// The cached compact JSON of the node (invoked nodes only).
    pub(crate) fn cached_json(&self) -> Option<&RawValue> {
        self.0.saved.as_deref()
    }

    /// Keeps the compact JSON for the next save.
    pub(crate) fn cache_json(&mut self, json: Box<RawValue>) {
        self.0.saved = Some(json);
    }

    /// The version of the saved fields (see `NodeState::version`).
    pub(crate) fn version(&self) -> u64 {
        self.0.version
    }
}

impl NodeRef {
    /// A detached node with this id and state (a fresh or a loaded node;
    /// `name` `None` or the kind's own is the kind's name).
    pub(crate) fn from_parts(
        logic: Arc<dyn NodeLogic>,
        id: NodeId,
        name: Option<String>,
        invoked: bool,
        outputs: Option<Arc<Message>>,
        metadata: Metadata,
    ) -> NodeRef {
        NodeRef(Arc::new(NodeCell {
            id,
            state: Mutex::new(NodeState {
                name: name.filter(|name| name != logic.kind()),
                parents: smallvec::SmallVec::new(),
                invoked,
                outputs,
                metadata,
                history: None,
                network: Weak::new(),
                seq: 0,
                saved: None,
                version: next_version(),
            }),
            logic,
        }))
    }

    /// Keeps `json` as the node's saved form (what a save would write of
    /// it now: a node just read from that text).
    pub(crate) fn keep_saved_json(&self, json: Box<RawValue>) {
        self.state().saved = Some(json);
    }

    fn state(&self) -> MutexGuard<'_, NodeState> {
        self.0.state.lock()
    }

    /// A saved field changed: a new version, and the node's network (when
    /// a store keeps it) notes the node for its next incremental save.
    fn changed(&self, st: &mut NodeState) {
        st.version = next_version();
        if let Some(network) = st.network.upgrade() {
            network.note_changed(self.0.id);
        }
    }

    /// The saved fields, locked for one consistent read.
    pub(crate) fn saved_fields(&self) -> SavedFields<'_> {
        SavedFields(self.state(), self.0.logic.kind())
    }

    pub(crate) fn name_now(&self) -> String {
        match &self.state().name {
            Some(name) => name.clone(),
            None => self.0.logic.kind().to_string(),
        }
    }

    pub(crate) fn rename(&self, name: String) {
        let mut st = self.state();
        st.name = Some(name);
        st.saved = None;
        self.changed(&mut st);
    }

    pub(crate) fn parent_ids(&self) -> Vec<NodeId> {
        self.state().parents.to_vec()
    }

    /// `f` over the parent ids, under the node's lock (no copy). `f` must
    /// not lock this node again.
    pub(crate) fn with_parent_ids<R>(&self, f: impl FnOnce(&[NodeId]) -> R) -> R {
        f(&self.state().parents)
    }

    /// How many of the node's parents `keep` accepts.
    pub(crate) fn count_parents(&self, keep: impl Fn(&NodeId) -> bool) -> usize {
        self.state().parents.iter().filter(|p| keep(p)).count()
    }

    /// Replaces the parent list; returns the old one. Cached conversations
    /// are the caller's to drop (they depend on the whole graph).
    pub(crate) fn replace_parents(&self, parents: Vec<NodeId>) -> Vec<NodeId> {
        let mut st = self.state();
        self.changed(&mut st);
        std::mem::replace(&mut st.parents, smallvec::SmallVec::from_vec(parents)).into_vec()
    }

    /// Rewrites the parent list in place.
    pub(crate) fn edit_parents(&self, edit: impl FnOnce(&mut smallvec::SmallVec<[NodeId; 1]>)) {
        let mut st = self.state();
        self.changed(&mut st);
        edit(&mut st.parents);
    }

    pub(crate) fn invoked_now(&self) -> bool {
        self.state().invoked
    }

    pub(crate) fn has_output(&self) -> bool {
        self.state().outputs.is_some()
    }

    pub(crate) fn output_now(&self) -> Option<Arc<Message>> {
        self.state().outputs.clone()
    }

    pub(crate) fn metadata_now(&self) -> Map<String, Value> {
        self.state().metadata.to_map()
    }

    pub(crate) fn metadata_get(&self, key: &str) -> Option<Value> {
        self.state()
            .metadata
            .get(key)
            .map(super::metadata::Entry::to_value)
    }

    /// `f` over the metadata, under the node's lock (no copy). `f` must
    /// not lock this node again.
    pub(crate) fn with_metadata<R>(&self, f: impl FnOnce(&Metadata) -> R) -> R {
        f(&self.state().metadata)
    }

    /// Changes the metadata in place.
    pub(crate) fn edit_metadata<R>(&self, edit: impl FnOnce(&mut Metadata) -> R) -> R {
        let mut st = self.state();
        st.saved = None;
        self.changed(&mut st);
        edit(&mut st.metadata)
    }

    /// Records the node's output: it is invoked from now on, and `history`
    /// (the conversation up to and including the output, when the caller
    /// has it) becomes its cached conversation; `metadata` edits the
    /// metadata in the same step (timings, a cleared error). Conversations
    /// cached below the node are the network's to drop.
    pub(crate) fn record_output(
        &self,
        message: Arc<Message>,
        history: Option<History>,
        metadata: impl FnOnce(&mut Metadata),
    ) {
        let mut st = self.state();
        st.outputs = Some(message);
        st.invoked = true;
        st.history = history;
        metadata(&mut st.metadata);
        st.saved = None;
        self.changed(&mut st);
    }

    pub(crate) fn cached_history(&self) -> Option<History> {
        self.state().history.clone()
    }

    pub(crate) fn has_cached_history(&self) -> bool {
        self.state().history.is_some()
    }

    pub(crate) fn forget_history(&self) {
        self.state().history = None;
    }

    /// Caches `history` as the node's conversation when the node is
    /// invoked (a pending node's conversation can still change); builds it
    /// from `input` and the node's output.
    pub(crate) fn history_after(&self, input: History) -> History {
        let mut st = self.state();
        let history = match &st.outputs {
            Some(m) => super::speak(&*self.0.logic, input, m.clone()),
            None => input,
        };
        if st.invoked {
            st.history = Some(history.clone());
        }
        history
    }

    pub(crate) fn owner(&self) -> Option<Arc<NetworkInner>> {
        self.state().network.upgrade()
    }

    /// Joins `network` under `parents` as its `seq`-th node and returns
    /// whether the node is invoked already, or, when the node belongs to a
    /// network already, leaves it as it is and returns that network.
    /// Records `added_by` when a modifier adds it.
    pub(crate) fn bind(
        &self,
        network: &Arc<NetworkInner>,
        parents: &[NodeId],
        seq: u64,
        added_by: Option<Arc<str>>,
    ) -> Result<bool, Arc<NetworkInner>> {
        let mut st = self.state();
        if let Some(owner) = st.network.upgrade() {
            return Err(owner);
        }
        st.network = Arc::downgrade(network);
        st.parents = smallvec::SmallVec::from_slice(parents);
        st.history = None;
        st.seq = seq;
        self.changed(&mut st);
        // Room for what its run records (the timings; a model turn's
        // model, usage and finish reason): no growing the list on the way.
        // A node that ran (loaded, copied by a fork) records nothing more.
        if !st.invoked {
            st.metadata
                .reserve(if self.0.logic.is_model_turn() { 6 } else { 2 });
        }
        if let Some(by) = added_by {
            st.metadata
                .insert("added_by", crate::node::metadata::Entry::Text(by));
            st.saved = None;
        }
        Ok(st.invoked)
    }

    /// Leaves its network; returns the sequence number it had there.
    pub(crate) fn unbind(&self) -> u64 {
        let mut st = self.state();
        st.network = Weak::new();
        st.history = None;
        st.seq
    }

    pub(crate) fn seq(&self) -> u64 {
        self.state().seq
    }

    pub(crate) fn debug_fields(&self, f: &mut std::fmt::DebugStruct<'_, '_>) {
        let st = self.state();
        f.field("name", &st.name.as_deref().unwrap_or(self.0.logic.kind()))
            .field("parents", &st.parents)
            .field("invoked", &st.invoked)
            .field("outputs", &st.outputs);
    }
}
