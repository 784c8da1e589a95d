//! Graph storage: nodes in insertion order, edges both ways, the pending
//! set, and topological order.
//!
//! ```text
//!  nodes:    IndexMap<id, NodeRef>        (insertion order = saved order)
//!  parents:  on each node                 children: id -> [id] (here)
//!  pending:  seq -> id of nodes not invoked yet (a pass reads it in order)
//! ```
//!
//! [`Graph`] is the network's lock-protected state; the read-only queries
//! on [`RunnableNetwork`] live here too. Changing the graph is in
//! `edit.rs`, reading conversations out of it in `conversation.rs`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::{NetworkInner, RunnableNetwork};
use crate::error::{NetworkError, Result};
use crate::history::History;
use crate::node::{NodeId, NodeRef};

/// The hasher of the graph's own maps: fast, and seeded per process, so
/// ids read from a saved file cannot be chosen to collide (the per-pass
/// maps of a run use `SmallIdMap`, keyed by the ids already in the graph).
type Seeded = foldhash::fast::RandomState;

/// A node's children, in the order they were connected.
type Children = smallvec::SmallVec<[NodeId; 1]>;

/// Nodes in an order, the few of a run's pass kept inline.
pub(crate) type Ordered = smallvec::SmallVec<[NodeRef; 4]>;

pub(crate) struct Graph {
    pub(crate) id: uuid::Uuid,
    pub(crate) name: String,
    pub(crate) metadata: Map<String, Value>,
    pub(crate) default_node: Option<String>,
    pub(crate) chat_model_name: Option<String>,
    nodes: IndexMap<NodeId, NodeRef, Seeded>,
    /// Most nodes have one child (a chain): kept inline.
    children: HashMap<NodeId, Children, Seeded>,
    /// Nodes not yet invoked, by the sequence number they were added with
    /// (so a pass finds them without scanning the whole graph).
    pending: BTreeMap<u64, NodeId>,
    next_seq: u64,
    /// The sub-network nodes (a network node holds a network of its own),
    /// so what concerns every network of a session finds them without a
    /// walk over every node.
    nested: crate::node::IdSet,
    /// How many nodes were taken out so far: while it stays, the nodes
    /// keep their places (a node is only ever added at the end).
    removals: u64,
    /// What the network sees before its roots (a sub-network's outer
    /// conversation).
    pub(super) input: History,
}

impl Graph {
    pub(crate) fn new(
        id: uuid::Uuid,
        name: String,
        metadata: Map<String, Value>,
        default_node: Option<String>,
        chat_model_name: Option<String>,
    ) -> Self {
        Graph {
            id,
            name,
            metadata,
            default_node,
            chat_model_name,
            nodes: IndexMap::default(),
            children: HashMap::default(),
            pending: BTreeMap::new(),
            next_seq: 0,
            nested: crate::node::IdSet::default(),
            removals: 0,
            input: History::new(),
        }
    }

    /// Nodes in insertion order (the saved order).
    pub(crate) fn nodes(&self) -> &IndexMap<NodeId, NodeRef, Seeded> {
        &self.nodes
    }

    pub(super) fn get(&self, id: NodeId) -> Result<&NodeRef> {
        self.nodes.get(&id).ok_or(NetworkError::UnknownNode(id))
    }

    pub(super) fn children_of(&self, id: NodeId) -> &[NodeId] {
        self.children.get(&id).map_or(&[], Children::as_slice)
    }

    pub(super) fn current_leaf(&self) -> Option<&NodeRef> {
        // After a rewind: the node rewound to (none for "before the roots").
        match self.metadata.get(super::fork::REWOUND_TO) {
            Some(Value::Null) => return None,
            Some(Value::String(id)) => {
                let node = id.parse().ok().and_then(|id: NodeId| self.nodes.get(&id));
                if node.is_some() {
                    return node;
                }
            }
            _ => {}
        }
        self.nodes
            .values()
            .rev()
            .find(|n| self.children_of(n.id()).is_empty())
    }

    pub(super) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// The ids of the nodes not invoked yet, in the order they were added.
    pub(crate) fn pending_ids(&self) -> impl Iterator<Item = &NodeId> {
        self.pending.values()
    }

    /// The sub-network nodes, in no particular order.
    pub(super) fn nested(&self) -> impl Iterator<Item = &NodeRef> {
        self.nested.iter().filter_map(|id| self.nodes.get(id))
    }

    /// How many nodes were taken out of the graph so far: while this stays
    /// the same, every node keeps its index.
    pub(crate) fn removals(&self) -> u64 {
        self.removals
    }

    /// Whether `target` is `from` or one of its descendants.
    pub(super) fn reaches(&self, from: NodeId, target: NodeId) -> bool {
        let mut stack = vec![from];
        let mut seen = HashSet::new();
        while let Some(id) = stack.pop() {
            if id == target {
                return true;
            }
            if seen.insert(id) {
                stack.extend_from_slice(self.children_of(id));
            }
        }
        false
    }

    /// Puts a detached node into the graph under `parents` (which must
    /// exist). A node that belongs to a network already is left alone and
    /// its network returned.
    pub(super) fn insert(
        &mut self,
        network: &Arc<NetworkInner>,
        node: &NodeRef,
        parents: &[NodeId],
        added_by: Option<Arc<str>>,
    ) -> std::result::Result<(), Arc<NetworkInner>> {
        let id = node.id();
        let seq = self.next_seq;
        let invoked = node.bind(network, parents, seq, added_by)?;
        self.next_seq += 1;
        if !invoked {
            self.pending.insert(seq, id);
        }
        if node.logic().inner_network().is_some() {
            self.nested.insert(id);
        }
        self.nodes.insert(id, node.clone());
        self.link(id, parents);
        Ok(())
    }

    /// Takes a node out of the graph with its edges; its children keep
    /// their (now dangling) parent id for the caller to rewire.
    pub(super) fn take(&mut self, node: &NodeRef) -> Vec<NodeId> {
        let id = node.id();
        let children = self.children.remove(&id).unwrap_or_default().into_vec();
        self.unlink(id, &node.parents());
        self.nested.remove(&id);
        if self.nodes.shift_remove(&id).is_some() {
            self.removals += 1;
        }
        self.pending.remove(&node.unbind());
        children
    }

    /// Replaces a node's parents, edges both ways.
    pub(super) fn rewire(&mut self, node: &NodeRef, parents: &[NodeId]) {
        let old = node.replace_parents(parents.to_vec());
        self.unlink(node.id(), &old);
        self.link(node.id(), parents);
    }

    /// Adds `child` under `parent` unless it is there already.
    pub(super) fn link_once(&mut self, child: NodeId, parent: NodeId) {
        let list = self.children.entry(parent).or_default();
        if !list.contains(&child) {
            list.push(child);
        }
    }

    /// The node ran: it leaves the pending set.
    pub(crate) fn mark_done(&mut self, node: &NodeRef) {
        self.pending.remove(&node.seq());
        // Nodes below that have their outputs already (a transcript's
        // answers) may have cached a conversation without this node's
        // output. Only cached nodes are walked: below a node with no
        // cache (one still to run, which forgets below it when it runs)
        // nothing is read before then, so a long chain of pending nodes
        // costs nothing here.
        let mut stack: smallvec::SmallVec<[NodeId; 4]> =
            smallvec::SmallVec::from_slice(self.children_of(node.id()));
        while let Some(id) = stack.pop() {
            if let Some(n) = self.nodes.get(&id)
                && n.has_cached_history()
            {
                n.forget_history();
                stack.extend_from_slice(self.children_of(id));
            }
        }
    }

    fn link(&mut self, child: NodeId, parents: &[NodeId]) {
        for p in parents {
            self.children.entry(*p).or_default().push(child);
        }
    }

    fn unlink(&mut self, child: NodeId, parents: &[NodeId]) {
        for p in parents {
            if let Some(c) = self.children.get_mut(p) {
                c.retain(|x| *x != child);
            }
        }
    }
}

impl RunnableNetwork {
    /// The node with this id.
    pub fn node(&self, id: NodeId) -> Option<NodeRef> {
        self.0.graph.lock().nodes.get(&id).cloned()
    }

    /// All nodes in insertion order.
    pub fn nodes(&self) -> Vec<NodeRef> {
        self.0.graph.lock().nodes.values().cloned().collect()
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.0.graph.lock().nodes.len()
    }

    /// Whether the network has no nodes.
    pub fn is_empty(&self) -> bool {
        self.0.graph.lock().nodes.is_empty()
    }

    /// Nodes without children, in insertion order.
    pub fn leaves(&self) -> Vec<NodeRef> {
        let g = self.0.graph.lock();
        g.nodes
            .values()
            .filter(|n| g.children_of(n.id()).is_empty())
            .cloned()
            .collect()
    }

    /// The newest node without children: where a new node attaches.
    pub fn current_leaf(&self) -> Option<NodeRef> {
        self.0.graph.lock().current_leaf().cloned()
    }

    /// A node's children, in the order they were connected.
    pub fn children(&self, id: NodeId) -> Vec<NodeRef> {
        let g = self.0.graph.lock();
        g.children_of(id)
            .iter()
            .filter_map(|c| g.nodes.get(c).cloned())
            .collect()
    }

    /// A node's parents, in order.
    pub fn parents(&self, id: NodeId) -> Vec<NodeRef> {
        let g = self.0.graph.lock();
        let Some(n) = g.nodes.get(&id) else {
            return Vec::new();
        };
        let parents = n.parents();
        parents
            .iter()
            .filter_map(|p| g.nodes.get(p).cloned())
            .collect()
    }

    /// Every node, parents before children (ties in insertion order).
    pub fn topological_order(&self) -> Vec<NodeRef> {
        let g = self.0.graph.lock();
        let ids: Vec<NodeId> = g.nodes.keys().copied().collect();
        topological(&g, &ids).into_vec()
    }

    /// See [`Events::additions`](crate::Events::additions).
    pub(crate) fn additions_now(&self) -> u64 {
        self.0.graph.lock().next_seq
    }

    /// See [`Events::nodes_added_since`](crate::Events::nodes_added_since).
    pub(crate) fn nodes_added_after(&self, mark: u64) -> Vec<NodeRef> {
        let g = self.0.graph.lock();
        // Nodes are only ever added at the end, each with the next
        // sequence number: the newer ones are a suffix.
        let mut out: Vec<NodeRef> = g
            .nodes
            .values()
            .rev()
            .take_while(|n| n.seq() >= mark)
            .cloned()
            .collect();
        out.reverse();
        out
    }

    /// Nodes that have not run yet, parents before children.
    pub fn pending(&self) -> Vec<NodeRef> {
        self.pending_in_order().into_vec()
    }

    /// [`pending`](Self::pending), the few of a run's pass kept inline.
    pub(crate) fn pending_in_order(&self) -> Ordered {
        let g = self.0.graph.lock();
        if g.pending.len() <= 1 {
            // The usual case between turns: nothing to order.
            return g
                .pending
                .values()
                .filter_map(|id| g.nodes.get(id).cloned())
                .collect();
        }
        let ids: smallvec::SmallVec<[NodeId; 4]> = g.pending.values().copied().collect();
        topological(&g, &ids)
    }

    /// Pending nodes that are held back (waiting for someone outside the
    /// run to release them), in order.
    pub fn held(&self) -> Vec<NodeRef> {
        self.pending()
            .into_iter()
            .filter(|n| n.held().is_some() && !n.is_invoked())
            .collect()
    }

    /// The sub-network nodes that have not run yet, in no particular order
    /// (nothing to copy in a network without sub-networks).
    pub(crate) fn pending_nested(&self) -> Vec<NodeRef> {
        let g = self.0.graph.lock();
        g.nested()
            .filter(|n| g.pending.contains_key(&n.seq()))
            .cloned()
            .collect()
    }

    /// The node ran: it leaves the pending set.
    pub(crate) fn mark_pending_done(&self, node: &NodeRef) {
        self.0.graph.lock().mark_done(node);
    }
}

/// Kahn's algorithm over `ids` only (edges to nodes outside are ignored);
/// ties keep the order of `ids`.
pub(super) fn topological(g: &Graph, ids: &[NodeId]) -> Ordered {
    let mut index = crate::node::SmallIdMap::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        index.insert(*id, i);
    }
    // Usually every node came after its parents (a node joins below nodes
    // already there): then `ids` is the order, and ties keep it.
    let nodes: smallvec::SmallVec<[&NodeRef; 4]> =
        ids.iter().filter_map(|id| g.nodes.get(id)).collect();
    let in_order = nodes.len() == ids.len()
        && nodes.iter().enumerate().all(|(i, n)| {
            n.with_parent_ids(|ps| ps.iter().all(|p| index.get(p).is_none_or(|&pi| pi < i)))
        });
    if in_order {
        return nodes.into_iter().cloned().collect();
    }
    let mut indegree = vec![0usize; ids.len()];
    for (i, id) in ids.iter().enumerate() {
        let Some(n) = g.nodes.get(id) else { continue };
        indegree[i] = n.count_parents(|p| index.contains_key(p));
    }
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = indegree
        .iter()
        .enumerate()
        .filter(|(_, d)| **d == 0)
        .map(|(i, _)| std::cmp::Reverse(i))
        .collect();
    let mut out = Ordered::with_capacity(ids.len());
    while let Some(std::cmp::Reverse(i)) = ready.pop() {
        let id = ids[i];
        if let Some(n) = g.nodes.get(&id) {
            out.push(n.clone());
        }
        for c in g.children_of(id) {
            if let Some(&ci) = index.get(c) {
                indegree[ci] -= 1;
                if indegree[ci] == 0 {
                    ready.push(std::cmp::Reverse(ci));
                }
            }
        }
    }
    out
}
