//! A sub-agent's limits: the tools it may call (its allow-list) and the
//! approval rules it adds to those it inherits. They are kept in the
//! metadata of the sub-agent's own network, so they are saved with the
//! session and hold when any process resumes it.
//!
//! ```text
//!  outer network (limits L, or none at the top)
//!    └─ task for sub-agent S ─▶ inner network, metadata:
//!         subagent_tools        = S.tools ∩ L.tools       (absent: every tool)
//!         subagent_interrupt_on = L.rules + S.rules        (L's rule wins a tool both name)
//! ```
//!
//! **Limits only tighten.** A nested sub-agent gets no tool its parent
//! sub-agent may not call, and keeps every approval rule above it; a
//! sub-agent's rule never replaces an inherited rule for the same tool
//! (the [`ApprovalModifier`](crate::ApprovalModifier)'s own rules are read
//! first, then these), so a sub-agent cannot loosen an approval, only add
//! approvals for more tools.
//!
//! Enforcement: the [`SubAgentModifier`](crate::SubAgentModifier) offers the
//! model only the allowed tools and answers a call of any other tool with
//! an error result (the call never runs); the approval modifier holds the
//! calls these rules name.

use std::collections::{BTreeMap, BTreeSet};

use lc_agent::{Message, NodeRef, RunnableNetwork, ToolNode, ToolStatus};
use serde_json::Value;

use crate::decisions::{DecisionKind, Decisions};

/// The sub-agent network's metadata key listing the tools it may call.
const TOOLS_KEY: &str = "subagent_tools";

/// The sub-agent network's metadata key holding its added approval rules.
const INTERRUPT_ON_KEY: &str = "subagent_interrupt_on";

/// The limits of one sub-agent network (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Limits {
    /// The tools it may call; `None`: every tool.
    tools: Option<BTreeSet<String>>,
    /// Tool -> the decisions a held call allows.
    interrupt_on: BTreeMap<String, Vec<DecisionKind>>,
}

impl Limits {
    /// The limits a network runs under (none at the top).
    pub(crate) fn of(network: &RunnableNetwork) -> Self {
        let tools = network
            .metadata_value(TOOLS_KEY)
            .and_then(|v| serde_json::from_value(v).ok());
        let interrupt_on = network
            .metadata_value(INTERRUPT_ON_KEY)
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        Self {
            tools,
            interrupt_on,
        }
    }

    /// These limits narrowed by a sub-agent's own: its allow-list (with
    /// its own tools) within these, its rules added where these have none.
    pub(crate) fn narrowed(
        &self,
        allowed: Option<&[String]>,
        own_tools: impl IntoIterator<Item = String>,
        rules: &BTreeMap<String, Decisions>,
    ) -> Self {
        let tools = match (allowed, &self.tools) {
            (None, outer) => outer.clone(),
            (Some(list), outer) => {
                let mine: BTreeSet<String> = list
                    .iter()
                    .cloned()
                    .chain(own_tools)
                    .collect::<BTreeSet<_>>();
                Some(match outer {
                    Some(outer) => mine.intersection(outer).cloned().collect(),
                    None => mine,
                })
            }
        };
        let mut interrupt_on = self.interrupt_on.clone();
        for (tool, decisions) in rules {
            interrupt_on
                .entry(tool.clone())
                .or_insert_with(|| decisions.kinds().to_vec());
        }
        Self {
            tools,
            interrupt_on,
        }
    }

    /// Writes them into a sub-agent's network.
    pub(crate) fn store_in(&self, network: &RunnableNetwork) {
        if let Some(tools) = &self.tools {
            network.set_metadata(
                TOOLS_KEY,
                Value::from(tools.iter().map(String::as_str).collect::<Vec<_>>()),
            );
        }
        if !self.interrupt_on.is_empty()
            && let Ok(rules) = serde_json::to_value(&self.interrupt_on)
        {
            network.set_metadata(INTERRUPT_ON_KEY, rules);
        }
    }

    /// Whether `tool` may be called.
    pub(crate) fn allows(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|t| t.contains(tool))
    }

    /// Answers a call of a tool it may not call with an error result, so
    /// the call never runs; `true` when it did.
    pub(crate) fn refuse(&self, network: &RunnableNetwork, call: &NodeRef) -> bool {
        let Some(tool) = call.downcast::<ToolNode>() else {
            return false;
        };
        let name = &tool.tool_call.name;
        if call.is_invoked() || self.allows(name) {
            return false;
        }
        let agent = network.name();
        let agent = agent.strip_prefix("subagent:").unwrap_or(&agent);
        let list = self
            .tools
            .as_ref()
            .map(|t| t.iter().cloned().collect::<Vec<_>>().join(", "))
            .unwrap_or_default();
        let list = if list.is_empty() { "none" } else { &list };
        call.set_output(Message::Tool {
            content: format!(
                "Error: the sub-agent `{agent}` may not call `{name}`; its tools are: {list}"
            ),
            tool_call_id: tool.tool_call.id.clone(),
            name: Some(name.clone()),
            status: ToolStatus::Error,
            parts: Vec::new(),
        });
        true
    }

    /// The rule these limits add for `tool`.
    fn rule(&self, tool: &str) -> Option<Decisions> {
        self.interrupt_on
            .get(tool)
            .map(|kinds| Decisions::only(kinds.iter().copied()))
    }
}

/// The approval rule the sub-agent network `network` adds for `tool`
/// (read after the approval modifier's own rules, which win).
pub(crate) fn added_rule(network: &RunnableNetwork, tool: &str) -> Option<Decisions> {
    network.metadata_value(INTERRUPT_ON_KEY)?;
    Limits::of(network).rule(tool)
}
