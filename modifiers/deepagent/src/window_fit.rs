//! Fitting a request to a small context window the way its server counts:
//! a calibrated estimate, and room left to answer.
//!
//! ```text
//!  on_chat_request: estimate (tokenizer) ─▶ remembered for the node
//!                   max_tokens (unset) = the answer's room, sized to the window
//!  on_post_invoke:  the server's usage.prompt_tokens for that node
//!                   ─▶ ratio = server / estimate (the server renders tools
//!                      and templates its own way; a small model's tokenizer
//!                      is not tiktoken's)
//!  trigger, fit check: estimate × ratio, the server's count of the same
//!                   request; the default trigger (85 % of the window)
//!                   leaves more than the answer's room (an eighth)
//! ```

use std::collections::HashMap;

use lc_agent::{ChatRequest, NodeId};

use crate::tokens::TokenCounter;

/// Windows below this many tokens get a bounded answer (`max_tokens`)
/// and are always counted (no byte-bound shortcut): a server's own
/// default for a small window is "the rest of the window", which leaves
/// the next request nothing.
pub(crate) const SMALL_WINDOW: usize = 32_768;

/// The answer's room for a `window`-token model: an eighth of the window,
/// at least 256 tokens and at most 4,096; `None` for large windows (the
/// provider's own limit applies).
pub(crate) fn answer_room(window: usize) -> Option<usize> {
    (window < SMALL_WINDOW).then(|| (window / 8).clamp(256, 4_096).min(window / 2))
}

/// The estimate's correction, learned from the server's own counts.
#[derive(Debug, Default)]
pub(crate) struct Calibration {
    /// Server tokens per estimated token (1 until a server said).
    ratio: Option<f64>,
    /// The estimate of each request sent and not yet answered.
    sent: HashMap<NodeId, usize>,
}

impl Calibration {
    /// A request of `estimate` tokens went out for `node`.
    pub(crate) fn sent(&mut self, node: NodeId, estimate: usize) {
        self.sent.insert(node, estimate);
    }

    /// The server counted `prompt_tokens` for `node`'s request.
    pub(crate) fn observed(&mut self, node: NodeId, prompt_tokens: u64) {
        let Some(estimate) = self.sent.remove(&node) else {
            return;
        };
        if estimate == 0 || prompt_tokens == 0 {
            return;
        }
        let ratio = (prompt_tokens as f64 / estimate as f64).clamp(0.5, 4.0);
        tracing::debug!(
            estimate,
            prompt_tokens,
            ratio,
            "token estimate calibrated by the server's count"
        );
        self.ratio = Some(ratio);
    }

    /// `tokens` as the server would count them.
    pub(crate) fn scale(&self, tokens: usize) -> usize {
        match self.ratio {
            Some(r) => (tokens as f64 * r).ceil() as usize,
            None => tokens,
        }
    }
}

/// A request's parts beyond its messages: system sections and tool specs.
#[derive(Debug, Default)]
pub(crate) struct Overhead {
    pub(crate) system: Vec<String>,
    pub(crate) tools: lc_agent::ToolSpecs,
}

impl Overhead {
    /// Their tokens, by `counter`.
    pub(crate) fn tokens(&self, counter: &dyn TokenCounter) -> usize {
        let sections: usize = self
            .system
            .iter()
            .map(|s| counter.count(s) + crate::tokens::MESSAGE_OVERHEAD)
            .sum();
        if self.tools.is_empty() {
            return sections;
        }
        let tools = counter.count_request(&ChatRequest {
            tools: self.tools.clone(),
            ..ChatRequest::default()
        });
        sections + tools
    }
}

/// An upper bound on a byte-level tokenizer's count, with no vocabulary to
/// load: every token stands for at least one byte of UTF-8.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BytesBound;

impl TokenCounter for BytesBound {
    fn name(&self) -> &'static str {
        "bytes"
    }

    fn count(&self, text: &str) -> usize {
        text.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_count_corrects_the_estimate() {
        let mut c = Calibration::default();
        assert_eq!(c.scale(1000), 1000);
        let node = NodeId::new_v4();
        c.sent(node, 1000);
        c.observed(node, 1500);
        assert_eq!(c.scale(1000), 1500);
        assert_eq!(c.scale(10), 15);
        // An answer for a request not sent here teaches nothing.
        c.observed(NodeId::new_v4(), 100);
        assert_eq!(c.scale(1000), 1500);
    }

    #[test]
    fn small_windows_leave_room_to_answer() {
        assert_eq!(answer_room(2048), Some(256));
        assert_eq!(answer_room(8192), Some(1024));
        assert_eq!(answer_room(512), Some(256));
        assert_eq!(answer_room(300), Some(150));
        assert_eq!(answer_room(128_000), None);
    }
}
