//! Writing the saved format: serde views over the locked graph.
//!
//! ```text
//!  NetworkView ─▶ header fields, files,
//!                 NodesView ─▶ NodeView (cached compact JSON | NodeBody)
//!                 ConnectionsView ─▶ {"child index": [parent indices]}
//! ```

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use std::cell::RefCell;

use super::base::NodeMark;
use super::{format_for, COMMON_KEYS, FILE_SNAPSHOTS_KEY, NODE_TYPE_KEY};
use crate::error::Result;
use crate::files::Files;
use crate::network::snapshots::FileSnapshots;
use crate::network::{Graph, RunnableNetwork};
use crate::node::GenericNode;
use crate::node::{NodeRef, SavedFields};

pub(super) struct NetworkView<'a> {
    pub(super) graph: &'a Graph,
    pub(super) files: &'a Files,
    pub(super) snapshots: &'a FileSnapshots,
    /// Use (and fill) the invoked nodes' cached compact JSON.
    cached: bool,
    /// Where to note each node's version as it is written (for the next
    /// incremental save), when wanted.
    marks: Option<&'a RefCell<Vec<NodeMark>>>,
}

struct NodesView<'a> {
    graph: &'a Graph,
    cached: bool,
    marks: Option<&'a RefCell<Vec<NodeMark>>>,
}

pub(super) struct NodeView<'a> {
    pub(super) node: &'a NodeRef,
    pub(super) cached: bool,
    pub(super) marks: Option<&'a RefCell<Vec<NodeMark>>>,
}

/// A built-in node's saved object: common fields, then the kind's own.
struct NodeBody<'a, 'b> {
    node: &'a NodeRef,
    st: &'a SavedFields<'b>,
    fields: Map<String, Value>,
}
struct ConnectionsView<'a>(&'a Graph);

impl Serialize for NetworkView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let g = self.graph;
        let with_snapshots = !self.snapshots.is_empty();
        let mut map = s.serialize_map(Some(9 + usize::from(with_snapshots)))?;
        map.serialize_entry("format", format_for(with_snapshots))?;
        map.serialize_entry("id", &g.id)?;
        map.serialize_entry("name", &g.name)?;
        map.serialize_entry("metadata", &g.metadata)?;
        map.serialize_entry("default_node", &g.default_node)?;
        map.serialize_entry("chat_model_name", &g.chat_model_name)?;
        map.serialize_entry("files", self.files)?;
        if with_snapshots {
            map.serialize_entry(FILE_SNAPSHOTS_KEY, self.snapshots)?;
        }
        map.serialize_entry(
            "nodes",
            &NodesView {
                graph: g,
                cached: self.cached,
                marks: self.marks,
            },
        )?;
        map.serialize_entry("__connections__", &ConnectionsView(g))?;
        map.end()
    }
}

impl Serialize for NodesView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.graph.nodes().len()))?;
        for node in self.graph.nodes().values() {
            seq.serialize_element(&NodeView {
                node,
                cached: self.cached,
                marks: self.marks,
            })?;
        }
        seq.end()
    }
}

impl Serialize for NodeView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let node = self.node;
        let mut st = node.saved_fields();
        if let Some(marks) = self.marks {
            // A pending node's JSON is kept to compare with next time (its
            // kind's own fields may change without a version); an invoked
            // node's version says it all.
            let json = if st.invoked() {
                None
            } else {
                drop(st);
                let raw = serde_json::value::to_raw_value(&NodeView {
                    node,
                    cached: self.cached,
                    marks: None,
                })
                .map_err(S::Error::custom)?;
                st = node.saved_fields();
                let version = st.version();
                drop(st);
                marks
                    .borrow_mut()
                    .push(NodeMark::new(node.id(), version, Some(&raw)));
                return raw.serialize(s);
            };
            marks
                .borrow_mut()
                .push(NodeMark::new(node.id(), st.version(), json));
        }
        if let Some(generic) = node.downcast::<GenericNode>() {
            // Unknown kind: every saved field as it was, with the fields a
            // program may change (name, metadata) brought up to date.
            let mut raw = generic.raw().clone();
            if raw.contains_key("name") {
                raw.insert("name".into(), Value::String(st.name().to_string()));
            }
            if raw.contains_key("metadata") {
                raw.insert("metadata".into(), Value::Object(st.metadata().to_map()));
            }
            return raw.serialize(s);
        }
        if self.cached && st.invoked() {
            if st.cached_json().is_none() {
                let fields = node.logic().save().map_err(S::Error::custom)?;
                let body = NodeBody {
                    node,
                    st: &st,
                    fields,
                };
                let raw = serde_json::value::to_raw_value(&body).map_err(S::Error::custom)?;
                st.cache_json(raw);
            }
            return st.cached_json().serialize(s);
        }
        let fields = node.logic().save().map_err(S::Error::custom)?;
        NodeBody {
            node,
            st: &st,
            fields,
        }
        .serialize(s)
    }
}

impl Serialize for NodeBody<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let (node, st) = (self.node, self.st);
        let mut map = s.serialize_map(Some(6 + self.fields.len()))?;
        map.serialize_entry(NODE_TYPE_KEY, node.kind())?;
        map.serialize_entry("id", &node.id())?;
        map.serialize_entry("name", st.name())?;
        map.serialize_entry("invoked", &st.invoked())?;
        map.serialize_entry("outputs", st.outputs())?;
        map.serialize_entry("metadata", st.metadata())?;
        for (k, v) in &self.fields {
            if !COMMON_KEYS.contains(&k.as_str()) {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

impl Serialize for ConnectionsView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let g = self.0;
        let mut map = s.serialize_map(None)?;
        for (i, node) in g.nodes().values().enumerate() {
            if let Some(indices) = parent_indices(g, node) {
                map.serialize_entry(&i.to_string(), &indices)?;
            }
        }
        map.end()
    }
}

impl RunnableNetwork {
    /// Serializes the network with `write`, holding its locks for the
    /// duration so the document is one consistent snapshot.
    pub(super) fn write_saved<R>(
        &self,
        cached: bool,
        write: impl FnOnce(&NetworkView<'_>) -> serde_json::Result<R>,
    ) -> Result<R> {
        let graph = self.0.graph.lock();
        let files = self.0.files.read();
        let snapshots = self.0.file_snapshots.read();
        Ok(write(&NetworkView {
            graph: &graph,
            files: &files,
            snapshots: &snapshots,
            cached,
            marks: None,
        })?)
    }

    /// Like [`write_saved`](Self::write_saved) (compact, cached), also
    /// noting each node's version as written: `seen` gets the view (after
    /// the write, under the same locks) and the marks.
    pub(super) fn write_saved_marked<R, T>(
        &self,
        write: impl FnOnce(&NetworkView<'_>) -> serde_json::Result<R>,
        seen: impl FnOnce(&NetworkView<'_>, Vec<NodeMark>) -> T,
    ) -> Result<(R, T)> {
        let graph = self.0.graph.lock();
        // The marks describe every node as written: what changed before
        // is in them, what changes from now on is noted for the next save.
        self.0.take_changed();
        let files = self.0.files.read();
        let snapshots = self.0.file_snapshots.read();
        let marks = RefCell::new(Vec::with_capacity(graph.nodes().len()));
        let view = NetworkView {
            graph: &graph,
            files: &files,
            snapshots: &snapshots,
            cached: true,
            marks: Some(&marks),
        };
        let out = write(&view)?;
        let seen = seen(&view, marks.take());
        Ok((out, seen))
    }
}

/// The parents of `node` as indices into the graph's nodes (`None` when
/// it has no parents: the saved `__connections__` leave it out).
pub(super) fn parent_indices(g: &Graph, node: &NodeRef) -> Option<Vec<usize>> {
    let parents = node.parent_ids();
    if parents.is_empty() {
        return None;
    }
    Some(
        parents
            .iter()
            .filter_map(|p| g.nodes().get_index_of(p))
            .collect(),
    )
}
