//! Clearing old tool results from a request: the graph keeps every
//! result; only what one chat node sends shrinks.
//!
//! ```text
//!  metadata["clear_tool_results"] = {"keep": 3, "budget_tokens": 8000}
//! ```
//!
//! Set with [`ClearResultsExt::set_clear_tool_results`] (or a blueprint's
//! `[resilience.clear_tool_results]`). Before a chat node sends its
//! request, the tool results in it are walked newest first: the newest
//! `keep` stay whole; an older one is replaced by a one-line note when it
//! was evicted to a file already (the note names the file), or when the
//! results kept so far, it included, pass `budget_tokens` (about four
//! characters a token). The node records how many it cleared
//! (`metadata.cleared_tool_results`). The note tells the model the result
//! was there and how to get it back (read the file, or call the tool
//! again). A cleared result's parts (`read_file`'s image, the text between
//! images) are left out of the request with its text; the graph keeps
//! them. The budget counts a result's text only.

use std::borrow::Cow;

use serde_json::{json, Value};

use crate::content::ContentPart;
use crate::history::History;
use crate::message::Message;
use crate::model::ChatRequest;
use crate::network::RunnableNetwork;

/// The network metadata key holding the rule.
pub(crate) const CLEAR_TOOL_RESULTS_KEY: &str = "clear_tool_results";

/// The chat node metadata key: how many results its request left out.
pub(crate) const CLEARED_KEY: &str = "cleared_tool_results";

/// How an evicted result's preview starts (the file tools' eviction).
const EVICTED: &str = "Tool result too large";

/// Old tool results left out of a network's requests.
pub trait ClearResultsExt {
    /// Clears old tool results from the requests chat nodes send (see
    /// the module docs of `clear_results.rs`): the newest `keep` stay,
    /// older ones go once evicted or past `budget_tokens` (`None`: evicted
    /// ones only).
    ///
    /// ```
    /// use lc_agent::{ClearResultsExt, RunnableNetwork};
    ///
    /// let net = RunnableNetwork::new();
    /// net.set_clear_tool_results(3, Some(8000));
    /// assert_eq!(net.metadata_value("clear_tool_results").unwrap()["keep"], 3);
    /// ```
    fn set_clear_tool_results(&self, keep: usize, budget_tokens: Option<usize>);
}

impl ClearResultsExt for RunnableNetwork {
    fn set_clear_tool_results(&self, keep: usize, budget_tokens: Option<usize>) {
        self.set_metadata(
            CLEAR_TOOL_RESULTS_KEY,
            json!({"keep": keep, "budget_tokens": budget_tokens}),
        );
    }
}

/// Clears old tool results from `request` by the network's rule (this
/// network's, else an outer one's); how many.
pub(crate) fn clear(network: &RunnableNetwork, request: &mut ChatRequest) -> usize {
    let Some(rule) = rule_of(network) else {
        return 0;
    };
    let keep = rule
        .get("keep")
        .and_then(Value::as_u64)
        .and_then(|k| usize::try_from(k).ok())
        .unwrap_or(3);
    let budget = rule
        .get("budget_tokens")
        .and_then(Value::as_u64)
        .and_then(|k| usize::try_from(k).ok());
    let mut messages: Vec<Message> = request
        .history
        .assemble(&[])
        .into_iter()
        .map(Cow::into_owned)
        .collect();
    let mut seen = 0usize;
    let mut tokens = 0usize;
    let mut cleared = 0usize;
    for message in messages.iter_mut().rev() {
        let Message::Tool {
            content,
            name,
            parts,
            ..
        } = message
        else {
            continue;
        };
        seen += 1;
        let size = content.chars().count().div_ceil(4);
        tokens += size;
        if seen <= keep {
            continue;
        }
        let evicted_to = content
            .starts_with(EVICTED)
            .then(|| saved_path(content))
            .flatten();
        let over = budget.is_some_and(|budget| tokens > budget);
        let note =
            match (evicted_to, over) {
                (Some(path), _) => format!(
                    "[An older tool result, cleared from this request; its full text is in \
                 {path} (read_file it if you need it again).]"
                ),
                (None, true) => {
                    format!(
                "[An older result of `{}` (about {size} tokens{}), cleared from this request \
                 to save room; the session keeps it. Call the tool again if you need it.]",
                name.as_deref().unwrap_or("a tool"),
                match parts.iter().filter(|p| matches!(p, ContentPart::Image(_))).count() {
                    0 => String::new(),
                    1 => " and an image".to_string(),
                    n => format!(" and {n} images"),
                }
            )
                }
                (None, false) => continue,
            };
        *content = note;
        // The result's images (and the text between them) go with it:
        // they are what makes a result large.
        parts.clear();
        cleared += 1;
    }
    if cleared > 0 {
        request.history = History::from_messages(messages);
    }
    cleared
}

fn rule_of(network: &RunnableNetwork) -> Option<Value> {
    network
        .metadata_value(CLEAR_TOOL_RESULTS_KEY)
        .filter(Value::is_object)
        .or_else(|| rule_of(&network.outer()?))
}

/// The file an eviction preview names (`... Saved to /path.`).
fn saved_path(preview: &str) -> Option<String> {
    let rest = &preview[preview.find("Saved to ")? + "Saved to ".len()..];
    let end = rest.find(".\n").unwrap_or(rest.len());
    Some(rest[..end].trim_end_matches('.').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_of_an_eviction_preview() {
        assert_eq!(
            saved_path("Tool result too large (9 chars, ~2 tokens). Saved to /large_tool_results/c1.\n\nFirst").as_deref(),
            Some("/large_tool_results/c1")
        );
    }
}
