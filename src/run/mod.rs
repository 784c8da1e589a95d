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
mod invoke;
mod modifier;
mod tool_loop;

use std::sync::Arc;

pub use chat_loop::ChatLoop;
pub use hold::HELD_INSIDE;
pub(crate) use modifier::current_modifier;
pub(crate) use modifier::hook;
pub use modifier::{InvokeOutcome, NetworkModifier};
pub use tool_loop::ToolLoop;

/// Ids of the default modifiers.
pub(crate) const DEFAULT_MODIFIER_IDS: [&str; 2] = [ChatLoop::ID, ToolLoop::ID];

/// The modifiers every network starts with (unless the builder leaves
/// them out).
pub(crate) fn default_modifiers() -> Vec<Arc<dyn NetworkModifier>> {
    vec![Arc::new(ChatLoop), Arc::new(ToolLoop)]
}
