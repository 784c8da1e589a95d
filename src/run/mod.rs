//! Running a network: `invoke`, the modifier hooks, and the table of the
//! modifiers every network has by default (the loops, `crate::loops`, add
//! their rows).
//!
//! ```text
//!  invoke()                                   (invoke.rs)
//!   ├─ on_begin_invoke          ── ChatLoop adds the default node (loops/chat.rs)
//!   ├─ passes over pending nodes, topological order, waves run concurrently
//!   │    on_pre_invoke ▸ node ▸ record output ▸ on_post_invoke
//!   │                           ── ToolLoop adds tool nodes + next chat (loops/tool.rs)
//!   └─ on_end_invoke (always)
//! ```
//!
//! [`NetworkModifier`] (modifier.rs) is the hook trait; every hook runs
//! with its modifier recorded as the author of the nodes it adds. A held
//! node (hold.rs) waits, with everything below it, for someone outside the
//! run to release it; a sub-network node whose inner network holds work
//! holds itself, so the wait reaches the outermost run. Spans go through
//! tracer.rs, which telemetry fills.

mod hold;
pub(crate) mod invoke;
mod modifier;
pub(crate) mod tracer;

use std::sync::Arc;

pub use hold::HELD_INSIDE;
pub(crate) use modifier::current_modifier;
pub(crate) use modifier::{hook, hook_sync};
pub(crate) use modifier::{DefaultModifier, DEFAULT_MODIFIERS};
pub use modifier::{Hooks, InvokeOutcome, NetworkModifier};

/// Ids of the default modifiers.
pub(crate) fn default_modifier_ids() -> impl Iterator<Item = &'static str> {
    DEFAULT_MODIFIERS.iter().map(|m| m.id)
}

/// The modifiers every network starts with (unless the builder leaves
/// them out), in their order.
pub(crate) fn default_modifiers() -> Vec<Arc<dyn NetworkModifier>> {
    // The table's order, sorted once per process.
    static ORDER: std::sync::OnceLock<Vec<&'static DefaultModifier>> = std::sync::OnceLock::new();
    ORDER
        .get_or_init(|| {
            let mut rows: Vec<&DefaultModifier> = DEFAULT_MODIFIERS.iter().collect();
            rows.sort_by_key(|m| m.order);
            rows
        })
        .iter()
        .map(|m| (m.make)())
        .collect()
}

/// A hook a run calls per node (or per model call of a chat node).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeHook {
    /// [`NetworkModifier::on_pre_invoke`].
    PreInvoke,
    /// [`NetworkModifier::on_post_invoke`] (or its `_now` form).
    PostInvoke,
    /// [`NetworkModifier::on_chat_request`].
    ChatRequest,
}

/// Whether a run calls `modifier`'s `hook` ([`NetworkModifier::hooks`]).
pub(crate) fn has_hook(modifier: &dyn NetworkModifier, hook: NodeHook) -> bool {
    let hooks = modifier.hooks();
    match hook {
        NodeHook::PreInvoke => hooks.pre_invoke,
        NodeHook::PostInvoke => hooks.post_invoke || hooks.post_invoke_now,
        NodeHook::ChatRequest => hooks.chat_request,
    }
}

/// The modifiers that have `hook` (see [`has_hook`]), in the order they
/// run.
pub(crate) fn with_hook(
    modifiers: &[Arc<dyn NetworkModifier>],
    hook: NodeHook,
) -> impl Iterator<Item = Arc<dyn NetworkModifier>> + '_ {
    modifiers
        .iter()
        .filter(move |m| has_hook(m.as_ref(), hook))
        .cloned()
}
