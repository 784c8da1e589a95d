//! The sub-network node: a whole network as one step.

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::error::{NetworkError, Result};
use crate::history::History;
use crate::message::Message;
use crate::network::format::Saving;
use crate::network::runtime::Attachments;
use crate::network::RunnableNetwork;
use crate::node::kinds::{self, BuiltInKind, BUILT_IN_KINDS};
use crate::node::{NodeContext, NodeLogic, NodeRef};

/// What a sub-network sees of the outer network, and where its answer
/// goes. Saved as a flag on the node: nothing for
/// [`Conversation`](NetworkInput::Conversation), `"isolated": true`,
/// `"routed": true`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NetworkInput {
    /// It sees the outer conversation (the node's ancestors) before its own
    /// roots, and its final answer joins the outer conversation.
    #[default]
    Conversation,
    /// A sub-agent's task: it sees none of the outer conversation, only
    /// its own nodes, and answers through the node that asked for it (a
    /// tool result), not into the outer conversation.
    Isolated,
    /// A supervisor's route: it sees the conversation its outer network
    /// started from (not the outer network's own turns) and, like an
    /// isolated one, answers through the node that asked for it.
    Routed,
}

impl NetworkInput {
    /// The saved flag of this input (`None` for the conversation).
    fn flag(self) -> Option<&'static str> {
        match self {
            NetworkInput::Conversation => None,
            NetworkInput::Isolated => Some("isolated"),
            NetworkInput::Routed => Some("routed"),
        }
    }

    /// The input a saved node's fields name (`"isolated": true`,
    /// `"routed": true`, or neither).
    pub(crate) fn from_fields(fields: &Map<String, Value>) -> Self {
        let flag = |name: &str| fields.get(name) == Some(&Value::Bool(true));
        if flag("isolated") {
            NetworkInput::Isolated
        } else if flag("routed") {
            NetworkInput::Routed
        } else {
            NetworkInput::Conversation
        }
    }
}

/// Runs an inner network (kind `network`).
///
/// What the inner network sees is its [`NetworkInput`]: by default the
/// outer conversation (this node's ancestors) before its own roots. It
/// borrows the outer network's models and tools when it has none of a
/// name, and its final output becomes this node's output. It saves nested,
/// as a whole network document under `"network"`.
#[derive(Debug, Clone)]
pub struct NetworkNode {
    network: RunnableNetwork,
    input: NetworkInput,
}

impl NetworkNode {
    /// The kind name (`__node_type__`).
    pub(crate) const KIND: &'static str = kinds::NETWORK;

    /// A sub-network node around `inner`, attached to the active network.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(inner: RunnableNetwork) -> NodeRef {
        NodeRef::create(Self::with_input(inner, NetworkInput::Conversation))
    }

    /// The node's logic around `inner` with this input, to add explicitly:
    /// [`NetworkInput::Isolated`] for a sub-agent's task,
    /// [`NetworkInput::Routed`] for a supervisor's route (saved with
    /// `"isolated": true` or `"routed": true`).
    pub fn with_input(inner: RunnableNetwork, input: NetworkInput) -> Self {
        NetworkNode {
            network: inner,
            input,
        }
    }

    /// What the sub-network sees.
    pub fn input(&self) -> NetworkInput {
        self.input
    }

    /// The inner network.
    pub fn network(&self) -> &RunnableNetwork {
        &self.network
    }
}

#[async_trait]
impl NodeLogic for NetworkNode {
    fn inner_network(&self) -> Option<&RunnableNetwork> {
        Some(&self.network)
    }

    fn kind(&self) -> &str {
        Self::KIND
    }

    async fn invoke(&self, ctx: NodeContext) -> Result<Message> {
        if self.network == ctx.network {
            return Err(NetworkError::Format(
                "a network cannot contain itself".into(),
            ));
        }
        self.network.set_parent_network(&ctx.network);
        for modifier in ctx.network.modifiers().iter() {
            if let Some(copy) = modifier.for_sub_network() {
                let attached = self.network.modifiers().iter().any(|m| m.id() == copy.id());
                if !attached {
                    // Checked just above: the id is free.
                    let _ = self.network.add_modifier_shared(copy);
                }
            }
        }
        self.network.set_input(match self.input {
            NetworkInput::Conversation => ctx.input,
            NetworkInput::Isolated => History::new(),
            NetworkInput::Routed => ctx.network.input(),
        });
        let answer = self.network.invoke().await?;
        if !self.network.held().is_empty() {
            // Work inside waits (a nested call for a decision): this node
            // waits with it, and the outer run stops here too.
            ctx.node.hold(crate::run::HELD_INSIDE);
        }
        Ok(answer)
    }

    fn in_conversation(&self) -> bool {
        self.input == NetworkInput::Conversation
    }

    fn save(&self) -> Result<Map<String, Value>> {
        let mut map = Map::new();
        map.insert("network".into(), self.network.to_value()?);
        if let Some(flag) = self.input.flag() {
            map.insert(flag.into(), Value::Bool(true));
        }
        Ok(map)
    }
}

#[linkme::distributed_slice(BUILT_IN_KINDS)]
static NETWORK_KIND: BuiltInKind = BuiltInKind {
    name: kinds::NETWORK,
    load: load_network_node,
    typed: None,
    immutable: false,
};

/// A `network` node from its saved fields: the inner document under
/// `"network"`, the input under its own keys.
fn load_network_node(mut fields: Map<String, Value>) -> Result<std::sync::Arc<dyn NodeLogic>> {
    let inner = fields
        .remove("network")
        .ok_or_else(|| NetworkError::Format("a `network` node has no `network` field".into()))?;
    let inner = RunnableNetwork::from_value(inner)?;
    let input = NetworkInput::from_fields(&fields);
    Ok(std::sync::Arc::new(NetworkNode::with_input(inner, input)))
}
