//! The network: nodes, edges, metadata and files — the whole state.
//!
//! ```text
//!  RunnableNetwork ──▶ NetworkInner
//!                      ├─ graph:   Mutex<Graph>     nodes, edges, pending, metadata   (saved)
//!                      ├─ files:   RwLock<Files>    the agent's virtual files          (saved)
//!                      ├─ file_snapshots            contents kept for rewinds          (saved)
//!                      ├─ runtime: RwLock<Runtime>  modifiers, tools, models, events   (attached)
//!                      └─ invoke_lock               one invoke at a time
//! ```
//!
//! Where each job lives: `builder.rs` (configuring a new network),
//! `graph.rs` (storage, topological order, read-only queries), `edit.rs`
//! (adding, rewiring, removing nodes), `fork.rs` (forks, branches,
//! edits, rewinds), `conversation.rs` (what a node reads), `runtime.rs` (attachments and events), `scope.rs` (the scope
//! guard), `snapshots.rs` (file contents kept for rewinds), `ops.rs` (`>>`), `mermaid.rs` (drawing). This file holds the
//! type itself, its identity, metadata and files.

pub(crate) mod builder;
mod conversation;
mod edit;
pub(crate) mod fork;
pub(crate) mod format;
mod graph;
pub(crate) mod mermaid;
pub(crate) mod ops;
pub(crate) mod runtime;
pub(crate) mod scope;
pub(crate) mod snapshots;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use serde_json::{Map, Value};

use tracing::Instrument;

use crate::error::Result;
use crate::files::Files;
use crate::message::Message;

pub use builder::NetworkBuilder;
pub(crate) use graph::{Graph, Ordered};
pub(crate) use runtime::Runtime;
pub use scope::ScopeGuard;

/// The default step limit: model turns in one `invoke`.
pub(crate) const DEFAULT_STEP_LIMIT: usize = 100;

/// A dynamic runnable network: the graph of an agent conversation.
///
/// Cloning gives another handle to the same network. The saved state is
/// the graph, its metadata and its `files`; modifiers, tools, models and
/// callbacks are runtime attachments that a loading program attaches again.
///
/// ```
/// use lc_agent::{HumanNode, RunnableNetwork, ScriptedChatModel};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let net = RunnableNetwork::builder()
///     .default_node("chat")
///     .chat_model("scripted")
///     .model("scripted", ScriptedChatModel::new(["Hello!"]))
///     .build();
/// {
///     let _scope = net.enter();
///     HumanNode::new("Hi"); // attaches to `net`
/// }
/// let reply = net.invoke().await?;
/// assert_eq!(reply.text(), "Hello!");
/// assert_eq!(net.len(), 2); // human + the chat node the chat loop added
/// # Ok::<(), lc_agent::NetworkError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct RunnableNetwork(pub(crate) Arc<NetworkInner>);

// Shared between tasks and threads: a promise the compiler keeps.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<RunnableNetwork>();
};

pub(crate) struct NetworkInner {
    pub(crate) graph: Mutex<Graph>,
    pub(crate) files: RwLock<Files>,
    pub(crate) runtime: RwLock<Runtime>,
    pub(crate) invoke_lock: tokio::sync::Mutex<()>,
    /// Length of the last compact serialization: the buffer size the next
    /// one starts with (runtime only, never saved).
    pub(crate) saved_len: AtomicUsize,
    /// Moves on every change of the files (runtime only): an incremental
    /// save compares the files only when it moved.
    pub(crate) files_gen: AtomicU64,
    /// What the store holds as of the last save or load (runtime only):
    /// the next save writes only what changed since.
    pub(crate) save_base: Mutex<Option<crate::network::format::base::SaveBase>>,
    /// The nodes whose saved fields changed since the last save or load
    /// (runtime only): an incremental save looks at these, the pending
    /// nodes and the new ones, not at every node. `None` until a store
    /// keeps the network (nothing to compare with yet).
    pub(crate) changed: Mutex<Option<crate::IdSet>>,
    /// File contents kept for rewinds (saved beside the graph).
    pub(crate) file_snapshots: RwLock<snapshots::FileSnapshots>,
    /// Moves on every change of the kept contents (runtime only).
    pub(crate) snapshots_gen: AtomicU64,
    /// Loaded from a document in an older layout (runtime only): the next
    /// save is a full one, in the current layout.
    pub(crate) upgraded: AtomicBool,
    /// Calls per tool (`[0]`) and per model (`[1]`) in the current
    /// `invoke`, by name (runtime only; see `call_limits.rs`).
    pub(crate) run_calls: Mutex<[std::collections::HashMap<String, usize>; 2]>,
    /// The tool specs of the last chat request, while its tools stay.
    pub(crate) tool_specs: crate::tool_specs::SpecMemory,
}

impl NetworkInner {
    /// Notes that a node's saved fields changed (see `changed`).
    pub(crate) fn note_changed(&self, id: crate::NodeId) {
        if let Some(set) = self.changed.lock().as_mut() {
            set.insert(id);
        }
    }

    /// The nodes changed since the last call (none before the first),
    /// noting from now on. Called under the graph's lock, before the
    /// nodes are read: a change after it is in the next set.
    pub(crate) fn take_changed(&self) -> crate::IdSet {
        self.changed
            .lock()
            .replace(crate::IdSet::default())
            .unwrap_or_default()
    }
}

/// Two handles are equal when they point at the same network.
impl PartialEq for RunnableNetwork {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for RunnableNetwork {}

impl Default for RunnableNetwork {
    fn default() -> Self {
        Self::new()
    }
}

impl RunnableNetwork {
    /// A network with the default modifiers and nothing else.
    pub fn new() -> Self {
        Self::builder().build()
    }

    pub(crate) fn with_graph(graph: Graph) -> Self {
        RunnableNetwork(Arc::new(NetworkInner {
            graph: Mutex::new(graph),
            files: RwLock::new(Files::new()),
            runtime: RwLock::new(Runtime::new()),
            invoke_lock: tokio::sync::Mutex::new(()),
            saved_len: AtomicUsize::new(0),
            files_gen: AtomicU64::new(0),
            save_base: Mutex::new(None),
            changed: Mutex::new(None),
            file_snapshots: RwLock::new(snapshots::FileSnapshots::default()),
            snapshots_gen: AtomicU64::new(0),
            upgraded: AtomicBool::new(false),
            run_calls: Mutex::new(Default::default()),
            tool_specs: Default::default(),
        }))
    }

    /// Makes this network the active one on this thread until the guard
    /// drops: nodes created meanwhile attach to it (see [`ScopeGuard`]).
    pub fn enter(&self) -> ScopeGuard {
        scope::enter(self)
    }

    /// Runs every node that has not run yet and returns the output of the
    /// last one that ran (or, when nothing had to run, of the current
    /// leaf).
    ///
    /// 1. every modifier's `on_begin_invoke`;
    /// 2. passes: the pending nodes in topological order, each with
    ///    `on_pre_invoke`, the node, `on_post_invoke`; nodes that do not
    ///    depend on each other (the tool calls of one turn) run
    ///    concurrently; nodes added during a pass run in the next; a pass
    ///    that runs nothing ends the loop;
    /// 3. every modifier's `on_end_invoke`, also after a failure.
    ///
    /// A failing node records `metadata["error"]`, stays pending (the next
    /// `invoke` retries it) and its error is returned. More model turns than
    /// the step limit give [`NetworkError::StepLimit`](crate::NetworkError::StepLimit). In every case the
    /// graph stays valid and saveable. One `invoke` runs at a time per
    /// network; a second waits for the first.
    pub async fn invoke(&self) -> Result<Message> {
        let span = crate::run::tracer::agent_span(self);
        crate::run::invoke::invoke_traced(self, &span)
            .instrument(span.clone())
            .await
    }

    // ----- identity and metadata -----

    /// The network id.
    pub fn id(&self) -> uuid::Uuid {
        self.0.graph.lock().id
    }

    /// The human-readable name.
    pub fn name(&self) -> String {
        self.0.graph.lock().name.clone()
    }

    /// Renames the network.
    pub fn set_name(&self, name: impl Into<String>) {
        self.0.graph.lock().name = name.into();
    }

    /// A copy of the metadata.
    pub fn metadata(&self) -> Map<String, Value> {
        self.0.graph.lock().metadata.clone()
    }

    /// One metadata value.
    pub fn metadata_value(&self, key: &str) -> Option<Value> {
        json_get(&self.0.graph.lock().metadata, key).cloned()
    }

    /// Sets one metadata value.
    pub fn set_metadata(&self, key: impl Into<String>, value: Value) {
        self.0.graph.lock().metadata.insert(key.into(), value);
    }

    /// `f` over the metadata, under the graph's lock (a read and a write
    /// that no other task can come between).
    pub fn with_metadata_mut<R>(
        &self,
        f: impl FnOnce(&mut serde_json::Map<String, Value>) -> R,
    ) -> R {
        f(&mut self.0.graph.lock().metadata)
    }

    /// The node kind the chat loop adds after a human leaf.
    pub(crate) fn default_node(&self) -> Option<String> {
        self.0.graph.lock().default_node.clone()
    }

    /// A new, detached node of the default kind, if there is one.
    pub(crate) fn new_default_node(&self) -> Option<Result<crate::node::NodeRef>> {
        {
            let g = self.0.graph.lock();
            let kind = g.default_node.as_deref()?;
            // A built-in kind is made in place: no copy of its name (and
            // nothing of the network is touched while the lock is held).
            if let Some(node) = crate::node::kinds::create_built_in(kind) {
                return Some(Ok(node));
            }
        }
        let kind = self.default_node()?;
        Some(crate::node::kinds::create_node(&kind))
    }

    /// Sets the default node kind.
    pub fn set_default_node(&self, kind: Option<String>) {
        self.0.graph.lock().default_node = kind;
    }

    /// The model name chat nodes use unless they name their own (see
    /// [`ModelRoutes::chat_model_name`](crate::ModelRoutes::chat_model_name)).
    pub(crate) fn own_chat_model_name(&self) -> Option<String> {
        self.0.graph.lock().chat_model_name.clone()
    }

    /// The model name a chat node without its own uses: this network's,
    /// else (for a sub-network) the outer network's.
    pub(crate) fn resolved_chat_model_name(&self) -> Option<String> {
        self.own_chat_model_name()
            .or_else(|| self.outer()?.resolved_chat_model_name())
    }

    /// The network this one runs inside (a sub-network's outer network),
    /// while it runs there.
    pub fn outer(&self) -> Option<RunnableNetwork> {
        self.0.runtime.read().parent.upgrade().map(RunnableNetwork)
    }

    /// The session this network belongs to: the outermost network it runs
    /// inside, or itself.
    pub fn session(&self) -> RunnableNetwork {
        std::iter::successors(Some(self.clone()), RunnableNetwork::outer)
            .last()
            .unwrap_or_else(|| self.clone())
    }

    /// Sets the default model name.
    pub(crate) fn set_own_chat_model_name(&self, name: Option<String>) {
        self.0.graph.lock().chat_model_name = name;
    }

    // ----- files -----

    /// A copy of the virtual files.
    pub fn files(&self) -> Files {
        self.0.files.read().clone()
    }

    /// Reads the files without copying them.
    pub fn with_files<R>(&self, f: impl FnOnce(&Files) -> R) -> R {
        f(&self.0.files.read())
    }

    /// Changes the files in place.
    pub fn with_files_mut<R>(&self, f: impl FnOnce(&mut Files) -> R) -> R {
        let mut files = self.0.files.write();
        self.0.files_gen.fetch_add(1, Ordering::Relaxed);
        f(&mut files)
    }
}

impl std::fmt::Debug for RunnableNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let g = self.0.graph.lock();
        f.debug_struct("RunnableNetwork")
            .field("id", &g.id)
            .field("name", &g.name)
            .field("nodes", &g.nodes().len())
            .field("pending", &g.pending_len())
            .finish_non_exhaustive()
    }
}

/// How many keys a JSON map may hold for [`json_get`] to compare them
/// rather than hash the one asked for.
const FEW_KEYS: usize = 8;

/// `map[key]`: in a map of a few keys (a network's metadata, a usage
/// total) found by comparing keys, which costs less than hashing `key`.
pub(crate) fn json_get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() <= FEW_KEYS {
        map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// [`json_get`], for changing the value in place.
pub(crate) fn json_get_mut<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Value> {
    if map.len() <= FEW_KEYS {
        map.iter_mut()
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v)
    } else {
        map.get_mut(key)
    }
}
