//! Changing the graph: adding, rewiring and removing nodes.
//!
//! ```text
//!  add_node(n)               n joins under the current leaf (or keeps the
//!                            parents it was given while detached)
//!  add(logic, parents)       a new node of a kind, under these parents
//!  set_parents(id, parents)  rewire; refuses cycles and foreign nodes
//!  remove_node(id)           its children take its parents
//! ```
//!
//! Every change keeps the pending set and the cached conversations right
//! and reports a [`NetworkEvent`].

use std::collections::HashSet;
use std::sync::Arc;

use super::graph::topological;
use super::RunnableNetwork;
use crate::error::{NetworkError, Result};
use crate::event::NetworkEvent;
use crate::network::runtime::Events;
use crate::node::{NodeId, NodeLogic, NodeRef};

impl RunnableNetwork {
    /// Adds a node. A node without parents becomes a child of the current
    /// leaf (so sequential code builds a chain); a node that already has
    /// parents keeps them. Adding a node twice is a no-op.
    pub fn add_node(&self, node: &NodeRef) -> Result<()> {
        if let Some(owner) = node.owner() {
            return if Arc::ptr_eq(&owner, &self.0) {
                Ok(())
            } else {
                Err(NetworkError::ForeignNode(node.id()))
            };
        }
        let parents = node.parents();
        if parents.is_empty() {
            let leaf = self.0.graph.lock().current_leaf().map(NodeRef::id);
            self.attach(node, leaf.as_slice())
        } else {
            self.attach(node, &parents)
        }
    }

    /// Adds a node under these parents (`&[]` makes it a root).
    pub fn add_node_with_parents(&self, node: &NodeRef, parents: &[NodeId]) -> Result<()> {
        self.attach(node, parents)
    }

    /// Adds a node of this kind under these parents and returns it.
    pub fn add(&self, logic: impl NodeLogic, parents: &[NodeId]) -> Result<NodeRef> {
        let node = NodeRef::detached(logic);
        self.attach(&node, parents)?;
        Ok(node)
    }

    fn attach(&self, node: &NodeRef, parents: &[NodeId]) -> Result<()> {
        let id = node.id();
        {
            let mut g = self.0.graph.lock();
            for p in parents {
                g.get(*p)?;
            }
            let added_by = crate::run::current_modifier();
            if let Err(owner) = g.insert(&self.0, node, parents, added_by) {
                if !Arc::ptr_eq(&owner, &self.0) {
                    return Err(NetworkError::ForeignNode(id));
                }
                drop(g);
                return self.set_parents(id, parents);
            }
            // A rewind lasts until the next node joins.
            g.metadata.shift_remove(super::fork::REWOUND_TO);
        }
        let modifiers = self.0.runtime.read().modifiers.clone();
        for m in modifiers.iter() {
            m.on_node_added(self, node);
        }
        self.emit(&NetworkEvent::NodeAdded { node_id: id });
        Ok(())
    }

    /// Replaces a node's parents (`&[]` makes it a root). A node that is
    /// not in the network yet is added. Fails on unknown parents and on
    /// cycles.
    pub fn set_parents(&self, child: NodeId, parents: &[NodeId]) -> Result<()> {
        let mut g = self.0.graph.lock();
        let node = g.get(child)?.clone();
        for p in parents {
            g.get(*p)?;
            // A node without children cannot reach anything: no walk needed
            // when wiring up a fresh leaf.
            if (!g.children_of(child).is_empty() || *p == child) && g.reaches(child, *p) {
                return Err(NetworkError::Cycle { parent: *p, child });
            }
        }
        g.rewire(&node, parents);
        g.forget_histories_from(child);
        Ok(())
    }

    /// Removes a node; its children take its parents (in its place, without
    /// duplicates).
    pub fn remove_node(&self, id: NodeId) -> Result<NodeRef> {
        let node = {
            let mut g = self.0.graph.lock();
            let node = g.get(id)?.clone();
            let parents = node.parents();
            let children = g.take(&node);
            for c in &children {
                g.forget_histories_from(*c);
                let Some(child) = g.nodes().get(c).cloned() else {
                    continue;
                };
                child.edit_parents(|list| {
                    let mut next = Vec::with_capacity(list.len() + parents.len());
                    for p in list.iter() {
                        if *p == id {
                            next.extend(parents.iter().copied());
                        } else {
                            next.push(*p);
                        }
                    }
                    let mut seen = HashSet::new();
                    next.retain(|p| seen.insert(*p));
                    *list = smallvec::SmallVec::from_vec(next);
                });
                for p in &parents {
                    g.link_once(*c, *p);
                }
            }
            node
        };
        self.emit(&NetworkEvent::NodeRemoved { node_id: id });
        Ok(node)
    }

    /// Puts loaded nodes (with their parents) into an empty network,
    /// checking that the edges make no cycle.
    pub(crate) fn insert_loaded(&self, nodes: Vec<(NodeRef, Vec<NodeId>)>) -> Result<()> {
        let mut g = self.0.graph.lock();
        for (node, parents) in nodes {
            let id = node.id();
            if g.nodes().contains_key(&id) {
                return Err(NetworkError::Format(format!("duplicate node id {id}")));
            }
            // A loaded node is fresh: it belongs to no network yet.
            let _ = g.insert(&self.0, &node, &parents, None);
        }
        let ids: Vec<NodeId> = g.nodes().keys().copied().collect();
        if topological(&g, &ids).len() != ids.len() {
            return Err(NetworkError::Format(
                "the connections contain a cycle".into(),
            ));
        }
        Ok(())
    }
}
