//! The conversation a node reads: its ancestors' outputs, assembled
//! parents-first and cached on invoked nodes.
//!
//! ```text
//!  input_of(node)   = the network's input (what it sees before its roots)
//!                     + every ancestor's output, parents before children
//!  history_of(node) = input_of(node) + the node's own output   (cached)
//! ```
//!
//! One parent: the parent's cached history, shared (O(1)). Several parents
//! that are siblings (the tool results of one AI message): their shared
//! prefix plus each one's output. Anything else: a walk over the
//! ancestors. Histories are computed iteratively, since they can be tens
//! of thousands of nodes deep. Changing an edge or an output drops the
//! caches below it.

use std::collections::{HashMap, HashSet};

use super::graph::Graph;
use super::RunnableNetwork;
use crate::history::History;
use crate::node::{NodeId, NodeRef};

impl Graph {
    /// The conversation a node reads: its ancestors' outputs.
    pub(crate) fn input_of(&self, node: &NodeRef) -> History {
        // None or one parent (most nodes) without copying the list.
        let single = node.with_parent_ids(|parents| match parents {
            [] => Some(None),
            [p] => Some(Some(*p)),
            _ => None,
        });
        match single {
            Some(None) => return self.input.clone(),
            Some(Some(p)) => {
                return match self.nodes().get(&p) {
                    Some(p) => self.history_of(p),
                    None => self.input.clone(),
                }
            }
            None => {}
        }
        let parents = node.parent_ids();
        match parents.as_slice() {
            [] => self.input.clone(),
            [p] => match self.nodes().get(p) {
                Some(p) => self.history_of(p),
                None => self.input.clone(),
            },
            _ => {
                let mut histories = Vec::with_capacity(parents.len());
                for p in &parents {
                    let Some(p) = self.nodes().get(p) else {
                        return self.assemble_from_ancestors(node);
                    };
                    if !p.has_output() || !p.logic().in_conversation() {
                        return self.assemble_from_ancestors(node);
                    }
                    histories.push(self.history_of(p));
                }
                // Fan-in of siblings (the tool results of one AI message):
                // the shared prefix plus each parent's own output.
                let base = histories[0].parent();
                if histories.iter().all(|h| h.parent().same_as(&base)) {
                    histories.iter().fold(base, |acc, h| acc.push_last_of(h))
                } else {
                    self.assemble_from_ancestors(node)
                }
            }
        }
    }

    /// The general case: every ancestor's output, parents before children.
    fn assemble_from_ancestors(&self, node: &NodeRef) -> History {
        let mut order: Vec<&NodeRef> = Vec::new();
        let mut seen: HashSet<NodeId> = HashSet::new();
        let roots = node.parent_ids();
        let mut stack: Vec<(NodeId, bool)> = roots.iter().rev().map(|p| (*p, false)).collect();
        while let Some((id, expanded)) = stack.pop() {
            let Some(n) = self.nodes().get(&id) else {
                continue;
            };
            if expanded {
                order.push(n);
                continue;
            }
            if !seen.insert(id) {
                continue;
            }
            stack.push((id, true));
            let parents = n.parent_ids();
            stack.extend(
                parents
                    .iter()
                    .rev()
                    .filter(|p| !seen.contains(p))
                    .map(|p| (*p, false)),
            );
        }
        order
            .iter()
            .fold(self.input.clone(), |h, n| match n.output_now() {
                Some(m) => crate::node::speak(n.logic(), h, m),
                None => h,
            })
    }

    /// The conversation up to and including `node`'s output, cached on
    /// invoked nodes. Computed iteratively: histories can be very deep.
    pub(crate) fn history_of(&self, node: &NodeRef) -> History {
        if let Some(h) = node.cached_history() {
            return h;
        }
        let mut stack: Vec<(NodeRef, bool)> = vec![(node.clone(), false)];
        let mut memo: HashMap<NodeId, History> = HashMap::new();
        while let Some((n, expanded)) = stack.pop() {
            if memo.contains_key(&n.id()) || n.has_cached_history() {
                continue;
            }
            if !expanded {
                stack.push((n.clone(), true));
                for p in n.parent_ids() {
                    if let Some(p) = self.nodes().get(&p)
                        && !p.has_cached_history()
                        && !memo.contains_key(&p.id())
                    {
                        stack.push((p.clone(), false));
                    }
                }
                continue;
            }
            let input = self.input_of_memo(&n, &memo);
            let h = n.history_after(input);
            memo.insert(n.id(), h);
        }
        memo.remove(&node.id())
            .or_else(|| node.cached_history())
            .unwrap_or_default()
    }

    /// Drops cached conversations of `id` and everything below it.
    pub(super) fn forget_histories_from(&self, id: NodeId) {
        let mut stack = vec![id];
        let mut seen = HashSet::new();
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            if let Some(n) = self.nodes().get(&id) {
                n.forget_history();
            }
            stack.extend_from_slice(self.children_of(id));
        }
    }

    fn input_of_memo(&self, node: &NodeRef, memo: &HashMap<NodeId, History>) -> History {
        // Parents that are not invoked are not cached; lend them their
        // memoized value for this computation.
        let parents = node.parent_ids();
        if let [p] = parents.as_slice()
            && let Some(h) = memo.get(p)
        {
            return h.clone();
        }
        self.input_of(node)
    }
}

impl RunnableNetwork {
    /// The conversation a node reads (its ancestors' outputs).
    pub fn input_of(&self, node: &NodeRef) -> History {
        self.0.graph.lock().input_of(node)
    }

    /// The conversation up to and including a node's output.
    pub fn history_of(&self, node: &NodeRef) -> History {
        self.0.graph.lock().history_of(node)
    }

    /// The conversation up to the current leaf.
    pub fn history(&self) -> History {
        let g = self.0.graph.lock();
        match g.current_leaf() {
            Some(leaf) => g.history_of(leaf),
            None => g.input.clone(),
        }
    }

    /// What the network sees before its roots (empty for a top-level
    /// network; a sub-network's outer conversation while it runs).
    pub(crate) fn input(&self) -> History {
        self.0.graph.lock().input.clone()
    }

    /// Sets what the network sees before its roots (used by sub-networks
    /// to show them the outer conversation).
    pub(crate) fn set_input(&self, input: History) {
        let mut g = self.0.graph.lock();
        if g.input.same_as(&input) {
            return;
        }
        g.input = input;
        for n in g.nodes().values() {
            n.forget_history();
        }
    }

    /// Drops the cached conversations of `id` and everything below it (its
    /// output changed).
    pub(crate) fn forget_histories_below(&self, id: NodeId) {
        self.0.graph.lock().forget_histories_from(id);
    }
}
