//! The two modifiers every network starts with: a question gets an
//! answer (chat.rs), tool calls become tool nodes and then the next turn
//! (tool.rs). They stand on the floor like any other modifier and add
//! themselves to its table of defaults (`run::DEFAULT_MODIFIERS`);
//! [`NetworkBuilder::without_default_modifiers`](crate::NetworkBuilder::without_default_modifiers)
//! leaves them out.

mod chat;
mod tool;

pub use chat::ChatLoop;
pub use tool::ToolLoop;
