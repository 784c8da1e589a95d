//! [`PendingCall`]: a tool call waiting for a person's decision, as runs
//! (`Run::pending`) and their events (`approval_needed`, `done`) name it.

use lc_agent::{NodeId, ToolCall};
use lc_agent_deepagent::{DecisionKind, PendingApproval};
use serde::{Deserialize, Serialize};

/// A tool call waiting for a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The held tool node.
    pub node_id: NodeId,
    /// The call the model made.
    pub tool_call: ToolCall,
    /// The decisions allowed for it.
    pub allowed: Vec<DecisionKind>,
    /// Why it waits, when a rule says (`path rule 1 (ask write:docs/**)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl From<&PendingApproval> for PendingCall {
    fn from(p: &PendingApproval) -> Self {
        Self {
            node_id: p.node_id,
            tool_call: p.tool_call.clone(),
            allowed: p.allowed.clone(),
            reason: p.reason.clone(),
        }
    }
}

impl PendingCall {
    /// `name arguments (node id)`, as messages name a waiting call.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{} {} (node {})",
            self.tool_call.name, self.tool_call.arguments, self.node_id
        )
    }
}
