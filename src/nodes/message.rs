//! Nodes that output a fixed message: what the user said, instructions.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::message::{ContentPart, Message};
use crate::node::kinds::{self, BuiltInKind, TypedFields, BUILT_IN_KINDS};
use crate::node::{fields_of, NodeContext, NodeLogic, NodeRef};

/// A user's message (kind `human`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HumanNode {
    /// What the user said.
    pub text: String,
    /// What follows the text: images (and text between them). Saved only
    /// when there are some, so a text-only node saves as it always did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<ContentPart>,
}

impl HumanNode {
    /// The kind name (`__node_type__`).
    pub const KIND: &'static str = kinds::HUMAN;

    /// A human node, attached to the active network as a child of its
    /// current leaf (see [`crate::RunnableNetwork::enter`]).
    #[allow(clippy::new_ret_no_self)]
    pub fn new(text: impl Into<String>) -> NodeRef {
        NodeRef::create(HumanNode {
            text: text.into(),
            parts: Vec::new(),
        })
    }

    /// A human node with parts after its text (images, say), attached to
    /// the active network like [`HumanNode::new`].
    pub fn with_parts(text: impl Into<String>, parts: Vec<ContentPart>) -> NodeRef {
        NodeRef::create(HumanNode {
            text: text.into(),
            parts,
        })
    }
}

#[async_trait]
impl NodeLogic for HumanNode {
    fn kind(&self) -> &str {
        Self::KIND
    }
    fn is_input(&self) -> bool {
        true
    }
    async fn invoke(&self, _ctx: NodeContext) -> Result<Message> {
        Ok(Message::Human {
            content: self.text.clone(),
            parts: self.parts.clone(),
        })
    }
    fn save(&self) -> Result<serde_json::Map<String, serde_json::Value>> {
        fields_of(self)
    }
}

/// Instructions for the model (kind `system`); chat nodes below it send
/// it first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemNode {
    /// The instruction text.
    pub text: String,
}

impl SystemNode {
    /// The kind name (`__node_type__`).
    pub(crate) const KIND: &'static str = kinds::SYSTEM;

    /// A system node, attached to the active network.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(text: impl Into<String>) -> NodeRef {
        NodeRef::create(SystemNode { text: text.into() })
    }
}

#[async_trait]
impl NodeLogic for SystemNode {
    fn kind(&self) -> &str {
        Self::KIND
    }
    fn is_input(&self) -> bool {
        true
    }
    async fn invoke(&self, _ctx: NodeContext) -> Result<Message> {
        Ok(Message::system(self.text.clone()))
    }
    fn save(&self) -> Result<serde_json::Map<String, serde_json::Value>> {
        fields_of(self)
    }
}

#[linkme::distributed_slice(BUILT_IN_KINDS)]
static HUMAN_KIND: BuiltInKind = BuiltInKind {
    name: kinds::HUMAN,
    load: kinds::serde_load::<HumanNode>,
    typed: Some(|f: &mut TypedFields| match f {
        TypedFields {
            text: Some(_),
            tool_call: None,
            chat_model_name: None,
        } => f.text.take().map(|text| {
            std::sync::Arc::new(HumanNode {
                text,
                parts: Vec::new(),
            }) as std::sync::Arc<dyn NodeLogic>
        }),
        _ => None,
    }),
    immutable: true,
};

#[linkme::distributed_slice(BUILT_IN_KINDS)]
static SYSTEM_KIND: BuiltInKind = BuiltInKind {
    name: kinds::SYSTEM,
    load: kinds::serde_load::<SystemNode>,
    typed: Some(|f: &mut TypedFields| match f {
        TypedFields {
            text: Some(_),
            tool_call: None,
            chat_model_name: None,
        } => f
            .text
            .take()
            .map(|text| std::sync::Arc::new(SystemNode { text }) as std::sync::Arc<dyn NodeLogic>),
        _ => None,
    }),
    immutable: true,
};
