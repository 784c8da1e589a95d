//! The content-addressed store under `$LC_AGENT_HOME/rewind`: file
//! contents and workspace trees by SHA-256, shared by every turn and
//! every session, with a reference list per session so pruning a session
//! frees what only it used.
//!
//! ```text
//!  <dir>/blobs/ab/cdef…      a file's bytes, or a tree (JSON), named by their SHA-256
//!  <dir>/refs/<session>      the trees a session recorded, one id a line
//!  <dir>/index/<root-hash>   the stat cache of a workspace (scan.rs)
//! ```
//!
//! A tree is `{"base": id?, "set": {path: entry}, "del": [path]}`: the
//! files changed since its base (a full tree has none), so a turn that
//! changed ten files of ten thousand stores ten entries; every
//! [`MAX_DEPTH`]-th tree of a chain is full again, so reading one costs a
//! bounded number of small reads.

use std::collections::{BTreeMap, HashSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::HistoryError;
use crate::fingerprint::hash;

/// Trees read through this many bases at most before a full one.
pub(crate) const MAX_DEPTH: u32 = 32;

/// Blobs younger than this are never collected: a run may have stored
/// them and not yet named them in a tree.
const GC_GRACE: Duration = Duration::from_secs(600);

/// A file in a recorded workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// The SHA-256 of its bytes; `None` when it was over the size cap (its
    /// bytes were neither read nor kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) h: Option<String>,
    /// Its size in bytes.
    pub(crate) size: u64,
    /// Its modification time (nanoseconds since the epoch), for files not
    /// kept: how they are told apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) m: Option<u64>,
    /// Whether it is executable.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) x: bool,
}

/// A whole workspace: path (`/a/b.txt`) to file.
pub(crate) type Tree = BTreeMap<String, Entry>;

/// A tree as stored (see the module docs).
#[derive(Debug, Default, Serialize, Deserialize)]
struct TreeObject {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base: Option<String>,
    #[serde(default)]
    depth: u32,
    #[serde(default)]
    set: BTreeMap<String, Entry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    del: Vec<String>,
}

/// The store (see the module docs).
#[derive(Clone, Debug)]
pub struct HistoryStore {
    dir: PathBuf,
}

impl HistoryStore {
    /// A store in `dir` (made when first written).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The user's store: `$LC_AGENT_HOME/rewind`, else
    /// `~/.lc-agent/rewind`.
    pub fn for_user() -> Self {
        let home = std::env::var_os("LC_AGENT_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".lc-agent")))
            .unwrap_or_else(|| PathBuf::from(".lc-agent"));
        Self::new(home.join("rewind"))
    }

    /// Where it keeps everything.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn blob_path(&self, id: &str) -> PathBuf {
        let (a, b) = id.split_at(id.len().min(2));
        self.dir.join("blobs").join(a).join(b)
    }

    pub(crate) fn index_path(&self, root: &Path) -> PathBuf {
        let name = hash(root.as_os_str().as_encoded_bytes());
        self.dir.join("index").join(&name[..32])
    }

    fn refs_path(&self, session: &str) -> PathBuf {
        self.dir.join("refs").join(session)
    }

    /// Stores `bytes` (once: a stored content is not written again);
    /// returns their id.
    pub(crate) fn put(&self, bytes: &[u8]) -> Result<String, HistoryError> {
        let id = hash(bytes);
        self.put_as(&id, bytes)?;
        Ok(id)
    }

    /// Stores `bytes` known to hash to `id`.
    pub(crate) fn put_as(&self, id: &str, bytes: &[u8]) -> Result<(), HistoryError> {
        let path = self.blob_path(id);
        if path.is_file() {
            return Ok(());
        }
        write_atomic(&path, bytes).map_err(|e| HistoryError::io(&path, e))
    }

    /// The bytes stored as `id`.
    pub(crate) fn get(&self, id: &str) -> Result<Vec<u8>, HistoryError> {
        let path = self.blob_path(id);
        std::fs::read(&path).map_err(|e| HistoryError::io(&path, e))
    }

    /// Stores `tree` as a change from `base` (`(id, tree, depth)`), or
    /// whole; returns its id and depth.
    pub(crate) fn put_tree(
        &self,
        tree: &Tree,
        base: Option<(&str, &Tree, u32)>,
    ) -> Result<(String, u32), HistoryError> {
        let object = match base {
            Some((id, old, depth)) if depth < MAX_DEPTH => {
                let set = tree
                    .iter()
                    .filter(|(p, e)| old.get(*p) != Some(e))
                    .map(|(p, e)| (p.clone(), e.clone()))
                    .collect();
                let del = old
                    .keys()
                    .filter(|p| !tree.contains_key(*p))
                    .cloned()
                    .collect();
                TreeObject {
                    base: Some(id.to_string()),
                    depth: depth + 1,
                    set,
                    del,
                }
            }
            _ => TreeObject {
                set: tree.clone(),
                ..TreeObject::default()
            },
        };
        let bytes =
            serde_json::to_vec(&object).map_err(|e| HistoryError::Corrupt(e.to_string()))?;
        Ok((self.put(&bytes)?, object.depth))
    }

    /// The tree stored as `id` and its depth.
    pub(crate) fn tree(&self, id: &str) -> Result<(Tree, u32), HistoryError> {
        let mut chain = Vec::new();
        let mut next = Some(id.to_string());
        let mut depth = 0;
        while let Some(id) = next {
            if chain.len() as u32 > MAX_DEPTH + 1 {
                return Err(HistoryError::Corrupt(format!("tree {id}: its bases loop")));
            }
            let object = self.tree_object(&id)?;
            if chain.is_empty() {
                depth = object.depth;
            }
            next = object.base.clone();
            chain.push(object);
        }
        let mut tree = Tree::new();
        for object in chain.into_iter().rev() {
            for p in object.del {
                tree.remove(&p);
            }
            tree.extend(object.set);
        }
        Ok((tree, depth))
    }

    fn tree_object(&self, id: &str) -> Result<TreeObject, HistoryError> {
        let bytes = self.get(id)?;
        serde_json::from_slice(&bytes)
            .map_err(|e| HistoryError::Corrupt(format!("tree {id} cannot be read: {e}")))
    }

    /// Names `tree` as used by `session` (what [`forget`](Self::forget)
    /// and [`collect`](Self::collect) go by).
    pub(crate) fn add_ref(&self, session: &str, tree: &str) -> Result<(), HistoryError> {
        let path = self.refs_path(session);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| HistoryError::io(parent, e))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| HistoryError::io(&path, e))?;
        writeln!(file, "{tree}").map_err(|e| HistoryError::io(&path, e))
    }

    /// The trees `session` named.
    pub(crate) fn refs(&self, session: &str) -> HashSet<String> {
        std::fs::read_to_string(self.refs_path(session))
            .map(|s| s.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Drops a session's references (it was deleted) and collects what no
    /// other session uses; returns how many blobs were removed.
    pub fn forget(&self, session: &str) -> Result<usize, HistoryError> {
        let path = self.refs_path(session);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(HistoryError::io(&path, e)),
        }
        self.collect()
    }

    /// Removes the blobs no session's trees name (except those stored in
    /// the last ten minutes, which a running turn may not have named yet);
    /// returns how many.
    pub fn collect(&self) -> Result<usize, HistoryError> {
        let mut live = HashSet::new();
        let refs = self.dir.join("refs");
        let sessions = match std::fs::read_dir(&refs) {
            Ok(rd) => rd.filter_map(|e| e.ok()).collect::<Vec<_>>(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(HistoryError::io(&refs, e)),
        };
        for session in sessions {
            let name = session.file_name().to_string_lossy().into_owned();
            for tree in self.refs(&name) {
                self.mark(&tree, &mut live);
            }
        }
        let blobs = self.dir.join("blobs");
        let Ok(fans) = std::fs::read_dir(&blobs) else {
            return Ok(0);
        };
        let now = SystemTime::now();
        let mut removed = 0;
        for fan in fans.filter_map(|e| e.ok()) {
            let prefix = fan.file_name().to_string_lossy().into_owned();
            let Ok(files) = std::fs::read_dir(fan.path()) else {
                continue;
            };
            for file in files.filter_map(|e| e.ok()) {
                let id = format!("{prefix}{}", file.file_name().to_string_lossy());
                if live.contains(&id) {
                    continue;
                }
                let young = file
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|m| now.duration_since(m).ok())
                    .is_none_or(|age| age < GC_GRACE);
                if !young && std::fs::remove_file(file.path()).is_ok() {
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }

    /// Marks a tree, its bases and its files as used.
    fn mark(&self, tree: &str, live: &mut HashSet<String>) {
        let mut next = Some(tree.to_string());
        while let Some(id) = next.take() {
            if !live.insert(id.clone()) {
                break;
            }
            let Ok(object) = self.tree_object(&id) else {
                break;
            };
            live.extend(object.set.into_values().filter_map(|e| e.h));
            next = object.base;
        }
    }
}

/// Writes `bytes` to `path` through a temp file and a rename (the
/// directories made when missing): a reader sees nothing or everything.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
