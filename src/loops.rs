//! The two modifiers every network has by default: the chat loop and the
//! tool loop.

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::Result;
use crate::modifier::NetworkModifier;
use crate::network::RunnableNetwork;
use crate::node::NodeRef;
use crate::nodes::{ChatNode, HumanNode, ToolNode};

/// Ids of the default modifiers.
pub const DEFAULT_MODIFIER_IDS: [&str; 2] = [ChatLoop::ID, ToolLoop::ID];

pub(crate) fn default_modifiers() -> Vec<Arc<dyn NetworkModifier>> {
    vec![Arc::new(ChatLoop), Arc::new(ToolLoop)]
}

/// After a human leaf with no children, adds the network's `default_node`
/// (a kind name, e.g. `"chat"`), so invoking a network that ends with a
/// question gets an answer.
#[derive(Debug, Default, Clone, Copy)]
pub struct ChatLoop;

impl ChatLoop {
    /// The modifier id.
    pub const ID: &'static str = "lc-agent/chat-loop";
}

#[async_trait]
impl NetworkModifier for ChatLoop {
    fn id(&self) -> &str {
        Self::ID
    }

    fn priority(&self) -> i32 {
        -100
    }

    async fn on_begin_invoke(&self, network: &RunnableNetwork) -> Result<()> {
        let Some(kind) = network.default_node() else {
            return Ok(());
        };
        let Some(leaf) = network.current_leaf() else {
            return Ok(());
        };
        if leaf.downcast::<HumanNode>().is_none() {
            return Ok(());
        }
        let node = crate::persist::create_node(&kind)?;
        network.add_node_with_parents(&node, &[leaf.id()])
    }
}

/// After a chat node whose answer calls tools and that has no children,
/// adds one tool node per call (they run concurrently), then the next chat
/// node below all of them. The loop ends when the model answers without
/// tool calls, or at the step limit.
#[derive(Debug, Default, Clone, Copy)]
pub struct ToolLoop;

impl ToolLoop {
    /// The modifier id.
    pub const ID: &'static str = "lc-agent/tool-loop";
}

#[async_trait]
impl NetworkModifier for ToolLoop {
    fn id(&self) -> &str {
        Self::ID
    }

    fn priority(&self) -> i32 {
        -100
    }

    async fn on_post_invoke(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        let Some(chat) = node.downcast::<ChatNode>() else {
            return Ok(());
        };
        let Some(output) = node.output() else {
            return Ok(());
        };
        if output.tool_calls().is_empty() || !network.children(node.id()).is_empty() {
            return Ok(());
        }
        let mut ids = Vec::with_capacity(output.tool_calls().len());
        for call in output.tool_calls() {
            let tool = network.add(
                ToolNode {
                    tool_call: call.clone(),
                },
                &[node.id()],
            )?;
            ids.push(tool.id());
        }
        network.add(chat.clone(), &ids)?;
        Ok(())
    }
}
