//! The network: nodes, edges, metadata and files — the whole state.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};

use std::collections::BTreeMap;

use indexmap::IndexMap;
use parking_lot::{Mutex, RwLock};
use serde_json::{Map, Value};

use crate::error::{NetworkError, Result};
use crate::event::{Callback, NetworkEvent};
use crate::files::Files;
use crate::history::History;
use crate::message::Message;
use crate::model::{ChatModel, ChatModelRegistry};
use crate::modifier::NetworkModifier;
use crate::node::{NodeId, NodeLogic, NodeRef};
use crate::scope::ScopeGuard;
use crate::tool::Tool;

/// The default step limit: model turns in one `invoke`.
pub const DEFAULT_STEP_LIMIT: usize = 100;

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

pub(crate) struct NetworkInner {
    pub(crate) graph: Mutex<Graph>,
    pub(crate) files: RwLock<Files>,
    pub(crate) runtime: RwLock<Runtime>,
    pub(crate) invoke_lock: tokio::sync::Mutex<()>,
}

pub(crate) struct Graph {
    pub(crate) id: uuid::Uuid,
    pub(crate) name: String,
    pub(crate) metadata: Map<String, Value>,
    pub(crate) default_node: Option<String>,
    pub(crate) chat_model_name: Option<String>,
    pub(crate) nodes: IndexMap<NodeId, NodeRef>,
    children: HashMap<NodeId, Vec<NodeId>>,
    /// Nodes not yet invoked, by the sequence number they were added with
    /// (so a pass finds them without scanning the whole graph).
    pending: BTreeMap<u64, NodeId>,
    next_seq: u64,
    /// What the network sees before its roots (a sub-network's outer
    /// conversation).
    input: History,
}

#[derive(Clone)]
pub(crate) struct Runtime {
    pub(crate) modifiers: Arc<[Arc<dyn NetworkModifier>]>,
    pub(crate) tools: Arc<[Arc<dyn Tool>]>,
    pub(crate) models: ChatModelRegistry,
    pub(crate) callbacks: Arc<[Callback]>,
    pub(crate) step_limit: Option<usize>,
    pub(crate) streaming: bool,
    pub(crate) parent: Weak<NetworkInner>,
}

/// Configures a [`RunnableNetwork`].
///
/// The chat loop (a human leaf gets the `default_node`) and the tool loop
/// (tool calls become tool nodes, then the next chat node) are attached by
/// default; [`NetworkBuilder::without_default_modifiers`] leaves them out.
#[must_use]
pub struct NetworkBuilder {
    id: Option<uuid::Uuid>,
    name: String,
    metadata: Map<String, Value>,
    default_node: Option<String>,
    chat_model_name: Option<String>,
    models: ChatModelRegistry,
    tools: Vec<Arc<dyn Tool>>,
    modifiers: Vec<Arc<dyn NetworkModifier>>,
    step_limit: Option<usize>,
    streaming: bool,
    default_modifiers: bool,
}

impl NetworkBuilder {
    /// Sets the id (random by default).
    pub fn id(mut self, id: uuid::Uuid) -> Self {
        self.id = Some(id);
        self
    }

    /// Sets the human-readable name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets one metadata value.
    pub fn metadata(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// The node kind the chat loop adds after a human leaf (`"chat"`).
    pub fn default_node(mut self, kind: impl Into<String>) -> Self {
        self.default_node = Some(kind.into());
        self
    }

    /// The model name chat nodes use unless they name their own.
    pub fn chat_model(mut self, name: impl Into<String>) -> Self {
        self.chat_model_name = Some(name.into());
        self
    }

    /// Registers a chat model under `name`.
    pub fn model(mut self, name: impl Into<String>, model: impl ChatModel + 'static) -> Self {
        self.models.register(name, model);
        self
    }

    /// Uses these models.
    pub fn models(mut self, models: ChatModelRegistry) -> Self {
        self.models = models;
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds a modifier (duplicates are reported by [`NetworkBuilder::try_build`]).
    pub fn modifier(mut self, modifier: impl NetworkModifier) -> Self {
        self.modifiers.push(Arc::new(modifier));
        self
    }

    /// Model turns allowed in one `invoke` (default [`DEFAULT_STEP_LIMIT`]).
    pub fn step_limit(mut self, limit: usize) -> Self {
        self.step_limit = Some(limit);
        self
    }

    /// No step limit at all.
    pub fn unlimited_steps(mut self) -> Self {
        self.step_limit = None;
        self
    }

    /// Chat nodes stream and emit [`NetworkEvent::Delta`] events.
    pub fn streaming(mut self, on: bool) -> Self {
        self.streaming = on;
        self
    }

    /// Leaves out the chat loop and tool loop modifiers.
    pub fn without_default_modifiers(mut self) -> Self {
        self.default_modifiers = false;
        self
    }

    /// Builds the network; fails if two modifiers share an id.
    pub fn try_build(self) -> Result<RunnableNetwork> {
        let net = RunnableNetwork::with_graph(Graph::new(
            self.id.unwrap_or_else(uuid::Uuid::new_v4),
            self.name,
            self.metadata,
            self.default_node,
            self.chat_model_name,
        ));
        {
            let mut rt = net.0.runtime.write();
            rt.models = self.models;
            rt.tools = self.tools.into();
            rt.step_limit = self.step_limit;
            rt.streaming = self.streaming;
        }
        if self.default_modifiers {
            net.add_default_modifiers();
        }
        for m in self.modifiers {
            net.add_modifier_shared(m)?;
        }
        Ok(net)
    }

    /// Builds the network. A modifier whose id is already taken is left
    /// out with an error log; use [`NetworkBuilder::try_build`] to get the
    /// error instead.
    pub fn build(mut self) -> RunnableNetwork {
        let mut seen: HashSet<String> = HashSet::new();
        if self.default_modifiers {
            seen.extend(crate::loops::DEFAULT_MODIFIER_IDS.map(String::from));
        }
        self.modifiers.retain(|m| {
            let fresh = seen.insert(m.id().to_string());
            if !fresh {
                tracing::error!(id = m.id(), "duplicate modifier id left out");
            }
            fresh
        });
        match self.try_build() {
            Ok(net) => net,
            // Unreachable after de-duplication; stay panic-free regardless.
            Err(_) => RunnableNetwork::with_graph(Graph::new(
                uuid::Uuid::new_v4(),
                String::new(),
                Map::new(),
                None,
                None,
            )),
        }
    }
}

impl Graph {
    pub(crate) fn new(
        id: uuid::Uuid,
        name: String,
        metadata: Map<String, Value>,
        default_node: Option<String>,
        chat_model_name: Option<String>,
    ) -> Self {
        Graph {
            id,
            name,
            metadata,
            default_node,
            chat_model_name,
            nodes: IndexMap::new(),
            children: HashMap::new(),
            pending: BTreeMap::new(),
            next_seq: 0,
            input: History::new(),
        }
    }

    fn get(&self, id: NodeId) -> Result<&NodeRef> {
        self.nodes.get(&id).ok_or(NetworkError::UnknownNode(id))
    }

    fn children_of(&self, id: NodeId) -> &[NodeId] {
        self.children.get(&id).map_or(&[], Vec::as_slice)
    }

    fn current_leaf(&self) -> Option<&NodeRef> {
        self.nodes
            .values()
            .rev()
            .find(|n| self.children_of(n.id()).is_empty())
    }

    /// Whether `target` is `from` or one of its descendants.
    fn reaches(&self, from: NodeId, target: NodeId) -> bool {
        let mut stack = vec![from];
        let mut seen = HashSet::new();
        while let Some(id) = stack.pop() {
            if id == target {
                return true;
            }
            if seen.insert(id) {
                stack.extend_from_slice(self.children_of(id));
            }
        }
        false
    }

    /// Drops cached conversations of `id` and everything below it.
    fn invalidate_from(&self, id: NodeId) {
        let mut stack = vec![id];
        let mut seen = HashSet::new();
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            if let Some(n) = self.nodes.get(&id) {
                n.0.state.lock().history = None;
            }
            stack.extend_from_slice(self.children_of(id));
        }
    }

    fn link(&mut self, child: NodeId, parents: &[NodeId]) {
        for p in parents {
            self.children.entry(*p).or_default().push(child);
        }
    }

    fn unlink(&mut self, child: NodeId, parents: &[NodeId]) {
        for p in parents {
            if let Some(c) = self.children.get_mut(p) {
                c.retain(|x| *x != child);
            }
        }
    }

    /// The conversation a node reads: its ancestors' outputs.
    pub(crate) fn input_of(&self, node: &NodeRef) -> History {
        let parents = node.0.state.lock().parents.clone();
        match parents.as_slice() {
            [] => self.input.clone(),
            [p] => match self.nodes.get(p) {
                Some(p) => self.history_of(p),
                None => self.input.clone(),
            },
            _ => {
                let mut histories = Vec::with_capacity(parents.len());
                for p in &parents {
                    let Some(p) = self.nodes.get(p) else {
                        return self.assemble_from_ancestors(node);
                    };
                    if p.0.state.lock().outputs.is_none() {
                        return self.assemble_from_ancestors(node);
                    }
                    histories.push(self.history_of(p));
                }
                // Fan-in of siblings (the tool results of one AI message):
                // the shared prefix plus each parent's own output.
                let base = histories[0].parent();
                if histories.iter().all(|h| h.parent().same_as(&base)) {
                    histories.iter().fold(base, |acc, h| match h.last_shared() {
                        Some(m) => acc.push(m),
                        None => acc,
                    })
                } else {
                    self.assemble_from_ancestors(node)
                }
            }
        }
    }

    /// The general case: every ancestor's output, parents before children.
    fn assemble_from_ancestors(&self, node: &NodeRef) -> History {
        let mut order: Vec<&NodeRef> = Vec::new();
        let mut seen: HashSet<NodeId> = HashSet::new();
        let roots = node.0.state.lock().parents.clone();
        let mut stack: Vec<(NodeId, bool)> = roots.iter().rev().map(|p| (*p, false)).collect();
        while let Some((id, expanded)) = stack.pop() {
            let Some(n) = self.nodes.get(&id) else {
                continue;
            };
            if expanded {
                order.push(n);
                continue;
            }
            if !seen.insert(id) {
                continue;
            }
            stack.push((id, true));
            let parents = n.0.state.lock().parents.clone();
            stack.extend(
                parents
                    .iter()
                    .rev()
                    .filter(|p| !seen.contains(p))
                    .map(|p| (*p, false)),
            );
        }
        order.iter().fold(self.input.clone(), |h, n| {
            match n.0.state.lock().outputs.clone() {
                Some(m) => h.push(m),
                None => h,
            }
        })
    }

    /// The conversation up to and including `node`'s output, cached on
    /// invoked nodes. Computed iteratively: histories can be very deep.
    pub(crate) fn history_of(&self, node: &NodeRef) -> History {
        if let Some(h) = node.0.state.lock().history.clone() {
            return h;
        }
        let mut stack: Vec<(NodeRef, bool)> = vec![(node.clone(), false)];
        let mut memo: HashMap<NodeId, History> = HashMap::new();
        while let Some((n, expanded)) = stack.pop() {
            if memo.contains_key(&n.id()) || n.0.state.lock().history.is_some() {
                continue;
            }
            if !expanded {
                stack.push((n.clone(), true));
                let parents = n.0.state.lock().parents.clone();
                for p in parents {
                    if let Some(p) = self.nodes.get(&p) {
                        let cached = p.0.state.lock().history.is_some();
                        if !cached && !memo.contains_key(&p.id()) {
                            stack.push((p.clone(), false));
                        }
                    }
                }
                continue;
            }
            let input = self.input_of_memo(&n, &memo);
            let mut st = n.0.state.lock();
            let h = match &st.outputs {
                Some(m) => input.push(m.clone()),
                None => input,
            };
            if st.invoked {
                st.history = Some(h.clone());
            }
            drop(st);
            memo.insert(n.id(), h);
        }
        memo.remove(&node.id())
            .or_else(|| node.0.state.lock().history.clone())
            .unwrap_or_default()
    }

    fn input_of_memo(&self, node: &NodeRef, memo: &HashMap<NodeId, History>) -> History {
        // Parents that are not invoked are not cached; lend them their
        // memoized value for this computation.
        let parents = node.0.state.lock().parents.clone();
        if let [p] = parents.as_slice() {
            if let Some(h) = memo.get(p) {
                return h.clone();
            }
        }
        self.input_of(node)
    }
}

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

    /// Starts configuring a network.
    pub fn builder() -> NetworkBuilder {
        NetworkBuilder {
            id: None,
            name: String::new(),
            metadata: Map::new(),
            default_node: None,
            chat_model_name: None,
            models: ChatModelRegistry::new(),
            tools: Vec::new(),
            modifiers: Vec::new(),
            step_limit: Some(DEFAULT_STEP_LIMIT),
            streaming: false,
            default_modifiers: true,
        }
    }

    pub(crate) fn with_graph(graph: Graph) -> Self {
        RunnableNetwork(Arc::new(NetworkInner {
            graph: Mutex::new(graph),
            files: RwLock::new(Files::new()),
            runtime: RwLock::new(Runtime {
                modifiers: Arc::from(Vec::new()),
                tools: Arc::from(Vec::new()),
                models: ChatModelRegistry::new(),
                callbacks: Arc::from(Vec::new()),
                step_limit: Some(DEFAULT_STEP_LIMIT),
                streaming: false,
                parent: Weak::new(),
            }),
            invoke_lock: tokio::sync::Mutex::new(()),
        }))
    }

    pub(crate) fn add_default_modifiers(&self) {
        for m in crate::loops::default_modifiers() {
            // Fresh networks have no modifiers, so ids cannot clash.
            let _ = self.add_modifier_shared(m);
        }
    }

    /// Makes this network the active one on this thread until the guard
    /// drops: nodes created meanwhile attach to it (see [`crate::scope`]).
    pub fn enter(&self) -> ScopeGuard {
        crate::scope::enter(self)
    }

    /// Whether both handles point at the same network.
    pub fn same_as(&self, other: &RunnableNetwork) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
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
        self.0.graph.lock().metadata.get(key).cloned()
    }

    /// Sets one metadata value.
    pub fn set_metadata(&self, key: impl Into<String>, value: Value) {
        self.0.graph.lock().metadata.insert(key.into(), value);
    }

    /// Removes one metadata value.
    pub fn remove_metadata(&self, key: &str) -> Option<Value> {
        self.0.graph.lock().metadata.shift_remove(key)
    }

    /// The node kind the chat loop adds after a human leaf.
    pub fn default_node(&self) -> Option<String> {
        self.0.graph.lock().default_node.clone()
    }

    /// Sets the default node kind.
    pub fn set_default_node(&self, kind: Option<String>) {
        self.0.graph.lock().default_node = kind;
    }

    /// The model name chat nodes use unless they name their own.
    pub fn chat_model_name(&self) -> Option<String> {
        self.0.graph.lock().chat_model_name.clone()
    }

    /// The model name a chat node without its own uses: this network's,
    /// else (for a sub-network) the outer network's.
    pub fn resolved_chat_model_name(&self) -> Option<String> {
        self.chat_model_name().or_else(|| {
            let parent = self.0.runtime.read().parent.upgrade()?;
            RunnableNetwork(parent).resolved_chat_model_name()
        })
    }

    /// Sets the default model name.
    pub fn set_chat_model_name(&self, name: Option<String>) {
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
        f(&mut self.0.files.write())
    }

    // ----- nodes and edges -----

    /// Adds a node. A node without parents becomes a child of the current
    /// leaf (so sequential code builds a chain); a node that already has
    /// parents keeps them. Adding a node twice is a no-op.
    pub fn add_node(&self, node: &NodeRef) -> Result<()> {
        let parents = {
            let st = node.0.state.lock();
            if let Some(owner) = st.network.upgrade() {
                return if Arc::ptr_eq(&owner, &self.0) {
                    Ok(())
                } else {
                    Err(NetworkError::ForeignNode(node.id()))
                };
            }
            st.parents.clone()
        };
        if parents.is_empty() {
            let leaf = self.0.graph.lock().current_leaf().map(NodeRef::id);
            self.attach(node, leaf.as_slice())
        } else {
            self.attach(node, &parents)
        }
    }

    /// Adds a node under these parents (`&[]` makes it a root).
    pub fn add_node_with_parents(&self, node: &NodeRef, parents: &[NodeId]) -> Result<()> {
        self.attach(node, parents)
    }

    /// Adds a node of this kind under these parents and returns it.
    pub fn add(&self, logic: impl NodeLogic, parents: &[NodeId]) -> Result<NodeRef> {
        let node = NodeRef::detached(logic);
        self.attach(&node, parents)?;
        Ok(node)
    }

    fn attach(&self, node: &NodeRef, parents: &[NodeId]) -> Result<()> {
        let id = node.id();
        {
            let mut g = self.0.graph.lock();
            for p in parents {
                g.get(*p)?;
            }
            let mut st = node.0.state.lock();
            if let Some(owner) = st.network.upgrade() {
                if !Arc::ptr_eq(&owner, &self.0) {
                    return Err(NetworkError::ForeignNode(id));
                }
                drop(st);
                drop(g);
                return self.set_parents(id, parents);
            }
            st.network = Arc::downgrade(&self.0);
            st.parents = parents.to_vec();
            st.history = None;
            st.seq = g.next_seq;
            g.next_seq += 1;
            if let Some(by) = crate::modifier::current_modifier() {
                st.metadata
                    .insert("added_by".into(), Value::String(by.to_string()));
                st.changed();
            }
            let (invoked, seq) = (st.invoked, st.seq);
            drop(st);
            if !invoked {
                g.pending.insert(seq, id);
            }
            g.nodes.insert(id, node.clone());
            g.link(id, parents);
        }
        let modifiers = self.0.runtime.read().modifiers.clone();
        for m in modifiers.iter() {
            m.on_node_added(self, node);
        }
        self.emit(&NetworkEvent::NodeAdded { node_id: id });
        Ok(())
    }

    /// Replaces a node's parents (`&[]` makes it a root). A node that is
    /// not in the network yet is added. Fails on unknown parents and on
    /// cycles.
    pub fn set_parents(&self, child: NodeId, parents: &[NodeId]) -> Result<()> {
        let mut g = self.0.graph.lock();
        let node = g.get(child)?.clone();
        for p in parents {
            g.get(*p)?;
            // A node without children cannot reach anything: no walk needed
            // when wiring up a fresh leaf.
            if (!g.children_of(child).is_empty() || *p == child) && g.reaches(child, *p) {
                return Err(NetworkError::Cycle { parent: *p, child });
            }
        }
        let old = std::mem::replace(&mut node.0.state.lock().parents, parents.to_vec());
        g.unlink(child, &old);
        g.link(child, parents);
        g.invalidate_from(child);
        Ok(())
    }

    /// Removes a node; its children take its parents (in its place, without
    /// duplicates).
    pub fn remove_node(&self, id: NodeId) -> Result<NodeRef> {
        let node = {
            let mut g = self.0.graph.lock();
            let node = g.get(id)?.clone();
            let parents = node.parents();
            let children = g.children.remove(&id).unwrap_or_default();
            for c in &children {
                g.invalidate_from(*c);
                let Some(child) = g.nodes.get(c).cloned() else {
                    continue;
                };
                let mut st = child.0.state.lock();
                let mut next = Vec::with_capacity(st.parents.len() + parents.len());
                for p in &st.parents {
                    if *p == id {
                        next.extend(parents.iter().copied());
                    } else {
                        next.push(*p);
                    }
                }
                let mut seen = HashSet::new();
                next.retain(|p| seen.insert(*p));
                st.parents = next;
            }
            g.unlink(id, &parents);
            for c in &children {
                for p in &parents {
                    let list = g.children.entry(*p).or_default();
                    if !list.contains(c) {
                        list.push(*c);
                    }
                }
            }
            g.nodes.shift_remove(&id);
            let mut st = node.0.state.lock();
            g.pending.remove(&st.seq);
            st.network = Weak::new();
            st.history = None;
            drop(st);
            node
        };
        self.emit(&NetworkEvent::NodeRemoved { node_id: id });
        Ok(node)
    }

    /// The node with this id.
    pub fn node(&self, id: NodeId) -> Option<NodeRef> {
        self.0.graph.lock().nodes.get(&id).cloned()
    }

    /// All nodes in insertion order.
    pub fn nodes(&self) -> Vec<NodeRef> {
        self.0.graph.lock().nodes.values().cloned().collect()
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.0.graph.lock().nodes.len()
    }

    /// Whether the network has no nodes.
    pub fn is_empty(&self) -> bool {
        self.0.graph.lock().nodes.is_empty()
    }

    /// Nodes without children, in insertion order.
    pub fn leaves(&self) -> Vec<NodeRef> {
        let g = self.0.graph.lock();
        g.nodes
            .values()
            .filter(|n| g.children_of(n.id()).is_empty())
            .cloned()
            .collect()
    }

    /// The newest node without children: where a new node attaches.
    pub fn current_leaf(&self) -> Option<NodeRef> {
        self.0.graph.lock().current_leaf().cloned()
    }

    /// A node's children, in the order they were connected.
    pub fn children(&self, id: NodeId) -> Vec<NodeRef> {
        let g = self.0.graph.lock();
        g.children_of(id)
            .iter()
            .filter_map(|c| g.nodes.get(c).cloned())
            .collect()
    }

    /// A node's parents, in order.
    pub fn parents(&self, id: NodeId) -> Vec<NodeRef> {
        let g = self.0.graph.lock();
        let Some(n) = g.nodes.get(&id) else {
            return Vec::new();
        };
        let parents = n.parents();
        parents
            .iter()
            .filter_map(|p| g.nodes.get(p).cloned())
            .collect()
    }

    /// Every node, parents before children (ties in insertion order).
    pub fn topological_order(&self) -> Vec<NodeRef> {
        let g = self.0.graph.lock();
        let ids: Vec<NodeId> = g.nodes.keys().copied().collect();
        topological(&g, &ids)
    }

    /// Nodes that have not run yet, parents before children.
    pub fn pending(&self) -> Vec<NodeRef> {
        let g = self.0.graph.lock();
        let ids: Vec<NodeId> = g.pending.values().copied().collect();
        topological(&g, &ids)
    }

    /// The conversation a node reads (its ancestors' outputs).
    pub fn input_of(&self, node: &NodeRef) -> History {
        self.0.graph.lock().input_of(node)
    }

    /// The conversation up to and including a node's output.
    pub fn history_of(&self, node: &NodeRef) -> History {
        self.0.graph.lock().history_of(node)
    }

    /// The conversation up to the current leaf.
    pub fn history(&self) -> History {
        let g = self.0.graph.lock();
        match g.current_leaf() {
            Some(leaf) => g.history_of(leaf),
            None => g.input.clone(),
        }
    }

    /// Sets what the network sees before its roots (used by sub-networks
    /// to show them the outer conversation).
    pub fn set_input(&self, input: History) {
        let mut g = self.0.graph.lock();
        if g.input.same_as(&input) {
            return;
        }
        g.input = input;
        for n in g.nodes.values() {
            n.0.state.lock().history = None;
        }
    }

    pub(crate) fn replace_output(&self, node: &NodeRef, message: Message) {
        let g = self.0.graph.lock();
        {
            let mut st = node.0.state.lock();
            st.outputs = Some(Arc::new(message));
            st.invoked = true;
            st.changed();
        }
        g.invalidate_from(node.id());
    }

    /// Puts loaded nodes (with their parents) into an empty network,
    /// checking that the edges make no cycle.
    pub(crate) fn insert_loaded(&self, nodes: Vec<(NodeRef, bool, Vec<NodeId>)>) -> Result<()> {
        let mut g = self.0.graph.lock();
        for (node, invoked, parents) in nodes {
            let id = node.id();
            if g.nodes.contains_key(&id) {
                return Err(NetworkError::Format(format!("duplicate node id {id}")));
            }
            let seq = g.next_seq;
            g.next_seq += 1;
            {
                let mut st = node.0.state.lock();
                st.network = Arc::downgrade(&self.0);
                st.parents = parents.clone();
                st.seq = seq;
            }
            if !invoked {
                g.pending.insert(seq, id);
            }
            g.nodes.insert(id, node);
            g.link(id, &parents);
        }
        let ids: Vec<NodeId> = g.nodes.keys().copied().collect();
        if topological(&g, &ids).len() != ids.len() {
            return Err(NetworkError::Format(
                "the connections contain a cycle".into(),
            ));
        }
        Ok(())
    }

    pub(crate) fn mark_pending_done(&self, node: &NodeRef) {
        let mut g = self.0.graph.lock();
        let seq = node.0.state.lock().seq;
        g.pending.remove(&seq);
    }

    // ----- runtime attachments -----

    /// Attaches a modifier. Its id must be unique in this network.
    pub fn add_modifier(&self, modifier: impl NetworkModifier) -> Result<()> {
        self.add_modifier_shared(Arc::new(modifier))
    }

    /// Attaches a shared modifier. Its id must be unique in this network.
    pub fn add_modifier_shared(&self, modifier: Arc<dyn NetworkModifier>) -> Result<()> {
        let mut rt = self.0.runtime.write();
        if rt.modifiers.iter().any(|m| m.id() == modifier.id()) {
            return Err(NetworkError::DuplicateModifier(modifier.id().to_string()));
        }
        let mut list: Vec<_> = rt.modifiers.iter().cloned().collect();
        list.push(modifier);
        // Stable: equal priorities keep the order they were added in.
        list.sort_by_key(|m| m.priority());
        rt.modifiers = list.into();
        Ok(())
    }

    /// Detaches the modifier with this id; returns whether there was one.
    pub fn remove_modifier(&self, id: &str) -> bool {
        let mut rt = self.0.runtime.write();
        let before = rt.modifiers.len();
        let list: Vec<_> = rt
            .modifiers
            .iter()
            .filter(|m| m.id() != id)
            .cloned()
            .collect();
        rt.modifiers = list.into();
        rt.modifiers.len() != before
    }

    /// Attached modifiers, in the order they run.
    pub fn modifiers(&self) -> Arc<[Arc<dyn NetworkModifier>]> {
        self.0.runtime.read().modifiers.clone()
    }

    /// Attaches a tool to the network.
    pub fn add_tool(&self, tool: impl Tool + 'static) {
        self.add_tool_shared(Arc::new(tool));
    }

    /// Attaches a shared tool (a tool with the same name is replaced).
    pub fn add_tool_shared(&self, tool: Arc<dyn Tool>) {
        let mut rt = self.0.runtime.write();
        let mut list: Vec<_> = rt
            .tools
            .iter()
            .filter(|t| t.name() != tool.name())
            .cloned()
            .collect();
        list.push(tool);
        rt.tools = list.into();
    }

    /// Every tool chat nodes may call: the network's own, its modifiers',
    /// then (for a sub-network) the outer network's. The first of a name
    /// wins.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let (own, modifiers, parent) = {
            let rt = self.0.runtime.read();
            (rt.tools.clone(), rt.modifiers.clone(), rt.parent.clone())
        };
        let mut out: Vec<Arc<dyn Tool>> = own.iter().cloned().collect();
        for m in modifiers.iter() {
            out.extend(m.tools(self));
        }
        if let Some(parent) = parent.upgrade() {
            out.extend(RunnableNetwork(parent).tools());
        }
        let mut seen = HashSet::new();
        out.retain(|t| seen.insert(t.name().to_string()));
        out
    }

    /// Registers a chat model under `name` for this network.
    pub fn register_model(&self, name: impl Into<String>, model: impl ChatModel + 'static) {
        self.0.runtime.write().models.register(name, model);
    }

    /// Registers a shared chat model under `name` for this network.
    pub fn register_model_shared(&self, name: impl Into<String>, model: Arc<dyn ChatModel>) {
        self.0.runtime.write().models.register_shared(name, model);
    }

    /// The model called `name`: this network's, else the outer network's.
    pub fn model(&self, name: &str) -> Option<Arc<dyn ChatModel>> {
        let (found, parent) = {
            let rt = self.0.runtime.read();
            (rt.models.get(name), rt.parent.clone())
        };
        found.or_else(|| {
            parent
                .upgrade()
                .and_then(|p| RunnableNetwork(p).model(name))
        })
    }

    /// Model turns allowed in one `invoke` (`None`: unlimited).
    pub fn step_limit(&self) -> Option<usize> {
        self.0.runtime.read().step_limit
    }

    /// Sets the step limit (`None`: unlimited).
    pub fn set_step_limit(&self, limit: Option<usize>) {
        self.0.runtime.write().step_limit = limit;
    }

    /// Whether chat nodes stream.
    pub fn streaming(&self) -> bool {
        self.0.runtime.read().streaming
    }

    /// Turns streaming on or off.
    pub fn set_streaming(&self, on: bool) {
        self.0.runtime.write().streaming = on;
    }

    pub(crate) fn set_parent_network(&self, parent: &RunnableNetwork) {
        self.0.runtime.write().parent = Arc::downgrade(&parent.0);
    }

    /// Calls `callback` for every event (node added, invoked, removed,
    /// streamed delta).
    pub fn on_event(&self, callback: impl Fn(&NetworkEvent) + Send + Sync + 'static) {
        let mut rt = self.0.runtime.write();
        let mut list: Vec<Callback> = rt.callbacks.iter().cloned().collect();
        list.push(Arc::new(callback));
        rt.callbacks = list.into();
    }

    /// A channel that receives every event from now on.
    pub fn subscribe(&self) -> tokio::sync::mpsc::UnboundedReceiver<NetworkEvent> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.on_event(move |e| {
            let _ = tx.send(e.clone());
        });
        rx
    }

    pub(crate) fn emit(&self, event: &NetworkEvent) {
        let callbacks = self.0.runtime.read().callbacks.clone();
        for cb in callbacks.iter() {
            cb(event);
        }
    }
}

/// Kahn's algorithm over `ids` only (edges to nodes outside are ignored);
/// ties keep the order of `ids`.
fn topological(g: &Graph, ids: &[NodeId]) -> Vec<NodeRef> {
    let index: HashMap<NodeId, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let mut indegree = vec![0usize; ids.len()];
    let mut nodes: Vec<&NodeRef> = Vec::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        let Some(n) = g.nodes.get(id) else { continue };
        nodes.push(n);
        indegree[i] =
            n.0.state
                .lock()
                .parents
                .iter()
                .filter(|p| index.contains_key(p))
                .count();
    }
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = indegree
        .iter()
        .enumerate()
        .filter(|(_, d)| **d == 0)
        .map(|(i, _)| std::cmp::Reverse(i))
        .collect();
    let mut out = Vec::with_capacity(ids.len());
    while let Some(std::cmp::Reverse(i)) = ready.pop() {
        let id = ids[i];
        if let Some(n) = g.nodes.get(&id) {
            out.push(n.clone());
        }
        for c in g.children_of(id) {
            if let Some(&ci) = index.get(c) {
                indegree[ci] -= 1;
                if indegree[ci] == 0 {
                    ready.push(std::cmp::Reverse(ci));
                }
            }
        }
    }
    out
}

impl std::fmt::Debug for RunnableNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let g = self.0.graph.lock();
        f.debug_struct("RunnableNetwork")
            .field("id", &g.id)
            .field("name", &g.name)
            .field("nodes", &g.nodes.len())
            .field("pending", &g.pending.len())
            .finish_non_exhaustive()
    }
}
