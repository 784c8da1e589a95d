//! The built-in node kinds.

mod chat;
mod message;
mod network;
pub(crate) mod summary;
mod tool;

pub use chat::ChatNode;
pub use message::{HumanNode, SystemNode};
pub use network::{NetworkInput, NetworkNode};
pub use summary::SummaryNode;
pub use tool::ToolNode;
