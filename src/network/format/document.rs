//! The top level of a saved document, as one schema: the loader reads it
//! with every part, a session listing with the parts it needs.
//!
//! ```text
//!  SavedDocument<F, N, C, S>   format id name metadata default_node chat_model_name
//!                              files: F   file_snapshots: S   nodes: N   __connections__: C
//!  loading:  <Files, SavedNodes, IndexMap<..>, FileSnapshots>   (read.rs)
//!  listing:  SavedHead = <IgnoredAny, NodeCount, IgnoredAny, IgnoredAny>
//! ```

use std::fmt;

use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::{FORMAT, FORMAT_WITH_SNAPSHOTS};
use crate::error::{NetworkError, Result};

/// A saved network's top-level fields; `F`, `N`, `C` and `S` choose how
/// much of the files, the nodes, the connections and the kept file
/// contents is read.
#[derive(Deserialize)]
pub(crate) struct SavedDocument<F, N, C, S = IgnoredAny> {
    pub(crate) format: String,
    pub(crate) id: uuid::Uuid,
    #[serde(default)]
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) metadata: Map<String, Value>,
    #[serde(default)]
    pub(crate) default_node: Option<String>,
    #[serde(default)]
    pub(crate) chat_model_name: Option<String>,
    #[serde(default)]
    pub(crate) files: F,
    #[serde(default)]
    pub(crate) file_snapshots: S,
    #[serde(default)]
    pub(crate) nodes: N,
    #[serde(default, rename = "__connections__")]
    pub(crate) connections: C,
}

/// What a listing reads: the header and the number of nodes; files and
/// connections are skipped without being built.
pub(crate) type SavedHead = SavedDocument<IgnoredAny, NodeCount, IgnoredAny, IgnoredAny>;

impl<F, N, C, S> SavedDocument<F, N, C, S> {
    /// The same document with its nodes turned into `M` by `f`.
    pub(crate) fn with_nodes<M>(self, f: impl FnOnce(N) -> M) -> SavedDocument<F, M, C, S> {
        SavedDocument {
            format: self.format,
            id: self.id,
            name: self.name,
            metadata: self.metadata,
            default_node: self.default_node,
            chat_model_name: self.chat_model_name,
            files: self.files,
            file_snapshots: self.file_snapshots,
            nodes: f(self.nodes),
            connections: self.connections,
        }
    }

    /// Fails unless the document is in the format this program reads.
    pub(crate) fn check_format(&self) -> Result<()> {
        if self.format == FORMAT || self.format == FORMAT_WITH_SNAPSHOTS {
            Ok(())
        } else {
            Err(NetworkError::Format(format!(
                "unsupported format `{}` (this program reads `{FORMAT}` and `{FORMAT_WITH_SNAPSHOTS}`)",
                self.format
            )))
        }
    }
}

/// Counts the elements of a JSON array without keeping them.
#[derive(Default)]
pub(crate) struct NodeCount(pub(crate) usize);

impl<'de> Deserialize<'de> for NodeCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Count;
        impl<'de> Visitor<'de> for Count {
            type Value = NodeCount;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<NodeCount, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(NodeCount(n))
            }
        }
        d.deserialize_seq(Count)
    }
}
