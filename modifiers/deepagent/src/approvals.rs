//! Approvals (human in the loop): tool calls that wait for a person.
//!
//! ```text
//!  chat ─▶ tool call in interrupt_on ─▶ tool node held, metadata["approval"] = pending
//!  invoke() returns (InvokeOutcome::Held), the session is saved ... any process:
//!  pending_approvals(net) ─▶ decide(net, node, Approve | Edit(args) | Reject(msg) | Respond(text))
//!  invoke() ─▶ the call runs (approved, edited), or its result is the human's
//! ```
//!
//! The pending calls are in the graph, so they survive a restart and
//! another process can decide them. Calls of the same turn that need no
//! approval run at once; the next model turn waits for every decision.
//!
//! A `task` call (or a supervisor's route call) waits together with the
//! sub-network put before it: nothing of the sub-agent runs before the
//! decision. Approved, the sub-network runs; rejected or answered, the
//! unrun sub-network is taken out of the graph; edited, it is taken out and
//! its modifier builds one for the new arguments at the next `invoke`.
//!
//! Sub-networks (a sub-agent's task, a supervisor's route) inherit the
//! modifier ([`NetworkModifier::for_sub_network`]): a call made inside one
//! waits for the same decision as at the top. The sub-network node then
//! waits too, and the outer `invoke` stops; [`pending_approvals`] on the
//! outer network lists the nested call (with the sub-network nodes it runs
//! inside, [`PendingApproval::within`]), [`decide`] on the outer network
//! decides it, and the next outer `invoke` goes on inside the sub-network
//! where it stopped:
//!
//! ```text
//!  outer: chat ─▶ NetworkNode (held: "sub-network") ─▶ task tool node (waits)
//!                   └─ inner: chat ─▶ write_file (held: "approval")
//!  decide(&outer, write_file node, Approve) ─▶ invoke(): inner runs on, the
//!  task tool node reads the sub-agent's answer, the outer chat goes on
//! ```

use std::sync::Arc;

use async_trait::async_trait;
use indexmap::IndexMap;
use lc_agent::{
    ChatNode, Message, NetworkError, NetworkModifier, NetworkNode, NodeId, NodeRef, Result,
    RunnableNetwork, ToolCall, ToolNode, ToolStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::decisions::{Decision, DecisionKind, Decisions};
use crate::delegation;
use crate::modes;

/// The tool node metadata key recording an approval and its decision
/// (defined where `exit_plan_mode` reads it, below this module).
pub(crate) use crate::modes::APPROVAL_KEY;

/// The tool node metadata key where a hook records its decision (see
/// `hooks/mod.rs`).
pub(crate) const HOOK_KEY: &str = "hook";

/// The reason a tool node is held while it waits for a decision.
pub(crate) const HOLD_REASON: &str = "approval";

/// The tool node metadata key naming why a call waits (the rule that
/// asked), shown with the pending call ([`PendingApproval::reason`]).
pub(crate) const REASON_KEY: &str = "approval_reason";

/// A tool call waiting for a decision.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingApproval {
    /// The held tool node.
    pub node_id: NodeId,
    /// The call the model made.
    pub tool_call: ToolCall,
    /// The decisions allowed for it.
    pub allowed: Vec<DecisionKind>,
    /// The sub-network nodes the call runs inside, outermost first (empty
    /// for a call of the network itself); [`decide`] finds it without them.
    pub within: Vec<NodeId>,
    /// Why it waits, when a rule says (`path rule 1 (ask write:docs/**)`);
    /// `None` for a tool's approval rule.
    pub reason: Option<String>,
}

/// Errors of [`decide`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// No call waits for a decision at this node.
    #[error("node {0} has no tool call waiting for a decision")]
    NotPending(NodeId),
    /// The decision is not one the tool allows.
    #[error("`{decision}` is not allowed for `{tool}` (allowed: {allowed})")]
    NotAllowed {
        /// The decision asked for.
        decision: &'static str,
        /// The tool.
        tool: String,
        /// The allowed decisions.
        allowed: String,
    },
    /// Edited arguments that are not a JSON object.
    #[error("edited arguments for `{tool}` must be a JSON object, got `{got}`")]
    InvalidEdit {
        /// The tool.
        tool: String,
        /// What was given.
        got: String,
    },
    /// Changing the graph failed.
    #[error(transparent)]
    Network(#[from] NetworkError),
}

#[derive(Serialize, Deserialize)]
struct ApprovalRecord {
    status: String,
    allowed: Vec<DecisionKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<Value>,
}

/// Holds the calls of the tools it names until a person decides.
///
/// ```
/// use lc_agent::{HumanNode, RunnableNetwork, ScriptedChatModel, Turn};
/// use lc_agent_deepagent::{decide, pending_approvals, ApprovalModifier, Decision, Decisions};
/// use lc_agent_filesystem::{FilesystemModifier, StateBackend};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = ScriptedChatModel::new([
///     Turn::call("c1", "write_file", json!({"file_path": "/a.md", "content": "hi"})),
///     Turn::text("Written."),
/// ]);
/// let net = RunnableNetwork::builder().default_node("chat").chat_model("m").model("m", model)
///     .modifier(FilesystemModifier::new(StateBackend::factory()))
///     .modifier(ApprovalModifier::new().interrupt_on("write_file", Decisions::approve_or_reject()))
///     .build();
/// { let _s = net.enter(); HumanNode::new("write a.md"); }
/// net.invoke().await.unwrap();                 // returns: the call waits
/// let pending = pending_approvals(&net);
/// assert_eq!(pending[0].tool_call.name, "write_file");
/// decide(&net, pending[0].node_id, Decision::Approve).unwrap();
/// assert_eq!(net.invoke().await.unwrap().text(), "Written.");
/// assert!(net.files().contains_key("/a.md"));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct ApprovalModifier {
    id: String,
    rules: Arc<IndexMap<String, Decisions>>,
}

impl Default for ApprovalModifier {
    fn default() -> Self {
        Self::new()
    }
}

impl ApprovalModifier {
    /// No tool needs approval yet (id `approvals`).
    pub fn new() -> Self {
        Self {
            id: "approvals".to_string(),
            rules: Arc::new(IndexMap::new()),
        }
    }

    /// Calls of `tool` wait for one of `decisions`.
    pub fn interrupt_on(mut self, tool: impl Into<String>, decisions: Decisions) -> Self {
        Arc::make_mut(&mut self.rules).insert(tool.into(), decisions);
        self
    }

    /// Whether calls of `tool` have a rule.
    pub fn rules_on(&self, tool: &str) -> bool {
        self.rules.contains_key(tool)
    }
}

#[async_trait]
impl NetworkModifier for ApprovalModifier {
    fn id(&self) -> &str {
        &self.id
    }

    /// So that code outside a run (the server's tool endpoint) reads the
    /// same rules (`Attachments::modifier_as`).
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    /// After the tool loop (-100) and the sub-agents (0) wired the calls.
    fn priority(&self) -> i32 {
        10
    }

    /// Sub-agents and routes wait for the same decisions (a sub-network
    /// never escapes an approval its outer network asks for).
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
            // Its own rules first: a sub-agent's added rule never loosens one.
            let name = &tool.tool_call.name;
            let Some(decisions) = (self.rules.get(name).cloned())
                .or_else(|| crate::subagent_limits::added_rule(network, name))
                .or_else(|| modes::always_held(name).then(Decisions::all))
            else {
                continue;
            };
            if call.is_invoked()
                || call.metadata_value(APPROVAL_KEY).is_some()
                || modes::allowed_by_mode(&call)
            {
                continue;
            }
            // A `PreToolUse` hook that allowed the call spares it the asking.
            if allowed_by_hook(&call) {
                continue;
            }
            hold_call(network, &call, &decisions, None);
        }
        Ok(())
    }
}

/// Whether a `PreToolUse` hook allowed this call (it is not held then).
fn allowed_by_hook(call: &NodeRef) -> bool {
    call.metadata_value(HOOK_KEY)
        .is_some_and(|h| h["decision"] == json!("allow"))
}

/// Holds a tool call for one of `decisions`, with the sub-network that
/// serves it (a sub-agent's, a route's); `reason` names the rule that asked.
pub(crate) fn hold_call(
    network: &RunnableNetwork,
    call: &NodeRef,
    decisions: &Decisions,
    reason: Option<String>,
) {
    write_record(call, "pending", &decisions.0, None);
    if let Some(reason) = reason {
        call.set_metadata(REASON_KEY, Value::String(reason));
    }
    call.hold(HOLD_REASON);
    // A sub-agent's or a route's work waits for the decision too.
    if let Some(served) = delegation::waiting_delegate(network, call) {
        served.hold(HOLD_REASON);
    }
}

fn write_record(node: &NodeRef, status: &str, allowed: &[DecisionKind], detail: Option<Value>) {
    let record = ApprovalRecord {
        status: status.to_string(),
        allowed: allowed.to_vec(),
        detail,
    };
    node.set_metadata(
        APPROVAL_KEY,
        serde_json::to_value(record).unwrap_or(Value::Null),
    );
}

fn pending_record(node: &NodeRef) -> Option<ApprovalRecord> {
    let record: ApprovalRecord = serde_json::from_value(node.metadata_value(APPROVAL_KEY)?).ok()?;
    (record.status == "pending" && node.held().is_some() && !node.is_invoked()).then_some(record)
}

/// The tool calls of a network waiting for a decision, those inside its
/// waiting sub-networks (sub-agents, routes) included, in graph order
/// (also in a session loaded by another process).
pub fn pending_approvals(network: &RunnableNetwork) -> Vec<PendingApproval> {
    let mut out = Vec::new();
    collect_pending(network, &mut Vec::new(), &mut out);
    out
}

fn collect_pending(
    network: &RunnableNetwork,
    within: &mut Vec<NodeId>,
    out: &mut Vec<PendingApproval>,
) {
    for node in network.held() {
        if let Some(sub) = node.downcast::<NetworkNode>() {
            within.push(node.id());
            collect_pending(sub.network(), within, out);
            within.pop();
            continue;
        }
        let (Some(record), Some(tool)) = (pending_record(&node), node.downcast::<ToolNode>())
        else {
            continue;
        };
        out.push(PendingApproval {
            node_id: node.id(),
            tool_call: tool.tool_call.clone(),
            allowed: record.allowed,
            within: within.clone(),
            reason: node
                .metadata_value(REASON_KEY)
                .and_then(|v| v.as_str().map(str::to_string)),
        });
    }
}

/// The network that holds the node `id`: `network` itself or one of its
/// waiting sub-networks, at any depth.
fn holder_of(network: &RunnableNetwork, id: NodeId) -> Option<(RunnableNetwork, NodeRef)> {
    if let Some(node) = network.node(id) {
        return Some((network.clone(), node));
    }
    network.held().iter().find_map(|node| {
        node.downcast::<NetworkNode>()
            .and_then(|sub| holder_of(sub.network(), id))
    })
}

/// Applies a person's decision to a pending call (of `network` or of one
/// of its waiting sub-networks); the next `invoke` of `network` goes on.
pub fn decide(
    network: &RunnableNetwork,
    node_id: NodeId,
    decision: Decision,
) -> std::result::Result<(), ApprovalError> {
    let (network, node) = holder_of(network, node_id).ok_or(ApprovalError::NotPending(node_id))?;
    let network = &network;
    let record = pending_record(&node).ok_or(ApprovalError::NotPending(node_id))?;
    let call = node
        .downcast::<ToolNode>()
        .ok_or(ApprovalError::NotPending(node_id))?
        .tool_call
        .clone();
    if !record.allowed.contains(&decision.kind()) {
        return Err(ApprovalError::NotAllowed {
            decision: decision.kind().name(),
            tool: call.name,
            allowed: record
                .allowed
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let answer = |content: String, status: ToolStatus| Message::Tool {
        content,
        tool_call_id: call.id.clone(),
        name: Some(call.name.clone()),
        status,
        parts: Vec::new(),
    };
    let served = delegation::waiting_delegate(network, &node);
    if let (Some(served), false) = (&served, matches!(decision, Decision::Approve)) {
        // The sub-network was built for the call as asked and never ran:
        // rejected or answered, nothing runs it; edited, its modifier
        // builds one for the new arguments at the next invoke.
        network.set_parents(node_id, &served.parents())?;
        network.remove_node(served.id())?;
    }
    match decision {
        Decision::Approve => {
            record_decision(&node, "approved", &record, None);
            node.release();
            if let Some(served) = served {
                served.release();
            }
        }
        Decision::Reject(message) => {
            let content = format!("Error: the user rejected this call: {message}");
            record_decision(&node, "rejected", &record, Some(json!(message)));
            node.release();
            node.set_output(answer(content, ToolStatus::Error));
        }
        Decision::Respond(text) => {
            record_decision(&node, "responded", &record, None);
            node.release();
            node.set_output(answer(text, ToolStatus::Ok));
        }
        Decision::Edit(args) => {
            if !args.is_object() {
                return Err(ApprovalError::InvalidEdit {
                    tool: call.name,
                    got: args.to_string(),
                });
            }
            let edited = ToolCall::new(call.id.clone(), call.name.clone(), args);
            let replacement = network.add(ToolNode { tool_call: edited }, &node.parents())?;
            write_record(
                &replacement,
                "edited",
                &record.allowed,
                Some(json!({"original_arguments": call.arguments})),
            );
            for child in network.children(node_id) {
                let parents: Vec<NodeId> = child
                    .parents()
                    .into_iter()
                    .map(|p| if p == node_id { replacement.id() } else { p })
                    .collect();
                network.set_parents(child.id(), &parents)?;
            }
            network.remove_node(node_id)?;
        }
    }
    Ok(())
}

fn record_decision(node: &NodeRef, status: &str, pending: &ApprovalRecord, detail: Option<Value>) {
    write_record(node, status, &pending.allowed, detail);
}
