//! Checkpoints: save a network to a [`NetworkList`] while it runs, so a
//!
//! (The full description is on the [`CheckpointModifier`] docs.)

use std::sync::Arc;

use crate::error::{NetworkError, Result};
use crate::list::NetworkList;
use crate::network::RunnableNetwork;
use crate::node::NodeRef;
use crate::run::{InvokeOutcome, NetworkModifier};
use async_trait::async_trait;

/// When a [`CheckpointModifier`] saves while the network runs (it always
/// saves at the start and at the end of an `invoke`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CheckpointPolicy {
    /// After every invoked node.
    #[default]
    EachNode,
    /// After every model turn (chat node); tool results are saved with the
    /// next turn, so a crash may run the tools of one turn again.
    EachModelTurn,
    /// Only at the start and end of each `invoke`.
    AtEnd,
}

/// Checkpoints: save a network to a [`NetworkList`] while it runs, so a
/// crashed process can be resumed by another.
///
/// [`CheckpointModifier`] saves the network
///
/// - once before anything runs (`on_begin_invoke`), so the session exists
///   with the question in it;
/// - after every invoked node ([`CheckpointPolicy::EachNode`], the default),
///   after every model turn ([`CheckpointPolicy::EachModelTurn`]), or not
///   at all while running ([`CheckpointPolicy::AtEnd`]);
/// - once at the end (`on_end_invoke`), also when the run failed: the graph
///   is always valid and saveable.
///
/// It runs after every other modifier (priority `i32::MAX`), so a
/// checkpoint taken after a chat node already holds the tool nodes and next
/// chat node that the tool loop added for it.
///
/// **Resuming** is loading and invoking again: a node is saved as invoked
/// only together with its output, and invoking runs only the nodes that are
/// not invoked yet, so no node whose checkpoint was written runs again.
/// A node that finished but was killed before its checkpoint was written
/// runs again on resume (at-least-once for the node in flight), so tools
/// with side effects should be idempotent or keyed by their tool call id.
///
/// ```
/// use std::sync::Arc;
/// use lc_agent::{revision_of, JsonNetworkList, NetworkList};
/// use lc_agent::{HumanNode, RunnableNetwork, ScriptedChatModel};
/// use lc_agent::{CheckpointModifier, CheckpointPolicy};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir()?;
/// let sessions = Arc::new(JsonNetworkList::new(dir.path()));
/// let checkpoint = CheckpointModifier::new(sessions.clone()).policy(CheckpointPolicy::EachNode);
/// let net = RunnableNetwork::builder()
///     .default_node("chat")
///     .chat_model("scripted")
///     .model("scripted", ScriptedChatModel::new(["Hello!"]))
///     .modifier(checkpoint)
///     .build();
/// {
///     let _scope = net.enter();
///     HumanNode::new("Hi");
/// }
/// net.invoke().await?;
/// let stored = sessions.load(net.id()).await?;
/// // saved at the start, after the human node, after the chat node, at the end
/// assert_eq!(revision_of(&stored), 4);
/// assert_eq!(stored.to_json()?, net.to_json()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// In short: saves the network to a [`NetworkList`] while it runs.
pub struct CheckpointModifier {
    list: Arc<dyn NetworkList>,
    policy: CheckpointPolicy,
    input_saved: bool,
    gate: Arc<tokio::sync::Mutex<()>>,
    patience: std::time::Duration,
}

impl std::fmt::Debug for CheckpointModifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckpointModifier")
            .field("policy", &self.policy)
            .finish()
    }
}

impl CheckpointModifier {
    /// The default modifier id.
    pub(crate) const ID: &'static str = "lc-agent/checkpoint";

    /// Checkpoints into `list` after every node.
    pub fn new(list: Arc<dyn NetworkList>) -> Self {
        Self {
            list,
            policy: CheckpointPolicy::default(),
            input_saved: false,
            gate: Arc::new(tokio::sync::Mutex::new(())),
            patience: std::time::Duration::ZERO,
        }
    }

    /// Waits out a store that cannot be reached (a Redis restart, a
    /// failover): a save that fails with [`ListError::Unavailable`](crate::ListError::Unavailable) is
    /// tried again, with backoff (0.1 s doubling to 2 s), until `patience`
    /// has passed; then it fails as any save does. Default: no retry.
    #[must_use]
    pub fn patience(mut self, patience: std::time::Duration) -> Self {
        self.patience = patience;
        self
    }

    /// When to save.
    #[must_use]
    pub fn policy(mut self, policy: CheckpointPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The caller saved the network, its input included, just before the
    /// `invoke` (a server that saves a request's message, then runs it):
    /// no save at the start, and none after an input node
    /// ([`NodeLogic::is_input`](crate::NodeLogic::is_input): a human or
    /// system message, which runs again for free), so on a long session a
    /// turn serializes it twice (after the model's turn, at the end)
    /// instead of four times. What `on_begin_invoke` hooks change is saved
    /// with the first node that does work; a crash before it loses nothing
    /// that a resumed run does not do again.
    #[must_use]
    pub fn input_saved(mut self) -> Self {
        self.input_saved = true;
        self
    }

    async fn checkpoint(&self, network: &RunnableNetwork, when: &str) -> Result<()> {
        // Inside a sub-network (a sub-agent's task), the session is the
        // outermost network: it holds the sub-network's progress too.
        let network = &network.session();
        // Sibling nodes (the tool calls of one turn) finish concurrently:
        // one save at a time keeps revisions in order.
        let _one_at_a_time = self.gate.lock().await;
        let saved = super::save_patiently(self.list.as_ref(), network, self.patience, when).await;
        match saved {
            Ok(info) => {
                tracing::debug!(id = %info.id, revision = info.revision, when, "checkpoint saved");
                Ok(())
            }
            Err(e) => Err(NetworkError::Modifier {
                modifier: Self::ID.to_string(),
                message: format!("checkpoint ({when}) failed: {e}"),
                source: Box::new(e),
            }),
        }
    }
}

#[async_trait]
impl NetworkModifier for CheckpointModifier {
    fn id(&self) -> &str {
        Self::ID
    }

    /// After every other modifier.
    fn priority(&self) -> i32 {
        i32::MAX
    }

    /// Sub-networks (sub-agents, supervisor routes) checkpoint the session
    /// too, so their finished nodes survive a crash.
    fn for_sub_network(&self) -> Option<Arc<dyn NetworkModifier>> {
        Some(Arc::new(CheckpointModifier {
            list: self.list.clone(),
            policy: self.policy,
            // A sub-network's input (a task) was never saved by a caller.
            input_saved: false,
            gate: self.gate.clone(),
            patience: self.patience,
        }))
    }

    async fn on_begin_invoke(&self, network: &RunnableNetwork) -> Result<()> {
        if self.policy == CheckpointPolicy::AtEnd || self.input_saved {
            return Ok(());
        }
        self.checkpoint(network, "begin").await
    }

    async fn on_post_invoke(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        let save = match self.policy {
            _ if self.input_saved && node.logic().is_input() => false,
            CheckpointPolicy::EachNode => true,
            CheckpointPolicy::EachModelTurn => node.logic().is_model_turn(),
            CheckpointPolicy::AtEnd => false,
        };
        if save {
            self.checkpoint(network, "node").await
        } else {
            Ok(())
        }
    }

    async fn on_end_invoke(
        &self,
        network: &RunnableNetwork,
        _outcome: &InvokeOutcome,
    ) -> Result<()> {
        self.checkpoint(network, "end").await
    }
}
