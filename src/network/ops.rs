//! `>>`: connecting nodes the way you draw them.
//!
//! `a >> b` makes `a` the only parent of `b` and returns `b`, so
//! `a >> b >> c` builds a chain; `[a, b] >> c` (an array or a `Vec`) gives
//! `c` several parents; `None >> c` makes `c` a root. The network is `b`'s,
//! else the parents', else the active one; a detached parent joins it
//! first, as a root. Operators cannot return errors: a connection that would make a
//! cycle or mix networks is refused, logged, and leaves the graph as it
//! was. Use [`RunnableNetwork::connect`] to get the error.
//!
//! rustc warns about an operator whose result is unused, so as a
//! statement write `let _ = a >> b;`.

use std::ops::Shr;

use crate::error::{NetworkError, Result};
use crate::network::RunnableNetwork;
use crate::node::NodeRef;

impl RunnableNetwork {
    /// Makes `parents` the parents of `child` (adding any of them that are
    /// not in the network yet).
    pub fn connect(&self, parents: &[NodeRef], child: &NodeRef) -> Result<()> {
        for p in parents {
            match p.network() {
                Some(net) if net != *self => return Err(NetworkError::ForeignNode(p.id())),
                Some(_) => {}
                // A detached parent joins as a root (keeping edges it
                // was given while detached), never under the child.
                None => self.add_node_with_parents(p, &p.parents())?,
            }
        }
        let ids: Vec<_> = parents.iter().map(NodeRef::id).collect();
        match child.network() {
            Some(net) if net != *self => Err(NetworkError::ForeignNode(child.id())),
            Some(_) => self.set_parents(child.id(), &ids),
            None => self.add_node_with_parents(child, &ids),
        }
    }
}

fn connect(parents: &[NodeRef], child: &NodeRef) {
    let network = child
        .network()
        .or_else(|| parents.iter().find_map(NodeRef::network))
        .or_else(super::scope::current);
    let result = match network {
        Some(net) => net.connect(parents, child),
        None => {
            // Nothing is in a network yet: remember the edge on the child.
            child.replace_parents(parents.iter().map(NodeRef::id).collect());
            if !parents.is_empty() {
                tracing::warn!(
                    child = %child.id(),
                    "connected nodes that belong to no network; add the parents to a network before the child"
                );
            }
            Ok(())
        }
    };
    if let Err(e) = result {
        tracing::error!(error = %e, "`>>` refused");
    }
}

impl Shr<NodeRef> for NodeRef {
    type Output = NodeRef;
    fn shr(self, child: NodeRef) -> NodeRef {
        connect(std::slice::from_ref(&self), &child);
        child
    }
}

impl Shr<&NodeRef> for &NodeRef {
    type Output = NodeRef;
    fn shr(self, child: &NodeRef) -> NodeRef {
        connect(std::slice::from_ref(self), child);
        child.clone()
    }
}

impl<const N: usize> Shr<NodeRef> for [NodeRef; N] {
    type Output = NodeRef;
    fn shr(self, child: NodeRef) -> NodeRef {
        connect(&self, &child);
        child
    }
}

impl Shr<NodeRef> for Vec<NodeRef> {
    type Output = NodeRef;
    fn shr(self, child: NodeRef) -> NodeRef {
        connect(&self, &child);
        child
    }
}

impl Shr<NodeRef> for Option<NodeRef> {
    type Output = NodeRef;
    fn shr(self, child: NodeRef) -> NodeRef {
        connect(self.as_slice(), &child);
        child
    }
}
