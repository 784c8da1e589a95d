//! The table of node kinds: how a kind name becomes a node, both when a
//! saved network is loaded and when a modifier creates a node at run time
//! (the chat loop's `default_node`).
//!
//! ```text
//!  "chat" ──▶ table ──▶ loader(fields) ──▶ Arc<dyn NodeLogic>
//!              ├─ built-in: each kind's file adds its row to BUILT_IN_KINDS
//!              └─ yours:    register_node_kind::<T>("kind")
//! ```
//!
//! The floor (the graph, saving, time travel) asks this table and never
//! names a kind's type: the built-in kinds stand on the floor and add
//! their row from their own file (a link-time table, `linkme`), the way a
//! program registers its own kinds at run time. A kind that is not in the
//! table loads as a [`GenericNode`](crate::GenericNode).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use linkme::distributed_slice;
use parking_lot::RwLock;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{NodeLogic, NodeRef};
use crate::error::{NetworkError, Result};
use crate::message::ToolCall;

/// A user's message.
pub(crate) const HUMAN: &str = "human";
/// Instructions (a system message).
pub(crate) const SYSTEM: &str = "system";
/// A chat-model call.
pub(crate) const CHAT: &str = "chat";
/// One tool call.
pub(crate) const TOOL: &str = "tool";
/// A whole inner network.
pub(crate) const NETWORK: &str = "network";
/// A summary of the conversation before it.
pub(crate) const SUMMARY: &str = "summary";

/// Builds a node kind's logic from its saved fields.
pub(crate) type Loader =
    Arc<dyn Fn(Map<String, Value>) -> Result<Arc<dyn NodeLogic>> + Send + Sync>;

/// Builds a built-in kind's logic from its saved fields.
pub(crate) type LoadFn = fn(Map<String, Value>) -> Result<Arc<dyn NodeLogic>>;

/// Builds a built-in kind's logic from the typed fields, when they fit.
pub(crate) type TypedFn = fn(&mut TypedFields) -> Option<Arc<dyn NodeLogic>>;

/// The fields the one-pass reader reads typed, with no JSON in between
/// (see `network/format/read.rs`); a built-in kind made of nothing else
/// is built straight from them.
#[derive(Default)]
pub(crate) struct TypedFields {
    /// `text`.
    pub(crate) text: Option<String>,
    /// `tool_call`.
    pub(crate) tool_call: Option<ToolCall>,
    /// `chat_model_name` (`Some(None)`: saved as `null`).
    pub(crate) chat_model_name: Option<Option<String>>,
}

/// One built-in kind's row.
pub(crate) struct BuiltInKind {
    /// The kind name (`__node_type__`).
    pub(crate) name: &'static str,
    /// Builds the logic from the saved fields.
    pub(crate) load: LoadFn,
    /// Builds the logic from the typed fields, when they are all the kind
    /// has (`None` when the fields do not fit; the reader then goes
    /// through `load`).
    pub(crate) typed: Option<TypedFn>,
    /// Whether a copy of such a node (a fork) may share its logic: the
    /// kind never changes once made.
    pub(crate) immutable: bool,
}

/// The built-in kinds; each kind's file adds its row.
#[distributed_slice]
pub(crate) static BUILT_IN_KINDS: [BuiltInKind];

/// A [`BuiltInKind::load`] that reads the fields with serde.
pub(crate) fn serde_load<T: NodeLogic + DeserializeOwned>(
    fields: Map<String, Value>,
) -> Result<Arc<dyn NodeLogic>> {
    let logic: T = serde_json::from_value(Value::Object(fields))?;
    Ok(Arc::new(logic))
}

fn built_in(kind: &str) -> Option<&'static BuiltInKind> {
    BUILT_IN_KINDS.iter().find(|k| k.name == kind)
}

fn registry() -> &'static RwLock<HashMap<String, Loader>> {
    static REGISTRY: OnceLock<RwLock<HashMap<String, Loader>>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        RwLock::new(
            BUILT_IN_KINDS
                .iter()
                .map(|k| (k.name.to_string(), Arc::new(k.load) as Loader))
                .collect(),
        )
    })
}

/// Registers a node kind so saved networks load it back (process-wide).
/// The kind's fields are read with serde from the node's saved object.
///
/// ```
/// use lc_agent::{register_node_kind, Message, NodeContext, NodeLogic, Result};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Note { text: String }
///
/// #[async_trait::async_trait]
/// impl NodeLogic for Note {
///     fn kind(&self) -> &str { "note" }
///     async fn invoke(&self, _ctx: NodeContext) -> Result<Message> {
///         Ok(Message::system(self.text.clone()))
///     }
///     fn save(&self) -> Result<serde_json::Map<String, serde_json::Value>> {
///         lc_agent::fields_of(self)
///     }
/// }
///
/// register_node_kind::<Note>("note");
/// ```
///
/// The built-in kinds (`human`, `chat`, `tool`, ...) cannot be replaced; registering
/// one of them is ignored with a warning.
pub fn register_node_kind<T: NodeLogic + DeserializeOwned>(kind: &str) {
    if built_in(kind).is_some() {
        tracing::warn!(kind, "built-in node kinds cannot be replaced");
        return;
    }
    registry()
        .write()
        .insert(kind.to_string(), Arc::new(serde_load::<T>));
}

/// The loader of a registered kind.
pub(crate) fn loader(kind: &str) -> Option<Loader> {
    registry().read().get(kind).cloned()
}

/// A built-in kind built straight from typed fields (see [`TypedFields`]);
/// `None` when `kind` is not built in or the fields do not fit it.
pub(crate) fn typed(kind: &str, fields: &mut TypedFields) -> Option<Arc<dyn NodeLogic>> {
    built_in(kind)?.typed?(fields)
}

/// Whether `kind` is a built-in kind the reader builds from typed fields.
pub(crate) fn is_typed(kind: &str) -> bool {
    built_in(kind).is_some_and(|k| k.typed.is_some())
}

/// Whether nodes of `kind` never change once made (a copy may share the
/// logic).
pub(crate) fn is_immutable(kind: &str) -> bool {
    built_in(kind).is_some_and(|k| k.immutable)
}

/// A new node of a built-in kind from empty typed fields, as the reader
/// builds it: no registry lock and no trip through serde. `None` for a
/// kind the typed reader does not make.
pub(crate) fn create_built_in(kind: &str) -> Option<NodeRef> {
    typed(kind, &mut TypedFields::default()).map(NodeRef::detached_shared)
}

/// A fresh, detached node of a registered kind built from no fields (what
/// the chat loop adds as the `default_node`).
pub(crate) fn create_node(kind: &str) -> Result<NodeRef> {
    if let Some(node) = create_built_in(kind) {
        return Ok(node);
    }
    let loader =
        loader(kind).ok_or_else(|| NetworkError::Format(format!("unknown node kind `{kind}`")))?;
    Ok(NodeRef::detached_shared(loader(Map::new())?))
}
