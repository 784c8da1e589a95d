//! Rewind anything: the workspace's state recorded at every turn
//! boundary, so a rewind puts back what the shell did too.
//!
//! ```text
//!  WorkspaceHistory (a modifier on a session over a directory)
//!    on_begin_invoke  record ─▶ the pending human message's `workspace_tree`
//!                     (what changed since the last record was changed outside
//!                     the agent: session metadata workspace_history.outside)
//!    on_end_invoke    record ─▶ the current leaf's `workspace_tree`
//!    record = stat scan (scan.rs) ─▶ a tree of {path: sha256} in the store
//!             (store.rs, shared by turns and sessions; a turn that changed
//!             nothing stores nothing)
//!
//!  rewind(net, to, what)   (rewind.rs)
//!    the tree recorded at `to` (or the nearest record above it)
//!    the workspace now (a scan) vs that tree, path by path:
//!      changed since the last record, or by the user between turns
//!                                   ─▶ reported, kept
//!      else written back / removed  (confined to the root, cap-std)
//!    the state before is kept as the redo point: redo(net) goes back
//! ```
//!
//! The session's metadata `workspace_history` holds `root`, `head` (the
//! tree of what the agent last left), `outside` (paths changed outside
//! the agent, with the hash seen) and `redo`. Nodes name their tree under
//! `workspace_tree`. Everything else (contents, trees, the stat cache)
//! lives in the [`HistoryStore`], `$LC_AGENT_HOME/rewind`.
//!
//! Decisions where the issue is silent: the granularity is the turn (a
//! rewind to a node inside a turn restores the workspace as the turn
//! began); files over the size cap ([`DEFAULT_FILE_CAP`]) are named with
//! their size and time, never read, and a rewind says it could not keep
//! them; symlinks and empty directories are not recorded; a file whose
//! name is not UTF-8 is not recorded.

mod rewind;
mod scan;
mod store;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{HumanNode, InvokeOutcome, NetworkModifier, NodeRef, RunnableNetwork};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

pub use rewind::{redo, rewind, RewindReport, RewindWhat};
pub use scan::IGNORE_FILE;
pub use store::HistoryStore;

use scan::Index;
use store::Tree;

/// Files larger than this are named, not kept (8 MiB).
pub const DEFAULT_FILE_CAP: u64 = 8 * 1024 * 1024;

/// A node's metadata: the workspace's tree after it ran.
pub const WORKSPACE_TREE: &str = "workspace_tree";
/// The session's metadata (see the module docs).
pub const WORKSPACE_HISTORY: &str = "workspace_history";
/// A node's metadata: files over the cap when it was recorded.
const NOT_KEPT: &str = "workspace_not_kept";

/// What went wrong recording or rewinding a workspace.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// A file of the workspace or the store could not be used.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A stored tree or the session's record cannot be read.
    #[error("the workspace history is damaged: {0}")]
    Corrupt(String),
    /// The node is not in the session.
    #[error("the session has no node {0}")]
    UnknownNode(String),
    /// The workspace has too many files to record at every turn.
    #[error("the workspace has more than {0} files (not ignored): it is not recorded at turn boundaries; rewinds restore only what the file tools changed")]
    TooManyFiles(usize),
    /// Nothing to redo.
    #[error("nothing to redo: no rewind since the last turn")]
    NothingToRedo,
    /// The conversation could not be moved.
    #[error(transparent)]
    Network(#[from] lc_agent::NetworkError),
    /// The files could not be rewound (no workspace record there).
    #[error(transparent)]
    Files(#[from] crate::FsError),
}

impl HistoryError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Records a directory workspace at every turn boundary (see the module
/// docs); cheap to clone (one shared state).
#[derive(Clone)]
pub struct WorkspaceHistory {
    inner: Arc<Inner>,
}

struct Inner {
    root: PathBuf,
    store: HistoryStore,
    cap: u64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    index: Option<Index>,
    /// The last tree read or written: (id, tree, depth).
    last: Option<(String, Arc<Tree>, u32)>,
}

/// What one record found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRecord {
    /// The tree's id in the store.
    pub tree: String,
    /// The paths that differ from the previous record (all of them at
    /// the first).
    pub changed: Vec<String>,
    /// Files over the size cap: named, not kept.
    pub not_kept: Vec<String>,
}

impl WorkspaceHistory {
    /// Records the directory `root` in the user's store
    /// ([`HistoryStore::for_user`]).
    pub fn new(root: impl AsRef<Path>) -> Self {
        Self::with_store(root, HistoryStore::for_user())
    }

    /// Records `root` in `store`.
    pub fn with_store(root: impl AsRef<Path>, store: HistoryStore) -> Self {
        Self {
            inner: Arc::new(Inner {
                root: scan::canonical(root.as_ref()),
                store,
                cap: DEFAULT_FILE_CAP,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Files larger than `bytes` are named, not kept (default
    /// [`DEFAULT_FILE_CAP`]).
    pub fn file_cap(self, bytes: u64) -> Self {
        let inner = &self.inner;
        Self::from_inner(Inner {
            root: inner.root.clone(),
            store: inner.store.clone(),
            cap: bytes,
            state: Mutex::new(State::default()),
        })
    }

    fn from_inner(inner: Inner) -> Self {
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The directory recorded.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The store.
    pub fn store(&self) -> &HistoryStore {
        &self.inner.store
    }

    /// Whether `net`'s session has a workspace record.
    pub fn has_records(net: &RunnableNetwork) -> bool {
        meta(&net.session())
            .get("head")
            .is_some_and(Value::is_string)
    }

    /// Records the workspace now as the session's latest state (the head)
    /// and returns what changed since the previous record. A turn that
    /// changed nothing stores nothing.
    pub async fn record(&self, net: &RunnableNetwork) -> Result<TurnRecord, HistoryError> {
        let session = net.session();
        let head = meta(&session)
            .get("head")
            .and_then(Value::as_str)
            .map(str::to_string);
        let me = self.clone();
        let sid = session.id().to_string();
        let (recorded, depth) =
            tokio::task::spawn_blocking(move || me.record_blocking(head.as_deref(), &sid))
                .await
                .map_err(|e| HistoryError::Corrupt(format!("the record stopped: {e}")))??;
        let root = self.inner.root.to_string_lossy().into_owned();
        set_meta(&session, |m| {
            m.insert("root".into(), json!(root));
            m.insert("head".into(), json!(recorded.tree));
            m.insert("depth".into(), json!(depth));
        });
        Ok(recorded)
    }

    /// The tree `id` (from the cache when it is the last one).
    fn tree(&self, state: &mut State, id: &str) -> Result<(Arc<Tree>, u32), HistoryError> {
        if let Some((last, tree, depth)) = &state.last
            && last == id
        {
            return Ok((tree.clone(), *depth));
        }
        let (tree, depth) = self.inner.store.tree(id)?;
        let tree = Arc::new(tree);
        state.last = Some((id.to_string(), tree.clone(), depth));
        Ok((tree, depth))
    }

    /// Scans under the state lock; returns the record and the tree's depth.
    fn record_blocking(
        &self,
        head: Option<&str>,
        session: &str,
    ) -> Result<(TurnRecord, u32), HistoryError> {
        let inner = &*self.inner;
        let mut state = inner.state.lock();
        let mut index = state
            .index
            .take()
            .unwrap_or_else(|| Index::load(&inner.store, &inner.root));
        let scanned = scan::scan(&inner.root, &mut index, &inner.store, inner.cap);
        let scanned = match scanned {
            Ok(s) => s,
            Err(e) => {
                state.index = Some(index);
                return Err(e);
            }
        };
        if scanned.index_changed {
            index.save(&inner.store, &inner.root)?;
        }
        state.index = Some(index);
        let base = match head {
            Some(id) => Some((id.to_string(), self.tree(&mut state, id)?)),
            None => None,
        };
        if let Some((id, (tree, depth))) = &base
            && **tree == scanned.tree
        {
            return Ok((
                TurnRecord {
                    tree: id.clone(),
                    changed: Vec::new(),
                    not_kept: scanned.too_large,
                },
                *depth,
            ));
        }
        let changed = match &base {
            Some((_, (old, _))) => changed_paths(old, &scanned.tree),
            None => scanned.tree.keys().cloned().collect(),
        };
        let (id, depth) = inner.store.put_tree(
            &scanned.tree,
            base.as_ref()
                .map(|(id, (tree, depth))| (id.as_str(), &**tree, *depth)),
        )?;
        inner.store.add_ref(session, &id)?;
        state.last = Some((id.clone(), Arc::new(scanned.tree), depth));
        Ok((
            TurnRecord {
                tree: id,
                changed,
                not_kept: scanned.too_large,
            },
            depth,
        ))
    }
}

/// The paths whose entry differs between two trees, sorted.
pub(crate) fn changed_paths(a: &Tree, b: &Tree) -> Vec<String> {
    let mut out: Vec<String> = a
        .iter()
        .filter(|(p, e)| b.get(*p) != Some(e))
        .map(|(p, _)| p.clone())
        .chain(b.keys().filter(|p| !a.contains_key(*p)).cloned())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The session's `workspace_history` object.
pub(crate) fn meta(session: &RunnableNetwork) -> Map<String, Value> {
    match session.metadata_value(WORKSPACE_HISTORY) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// Changes the session's `workspace_history` object.
pub(crate) fn set_meta(session: &RunnableNetwork, f: impl FnOnce(&mut Map<String, Value>)) {
    session.with_metadata_mut(|m| {
        let slot = m
            .entry(WORKSPACE_HISTORY.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        if let Value::Object(o) = slot {
            f(o);
        }
    });
}

/// Notes the files over the cap on `node` (once per record).
fn note_not_kept(node: &NodeRef, not_kept: &[String]) {
    if !not_kept.is_empty() {
        node.set_metadata(NOT_KEPT, json!(not_kept));
    }
}

#[async_trait]
impl NetworkModifier for WorkspaceHistory {
    fn id(&self) -> &str {
        "workspace-history"
    }

    fn hooks(&self) -> lc_agent::Hooks {
        lc_agent::Hooks::NONE
    }

    async fn on_begin_invoke(&self, net: &RunnableNetwork) -> lc_agent::Result<()> {
        let had_head = Self::has_records(net);
        let recorded = match self.record(net).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("the workspace could not be recorded before the turn: {e}");
                return Ok(());
            }
        };
        if had_head && !recorded.changed.is_empty() {
            // Changed between turns: the user's (or another program's).
            let session = net.session();
            let tree = self.latest_tree();
            set_meta(&session, |m| {
                let outside = m
                    .entry("outside".to_string())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(o) = outside {
                    for p in &recorded.changed {
                        let h = tree.as_ref().and_then(|t| t.get(p)).map(|e| json!(e.h));
                        o.insert(p.clone(), h.unwrap_or(Value::Null));
                    }
                }
            });
        }
        for node in net.nodes() {
            if !node.is_invoked()
                && node.kind() == HumanNode::KIND
                && node.metadata_value(WORKSPACE_TREE).is_none()
            {
                node.set_metadata(WORKSPACE_TREE, json!(recorded.tree));
                note_not_kept(&node, &recorded.not_kept);
            }
        }
        Ok(())
    }

    async fn on_end_invoke(
        &self,
        net: &RunnableNetwork,
        _outcome: &InvokeOutcome,
    ) -> lc_agent::Result<()> {
        let recorded = match self.record(net).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("the workspace could not be recorded after the turn: {e}");
                return Ok(());
            }
        };
        if !recorded.changed.is_empty() {
            // The agent's now: no longer reported as the user's.
            set_meta(&net.session(), |m| {
                if let Some(Value::Object(o)) = m.get_mut("outside") {
                    for p in &recorded.changed {
                        o.remove(p);
                    }
                }
            });
        }
        if let Some(leaf) = net.current_leaf() {
            leaf.set_metadata(WORKSPACE_TREE, json!(recorded.tree));
            note_not_kept(&leaf, &recorded.not_kept);
        }
        Ok(())
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl WorkspaceHistory {
    /// The tree last read or written.
    fn latest_tree(&self) -> Option<Arc<Tree>> {
        self.inner
            .state
            .lock()
            .last
            .as_ref()
            .map(|(_, t, _)| t.clone())
    }
}
