//! Helpers shared by the agent layer's tests.

/// Every tool result of a network, in order: (status, text).
pub fn tool_results(net: &lc_agent::RunnableNetwork) -> Vec<(lc_agent::ToolStatus, String)> {
    net.nodes()
        .iter()
        .filter_map(|n| match n.output().as_deref() {
            Some(lc_agent::Message::Tool {
                content, status, ..
            }) => Some((*status, content.clone())),
            _ => None,
        })
        .collect()
}
