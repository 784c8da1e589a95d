//! Fitting a request to a small context window the way its server counts:
//! a calibrated estimate, and room left to answer.
//!
//! ```text
//!  on_chat_request: estimate (tokenizer) ─▶ remembered for the node
//!                   max_tokens (unset) = the answer's room, sized to the window
//!                   first request, no ratio yet: the server's own tokenizer
//!                   (ChatModel::count_tokens: llama-cpp-python's
//!                   /extras/tokenize/count, llama.cpp's and vLLM's /tokenize)
//!                   counts the request's text ─▶ ratio = theirs / ours
//!  on_post_invoke:  the server's usage.prompt_tokens for that node
//!                   ─▶ ratio = server / estimate (the server renders tools
//!                      and templates its own way; a small model's tokenizer
//!                      is not tiktoken's), and the count itself kept
//!  trigger, fit check: estimate × ratio, the server's count of the same
//!                   request, never below the server's last count plus what
//!                   was added since; the default trigger (85 % of the
//!                   window) leaves more than the answer's room (an eighth)
//! ```

use std::collections::HashMap;

use lc_agent::{ChatModel, ChatRequest, NodeId};
use parking_lot::Mutex;

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
    /// The latest request the server counted: its estimate and the
    /// server's count (a floor for the requests that grow from it).
    last: Option<(usize, usize)>,
    /// Whether the server's tokenizer was asked (once).
    tokenizer_asked: bool,
}

impl Calibration {
    /// Whether the server's tokenizer should be asked now: nothing
    /// calibrates the estimate yet and it was not asked before (it is
    /// asked once).
    pub(crate) fn ask_tokenizer(&mut self) -> bool {
        let ask = self.ratio.is_none() && !self.tokenizer_asked;
        self.tokenizer_asked = true;
        ask
    }

    /// The server's tokenizer made `theirs` tokens of a text estimated at
    /// `ours`: the ratio until an answer's count says better.
    pub(crate) fn tokenized(&mut self, ours: usize, theirs: usize) {
        if ours == 0 || theirs == 0 || self.ratio.is_some() {
            return;
        }
        let ratio = (theirs as f64 / ours as f64).clamp(0.5, 4.0);
        tracing::debug!(
            ours,
            theirs,
            ratio,
            "token estimate calibrated by the server's tokenizer"
        );
        self.ratio = Some(ratio);
    }

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
        self.last = usize::try_from(prompt_tokens).ok().map(|n| (estimate, n));
    }

    /// `tokens` as the server would count them: the estimate corrected,
    /// and never below the server's last count when the request grew
    /// from that one (the ratio is bounded; the count is not).
    pub(crate) fn scale(&self, tokens: usize) -> usize {
        let scaled = match self.ratio {
            Some(r) => (tokens as f64 * r).ceil() as usize,
            None => tokens,
        };
        match self.last {
            Some((estimate, counted)) if tokens >= estimate => {
                scaled.max(counted + (tokens - estimate))
            }
            _ => scaled,
        }
    }
}

/// Before any answer calibrates the estimate, the server's own tokenizer
/// does, where it has an endpoint (asked once, of `model`).
pub(crate) async fn ask_tokenizer(
    calibration: &Mutex<Calibration>,
    model: Option<&dyn ChatModel>,
    request: &ChatRequest,
    counter: &dyn TokenCounter,
) {
    let Some(model) = model else {
        return;
    };
    if !calibration.lock().ask_tokenizer() {
        return;
    }
    let text = request_text(request);
    if let Some(theirs) = model.count_tokens(&text).await {
        calibration.lock().tokenized(counter.count(&text), theirs);
    }
}

/// The text of a request as a tokenizer reads it: the system sections,
/// the messages and the tools' names, descriptions and parameters.
fn request_text(request: &ChatRequest) -> String {
    let mut text = request.system.join("\n");
    for (_, message) in request.history.since_cut() {
        text.push('\n');
        text.push_str(message.text());
    }
    for tool in request.tools.iter() {
        text.push('\n');
        text.push_str(&tool.name);
        text.push('\n');
        text.push_str(&tool.description);
        text.push('\n');
        text.push_str(&tool.parameters.to_string());
    }
    text
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
    fn the_estimate_never_falls_below_the_servers_last_count() {
        let mut c = Calibration::default();
        let node = NodeId::new_v4();
        // The server counts ten times the estimate: the ratio stops at 4,
        // the count does not.
        c.sent(node, 100);
        c.observed(node, 1000);
        assert_eq!(c.scale(100), 1000);
        assert_eq!(c.scale(150), 1050, "the count and what was added");
        // A smaller request (a summary came) is scaled only.
        assert_eq!(c.scale(50), 200);
    }

    #[test]
    fn the_servers_tokenizer_is_asked_once_and_only_without_a_ratio() {
        let mut c = Calibration::default();
        assert!(c.ask_tokenizer());
        assert!(!c.ask_tokenizer(), "once");
        c.tokenized(100, 180);
        assert_eq!(c.scale(1000), 1800);
        // An answer's count says better.
        let node = NodeId::new_v4();
        c.sent(node, 1000);
        c.observed(node, 1500);
        assert_eq!(c.scale(1000), 1500);
        c.tokenized(100, 300);
        assert_eq!(c.scale(1000), 1500, "the tokenizer no longer overrides");
        let mut c = Calibration::default();
        c.sent(NodeId::new_v4(), 10);
        let node = NodeId::new_v4();
        c.sent(node, 10);
        c.observed(node, 20);
        assert!(!c.ask_tokenizer(), "a ratio already");
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
