//! The saved format, `lc-agent/1`: one JSON document per network.
//!
//! (The full description is on the [`FORMAT`] docs.)

pub(crate) mod base;
mod document;
pub(crate) mod journal;
mod read;
mod write;

use std::sync::atomic::Ordering;

use serde_json::Value;

use crate::error::Result;
use crate::network::RunnableNetwork;

pub(crate) use document::{SavedDocument, SavedHead};
pub(crate) use journal::{materialize, scan_journal, JournalEntry, Scan};

/// The saved format, `lc-agent/1`: one JSON document per network.
///
/// ```json
/// {"format": "lc-agent/1", "id": "...", "name": "...", "metadata": {},
///  "default_node": "chat", "chat_model_name": "gpt-4o",
///  "files": {"/notes.md": {"content": ["line"], "created_at": "...", "modified_at": "..."}},
///  "file_snapshots": {"<sha256>": "text"},
///  "nodes": [{"__node_type__": "human", "id": "...", "name": "human",
///             "invoked": true, "outputs": {...}, "metadata": {}, "text": "hi"}],
///  "__connections__": {"1": [0]}}
/// ```
///
/// Nodes are written in insertion order with their common fields first and
/// their kind's own fields after; `__connections__` maps a node's index to
/// its parents' indices. Saving, loading and saving again gives the same
/// bytes. A kind this program does not know loads as a
/// [`GenericNode`](crate::GenericNode) that keeps every field and saves
/// back unchanged.
///
/// `file_snapshots` holds the file contents kept for rewinds, by hash
/// (written only when there are some, and then the document is tagged
/// `lc-agent/2`; documents of `lc-agent/1` that keep them in the metadata
/// still load, moving them there).
///
/// A session list stores a network as such a document (the *snapshot*)
/// followed by a journal of incremental saves: one `lc-agent-journal/1`
/// record per save, holding what changed since the save before (see
/// `journal.rs`). Loading applies the journal and gives the document a
/// full save gives, byte for byte.
///
/// ```text
///  to_json ──▶ write.rs (views over the locked graph; invoked nodes'
///              compact JSON cached on the node)
///  from_json ◀── read.rs (one pass: built-in kinds read straight into
///              their fields, other kinds through crate::kinds)
///  document.rs: the top-level schema, shared with session listings
///  journal.rs: incremental saves (a record of what changed; a snapshot
///              and its journal assembled into one document)
/// ```
///
/// The format tag of saved networks.
pub const FORMAT: &str = "lc-agent/1";

/// The format tag of a saved network that keeps file contents for rewinds
/// (a top-level `"file_snapshots": {sha256: text}` after `"files"`): the
/// same document with that one part more, tagged so that a program that
/// reads only [`FORMAT`] refuses it instead of dropping them. A network
/// without kept contents is written as [`FORMAT`].
pub(crate) const FORMAT_WITH_SNAPSHOTS: &str = "lc-agent/2";

/// The key of the kept file contents, at the top of a document (and, in
/// documents written before they moved out, in the metadata).
pub(crate) const FILE_SNAPSHOTS_KEY: &str = "file_snapshots";

/// The format tag a network with (or without) kept contents is saved in.
pub(crate) fn format_for(has_snapshots: bool) -> &'static str {
    if has_snapshots {
        FORMAT_WITH_SNAPSHOTS
    } else {
        FORMAT
    }
}

/// The key naming a node's kind in the saved format.
pub(crate) const NODE_TYPE_KEY: &str = "__node_type__";

/// The fields every node has, written first in this order.
const COMMON_KEYS: [&str; 6] = [
    NODE_TYPE_KEY,
    "id",
    "name",
    "invoked",
    "outputs",
    "metadata",
];

impl RunnableNetwork {
    /// The network as compact JSON in the saved format.
    pub fn to_json(&self) -> Result<String> {
        // Invoked nodes never change their saved form unless a field is
        // edited, so their compact JSON is cached: saving again after a
        // turn (a checkpoint) costs a copy plus the new nodes.
        let json = self.write_saved(true, |view| serde_json::to_string(view))?;
        self.0.saved_len.store(json.len(), Ordering::Relaxed);
        Ok(json)
    }

    /// Loads a network saved with [`RunnableNetwork::to_json`]. The default
    /// modifiers are attached; models, tools and other modifiers must be
    /// attached again by the caller.
    pub fn from_json(json: &str) -> Result<RunnableNetwork> {
        read::network_from_str(json)
    }

    /// The length of this network's last compact serialization (0 before
    /// the first): a good capacity for the buffer of the next one.
    pub(crate) fn saved_len_hint(&self) -> usize {
        self.0.saved_len.load(Ordering::Relaxed)
    }
}

/// The saved format's other forms: a JSON value, indented text, a file,
/// and NVIDIA LC Agent's own JSON (read only).
pub trait Saving: Sized {
    /// The network as a JSON value in the saved format.
    fn to_value(&self) -> Result<Value>;

    /// The network as indented JSON in the saved format.
    fn to_json_pretty(&self) -> Result<String>;

    /// Loads a network from a JSON value in the saved format.
    fn from_value(value: Value) -> Result<Self>;

    /// Saves to a file atomically (a temporary file beside it, fsync,
    /// rename, directory fsync), so a crash leaves the old file or the new
    /// one, never a torn one.
    fn save_to_file(&self, path: impl AsRef<std::path::Path>) -> Result<()>;

    /// Loads a network saved with [`Saving::save_to_file`].
    fn load_from_file(path: impl AsRef<std::path::Path>) -> Result<Self>;
}

impl Saving for RunnableNetwork {
    fn to_value(&self) -> Result<Value> {
        self.write_saved(false, |view| serde_json::to_value(view))
    }

    fn to_json_pretty(&self) -> Result<String> {
        self.write_saved(false, |view| serde_json::to_string_pretty(view))
    }

    fn from_value(value: Value) -> Result<RunnableNetwork> {
        read::network_from_value(value)
    }

    fn save_to_file(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        Ok(crate::atomic_file::write_atomic(
            path.as_ref(),
            self.to_json()?.as_bytes(),
        )?)
    }

    fn load_from_file(path: impl AsRef<std::path::Path>) -> Result<RunnableNetwork> {
        RunnableNetwork::from_json(&std::fs::read_to_string(path)?)
    }
}

/// A writer that counts the bytes it passes on.
struct Counted<W> {
    out: W,
    n: usize,
}

impl<W: std::io::Write> std::io::Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.n += n;
        Ok(n)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.out.write_all(buf)?;
        self.n += buf.len();
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
