//! The decisions a person may make about a held tool call: which kinds a
//! tool allows ([`Decisions`], [`DecisionKind`]) and the one made
//! ([`Decision`]). The vocabulary shared by the approvals, the path rules,
//! the modes and the sub-agents' own rules.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A kind of decision a person may make about a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Run the call as the model asked.
    Approve,
    /// Run it with other arguments.
    Edit,
    /// Do not run it; the model reads why.
    Reject,
    /// Do not run it; the person writes the tool's result.
    Respond,
}

impl DecisionKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            DecisionKind::Approve => "approve",
            DecisionKind::Edit => "edit",
            DecisionKind::Reject => "reject",
            DecisionKind::Respond => "respond",
        }
    }
}

/// The decisions allowed for a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decisions(pub(crate) Vec<DecisionKind>);

impl Decisions {
    /// Approve, edit, reject or respond.
    pub fn all() -> Self {
        Self(vec![
            DecisionKind::Approve,
            DecisionKind::Edit,
            DecisionKind::Reject,
            DecisionKind::Respond,
        ])
    }

    /// Approve or reject only.
    pub fn approve_or_reject() -> Self {
        Self(vec![DecisionKind::Approve, DecisionKind::Reject])
    }

    /// Exactly these.
    pub fn only(kinds: impl IntoIterator<Item = DecisionKind>) -> Self {
        Self(kinds.into_iter().collect())
    }

    pub(crate) fn kinds(&self) -> &[DecisionKind] {
        &self.0
    }
}

/// What a person decided about one pending call.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Run the call as asked.
    Approve,
    /// Run the call with these arguments (a JSON object).
    Edit(Value),
    /// Do not run it; the model reads this message as the call's error.
    Reject(String),
    /// Do not run it; this text is the call's result.
    Respond(String),
}

impl Decision {
    /// Its kind.
    pub(crate) fn kind(&self) -> DecisionKind {
        match self {
            Decision::Approve => DecisionKind::Approve,
            Decision::Edit(_) => DecisionKind::Edit,
            Decision::Reject(_) => DecisionKind::Reject,
            Decision::Respond(_) => DecisionKind::Respond,
        }
    }
}
