//! Drawing a network as a Mermaid flowchart.

use std::fmt::Write;

use super::RunnableNetwork;
use crate::message::Message;

const EXCERPT_CHARS: usize = 40;

impl RunnableNetwork {
    /// A Mermaid flowchart of the graph: one box per node (its kind and a
    /// short excerpt of its output), one arrow per edge, parent to child.
    ///
    /// ```
    /// use lc_agent::{HumanNode, RunnableNetwork};
    ///
    /// let net = RunnableNetwork::new();
    /// {
    ///     let _scope = net.enter();
    ///     HumanNode::new("hi");
    ///     HumanNode::new("there");
    /// }
    /// assert_eq!(
    ///     net.to_mermaid(),
    ///     "flowchart TD\n    n0[\"human: (pending)\"]\n    n1[\"human: (pending)\"]\n    n0 --> n1\n"
    /// );
    /// ```
    pub fn to_mermaid(&self) -> String {
        let nodes = self.nodes();
        let index: std::collections::HashMap<_, _> =
            nodes.iter().enumerate().map(|(i, n)| (n.id(), i)).collect();
        let mut out = String::from("flowchart TD\n");
        for (i, node) in nodes.iter().enumerate() {
            let excerpt = match node.output() {
                Some(m) => excerpt(&m),
                None if node.is_invoked() => "(no output)".to_string(),
                None => "(pending)".to_string(),
            };
            let _ = writeln!(
                out,
                "    n{i}[\"{}: {}\"]",
                escape(node.kind()),
                escape(&excerpt)
            );
        }
        for (i, node) in nodes.iter().enumerate() {
            for p in node.parents() {
                if let Some(pi) = index.get(&p) {
                    let _ = writeln!(out, "    n{pi} --> n{i}");
                }
            }
        }
        out
    }
}

fn excerpt(message: &Message) -> String {
    let text = message.text().trim();
    let text = if text.is_empty() && !message.tool_calls().is_empty() {
        let names: Vec<&str> = message
            .tool_calls()
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        format!("calls {}", names.join(", "))
    } else {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    if text.chars().count() > EXCERPT_CHARS {
        let cut: String = text.chars().take(EXCERPT_CHARS).collect();
        format!("{cut}...")
    } else {
        text
    }
}

fn escape(text: &str) -> String {
    text.replace('"', "#quot;")
        .replace('<', "#lt;")
        .replace('>', "#gt;")
}
