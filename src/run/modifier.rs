//! Network modifiers: hooks that watch a network run and grow it.
//!
//! Every hook has a no-op default, so a modifier implements only what it
//! needs. Modifiers run in priority order (lower first; ties keep the order
//! they were added in). A node added from inside a hook records the
//! modifier's id as `metadata["added_by"]`.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;

use crate::error::{NetworkError, Result};
use crate::model::ChatRequest;
use crate::network::RunnableNetwork;
use crate::node::NodeRef;
use crate::tool::Tool;

/// How an `invoke` ended, for [`NetworkModifier::on_end_invoke`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvokeOutcome {
    /// Every pending node ran.
    Completed,
    /// A node or hook failed, or the step limit was reached; the text is
    /// the error message.
    Failed(String),
    /// Everything that could run ran; these held nodes (and what depends
    /// on them) wait to be released (see [`NodeRef::hold`]).
    Held(Vec<crate::node::NodeId>),
}

/// Which hooks a modifier implements (see [`NetworkModifier::hooks`]). A
/// run calls only these: a hook call boxes a future and scopes a
/// task-local, for every node of a run (and once at its start and end).
///
/// ```
/// use lc_agent::Hooks;
/// // A modifier that only looks at requests.
/// let hooks = Hooks { pre_invoke: false, post_invoke: false, ..Hooks::ALL };
/// assert!(hooks.chat_request);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hooks {
    /// [`NetworkModifier::on_pre_invoke`].
    pub pre_invoke: bool,
    /// [`NetworkModifier::on_post_invoke`].
    pub post_invoke: bool,
    /// [`NetworkModifier::on_post_invoke_now`], called instead of
    /// `on_post_invoke` (which is then not called).
    pub post_invoke_now: bool,
    /// [`NetworkModifier::on_chat_request`].
    pub chat_request: bool,
    /// [`NetworkModifier::on_begin_invoke`] (once per run).
    pub begin_invoke: bool,
    /// [`NetworkModifier::on_begin_invoke_now`], called instead of
    /// `on_begin_invoke` (which is then not called).
    pub begin_invoke_now: bool,
    /// [`NetworkModifier::on_end_invoke`] (once per run).
    pub end_invoke: bool,
}

impl Hooks {
    /// Every hook (the default): a modifier need not say which it has.
    pub const ALL: Hooks = Hooks {
        pre_invoke: true,
        post_invoke: true,
        post_invoke_now: false,
        chat_request: true,
        begin_invoke: true,
        begin_invoke_now: false,
        end_invoke: true,
    };

    /// No per-node hook; `on_begin_invoke` and `on_end_invoke` are still
    /// called (and `on_node_added` always is).
    pub const NONE: Hooks = Hooks {
        pre_invoke: false,
        post_invoke: false,
        post_invoke_now: false,
        chat_request: false,
        begin_invoke: true,
        begin_invoke_now: false,
        end_invoke: true,
    };
}

/// Hooks into a network's run.
///
/// ```
/// use lc_agent::{NetworkModifier, NodeRef, RunnableNetwork, Result};
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// /// Counts invoked nodes.
/// #[derive(Default)]
/// struct CountNodes(AtomicUsize);
///
/// #[async_trait::async_trait]
/// impl NetworkModifier for CountNodes {
///     fn id(&self) -> &str { "count-nodes" }
///     async fn on_post_invoke(&self, _net: &RunnableNetwork, _node: &NodeRef) -> Result<()> {
///         self.0.fetch_add(1, Ordering::Relaxed);
///         Ok(())
///     }
/// }
/// ```
#[async_trait]
pub trait NetworkModifier: Send + Sync + 'static {
    /// A unique id within the network (also written as `added_by`).
    fn id(&self) -> &str;

    /// Lower runs first. Default 0.
    fn priority(&self) -> i32 {
        0
    }

    /// Once, before anything runs.
    async fn on_begin_invoke(&self, _network: &RunnableNetwork) -> Result<()> {
        Ok(())
    }

    /// Once, before anything runs, for a hook that never waits: called
    /// directly (no future to box) instead of `on_begin_invoke` when
    /// [`NetworkModifier::hooks`] says `begin_invoke_now`. The default
    /// chat loop adds its chat node this way.
    fn on_begin_invoke_now(&self, _network: &RunnableNetwork) -> Result<()> {
        Ok(())
    }

    /// Before a node runs. A hook that holds the node
    /// ([`NodeRef::hold`]) makes it wait like any held node; one that
    /// answers it ([`NodeRef::set_output`]) keeps it from running (it is
    /// done, and the post-invoke hooks see it).
    async fn on_pre_invoke(&self, _network: &RunnableNetwork, _node: &NodeRef) -> Result<()> {
        Ok(())
    }

    /// After a node ran; nodes added here run in the next pass.
    async fn on_post_invoke(&self, _network: &RunnableNetwork, _node: &NodeRef) -> Result<()> {
        Ok(())
    }

    /// After a node ran, for a hook that never waits: called directly (no
    /// future, no task-local scope) instead of `on_post_invoke` when
    /// [`NetworkModifier::hooks`] says `post_invoke_now`. The default tool
    /// loop grows the graph this way.
    fn on_post_invoke_now(&self, _network: &RunnableNetwork, _node: &NodeRef) -> Result<()> {
        Ok(())
    }

    /// The hooks this modifier implements (default [`Hooks::ALL`]); a run
    /// skips the others.
    fn hooks(&self) -> Hooks {
        Hooks::ALL
    }

    /// Once at the end, also when a node failed.
    async fn on_end_invoke(
        &self,
        _network: &RunnableNetwork,
        _outcome: &InvokeOutcome,
    ) -> Result<()> {
        Ok(())
    }

    /// When a node is added to the network (synchronous: nodes are added
    /// from plain code inside scope guards).
    fn on_node_added(&self, _network: &RunnableNetwork, _node: &NodeRef) {}

    /// Before a chat node calls its model: add system-prompt sections,
    /// restrict tools, and so on.
    async fn on_chat_request(
        &self,
        _network: &RunnableNetwork,
        _node: &NodeRef,
        _request: &mut ChatRequest,
    ) -> Result<()> {
        Ok(())
    }

    /// Tools this modifier provides to the network's chat and tool nodes.
    fn tools(&self, _network: &RunnableNetwork) -> Vec<Arc<dyn Tool>> {
        Vec::new()
    }

    /// A copy to attach to the sub-networks this network runs (a
    /// checkpointer that must see a sub-agent's progress, say), attached
    /// when the sub-network node runs unless it has a modifier of that id
    /// already. `None` (the default) keeps the modifier to this network.
    fn for_sub_network(&self) -> Option<Arc<dyn NetworkModifier>> {
        None
    }

    /// This modifier as [`Any`](std::any::Any), so that code which knows
    /// its type can reach it on a network
    /// ([`Attachments::modifier_as`](crate::Attachments::modifier_as)). `None` (the default) keeps it
    /// opaque.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// A modifier every network starts with (unless the builder leaves them
/// out): each adds its row from its own file.
pub(crate) struct DefaultModifier {
    /// Its id.
    pub(crate) id: &'static str,
    /// Where it goes among the defaults (lower first).
    pub(crate) order: u8,
    /// A new one.
    pub(crate) make: fn() -> Arc<dyn NetworkModifier>,
}

/// The default modifiers (the chat loop and the tool loop).
#[linkme::distributed_slice]
pub(crate) static DEFAULT_MODIFIERS: [DefaultModifier];

tokio::task_local! {
    // The modifier itself (a reference count, no allocation per hook); its
    // id is copied only when a hook adds a node.
    static CURRENT_MODIFIER: Arc<dyn NetworkModifier>;
}

/// The id of the modifier whose hook is running in this task, if any
/// (one shared copy per id: every node a modifier adds records it).
pub(crate) fn current_modifier() -> Option<Arc<str>> {
    CURRENT_MODIFIER.try_with(|m| interned(m.id())).ok()
}

/// One shared copy of a modifier id. The ids of a process are few (the
/// modifiers it builds); past 256 distinct ones a copy is made each time.
fn interned(id: &str) -> Arc<str> {
    static IDS: parking_lot::Mutex<Vec<Arc<str>>> = parking_lot::Mutex::new(Vec::new());
    let mut ids = IDS.lock();
    if let Some(known) = ids.iter().find(|known| ***known == *id) {
        return known.clone();
    }
    let id: Arc<str> = Arc::from(id);
    if ids.len() < 256 {
        ids.push(id.clone());
    }
    id
}

/// Runs one modifier hook with the modifier recorded as the author of any
/// node it adds; its errors name the modifier, except a request that does
/// not fit the model's context window
/// ([`ModelError::ContextOverflow`](crate::ModelError::ContextOverflow)):
/// that is the model's limit whichever hook measured it, and the user is
/// told so in those words.
pub(crate) async fn hook(
    modifier: &Arc<dyn NetworkModifier>,
    fut: impl Future<Output = Result<()>>,
) -> Result<()> {
    CURRENT_MODIFIER
        .scope(modifier.clone(), fut)
        .await
        .map_err(|e| named(modifier, e))
}

/// [`hook`] for a hook that does not wait (no future to box):
/// [`NetworkModifier::on_post_invoke_now`].
pub(crate) fn hook_sync(
    modifier: &Arc<dyn NetworkModifier>,
    f: impl FnOnce() -> Result<()>,
) -> Result<()> {
    CURRENT_MODIFIER
        .sync_scope(modifier.clone(), f)
        .map_err(|e| named(modifier, e))
}

/// A hook's error, naming its modifier (see [`hook`]).
fn named(modifier: &Arc<dyn NetworkModifier>, e: NetworkError) -> NetworkError {
    match e {
        e @ (NetworkError::StepLimit { .. }
        | NetworkError::CallLimit { .. }
        | NetworkError::Stuck { .. }
        | NetworkError::Modifier { .. }
        | NetworkError::Model(crate::ModelError::ContextOverflow { .. })) => e,
        other => NetworkError::Modifier {
            modifier: modifier.id().to_string(),
            message: other.to_string(),
            source: Box::new(other),
        },
    }
}
