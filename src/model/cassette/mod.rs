//! Cassettes: a model's answers recorded once ([`RecordingChatModel`]) and
//! played back offline ([`ReplayChatModel`], whose docs describe the
//! JSON-lines format).

mod diff;
mod exchange;
mod record;
mod redact;
mod replay;

pub use record::RecordingChatModel;
pub use replay::{Match, ReplayChatModel};
