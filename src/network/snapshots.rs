//! Rewind snapshots: file contents kept by the session, content-addressed.
//!
//! ```text
//!  RunnableNetwork ─ file_snapshots: {sha256: text}   (saved, outside the metadata)
//!    keep_file_snapshot(hash, text, cap)   each content once, within a byte cap
//!    file_snapshot(hash)                   what a rewind restores
//!    retain_file_snapshots(keep)           drops contents
//!    trim_file_snapshots(turns)            keeps what rewinds to the last `turns` turns need
//! ```
//!
//! The file tools (`lc-agent-filesystem`'s snapshots) keep what a file held
//! before the agent changed it; the tool node names it by hash in its
//! `file_changes`. The contents live beside the graph, not in the
//! metadata: a save writes only contents that are new since the last one
//! (a journal record's `snaps_set`), a listing never carries them, and a
//! fork takes them along. A document that holds any is tagged
//! [`FORMAT_WITH_SNAPSHOTS`](crate::network::format) so an older program refuses it
//! rather than dropping them; documents saved when the contents lived in
//! the metadata (`metadata.file_snapshots`) load into this place.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::RunnableNetwork;

/// A tool node's metadata: the file changes it made.
pub(crate) const FILE_CHANGES: &str = "file_changes";

/// The file contents a session keeps for rewinds, by SHA-256, with their
/// total size.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct FileSnapshots {
    map: BTreeMap<String, String>,
    bytes: usize,
}

impl FileSnapshots {
    /// Whether none are kept.
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The content kept under `hash`.
    pub(crate) fn get(&self, hash: &str) -> Option<&str> {
        self.map.get(hash).map(String::as_str)
    }

    /// Whether a content is kept under `hash`.
    pub(crate) fn contains(&self, hash: &str) -> bool {
        self.map.contains_key(hash)
    }

    /// The hashes and contents, ordered by hash.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &String)> {
        self.map.iter()
    }

    /// Keeps `text` under `hash` (replacing nothing: a hash names one
    /// content).
    pub(crate) fn insert(&mut self, hash: String, text: String) {
        if !self.map.contains_key(&hash) {
            self.bytes += text.len();
            self.map.insert(hash, text);
        }
    }

    /// Drops the content under `hash`.
    pub(crate) fn remove(&mut self, hash: &str) {
        if let Some(text) = self.map.remove(hash) {
            self.bytes -= text.len();
        }
    }
}

impl Serialize for FileSnapshots {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.map.serialize(s)
    }
}

impl<'de> Deserialize<'de> for FileSnapshots {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, String>::deserialize(d)?;
        let bytes = map.values().map(String::len).sum();
        Ok(Self { map, bytes })
    }
}

/// File contents kept for rewinds, by hash, beside a network's graph.
pub trait SnapshotsExt {
    /// Keeps a file's content for rewinds under `hash` (the SHA-256 of its
    /// bytes, lowercase hex), once however often it is kept, unless the
    /// session's contents would pass `cap` bytes. Returns whether the
    /// content is kept (now or before).
    fn keep_file_snapshot(&self, hash: &str, text: &str, cap: usize) -> bool;

    /// The content kept under `hash` (see
    /// [`keep_file_snapshot`](Self::keep_file_snapshot)).
    fn file_snapshot(&self, hash: &str) -> Option<String>;

    /// Keeps only the contents whose hash `keep` accepts; returns how many
    /// were dropped.
    fn retain_file_snapshots(&self, keep: impl FnMut(&str) -> bool) -> usize;

    /// Keeps only the contents a rewind to a point within the last
    /// `turns` turns (human messages) needs: those named as `before` by the
    /// file changes recorded on the nodes from the `turns`-th last human
    /// message on. A rewind further back reports those files as not kept.
    /// Returns how many contents were dropped.
    fn trim_file_snapshots(&self, turns: usize) -> usize;
}

impl SnapshotsExt for RunnableNetwork {
    fn keep_file_snapshot(&self, hash: &str, text: &str, cap: usize) -> bool {
        let mut kept = self.0.file_snapshots.write();
        if kept.contains(hash) {
            return true;
        }
        if kept.bytes + text.len() > cap {
            return false;
        }
        self.0.snapshots_gen.fetch_add(1, Ordering::Relaxed);
        kept.insert(hash.to_string(), text.to_string());
        true
    }

    fn file_snapshot(&self, hash: &str) -> Option<String> {
        self.0.file_snapshots.read().get(hash).map(str::to_string)
    }

    fn retain_file_snapshots(&self, mut keep: impl FnMut(&str) -> bool) -> usize {
        let mut kept = self.0.file_snapshots.write();
        let gone: Vec<String> = kept
            .map
            .keys()
            .filter(|h| !keep(h.as_str()))
            .cloned()
            .collect();
        if !gone.is_empty() {
            self.0.snapshots_gen.fetch_add(1, Ordering::Relaxed);
        }
        for h in &gone {
            kept.remove(h);
        }
        gone.len()
    }

    fn trim_file_snapshots(&self, turns: usize) -> usize {
        if self.0.file_snapshots.read().is_empty() {
            return 0;
        }
        let nodes = self.nodes();
        let humans: Vec<usize> = nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind() == crate::node::kinds::HUMAN)
            .map(|(i, _)| i)
            .collect();
        let start = match humans.len().checked_sub(turns) {
            None | Some(0) => return 0,
            Some(k) => humans.get(k).copied().unwrap_or(nodes.len()),
        };
        let mut needed = std::collections::HashSet::new();
        for node in &nodes[start..] {
            if let Some(serde_json::Value::Array(changes)) = node.metadata_value(FILE_CHANGES) {
                for change in changes {
                    if let Some(h) = change.get("before").and_then(serde_json::Value::as_str) {
                        needed.insert(h.to_string());
                    }
                }
            }
        }
        self.retain_file_snapshots(|h| needed.contains(h))
    }
}
