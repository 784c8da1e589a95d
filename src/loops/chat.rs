//! The chat loop: a question gets an answer.
//!
//! ```text
//!  human (leaf, no children) ──▶ + default_node (e.g. `chat`)
//! ```

use async_trait::async_trait;

use crate::error::Result;
use crate::network::RunnableNetwork;
use crate::nodes::HumanNode;
use crate::run::{DefaultModifier, Hooks, NetworkModifier, DEFAULT_MODIFIERS};

/// After a human leaf with no children, adds the network's `default_node`
/// (a kind name, e.g. `"chat"`), so invoking a network that ends with a
/// question gets an answer.
#[derive(Debug, Default, Clone, Copy)]
pub struct ChatLoop;

impl ChatLoop {
    /// The modifier id.
    pub(crate) const ID: &'static str = "lc-agent/chat-loop";
}

#[async_trait]
impl NetworkModifier for ChatLoop {
    fn id(&self) -> &str {
        Self::ID
    }

    fn priority(&self) -> i32 {
        -100
    }

    // Only the start of a run, which never waits: a run skips the rest.
    fn hooks(&self) -> Hooks {
        Hooks {
            begin_invoke: false,
            begin_invoke_now: true,
            end_invoke: false,
            ..Hooks::NONE
        }
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn on_begin_invoke_now(&self, network: &RunnableNetwork) -> Result<()> {
        let Some(leaf) = network.current_leaf() else {
            return Ok(());
        };
        if leaf.downcast::<HumanNode>().is_none() {
            return Ok(());
        }
        let Some(node) = network.new_default_node() else {
            return Ok(());
        };
        let node = node?;
        network.add_node_with_parents(&node, &[leaf.id()])
    }
}

#[linkme::distributed_slice(DEFAULT_MODIFIERS)]
static CHAT_LOOP: DefaultModifier = DefaultModifier {
    id: ChatLoop::ID,
    order: 0,
    make: || std::sync::Arc::new(ChatLoop),
};
