//! The tool loop: tool calls become tool nodes, then the next chat turn.
//!
//! ```text
//!  chat (answer calls tools, no children) ──▶ tool ─┐
//!                                         ──▶ tool ─┼─▶ chat (same model)
//!                                         ──▶ tool ─┘
//! ```

use async_trait::async_trait;

use crate::error::Result;
use crate::network::RunnableNetwork;
use crate::node::NodeRef;
use crate::nodes::{ChatNode, ToolNode};
use crate::run::{DefaultModifier, Hooks, NetworkModifier, DEFAULT_MODIFIERS};

/// After a chat node whose answer calls tools and that has no children,
/// adds one tool node per call (they run concurrently), then the next chat
/// node below all of them. The loop ends when the model answers without
/// tool calls, or at the step limit.
#[derive(Debug, Default, Clone, Copy)]
pub struct ToolLoop;

impl ToolLoop {
    /// The modifier id.
    pub(crate) const ID: &'static str = "lc-agent/tool-loop";
}

#[async_trait]
impl NetworkModifier for ToolLoop {
    fn id(&self) -> &str {
        Self::ID
    }

    fn priority(&self) -> i32 {
        -100
    }

    // Only the post-invoke hook, which never waits: a run calls it
    // directly and skips the rest.
    fn hooks(&self) -> Hooks {
        Hooks {
            post_invoke_now: true,
            begin_invoke: false,
            end_invoke: false,
            ..Hooks::NONE
        }
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    async fn on_post_invoke(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        self.on_post_invoke_now(network, node)
    }

    fn on_post_invoke_now(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        // Only a chat node's answer grows the graph.
        if !node.logic().is_model_turn() {
            return Ok(());
        }
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
        // The next turn uses the same model and step; a tool choice was
        // for the turn that made these calls (a forced call repeated would
        // never end).
        network.add(
            ChatNode {
                tool_choice: None,
                ..chat.clone()
            },
            &ids,
        )?;
        Ok(())
    }
}

#[linkme::distributed_slice(DEFAULT_MODIFIERS)]
static TOOL_LOOP: DefaultModifier = DefaultModifier {
    id: ToolLoop::ID,
    order: 1,
    make: || std::sync::Arc::new(ToolLoop),
};
