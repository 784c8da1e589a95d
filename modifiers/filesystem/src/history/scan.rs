//! The stat scan: which files of a workspace changed since the last
//! record, without reading the ones that did not.
//!
//! ```text
//!  walk the root (ignore's walker: .gitignore, .ignore and .lc-agentignore
//!  files honoured, .git and the atomic writers' temp files skipped,
//!  symlinks not followed)
//!    per file: lstat ─▶ (size, mtime, ctime, inode) as in the index
//!                       and not racy ─▶ the hash the index holds
//!                       else, within the size cap ─▶ read, hash, store
//!                                 over the cap   ─▶ named, not kept
//! ```
//!
//! **Racily clean** (git's rule): a file whose mtime or ctime is not older
//! than the scan's start (in whole seconds, for filesystems with coarse
//! times) may still change within the same tick without its stat
//! changing, so its entry is marked racy and it is hashed again next
//! time. The index is a cache of "this stat had this hash": it is kept
//! per workspace root (shared by the sessions working there) and rewritten
//! only when it changed; losing it costs one full hashing scan.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::store::{write_atomic, Entry, HistoryStore, Tree};
use super::HistoryError;
use crate::atomic::TEMP_PREFIX;

/// The ignore file of lc-agent's own, beside `.gitignore`.
pub const IGNORE_FILE: &str = ".lc-agentignore";

/// A workspace with more files than this is not recorded (a home
/// directory, say): the record says so and rewinds fall back to what the
/// file tools recorded.
pub(crate) const MAX_FILES: usize = 200_000;

/// What the index knows of a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stat {
    size: u64,
    mtime: u64,
    ctime: u64,
    ino: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    h: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    x: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    racy: bool,
}

/// The stat cache of one workspace.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Index {
    files: HashMap<String, Stat>,
}

impl Index {
    /// The index kept for `root`, or an empty one.
    pub(crate) fn load(store: &HistoryStore, root: &Path) -> Self {
        std::fs::read(store.index_path(root))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Keeps it for `root`.
    pub(crate) fn save(&self, store: &HistoryStore, root: &Path) -> Result<(), HistoryError> {
        let path = store.index_path(root);
        let bytes = serde_json::to_vec(self).map_err(|e| HistoryError::Corrupt(e.to_string()))?;
        write_atomic(&path, &bytes).map_err(|e| HistoryError::io(&path, e))
    }

    /// Forgets `path` (rewritten by a rewind: hashed again next time).
    pub(crate) fn forget(&mut self, path: &str) {
        self.files.remove(path);
    }
}

/// What a scan found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The workspace now.
    pub(crate) tree: Tree,
    /// Files over the size cap (named, not kept).
    pub(crate) too_large: Vec<String>,
    /// Files that could not be read (left out of the tree).
    pub(crate) unreadable: Vec<String>,
    /// Whether the index changed (and should be saved).
    pub(crate) index_changed: bool,
}

fn nanos(secs: i64, nsecs: i64) -> u64 {
    (secs.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(nsecs.max(0) as u64)
}

/// Scans `root`, reading (and storing) only the files whose stat the
/// index does not vouch for; updates `index`.
pub(crate) fn scan(
    root: &Path,
    index: &mut Index,
    store: &HistoryStore,
    cap: u64,
) -> Result<Scan, HistoryError> {
    let start_secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut out = Scan::default();
    let mut seen: HashMap<String, Stat> = HashMap::with_capacity(index.files.len());
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .parents(false)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .follow_links(false)
        .add_custom_ignore_filename(IGNORE_FILE)
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            name != ".git" && !name.starts_with(TEMP_PREFIX)
        })
        .build();
    for entry in walker {
        let Ok(entry) = entry else {
            continue;
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(rel) = rel.to_str() else {
            // A name that is not UTF-8 is not a path the tools can name.
            continue;
        };
        if seen.len() >= MAX_FILES {
            return Err(HistoryError::TooManyFiles(MAX_FILES));
        }
        let path = format!("/{rel}");
        let md = match entry.metadata() {
            Ok(md) => md,
            Err(_) => {
                out.unreadable.push(path);
                continue;
            }
        };
        let mut stat = Stat {
            size: md.len(),
            mtime: nanos(md.mtime(), md.mtime_nsec()),
            ctime: nanos(md.ctime(), md.ctime_nsec()),
            ino: md.ino(),
            h: None,
            x: md.mode() & 0o111 != 0,
            racy: false,
        };
        stat.racy = md.mtime().max(md.ctime()).max(0) as u64 >= start_secs;
        let known = index.files.get(&path).filter(|old| {
            !old.racy
                && old.size == stat.size
                && old.mtime == stat.mtime
                && old.ctime == stat.ctime
                && old.ino == stat.ino
        });
        match known {
            Some(old) => {
                stat.h = old.h.clone();
                // Still racy: hashed again next time.
                out.index_changed |= stat.racy;
            }
            None => {
                out.index_changed = true;
                if stat.size <= cap {
                    match read_and_keep(entry.path(), store) {
                        Ok(h) => stat.h = Some(h),
                        Err(_) => {
                            out.unreadable.push(path);
                            continue;
                        }
                    }
                }
            }
        }
        if stat.h.is_none() {
            out.too_large.push(path.clone());
        }
        out.tree.insert(
            path.clone(),
            Entry {
                h: stat.h.clone(),
                size: stat.size,
                m: stat.h.is_none().then_some(stat.mtime),
                x: stat.x,
            },
        );
        seen.insert(path, stat);
    }
    if seen.len() != index.files.len() {
        out.index_changed = true;
    }
    index.files = seen;
    out.too_large.sort();
    out.unreadable.sort();
    Ok(out)
}

/// Reads a file, stores its bytes; returns their hash.
fn read_and_keep(path: &Path, store: &HistoryStore) -> Result<String, HistoryError> {
    let bytes = std::fs::read(path).map_err(|e| HistoryError::io(path, e))?;
    store.put(&bytes)
}

/// The canonical root (how the index is keyed).
pub(crate) fn canonical(root: &Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}
