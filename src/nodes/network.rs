//! The sub-network node: a whole network as one step.

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::error::{NetworkError, Result};
use crate::history::History;
use crate::message::Message;
use crate::network::RunnableNetwork;
use crate::node::{NodeContext, NodeLogic, NodeRef};

/// Runs an inner network (kind `network`).
///
/// The inner network sees the outer conversation (this node's ancestors)
/// before its own roots, borrows the outer network's models and tools when
/// it has none of a name, and its final output becomes this node's output.
/// It saves nested, as a whole network document under `"network"`.
#[derive(Debug, Clone)]
pub struct NetworkNode {
    network: RunnableNetwork,
    isolated: bool,
    routed: bool,
}

impl NetworkNode {
    /// The kind name (`__node_type__`).
    pub const KIND: &'static str = "network";

    /// A sub-network node around `inner`, attached to the active network.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(inner: RunnableNetwork) -> NodeRef {
        NodeRef::create(Self::logic(inner))
    }

    /// The node's logic around `inner`, to add explicitly.
    pub fn logic(inner: RunnableNetwork) -> Self {
        NetworkNode {
            network: inner,
            isolated: false,
            routed: false,
        }
    }

    /// The logic of an *isolated* sub-network (a sub-agent's task): it
    /// sees none of the outer conversation, only its own nodes, and its
    /// answer does not join the outer conversation either (the node that
    /// asked for it reads it, e.g. as a tool result). It still borrows the
    /// outer network's models and tools. Saved with `"isolated": true`.
    pub fn isolated(inner: RunnableNetwork) -> Self {
        NetworkNode {
            network: inner,
            isolated: true,
            routed: false,
        }
    }

    /// The logic of a *routed* sub-network (a supervisor's route): it sees
    /// the conversation its outer network started from (not the outer
    /// network's own turns), and, like an isolated one, answers through
    /// the node that asked for it (the route's tool result). Saved with
    /// `"routed": true`.
    pub fn routed(inner: RunnableNetwork) -> Self {
        NetworkNode {
            network: inner,
            isolated: false,
            routed: true,
        }
    }

    /// Whether the sub-network is isolated (see [`NetworkNode::isolated`]).
    pub fn is_isolated(&self) -> bool {
        self.isolated
    }

    /// Whether the sub-network is routed (see [`NetworkNode::routed`]).
    pub fn is_routed(&self) -> bool {
        self.routed
    }

    /// The inner network.
    pub fn network(&self) -> &RunnableNetwork {
        &self.network
    }
}

#[async_trait]
impl NodeLogic for NetworkNode {
    fn kind(&self) -> &str {
        Self::KIND
    }

    async fn invoke(&self, ctx: NodeContext) -> Result<Message> {
        if self.network.same_as(&ctx.network) {
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
        if self.isolated {
            self.network.set_input(History::new());
        } else if self.routed {
            self.network.set_input(ctx.network.input());
        } else {
            self.network.set_input(ctx.input);
        }
        let answer = self.network.invoke().await?;
        if !self.network.held().is_empty() {
            // Work inside waits (a nested call for a decision): this node
            // waits with it, and the outer run stops here too.
            ctx.node.hold(crate::run::HELD_INSIDE);
        }
        Ok(answer)
    }

    fn in_conversation(&self) -> bool {
        !self.isolated && !self.routed
    }

    fn save(&self) -> Result<Map<String, Value>> {
        let mut map = Map::new();
        map.insert("network".into(), self.network.to_value()?);
        if self.isolated {
            map.insert("isolated".into(), Value::Bool(true));
        }
        if self.routed {
            map.insert("routed".into(), Value::Bool(true));
        }
        Ok(map)
    }
}
