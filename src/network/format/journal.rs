//! Incremental saves: a journal of what changed since the snapshot.
//!
//! ```text
//!  snapshot  one lc-agent/1 document (a full save)
//!  journal   one record per later save, in order (JSON lines on disk, a
//!            Redis list):
//!            {"journal":"lc-agent-journal/1","base":4,"rev":5,
//!             "head":{..}?, "metadata":{..}? | "meta_set":{..}, "meta_del":[..],
//!             "files_set":{path: file}, "files_del":[path],
//!             "snaps_set":{sha256: text}, "snaps_del":[sha256],
//!             "nodes":[{"i": index, "parents": [indices] | null, "node": {..}}]}
//!  load = snapshot + every record that follows it (base = the revision so
//!         far), assembled into the document a full save gives, byte for byte
//! ```
//!
//! A network keeps a [`SaveBase`]: what the store holds as of its last save
//! or load (node versions, the pending nodes' JSON, the head, the metadata,
//! the files). A save whose store still holds that revision writes one
//! record: the nodes whose version moved (a pending node also when its JSON
//! did), the metadata keys that changed, the files that changed (compared
//! only when the files were touched). The record is built under the same
//! locks as a full save, so it is one consistent state; an invoked node's
//! JSON is its cached compact JSON, so each new part is serialized once.
//!
//! Records that do not follow (a revision at or below the snapshot's, left
//! by a compaction cut short) are skipped; a record that cannot be read —
//! the torn tail of a save that was killed — ends the journal.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::base::{Head, NodeMark, SaveBase};
use super::write::{parent_indices, NodeView};
use super::{format_for, FILE_SNAPSHOTS_KEY, FORMAT, FORMAT_WITH_SNAPSHOTS};
use crate::error::Result;
use crate::network::RunnableNetwork;

/// Metadata key of a saved network's revision number (one more on every
/// save to a session list; see [`NetworkList`](crate::NetworkList)).
pub const REVISION_KEY: &str = "revision";

/// The journal is compacted into the snapshot once it outgrows it, and
/// not before it holds this many bytes: a small new session (a snapshot
/// of a few KiB) would otherwise be rewritten whole every other save, for
/// a load that saves next to nothing.
const MIN_COMPACTION: u64 = 32 * 1024;

/// The format tag of journal records.
pub(crate) const JOURNAL_FORMAT: &str = "lc-agent-journal/1";

/// The format tag of a journal record that adds or drops kept file
/// contents (`snaps_set`, `snaps_del`): a program that reads only
/// [`JOURNAL_FORMAT`] refuses it rather than dropping them.
pub(crate) const JOURNAL_FORMAT_WITH_SNAPSHOTS: &str = "lc-agent-journal/2";

#[derive(Serialize, Deserialize)]
struct Record {
    journal: String,
    base: u64,
    rev: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    head: Option<Head>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    meta_set: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    meta_del: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    files_set: BTreeMap<String, Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    files_del: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    snaps_set: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    snaps_del: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    nodes: Vec<NodeRecord>,
}

#[derive(Serialize, Deserialize)]
struct NodeRecord {
    i: usize,
    parents: Option<Vec<usize>>,
    node: Box<RawValue>,
}

/// The part of a record a scan reads.
#[derive(Deserialize)]
struct RecordHead {
    journal: String,
    base: u64,
    rev: u64,
}

/// A record of one incremental save, ready to write, and the base the
/// network gets once it is written.
pub(crate) struct JournalEntry {
    /// One compact JSON line, `\n` included.
    pub(crate) line: String,
    base: SaveBase,
}

impl RunnableNetwork {
    /// Writes the network as compact JSON (a full save) to `out` and
    /// returns the bytes written and the base it makes (see
    /// [`install_base`](Self::install_base)).
    pub(crate) fn write_json_based<W: std::io::Write>(&self, out: W) -> Result<(usize, SaveBase)> {
        let mut counted = super::Counted { out, n: 0 };
        let files_gen = self.0.files_gen.load(Ordering::Relaxed);
        let snapshots_gen = self.0.snapshots_gen.load(Ordering::Relaxed);
        let ((), base) = self.write_saved_marked(
            |view| serde_json::to_writer(&mut counted, view),
            |view, nodes| SaveBase {
                store: String::new(),
                revision: 0,
                snapshot_len: 0,
                journal_len: 0,
                nodes,
                removals: view.graph.removals(),
                head: Head {
                    name: view.graph.name.clone(),
                    default_node: view.graph.default_node.clone(),
                    chat_model_name: view.graph.chat_model_name.clone(),
                },
                metadata: view.graph.metadata.clone(),
                files: view.files.clone(),
                files_gen,
                snapshots: view.snapshots.iter().map(|(h, _)| h.clone()).collect(),
                snapshots_gen,
            },
        )?;
        self.0.saved_len.store(counted.n, Ordering::Relaxed);
        Ok((counted.n, base))
    }

    /// Records that `store` holds this network at `revision` as `base`
    /// describes it, with a snapshot of `snapshot_len` bytes and a journal
    /// of `journal_len` after it (`None`: keep the base's).
    pub(crate) fn install_base(
        &self,
        mut base: SaveBase,
        store: &str,
        revision: u64,
        lens: Option<(u64, u64)>,
    ) {
        store.clone_into(&mut base.store);
        base.revision = revision;
        if let Some((snapshot, journal)) = lens {
            base.snapshot_len = snapshot;
            base.journal_len = journal;
        }
        *self.0.save_base.lock() = Some(base);
    }

    /// Records that `store` holds this network (just loaded from it) at
    /// `revision`, in a snapshot and a journal of these lengths.
    pub(crate) fn mark_loaded(
        &self,
        store: &str,
        revision: u64,
        snapshot_len: u64,
        journal_len: u64,
    ) -> Result<()> {
        // Read from an older layout: the store holds something else than
        // a full save would write, so the next save is a full one.
        if self.0.upgraded.swap(false, Ordering::Relaxed) {
            self.forget_base();
            return Ok(());
        }
        // No serialization but of the pending nodes: a loaded network is
        // what the store holds.
        let files_gen = self.0.files_gen.load(Ordering::Relaxed);
        let snapshots_gen = self.0.snapshots_gen.load(Ordering::Relaxed);
        let g = self.0.graph.lock();
        self.0.take_changed();
        let files = self.0.files.read();
        let snapshots = self.0.file_snapshots.read();
        let mut nodes = Vec::with_capacity(g.nodes().len());
        for node in g.nodes().values() {
            let (version, invoked) = {
                let st = node.saved_fields();
                (st.version(), st.invoked())
            };
            let json = if invoked {
                None
            } else {
                Some(serde_json::value::to_raw_value(&NodeView {
                    node,
                    cached: true,
                    marks: None,
                })?)
            };
            nodes.push(NodeMark::new(node.id(), version, json.as_deref()));
        }
        let base = SaveBase {
            store: String::new(),
            revision: 0,
            snapshot_len: 0,
            journal_len: 0,
            nodes,
            removals: g.removals(),
            head: Head {
                name: g.name.clone(),
                default_node: g.default_node.clone(),
                chat_model_name: g.chat_model_name.clone(),
            },
            metadata: g.metadata.clone(),
            files: files.clone(),
            files_gen,
            snapshots: snapshots.iter().map(|(h, _)| h.clone()).collect(),
            snapshots_gen,
        };
        drop((snapshots, files, g));
        self.install_base(base, store, revision, Some((snapshot_len, journal_len)));
        Ok(())
    }

    /// Forgets what any store holds: the next save is a full one.
    pub(crate) fn forget_base(&self) {
        *self.0.save_base.lock() = None;
    }

    /// The journal record of a save to `store` of a network loaded (or
    /// last saved) there at revision `expected` and stamped since, or
    /// `None` when the save must be a full one: no base for this store and
    /// revision, nodes removed, or a journal that would outgrow the
    /// snapshot and [`MIN_COMPACTION`] (the full save compacts it). The network's
    /// base is taken: a failed save leaves none, so the next is full.
    pub(crate) fn journal_entry(&self, store: &str, expected: u64) -> Result<Option<JournalEntry>> {
        let Some(base) = self.0.save_base.lock().take() else {
            return Ok(None);
        };
        if base.store != store || base.revision != expected {
            return Ok(None);
        }
        let files_gen = self.0.files_gen.load(Ordering::Relaxed);
        let snapshots_gen = self.0.snapshots_gen.load(Ordering::Relaxed);
        let g = self.0.graph.lock();
        let changed = self.0.take_changed();
        let files = self.0.files.read();
        let snapshots = self.0.file_snapshots.read();
        if g.removals() != base.removals || g.nodes().len() < base.nodes.len() {
            return Ok(None);
        }
        let rev = g
            .metadata
            .get(REVISION_KEY)
            .and_then(Value::as_u64)
            .unwrap_or(expected + 1);
        let mut record = Record {
            journal: JOURNAL_FORMAT.to_string(),
            base: expected,
            rev,
            head: None,
            metadata: None,
            meta_set: Map::new(),
            meta_del: Vec::new(),
            files_set: BTreeMap::new(),
            files_del: Vec::new(),
            snaps_set: BTreeMap::new(),
            snaps_del: Vec::new(),
            nodes: Vec::new(),
        };
        // Nodes: the ones that changed since (their version moved), the
        // pending ones (their JSON may move without a version) and the
        // new ones; no other node can differ from its mark, so no other
        // node is looked at.
        let mut marks = base.nodes;
        let known = marks.len();
        let mut look: Vec<usize> = changed
            .iter()
            .chain(g.pending_ids())
            .filter_map(|id| g.nodes().get_index_of(id))
            .filter(|i| *i < known)
            .collect();
        look.sort_unstable();
        look.dedup();
        look.extend(known..g.nodes().len());
        for i in look {
            let Some((_, node)) = g.nodes().get_index(i) else {
                continue;
            };
            let (version, invoked) = {
                let st = node.saved_fields();
                (st.version(), st.invoked())
            };
            let old = marks.get(i);
            if old.is_some_and(|o| o.id != node.id()) {
                return Ok(None);
            }
            if invoked && old.is_some_and(|o| o.matches(version, None)) {
                continue;
            }
            let raw = serde_json::value::to_raw_value(&NodeView {
                node,
                cached: true,
                marks: None,
            })?;
            let same = !invoked && old.is_some_and(|o| o.matches(version, Some(raw.get())));
            let mark = NodeMark::new(node.id(), version, (!invoked).then_some(&*raw));
            match marks.get_mut(i) {
                Some(slot) => *slot = mark,
                None => marks.push(mark),
            }
            if !same {
                record.nodes.push(NodeRecord {
                    i,
                    parents: parent_indices(&g, node),
                    node: raw,
                });
            }
        }
        // The head and the metadata.
        let head = Head {
            name: g.name.clone(),
            default_node: g.default_node.clone(),
            chat_model_name: g.chat_model_name.clone(),
        };
        if head != base.head {
            record.head = Some(head.clone());
        }
        diff_metadata(&base.metadata, &g.metadata, &mut record);
        // The files, only when they were touched.
        let files_now = if files_gen == base.files_gen {
            base.files
        } else {
            for (path, file) in files.iter() {
                if base.files.get(path) != Some(file) {
                    record
                        .files_set
                        .insert(path.clone(), serde_json::value::to_raw_value(file)?);
                }
            }
            record.files_del = base
                .files
                .keys()
                .filter(|p| !files.contains_key(*p))
                .cloned()
                .collect();
            files.clone()
        };
        // The kept contents, only when they changed: a hash names one
        // content, so only new hashes carry their text.
        let snapshots_now = if snapshots_gen == base.snapshots_gen {
            base.snapshots
        } else {
            for (hash, text) in snapshots.iter() {
                if !base.snapshots.contains(hash) {
                    record.snaps_set.insert(hash.clone(), text.clone());
                }
            }
            record.snaps_del = base
                .snapshots
                .iter()
                .filter(|h| !snapshots.contains(h))
                .cloned()
                .collect();
            snapshots.iter().map(|(h, _)| h.clone()).collect()
        };
        if !record.snaps_set.is_empty() || !record.snaps_del.is_empty() {
            JOURNAL_FORMAT_WITH_SNAPSHOTS.clone_into(&mut record.journal);
        }
        let mut line = serde_json::to_string(&record)?;
        line.push('\n');
        let journal_len = base.journal_len + line.len() as u64;
        if journal_len > base.snapshot_len.max(MIN_COMPACTION) {
            return Ok(None);
        }
        Ok(Some(JournalEntry {
            line,
            base: SaveBase {
                store: base.store,
                revision: rev,
                snapshot_len: base.snapshot_len,
                journal_len,
                nodes: marks,
                removals: base.removals,
                head,
                metadata: g.metadata.clone(),
                files: files_now,
                files_gen,
                snapshots: snapshots_now,
                snapshots_gen,
            },
        }))
    }
}

impl JournalEntry {
    /// Installs the base this record makes (it was written).
    pub(crate) fn written(self, network: &RunnableNetwork) {
        *network.0.save_base.lock() = Some(self.base);
    }

    /// The stored bytes (snapshot and journal) once this record is written.
    pub(crate) fn stored_len(&self) -> u64 {
        self.base.stored_len()
    }
}

/// The metadata changes from `old` to `new`: keys set and removed, or the
/// whole map when replaying those would not give `new`'s key order.
fn diff_metadata(old: &Map<String, Value>, new: &Map<String, Value>, record: &mut Record) {
    let del: Vec<String> = old
        .keys()
        .filter(|k| !new.contains_key(*k))
        .cloned()
        .collect();
    let set: Map<String, Value> = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut replayed = old.clone();
    apply_metadata(&mut replayed, &del, &set);
    if replayed.keys().eq(new.keys()) {
        record.meta_del = del;
        record.meta_set = set;
    } else {
        record.metadata = Some(new.clone());
    }
}

fn apply_metadata(map: &mut Map<String, Value>, del: &[String], set: &Map<String, Value>) {
    for k in del {
        map.shift_remove(k);
    }
    for (k, v) in set {
        map.insert(k.clone(), v.clone());
    }
}

/// What a read of a journal found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The revision after the last record that follows.
    pub(crate) revision: u64,
    /// Bytes up to the end of the last readable record (what follows is a
    /// torn tail or a record that does not follow, and is ignored).
    pub(crate) valid_len: usize,
    /// The byte ranges of the records to apply, in order.
    records: Vec<(usize, usize)>,
}

impl Scan {
    /// Whether any record applies on top of the snapshot.
    pub(crate) fn changes(&self) -> bool {
        !self.records.is_empty()
    }
}

/// Reads the journal `lines` (records separated by `\n`; on Redis each
/// list element ends with one too) written after a snapshot at
/// `snapshot_revision`. Fails only on a record of a newer journal format.
pub(crate) fn scan_journal(
    snapshot_revision: u64,
    lines: &[u8],
) -> std::result::Result<Scan, String> {
    let mut scan = Scan {
        revision: snapshot_revision,
        ..Scan::default()
    };
    let mut start = 0;
    while let Some(end) = lines[start..].iter().position(|b| *b == b'\n') {
        let end = start + end;
        let Ok(head) = serde_json::from_slice::<RecordHead>(&lines[start..end]) else {
            break;
        };
        if head.journal != JOURNAL_FORMAT && head.journal != JOURNAL_FORMAT_WITH_SNAPSHOTS {
            return Err(format!(
                "journal record in format `{}` (this program reads `{JOURNAL_FORMAT}` and `{JOURNAL_FORMAT_WITH_SNAPSHOTS}`)",
                head.journal
            ));
        }
        if head.rev <= scan.revision {
            // Already in the snapshot (a compaction that was cut short).
        } else if head.base == scan.revision {
            scan.records.push((start, end));
            scan.revision = head.rev;
        } else {
            break;
        }
        start = end + 1;
        scan.valid_len = start;
    }
    Ok(scan)
}

/// The document a full save gives: `snapshot` with the records `scan`
/// found in `lines` applied.
pub(crate) fn materialize(
    snapshot: &str,
    lines: &[u8],
    scan: &Scan,
) -> std::result::Result<String, String> {
    let mut doc: Doc = serde_json::from_str(snapshot).map_err(|e| e.to_string())?;
    if doc.format != FORMAT && doc.format != FORMAT_WITH_SNAPSHOTS {
        return Err(format!(
            "unsupported format `{}` (this program reads `{FORMAT}` and `{FORMAT_WITH_SNAPSHOTS}`)",
            doc.format
        ));
    }
    let mut parents: Vec<Option<Vec<usize>>> = vec![None; doc.nodes.len()];
    for (k, v) in std::mem::take(&mut doc.connections) {
        let i: usize = k.parse().map_err(|_| format!("bad connection key `{k}`"))?;
        if let Some(slot) = parents.get_mut(i) {
            *slot = Some(v);
        }
    }
    for &(start, end) in &scan.records {
        let record: Record = serde_json::from_slice(&lines[start..end])
            .map_err(|e| format!("journal record at byte {start}: {e}"))?;
        if let Some(head) = record.head {
            doc.name = head.name;
            doc.default_node = head.default_node;
            doc.chat_model_name = head.chat_model_name;
        }
        match record.metadata {
            Some(m) => doc.metadata = m,
            None => apply_metadata(&mut doc.metadata, &record.meta_del, &record.meta_set),
        }
        for p in &record.files_del {
            doc.files.remove(p);
        }
        doc.files.extend(record.files_set);
        for h in &record.snaps_del {
            doc.file_snapshots.remove(h);
        }
        doc.file_snapshots.extend(record.snaps_set);
        for n in record.nodes {
            if n.i < doc.nodes.len() {
                doc.nodes[n.i] = n.node;
                parents[n.i] = n.parents;
            } else if n.i == doc.nodes.len() {
                doc.nodes.push(n.node);
                parents.push(n.parents);
            } else {
                return Err(format!(
                    "journal record at byte {start} adds node {} after {}",
                    n.i,
                    doc.nodes.len()
                ));
            }
        }
    }
    serde_json::to_string(&DocOut {
        doc: &doc,
        parents: &parents,
    })
    .map_err(|e| e.to_string())
}

/// A saved document with its nodes and files kept as written.
#[derive(Deserialize)]
struct Doc {
    format: String,
    id: uuid::Uuid,
    #[serde(default)]
    name: String,
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default)]
    default_node: Option<String>,
    #[serde(default)]
    chat_model_name: Option<String>,
    #[serde(default)]
    files: BTreeMap<String, Box<RawValue>>,
    #[serde(default)]
    file_snapshots: BTreeMap<String, String>,
    #[serde(default)]
    nodes: Vec<Box<RawValue>>,
    #[serde(default, rename = "__connections__")]
    connections: BTreeMap<String, Vec<usize>>,
}

struct DocOut<'a> {
    doc: &'a Doc,
    parents: &'a [Option<Vec<usize>>],
}

struct Connections<'a>(&'a [Option<Vec<usize>>]);

impl Serialize for DocOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let d = self.doc;
        let with_snapshots = !d.file_snapshots.is_empty();
        let mut map = s.serialize_map(Some(9 + usize::from(with_snapshots)))?;
        // The tag a full save writes.
        map.serialize_entry("format", format_for(with_snapshots))?;
        map.serialize_entry("id", &d.id)?;
        map.serialize_entry("name", &d.name)?;
        map.serialize_entry("metadata", &d.metadata)?;
        map.serialize_entry("default_node", &d.default_node)?;
        map.serialize_entry("chat_model_name", &d.chat_model_name)?;
        map.serialize_entry("files", &d.files)?;
        if with_snapshots {
            map.serialize_entry(FILE_SNAPSHOTS_KEY, &d.file_snapshots)?;
        }
        map.serialize_entry("nodes", &d.nodes)?;
        map.serialize_entry("__connections__", &Connections(self.parents))?;
        map.end()
    }
}

impl Serialize for Connections<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (i, p) in self.0.iter().enumerate() {
            if let Some(p) = p {
                map.serialize_entry(&i.to_string(), p)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(base: u64, rev: u64) -> String {
        format!("{{\"journal\":\"{JOURNAL_FORMAT}\",\"base\":{base},\"rev\":{rev}}}\n")
    }

    #[test]
    fn a_scan_skips_what_the_snapshot_holds_and_stops_at_a_torn_tail() {
        let mut lines = line(1, 2) + &line(2, 3) + &line(3, 4);
        let whole = lines.len();
        lines.push_str("{\"journal\":\"lc-agent-journal/1\",\"ba");
        let scan = scan_journal(2, lines.as_bytes()).expect("scan");
        assert_eq!(scan.revision, 4);
        assert_eq!(scan.valid_len, whole);
        assert_eq!(
            scan.records.len(),
            2,
            "the record at revision 2 is in the snapshot"
        );
        // A record that does not follow ends the journal.
        let gap = line(1, 2) + &line(5, 6);
        let scan = scan_journal(1, gap.as_bytes()).expect("scan");
        assert_eq!((scan.revision, scan.valid_len), (2, line(1, 2).len()));
        assert!(scan_journal(
            0,
            b"{\"journal\":\"lc-agent-journal/3\",\"base\":0,\"rev\":1}\n"
        )
        .is_err());
    }

    #[test]
    fn metadata_whose_key_order_changed_is_written_whole() {
        let old: Map<String, Value> = serde_json::from_str(r#"{"a":1,"b":2,"c":3}"#).expect("map");
        let mut record = Record {
            journal: JOURNAL_FORMAT.into(),
            base: 0,
            rev: 1,
            head: None,
            metadata: None,
            meta_set: Map::new(),
            meta_del: Vec::new(),
            files_set: BTreeMap::new(),
            files_del: Vec::new(),
            snaps_set: BTreeMap::new(),
            snaps_del: Vec::new(),
            nodes: Vec::new(),
        };
        let changed: Map<String, Value> =
            serde_json::from_str(r#"{"a":1,"c":4,"d":5}"#).expect("map");
        diff_metadata(&old, &changed, &mut record);
        assert_eq!(record.meta_del, ["b"]);
        assert_eq!(record.meta_set.keys().collect::<Vec<_>>(), ["c", "d"]);
        assert!(record.metadata.is_none());
        // `a` removed and set again: it moved to the end.
        let moved: Map<String, Value> =
            serde_json::from_str(r#"{"b":2,"c":3,"a":1}"#).expect("map");
        diff_metadata(&old, &moved, &mut record);
        assert_eq!(record.metadata.as_ref(), Some(&moved));
    }
}
