//! Path rules on agents: the approval glue of
//! [`Permissions`](lc_agent_filesystem::Permissions).
//!
//! The rules themselves are checked in the backend layer (the agent's
//! backend is wrapped by [`Permissions::guard`]), so a `deny` rule refuses
//! a call wherever it comes from. What the backend cannot do is wait for a
//! person: [`PathRulesModifier`] looks at each tool call of a model turn
//! before it runs and holds the ones an `ask` rule covers, through the
//! existing approvals ([`hold_call`]), the held call naming the rule
//! ([`PendingApproval::reason`](crate::PendingApproval::reason)). An
//! approved call then runs (the agent's guard lets an `ask` through,
//! because this modifier asked); a call nobody approved never reaches it.
//!
//! ```text
//!  chat turn ─▶ PathRulesModifier (priority 9, before ApprovalModifier's 10)
//!                 check_call(tool, args) through the backend's links
//!                 ask ─▶ held: approve | reject | respond, reason = the rule
//!  tool runs ─▶ guarded backend: deny ─▶ Error: Permission denied by path rule N (...)
//! ```
//!
//! Sub-agents and routes inherit the modifier and the guarded backend
//! (`for_sub_network`), so a task obeys its parent's rules. Editing a held
//! call is not offered: edited arguments could name another path that no
//! rule was asked about.

use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{ChatNode, NetworkModifier, NodeRef, Result, RunnableNetwork, ToolNode};
use lc_agent_filesystem::{BackendSource, Permissions, Verdict};
use serde_json::Value;

use crate::approvals::{hold_call, APPROVAL_KEY};
use crate::decisions::{DecisionKind, Decisions};
use crate::delegation;

/// The modifier's id (servers find it with `Attachments::modifier_as`).
pub(crate) const PATH_RULES: &str = "path_rules";

/// Holds the tool calls an `ask` path rule covers for a person's decision
/// (see the module docs of `permissions.rs`).
#[derive(Debug, Clone)]
pub struct PathRulesModifier {
    rules: Permissions,
    backend: BackendSource,
}

impl PathRulesModifier {
    /// The rules, checked through `backend` (whose links are followed).
    pub(crate) fn new(rules: Permissions, backend: BackendSource) -> Self {
        Self { rules, backend }
    }

    /// What the rules say about a call of `tool` with `args` on `network`
    /// (for callers that cannot wait for a person, such as an HTTP tool
    /// endpoint: an `ask` there must be refused).
    /// In bypass mode the protected paths ask nothing (the user chose to
    /// be asked nothing); the rules still do.
    pub async fn check(&self, network: &RunnableNetwork, tool: &str, args: &Value) -> Verdict {
        let backend = self.backend.resolve(network);
        if crate::modes::permission_mode(network) == crate::modes::PermissionMode::Bypass {
            return self
                .rules
                .without_protection()
                .check_call(backend.as_ref(), tool, args)
                .await;
        }
        self.rules.check_call(backend.as_ref(), tool, args).await
    }
}

#[async_trait]
impl NetworkModifier for PathRulesModifier {
    fn id(&self) -> &str {
        PATH_RULES
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    /// Before the approval rules (10), so that the held call names the path
    /// rule when both would hold it.
    fn priority(&self) -> i32 {
        9
    }

    fn for_sub_network(&self) -> Option<Arc<dyn NetworkModifier>> {
        Some(Arc::new(self.clone()))
    }

    async fn on_post_invoke(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        if node.downcast::<ChatNode>().is_none() {
            return Ok(());
        }
        for call in delegation::turn_calls(network, node) {
            let Some(tool) = call.downcast::<ToolNode>() else {
                continue;
            };
            if call.is_invoked() || call.metadata_value(APPROVAL_KEY).is_some() {
                continue;
            }
            let name = tool.tool_call.name.clone();
            let args: Value = serde_json::from_str(&tool.tool_call.arguments).unwrap_or_default();
            if let Verdict::Ask(rule) = self.check(network, &name, &args).await {
                let decisions = Decisions::only([
                    DecisionKind::Approve,
                    DecisionKind::Reject,
                    DecisionKind::Respond,
                ]);
                hold_call(network, &call, &decisions, Some(rule));
            }
        }
        Ok(())
    }
}
