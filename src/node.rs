//! Nodes: one step of a network, with cached outputs.
//!
//! A [`NodeRef`] is a cheap, cloneable handle to a node. What a node *does*
//! is its [`NodeLogic`] (human message, chat-model call, tool call,
//! sub-network, or your own kind); what it *has* — id, name, parents,
//! outputs, metadata — lives in the handle. Once a node has been invoked
//! its outputs are never recomputed.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use parking_lot::Mutex;
use serde_json::{Map, Value};

use crate::error::{NetworkError, Result};
use crate::history::History;
use crate::message::Message;
use crate::network::{NetworkInner, RunnableNetwork};

/// A node's id: a random (v4) UUID.
pub type NodeId = uuid::Uuid;

/// What a node gets when it runs.
#[derive(Debug, Clone)]
pub struct NodeContext {
    /// The network running the node.
    pub network: RunnableNetwork,
    /// The node itself.
    pub node: NodeRef,
    /// The conversation before this node: its ancestors' outputs.
    pub input: History,
}

/// What a kind of node does, and how it saves its own fields.
///
/// Implement it for your own node kinds, and register the kind with
/// [`crate::register_node_kind`] so saved networks load it back.
///
/// ```
/// use lc_agent::{Message, NodeContext, NodeLogic, Result};
/// use serde::{Deserialize, Serialize};
///
/// /// Outputs the conversation length as a human message.
/// #[derive(Serialize, Deserialize)]
/// struct Count { prefix: String }
///
/// #[async_trait::async_trait]
/// impl NodeLogic for Count {
///     fn kind(&self) -> &str { "count" }
///     async fn invoke(&self, ctx: NodeContext) -> Result<Message> {
///         Ok(Message::human(format!("{}{}", self.prefix, ctx.input.len())))
///     }
///     fn save(&self) -> Result<serde_json::Map<String, serde_json::Value>> {
///         lc_agent::node::fields_of(self)
///     }
/// }
/// ```
#[async_trait]
pub trait NodeLogic: AsAny + Send + Sync + 'static {
    /// The kind name written as `__node_type__` when saving.
    fn kind(&self) -> &str;

    /// Runs the node and returns its output.
    async fn invoke(&self, ctx: NodeContext) -> Result<Message>;

    /// The kind's own fields, saved next to the common ones.
    fn save(&self) -> Result<Map<String, Value>> {
        Ok(Map::new())
    }

    /// Whether running this node is a model turn (counted by the step
    /// limit).
    fn is_model_turn(&self) -> bool {
        false
    }
}

/// Gives every node kind an `Any` view, so [`NodeRef::downcast`] can reach
/// the concrete kind without each kind writing boilerplate.
pub trait AsAny: std::any::Any {
    /// The value as `Any`.
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: std::any::Any> AsAny for T {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Serializes a node kind's fields with serde: a ready body for
/// [`NodeLogic::save`].
pub fn fields_of<T: serde::Serialize>(value: &T) -> Result<Map<String, Value>> {
    match serde_json::to_value(value)? {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(NetworkError::Format(format!(
            "node fields must serialize to an object, got {other}"
        ))),
    }
}

pub(crate) struct NodeState {
    pub(crate) name: String,
    pub(crate) parents: Vec<NodeId>,
    pub(crate) invoked: bool,
    pub(crate) outputs: Option<Arc<Message>>,
    pub(crate) metadata: Map<String, Value>,
    /// The conversation up to and including this node's output (a cache).
    pub(crate) history: Option<History>,
    pub(crate) network: Weak<NetworkInner>,
    /// Order of addition to its network (set when attached).
    pub(crate) seq: u64,
    /// The node's saved JSON, cached once it is invoked (saving is then a
    /// copy). Anything that changes a saved field calls [`NodeState::changed`].
    pub(crate) saved: Option<Box<serde_json::value::RawValue>>,
}

impl NodeState {
    /// Marks a saved field (name, outputs, metadata, ...) as changed.
    pub(crate) fn changed(&mut self) {
        self.saved = None;
    }
}

pub(crate) struct NodeCell {
    pub(crate) id: NodeId,
    pub(crate) logic: Arc<dyn NodeLogic>,
    pub(crate) state: Mutex<NodeState>,
}

/// A handle to a node. Clones point at the same node.
#[derive(Clone)]
pub struct NodeRef(pub(crate) Arc<NodeCell>);

impl NodeRef {
    /// A node of this kind that belongs to no network yet; add it with
    /// [`RunnableNetwork::add_node`] or connect it with `>>`.
    pub fn detached(logic: impl NodeLogic) -> Self {
        Self::detached_shared(Arc::new(logic))
    }

    pub(crate) fn detached_shared(logic: Arc<dyn NodeLogic>) -> Self {
        let name = logic.kind().to_string();
        Self::loaded(logic, uuid::Uuid::new_v4(), name, false, None, Map::new())
    }

    /// A node of this kind, attached to the active network (see
    /// [`RunnableNetwork::enter`]) as a child of its current leaf; detached
    /// when no network is active.
    pub fn create(logic: impl NodeLogic) -> Self {
        let node = Self::detached(logic);
        if let Some(network) = crate::scope::current() {
            // A fresh node cannot make a cycle or belong elsewhere.
            let _ = network.add_node(&node);
        }
        node
    }

    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.0.id
    }

    /// The kind name (`human`, `chat`, `tool`, `network`, ...).
    pub fn kind(&self) -> &str {
        self.0.logic.kind()
    }

    /// The node's logic, to downcast to a concrete kind.
    pub fn logic(&self) -> &dyn NodeLogic {
        &*self.0.logic
    }

    /// The concrete kind, if the node is a `T`.
    pub fn downcast<T: NodeLogic>(&self) -> Option<&T> {
        AsAny::as_any(&*self.0.logic).downcast_ref::<T>()
    }

    /// The display name (defaults to the kind).
    pub fn name(&self) -> String {
        self.0.state.lock().name.clone()
    }

    /// Renames the node.
    pub fn set_name(&self, name: impl Into<String>) {
        let mut st = self.0.state.lock();
        st.name = name.into();
        st.changed();
    }

    /// Parent ids, in order.
    pub fn parents(&self) -> Vec<NodeId> {
        self.0.state.lock().parents.clone()
    }

    /// Whether the node has run (and will not run again).
    pub fn is_invoked(&self) -> bool {
        self.0.state.lock().invoked
    }

    /// The cached output, once invoked.
    pub fn output(&self) -> Option<Arc<Message>> {
        self.0.state.lock().outputs.clone()
    }

    /// A copy of the metadata.
    pub fn metadata(&self) -> Map<String, Value> {
        self.0.state.lock().metadata.clone()
    }

    /// One metadata value.
    pub fn metadata_value(&self, key: &str) -> Option<Value> {
        self.0.state.lock().metadata.get(key).cloned()
    }

    /// Sets one metadata value.
    pub fn set_metadata(&self, key: impl Into<String>, value: Value) {
        let mut st = self.0.state.lock();
        st.metadata.insert(key.into(), value);
        st.changed();
    }

    /// The network this node belongs to, if any.
    pub fn network(&self) -> Option<RunnableNetwork> {
        self.0.state.lock().network.upgrade().map(RunnableNetwork)
    }

    /// Replaces the output of an invoked node (for modifiers that rewrite
    /// results, e.g. evicting a huge tool result to a file). Cached
    /// conversations below the node are rebuilt on next use.
    pub fn set_output(&self, message: Message) {
        match self.network() {
            Some(network) => network.replace_output(self, message),
            None => {
                let mut st = self.0.state.lock();
                st.outputs = Some(Arc::new(message));
                st.invoked = true;
                st.history = None;
                st.changed();
            }
        }
    }

    /// A detached node with the id and state a saved network holds.
    pub(crate) fn loaded(
        logic: Arc<dyn NodeLogic>,
        id: NodeId,
        name: String,
        invoked: bool,
        outputs: Option<Arc<Message>>,
        metadata: Map<String, Value>,
    ) -> NodeRef {
        NodeRef(Arc::new(NodeCell {
            id,
            logic,
            state: Mutex::new(NodeState {
                name,
                parents: Vec::new(),
                invoked,
                outputs,
                metadata,
                history: None,
                network: Weak::new(),
                seq: 0,
                saved: None,
            }),
        }))
    }

    pub(crate) fn same(&self, other: &NodeRef) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for NodeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.0.state.lock();
        f.debug_struct("NodeRef")
            .field("id", &self.0.id)
            .field("kind", &self.0.logic.kind())
            .field("name", &st.name)
            .field("parents", &st.parents)
            .field("invoked", &st.invoked)
            .field("outputs", &st.outputs)
            .finish()
    }
}

impl PartialEq for NodeRef {
    fn eq(&self, other: &Self) -> bool {
        self.same(other)
    }
}

impl Eq for NodeRef {}
