//! The summary node: the conversation before it, in a few paragraphs.
//!
//! ```text
//!  ... ─▶ tool ─▶ tool ─┐                       before: parents ─▶ chat
//!                       ▼                       after:  parents ─▶ summary ─▶ chat
//!              summary (kept = 6) ─▶ chat
//! ```
//!
//! Nothing is deleted: the summary joins the graph before the chat node
//! that is about to run ([`SummaryExt::insert_summary`]), and the
//! conversation below it is sent as the system messages, the summary and
//! the messages after its cut point (see [`crate::history`]).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::error::{NetworkError, Result};
use crate::event::NetworkEvent;
use crate::message::Message;
use crate::network::runtime::Events;
use crate::network::RunnableNetwork;
use crate::node::kinds::{self, BuiltInKind, BUILT_IN_KINDS};
use crate::node::{fields_of, NodeContext, NodeLogic, NodeRef};

/// A summary of the conversation before it (kind `summary`); its output is
/// a system message with the summary text, written when the node is
/// inserted (it never runs a model itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryNode {
    /// How many messages right before the summary stay verbatim in
    /// requests (the rest before it is what the summary stands for).
    pub kept: usize,
}

impl SummaryNode {
    /// The kind name (`__node_type__`).
    pub const KIND: &'static str = kinds::SUMMARY;
}

#[async_trait]
impl NodeLogic for SummaryNode {
    fn kind(&self) -> &str {
        Self::KIND
    }

    async fn invoke(&self, ctx: NodeContext) -> Result<Message> {
        Err(NetworkError::Format(format!(
            "summary node {} has no output: summaries are written with their text \
             (SummaryExt::insert_summary), never run",
            ctx.node.id()
        )))
    }

    fn summary_keeps(&self) -> Option<usize> {
        Some(self.kept)
    }

    fn save(&self) -> Result<Map<String, Value>> {
        fields_of(self)
    }
}

/// Summaries on a network: a summary node inserted or appended, so the
/// requests below it send the summary instead of what it covers.
pub trait SummaryExt {
    /// Puts a summary into the graph right before `before` (a pending node,
    /// usually the chat node about to run): the summary takes `before`'s
    /// parents and becomes its only parent. `text` stands for the
    /// conversation before it except its newest `kept` messages;
    /// `metadata` goes to the node (model, token counts...). Reports
    /// [`NetworkEvent::SummaryWritten`].
    fn insert_summary(
        &self,
        before: &NodeRef,
        text: impl Into<String>,
        kept: usize,
        metadata: Map<String, Value>,
    ) -> Result<NodeRef>;

    /// Puts a summary into the graph right after `after` (a node that has
    /// run, usually the current leaf: a summary written on demand), as its
    /// child; the next node attached below `after`'s branch goes below the
    /// summary. `text` stands for the conversation up to `after` except
    /// its newest `kept` messages. Reports [`NetworkEvent::SummaryWritten`].
    fn append_summary(
        &self,
        after: &NodeRef,
        text: impl Into<String>,
        kept: usize,
        metadata: Map<String, Value>,
    ) -> Result<NodeRef>;
}

impl SummaryExt for RunnableNetwork {
    fn insert_summary(
        &self,
        before: &NodeRef,
        text: impl Into<String>,
        kept: usize,
        metadata: Map<String, Value>,
    ) -> Result<NodeRef> {
        if before.is_invoked() {
            return Err(NetworkError::Format(format!(
                "a summary goes before a node that has not run; {} has",
                before.id()
            )));
        }
        let parents = before.parents();
        let node = NodeRef::detached(SummaryNode { kept });
        for (key, value) in metadata {
            node.set_metadata(key, value);
        }
        node.set_output(Message::system(text));
        self.add_node_with_parents(&node, &parents)?;
        if let Err(e) = self.set_parents(before.id(), &[node.id()]) {
            // Leave the graph as it was.
            let _ = self.remove_node(node.id());
            return Err(e);
        }
        let summarized = self.input_of(&node).len().saturating_sub(kept);
        node.set_metadata("summarized_messages", json!(summarized));
        self.emit(&NetworkEvent::SummaryWritten {
            node_id: node.id(),
            kept,
            summarized,
        });
        Ok(node)
    }

    fn append_summary(
        &self,
        after: &NodeRef,
        text: impl Into<String>,
        kept: usize,
        metadata: Map<String, Value>,
    ) -> Result<NodeRef> {
        if !after.is_invoked() {
            return Err(NetworkError::Format(format!(
                "a summary goes after a node that has run; {} has not",
                after.id()
            )));
        }
        let node = NodeRef::detached(SummaryNode { kept });
        for (key, value) in metadata {
            node.set_metadata(key, value);
        }
        node.set_output(Message::system(text));
        self.add_node_with_parents(&node, &[after.id()])?;
        let summarized = self.input_of(&node).len().saturating_sub(kept);
        node.set_metadata("summarized_messages", json!(summarized));
        self.emit(&NetworkEvent::SummaryWritten {
            node_id: node.id(),
            kept,
            summarized,
        });
        Ok(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ChatRequest;
    use crate::nodes::{ChatNode, HumanNode};

    #[test]
    fn a_summary_goes_before_a_pending_node_and_round_trips() {
        let net = RunnableNetwork::new();
        let (human, chat) = {
            let _scope = net.enter();
            let human = HumanNode::new("q");
            human.set_output(Message::human("q"));
            (human, ChatNode::new())
        };
        let summary = net.insert_summary(&chat, "S", 1, Map::new()).unwrap();
        assert_eq!(chat.parents(), [summary.id()]);
        assert_eq!(summary.parents(), [human.id()]);
        assert!(summary.is_invoked());
        let input = net.input_of(&chat);
        assert_eq!(input.latest_summary().unwrap().kept, 1);
        assert_eq!(input.len(), 2, "the human message and the summary");

        chat.set_output(Message::ai("a"));
        let err = net.insert_summary(&chat, "S2", 1, Map::new()).unwrap_err();
        assert!(err.to_string().contains("has not run"), "{err}");
        assert_eq!(net.nodes().len(), 3, "nothing added");

        let saved = net.to_json().unwrap();
        let loaded = RunnableNetwork::from_json(&saved).unwrap();
        assert_eq!(loaded.to_json().unwrap(), saved);
        let history = loaded.history();
        assert_eq!(history.latest_summary().unwrap().message.text(), "S");
        assert_eq!(
            ChatRequest::new(history)
                .messages()
                .iter()
                .map(|m| m.text().to_string())
                .collect::<Vec<_>>(),
            ["S", "q", "a"]
        );
    }

    #[test]
    fn a_summary_appended_after_the_leaf_stands_for_everything_before_it() {
        let net = RunnableNetwork::new();
        let chat = {
            let _scope = net.enter();
            HumanNode::new("q").set_output(Message::human("q"));
            let chat = ChatNode::new();
            chat.set_output(Message::ai("a"));
            chat
        };
        let pending = {
            let _scope = net.enter();
            HumanNode::new("later")
        };
        let err = net
            .append_summary(&pending, "S", 0, Map::new())
            .unwrap_err();
        assert!(err.to_string().contains("has run"), "{err}");
        net.remove_node(pending.id()).unwrap();

        let summary = net.append_summary(&chat, "S", 0, Map::new()).unwrap();
        assert_eq!(summary.parents(), [chat.id()]);
        assert_eq!(net.current_leaf().unwrap().id(), summary.id());
        assert_eq!(
            summary.metadata_value("summarized_messages"),
            Some(json!(2))
        );
        let next = {
            let _scope = net.enter();
            let h = HumanNode::new("next");
            h.set_output(Message::human("next"));
            h
        };
        assert_eq!(next.parents(), [summary.id()]);
        let texts: Vec<String> = ChatRequest::new(net.history())
            .messages()
            .iter()
            .map(|m| m.text().to_string())
            .collect();
        assert_eq!(texts, ["S", "next"]);
    }
}

#[linkme::distributed_slice(BUILT_IN_KINDS)]
static SUMMARY_KIND: BuiltInKind = BuiltInKind {
    name: kinds::SUMMARY,
    load: kinds::serde_load::<SummaryNode>,
    typed: None,
    immutable: false,
};
