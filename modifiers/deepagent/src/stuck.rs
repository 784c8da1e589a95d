//! Stuck detection (as OpenHands' stuck detector and Claude Code do): a
//! model that goes round in circles is told once, then stopped, instead
//! of filling its context window until the server refuses the request.
//!
//! ```text
//!  chat request ─▶ the turns since the user's latest message, newest last:
//!    a turn makes no progress when it is
//!      - the same calls as the turn before (same tools, same arguments)
//!      - the same calls as two turns before, the turn between also
//!        repeating the one before it (two calls alternating)
//!      - calls that all failed (every result an error)
//!      - calls whose results all came before (the same observation:
//!        `No matches found` again, whatever the pattern)
//!      - an empty answer (no text, no call)
//!    no progress WARN_AFTER turns in a row ─▶ a system section tells the
//!                                            model what repeated, once
//!    no progress STOP_AFTER turns in a row ─▶ NetworkError::Stuck (the
//!                                            request is not sent)
//! ```
//!
//! Everything is read from the request's history, so a resumed session is
//! judged the same way and nothing is saved.

use std::collections::HashMap;

use async_trait::async_trait;
use lc_agent::{ChatRequest, Message, NetworkError, NetworkModifier, NodeRef, Result};
use lc_agent::{RunnableNetwork, ToolStatus};

/// The modifier id.
pub const STUCK_ID: &str = "lc-agent/stuck";

/// Turns in a row without progress after which the model is told.
pub const WARN_AFTER: usize = 2;

/// Turns in a row without progress after which the run stops.
pub const STOP_AFTER: usize = 3;

/// How the warning section starts (tests and logs find it by this).
pub const STUCK_WARNING: &str = "You are going round in circles";

/// Tells a model that repeats itself, then stops it (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct StuckDetector;

/// One model turn since the user's message: its calls (name and
/// arguments, sorted), whether they all failed, whether it said nothing.
struct Turn {
    calls: Vec<(String, String)>,
    all_failed: bool,
    empty: bool,
    /// The texts of its calls' results.
    results: Vec<String>,
}

/// The turns after the latest human message, oldest first.
fn turns(request: &ChatRequest) -> Vec<Turn> {
    let messages = request.history.to_vec();
    let start = messages
        .iter()
        .rposition(|m| matches!(m, Message::Human { .. }))
        .map_or(0, |i| i + 1);
    let mut statuses: HashMap<&str, (bool, &str)> = HashMap::new();
    for m in &messages[start..] {
        if let Message::Tool {
            tool_call_id,
            status,
            content,
            ..
        } = m
        {
            statuses.insert(
                tool_call_id.as_str(),
                (matches!(status, ToolStatus::Error), content.as_str()),
            );
        }
    }
    messages[start..]
        .iter()
        .filter_map(|m| match m {
            Message::Ai {
                content,
                tool_calls,
            } => {
                let mut calls: Vec<(String, String)> = tool_calls
                    .iter()
                    .map(|c| (c.name.clone(), normalized(&c.arguments)))
                    .collect();
                calls.sort();
                let all_failed = !tool_calls.is_empty()
                    && tool_calls
                        .iter()
                        .all(|c| statuses.get(c.id.as_str()).is_some_and(|(error, _)| *error));
                let results = tool_calls
                    .iter()
                    .filter_map(|c| statuses.get(c.id.as_str()))
                    .map(|(_, text)| text.trim().to_string())
                    .collect();
                Some(Turn {
                    calls,
                    all_failed,
                    empty: content.trim().is_empty() && tool_calls.is_empty(),
                    results,
                })
            }
            _ => None,
        })
        .collect()
}

/// Arguments compared by their JSON value (spacing and key order aside).
fn normalized(arguments: &str) -> String {
    serde_json::from_str::<serde_json::Value>(arguments)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| arguments.trim().to_string())
}

/// Calls in words: `` `grep` `` or `` `read_file`, `ls` ``.
fn names(calls: &[(String, String)]) -> String {
    let mut names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
    names.dedup();
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why turn `i` made no progress, in words; `None` when it did.
fn no_progress(turns: &[Turn], i: usize) -> Option<String> {
    let t = &turns[i];
    if t.empty {
        return Some("empty answers".to_string());
    }
    if i >= 1 && !t.calls.is_empty() && t.calls == turns[i - 1].calls {
        return Some(format!(
            "the same call again ({} with the same arguments)",
            names(&t.calls)
        ));
    }
    if i >= 3
        && !t.calls.is_empty()
        && t.calls == turns[i - 2].calls
        && turns[i - 1].calls == turns[i - 3].calls
    {
        return Some(format!(
            "two calls alternating ({} and {}, the same arguments each time)",
            names(&turns[i - 1].calls),
            names(&t.calls)
        ));
    }
    if t.all_failed {
        return Some(format!("calls that all failed ({})", names(&t.calls)));
    }
    if !t.results.is_empty()
        && t.results
            .iter()
            .all(|r| turns[..i].iter().any(|e| e.results.contains(r)))
    {
        let first: String = t.results[0].chars().take(60).collect();
        return Some(format!(
            "calls whose results all came before ({}: {first:?})",
            names(&t.calls)
        ));
    }
    None
}

/// How many of the latest turns in a row made no progress, and what the
/// latest of them repeated.
pub(crate) fn stuck_turns(request: &ChatRequest) -> (usize, Option<String>) {
    let turns = turns(request);
    let mut count = 0;
    let mut what = None;
    for i in (0..turns.len()).rev() {
        match no_progress(&turns, i) {
            Some(why) => {
                count += 1;
                what.get_or_insert(why);
            }
            None => break,
        }
    }
    (count, what)
}

#[async_trait]
impl NetworkModifier for StuckDetector {
    fn id(&self) -> &str {
        STUCK_ID
    }

    /// After the lean prompt (50), before the summaries' fit check (100).
    fn priority(&self) -> i32 {
        60
    }

    async fn on_chat_request(
        &self,
        _network: &RunnableNetwork,
        _node: &NodeRef,
        request: &mut ChatRequest,
    ) -> Result<()> {
        let (count, what) = stuck_turns(request);
        let what = what.unwrap_or_default();
        if count >= STOP_AFTER {
            tracing::warn!(turns = count, what, "the model is stuck; the run stops");
            return Err(NetworkError::Stuck { what, turns: count });
        }
        if count >= WARN_AFTER {
            request.system.push(format!(
                "{STUCK_WARNING}: {what}, {count} turns in a row without progress. Do something \
                 different now: correct the arguments, use another tool, or give your final \
                 answer. If you repeat it again, the run stops."
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lc_agent::{History, ToolCall};
    use serde_json::json;

    fn request(messages: Vec<Message>) -> ChatRequest {
        ChatRequest::new(History::from_messages(messages))
    }

    fn call(id: &str, name: &str, args: serde_json::Value) -> Message {
        Message::ai_with_tools("", vec![ToolCall::new(id, name, args)])
    }

    #[test]
    fn the_same_call_again_and_alternating_calls_are_no_progress() {
        let same = request(vec![
            Message::human("go"),
            call("1", "read_file", json!({"file_path": "/a"})),
            Message::tool("a1", "1"),
            call("2", "read_file", json!({"file_path": "/a"})),
            Message::tool("a2", "2"),
            call("3", "read_file", json!({"file_path": "/a"})),
            Message::tool("a3", "3"),
        ]);
        let (n, what) = stuck_turns(&same);
        assert_eq!(n, 2);
        assert!(what
            .unwrap()
            .contains("`read_file` with the same arguments"));

        let alternating = request(vec![
            Message::human("go"),
            call("1", "ls", json!({"path": "/"})),
            Message::tool("x1", "1"),
            call("2", "grep", json!({"pattern": "x"})),
            Message::tool("y1", "2"),
            call("3", "ls", json!({"path": "/"})),
            Message::tool("x2", "3"),
            call("4", "grep", json!({"pattern": "x"})),
            Message::tool("y2", "4"),
            call("5", "ls", json!({"path": "/"})),
            Message::tool("x3", "5"),
        ]);
        // A B A B A: the fourth and fifth turns repeat the pair.
        let (n, what) = stuck_turns(&alternating);
        assert_eq!(n, 2);
        assert!(what.unwrap().contains("alternating"));
    }

    #[test]
    fn failures_count_and_a_new_human_message_starts_over() {
        let failing = request(vec![
            Message::human("go"),
            call("1", "grep", json!({"pattern": "a"})),
            Message::tool_error("Error: bad", "1"),
            call("2", "write_file", json!({"file_path": "/b"})),
            Message::tool_error("Error: bad", "2"),
            call("3", "grep", json!({"pattern": "c"})),
            Message::tool_error("Error: bad", "3"),
            Message::human("again"),
            call("4", "ls", json!({})),
            Message::tool_error("Error: bad", "4"),
        ]);
        assert_eq!(stuck_turns(&failing).0, 1);
        let progress = request(vec![
            Message::human("go"),
            call("1", "grep", json!({"pattern": "a"})),
            Message::tool_error("Error: bad", "1"),
            call("2", "write_file", json!({"file_path": "/b"})),
            Message::tool("ok", "2"),
        ]);
        assert_eq!(stuck_turns(&progress).0, 0);
    }

    #[test]
    fn the_same_observation_again_is_no_progress() {
        let greps = request(vec![
            Message::human("go"),
            call("1", "write_file", json!({"file_path": "/h"})),
            Message::tool("Successfully wrote to /h", "1"),
            call("2", "grep", json!({"pattern": "a"})),
            Message::tool("No matches found", "2"),
            call("3", "grep", json!({"pattern": "b"})),
            Message::tool("No matches found", "3"),
            call("4", "grep", json!({"pattern": "c"})),
            Message::tool("No matches found", "4"),
        ]);
        let (n, what) = stuck_turns(&greps);
        assert_eq!(n, 2);
        assert!(what.unwrap().contains("results all came before"));
    }
}
