//! Running a network: `invoke`, the modifier hooks, and the two modifiers
//! every network has by default.
//!
//! ```text
//!  invoke()                                   (invoke.rs)
//!   ├─ on_begin_invoke          ── ChatLoop adds the default node (chat_loop.rs)
//!   ├─ passes over pending nodes, topological order, waves run concurrently
//!   │    on_pre_invoke ▸ node ▸ record output ▸ on_post_invoke
//!   │                           ── ToolLoop adds tool nodes + next chat (tool_loop.rs)
//!   └─ on_end_invoke (always)
//! ```
//!
//! [`NetworkModifier`] (modifier.rs) is the hook trait; every hook runs
//! with its modifier recorded as the author of the nodes it adds. A held
//! node (hold.rs) waits, with everything below it, for someone outside the
//! run to release it; a sub-network node whose inner network holds work
//! holds itself, so the wait reaches the outermost run.

mod chat_loop;
mod hold;
pub(crate) mod invoke;
mod modifier;
mod tool_loop;

use std::sync::Arc;

pub use chat_loop::ChatLoop;
pub use hold::HELD_INSIDE;
pub(crate) use modifier::current_modifier;
pub(crate) use modifier::{hook, hook_sync};
pub use modifier::{InvokeOutcome, NetworkModifier};
pub use tool_loop::ToolLoop;

/// Ids of the default modifiers.
pub(crate) const DEFAULT_MODIFIER_IDS: [&str; 2] = [ChatLoop::ID, ToolLoop::ID];

/// The modifiers every network starts with (unless the builder leaves
/// them out).
pub(crate) fn default_modifiers() -> Vec<Arc<dyn NetworkModifier>> {
    vec![Arc::new(ChatLoop), Arc::new(ToolLoop)]
}

/// A hook a run calls per node (or per model call of a chat node).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeHook {
    /// [`NetworkModifier::on_pre_invoke`].
    PreInvoke,
    /// [`NetworkModifier::on_post_invoke`].
    PostInvoke,
    /// [`NetworkModifier::on_chat_request`].
    ChatRequest,
}

/// Whether a run calls `modifier`'s `hook`. Of the default modifiers' hooks
/// only the chat loop's `on_begin_invoke` and the tool loop's
/// `on_post_invoke` do something; the others, the trait's no-ops, are
/// skipped (a hook call boxes a future and scopes a task-local, for every
/// node of a run). Every other modifier has all its hooks called.
pub(crate) fn has_hook(modifier: &dyn NetworkModifier, hook: NodeHook) -> bool {
    let Some(any) = modifier.as_any() else {
        return true;
    };
    if any.is::<ChatLoop>() {
        // Only on_begin_invoke.
        return false;
    }
    if any.is::<ToolLoop>() {
        return hook == NodeHook::PostInvoke;
    }
    true
}

/// The modifiers that have `hook` (see [`has_hook`]), in the order they
/// run.
pub(crate) fn with_hook(
    modifiers: &[Arc<dyn NetworkModifier>],
    hook: NodeHook,
) -> Vec<Arc<dyn NetworkModifier>> {
    modifiers
        .iter()
        .filter(|m| has_hook(m.as_ref(), hook))
        .cloned()
        .collect()
}

/// Whether `modifier` is the default tool loop, whose post-invoke hook a
/// run calls directly ([`ToolLoop::grow`]: it never waits), and only after
/// a chat node.
pub(crate) fn is_tool_loop(modifier: &dyn NetworkModifier) -> bool {
    modifier.as_any().is_some_and(|any| any.is::<ToolLoop>())
}
