//! The sub-network node: a whole network as one step.

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::error::{NetworkError, Result};
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
}

impl NetworkNode {
    /// The kind name (`__node_type__`).
    pub const KIND: &'static str = "network";

    /// A sub-network node around `inner`, attached to the active network.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(inner: RunnableNetwork) -> NodeRef {
        NodeRef::create(NetworkNode { network: inner })
    }

    /// The node's logic around `inner`, to add explicitly.
    pub fn logic(inner: RunnableNetwork) -> Self {
        NetworkNode { network: inner }
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
        self.network.set_input(ctx.input);
        self.network.invoke().await
    }

    fn save(&self) -> Result<Map<String, Value>> {
        let mut map = Map::new();
        map.insert("network".into(), self.network.to_value()?);
        Ok(map)
    }
}
