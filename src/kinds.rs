//! The registry of node kinds: how a kind name becomes a node, both when a
//! saved network is loaded and when a modifier creates a node at run time
//! (the chat loop's `default_node`).
//!
//! ```text
//!  "chat" ──▶ registry ──▶ loader(fields) ──▶ Arc<dyn NodeLogic>
//!              ├─ built-in: human, system, chat, tool, network, summary (fixed)
//!              └─ yours:    register_node_kind::<T>("kind")
//! ```
//!
//! A kind that is not registered loads as a [`GenericNode`](crate::GenericNode)
//! (see [`crate::network::format`]).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{NetworkError, Result};
use crate::network::format::Saving;
use crate::network::RunnableNetwork;
use crate::node::{NodeLogic, NodeRef};
use crate::nodes::{
    ChatNode, HumanNode, NetworkInput, NetworkNode, SummaryNode, SystemNode, ToolNode,
};

/// Builds a node kind's logic from its saved fields.
pub(crate) type Loader =
    Arc<dyn Fn(Map<String, Value>) -> Result<Arc<dyn NodeLogic>> + Send + Sync>;

/// The kinds this crate defines; they cannot be replaced.
pub(crate) const BUILTIN_KINDS: [&str; 6] = [
    HumanNode::KIND,
    SystemNode::KIND,
    ChatNode::KIND,
    ToolNode::KIND,
    NetworkNode::KIND,
    SummaryNode::KIND,
];

fn registry() -> &'static RwLock<HashMap<String, Loader>> {
    static REGISTRY: OnceLock<RwLock<HashMap<String, Loader>>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let builtin: [(&str, Loader); 6] = [
            (HumanNode::KIND, serde_loader::<HumanNode>()),
            (SystemNode::KIND, serde_loader::<SystemNode>()),
            (ChatNode::KIND, serde_loader::<ChatNode>()),
            (ToolNode::KIND, serde_loader::<ToolNode>()),
            (NetworkNode::KIND, Arc::new(load_network_node)),
            (SummaryNode::KIND, serde_loader::<SummaryNode>()),
        ];
        RwLock::new(
            builtin
                .into_iter()
                .map(|(kind, loader)| (kind.to_string(), loader))
                .collect(),
        )
    })
}

fn load_network_node(mut fields: Map<String, Value>) -> Result<Arc<dyn NodeLogic>> {
    let inner = fields
        .remove("network")
        .ok_or_else(|| NetworkError::Format("a `network` node has no `network` field".into()))?;
    let inner = RunnableNetwork::from_value(inner)?;
    let input = NetworkInput::from_fields(&fields);
    Ok(Arc::new(NetworkNode::with_input(inner, input)))
}

fn serde_loader<T: NodeLogic + DeserializeOwned>() -> Loader {
    Arc::new(|fields| {
        let logic: T = serde_json::from_value(Value::Object(fields))?;
        Ok(Arc::new(logic) as Arc<dyn NodeLogic>)
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
    register_loader(kind, serde_loader::<T>());
}

fn register_loader(kind: &str, loader: Loader) {
    if BUILTIN_KINDS.contains(&kind) {
        tracing::warn!(kind, "built-in node kinds cannot be replaced");
        return;
    }
    registry().write().insert(kind.to_string(), loader);
}

/// The loader of a registered kind.
pub(crate) fn loader(kind: &str) -> Option<Loader> {
    registry().read().get(kind).cloned()
}

/// A fresh, detached node of a registered kind built from no fields (what
/// the chat loop adds as the `default_node`).
pub(crate) fn create_node(kind: &str) -> Result<NodeRef> {
    let loader =
        loader(kind).ok_or_else(|| NetworkError::Format(format!("unknown node kind `{kind}`")))?;
    Ok(NodeRef::detached_shared(loader(Map::new())?))
}
