//! Nodes: one step of a network, with cached outputs.
//!
//! A [`NodeRef`] is a cheap, cloneable handle to a node. What a node *does*
//! is its [`NodeLogic`] (human message, chat-model call, tool call,
//! sub-network, or your own kind); what it *has* — id, name, parents,
//! outputs, metadata — lives in the handle. Once a node has been invoked
//! its outputs are never recomputed.

mod generic;
mod id_hash;
pub(crate) mod kinds;
pub(crate) mod metadata;
mod state;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::error::{NetworkError, Result};
use crate::history::History;
use crate::message::Message;
use crate::network::RunnableNetwork;

pub use generic::GenericNode;
pub(crate) use id_hash::{IdSet, SmallIdMap};
pub use kinds::register_node_kind;
pub(crate) use state::{NodeCell, SavedFields};

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
///         lc_agent::fields_of(self)
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

    /// Whether the node only passes on what it holds (a human or system
    /// message): running it again costs nothing and touches nothing else,
    /// so a checkpoint after it may wait for the next node (see
    /// [`CheckpointModifier::input_saved`](crate::CheckpointModifier::input_saved)).
    fn is_input(&self) -> bool {
        false
    }

    /// Whether the node's output joins the conversation its descendants
    /// read (default yes). A node that answers through another one, such
    /// as a sub-agent's task whose answer comes back as the `task` tool
    /// result, keeps its output to itself: it is saved and drawn, but a
    /// chat node below it never reads it.
    fn in_conversation(&self) -> bool {
        true
    }

    /// `Some(kept)` when the node's output is a summary of the
    /// conversation before it: requests below it send the summary instead
    /// of everything before it except its newest `kept` messages (see
    /// [`History::latest_summary`]). Default `None`: an ordinary message.
    fn summary_keeps(&self) -> Option<usize> {
        None
    }

    /// The network a sub-network node runs (default `None`): the graph
    /// keeps such nodes apart (their inner runtime is reset with the
    /// outer one; a run waits on work held inside them) without knowing
    /// their kind.
    fn inner_network(&self) -> Option<&RunnableNetwork> {
        None
    }
}

/// The conversation after a node of this logic output `message`, given
/// the conversation before it.
pub(crate) fn speak(logic: &dyn NodeLogic, input: History, message: Arc<Message>) -> History {
    if !logic.in_conversation() {
        return input;
    }
    match logic.summary_keeps() {
        Some(kept) => input.push_summary(message, kept),
        None => input.push(message),
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
        Self::from_parts(
            logic,
            uuid::Uuid::new_v4(),
            None,
            false,
            None,
            metadata::Metadata::default(),
        )
    }

    /// A node of this kind, attached to the active network (see
    /// [`RunnableNetwork::enter`]) as a child of its current leaf; detached
    /// when no network is active.
    pub fn create(logic: impl NodeLogic) -> Self {
        let node = Self::detached(logic);
        if let Some(network) = crate::network::scope::current() {
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
    pub(crate) fn logic(&self) -> &dyn NodeLogic {
        &*self.0.logic
    }

    /// The concrete kind, if the node is a `T`.
    pub fn downcast<T: NodeLogic>(&self) -> Option<&T> {
        AsAny::as_any(&*self.0.logic).downcast_ref::<T>()
    }

    /// The display name (defaults to the kind).
    pub fn name(&self) -> String {
        self.name_now()
    }

    /// Renames the node.
    pub fn set_name(&self, name: impl Into<String>) {
        self.rename(name.into());
    }

    /// Parent ids, in order.
    pub fn parents(&self) -> Vec<NodeId> {
        self.parent_ids()
    }

    /// Whether the node has run (and will not run again).
    pub fn is_invoked(&self) -> bool {
        self.invoked_now()
    }

    /// The cached output, once invoked.
    pub fn output(&self) -> Option<Arc<Message>> {
        self.output_now()
    }

    /// A copy of the metadata.
    pub fn metadata(&self) -> Map<String, Value> {
        self.metadata_now()
    }

    /// One metadata value.
    pub fn metadata_value(&self, key: &str) -> Option<Value> {
        self.metadata_get(key)
    }

    /// Sets one metadata value.
    pub fn set_metadata(&self, key: impl Into<String>, value: Value) {
        let key = metadata::key_of(std::borrow::Cow::Owned(key.into()));
        self.edit_metadata(|m| m.insert(key, value));
    }

    /// The network this node belongs to, if any.
    pub fn network(&self) -> Option<RunnableNetwork> {
        self.owner().map(RunnableNetwork)
    }

    /// Sets the node's output: replaces an invoked node's (for modifiers
    /// that rewrite results, e.g. evicting a huge tool result to a file),
    /// or answers a pending node without running it (a human's response
    /// to a held tool call). Cached conversations below the node are
    /// rebuilt on next use.
    pub fn set_output(&self, message: Message) {
        self.record_output(Arc::new(message), None, |_| {});
        if let Some(network) = self.network() {
            // A pending node given its output this way never runs.
            network.mark_pending_done(self);
            network.forget_histories_below(self.id());
        }
    }

    pub(crate) fn same(&self, other: &NodeRef) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for NodeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut f = f.debug_struct("NodeRef");
        f.field("id", &self.0.id)
            .field("kind", &self.0.logic.kind());
        self.debug_fields(&mut f);
        f.finish()
    }
}

impl PartialEq for NodeRef {
    fn eq(&self, other: &Self) -> bool {
        self.same(other)
    }
}

impl Eq for NodeRef {}
