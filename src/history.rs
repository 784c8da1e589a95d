//! The conversation a chat node reads, shared between nodes.
//!
//! A [`History`] is a persistent list: a node's history is its parent's
//! history plus the parent's output, built in O(1) by pointing at the
//! parent's list. Ten thousand turns therefore cost ten thousand small
//! allocations, not fifty million copies; the full list is only walked when
//! a model actually reads it ([`History::assemble`]).

use std::borrow::Cow;
use std::sync::Arc;

use crate::message::Message;

struct Cell {
    message: Arc<Message>,
    prev: Option<Arc<Cell>>,
    len: usize,
}

impl Drop for Cell {
    // Unlink iteratively: dropping a 100,000-message history must not
    // recurse 100,000 frames deep.
    fn drop(&mut self) {
        let mut next = self.prev.take();
        while let Some(cell) = next {
            match Arc::try_unwrap(cell) {
                Ok(mut cell) => next = cell.prev.take(),
                Err(_) => break,
            }
        }
    }
}

/// An immutable, cheaply cloned conversation (oldest message first).
#[derive(Clone, Default)]
pub struct History {
    head: Option<Arc<Cell>>,
}

/// The text every dangling tool call gets as its synthetic result.
pub const TOOL_NOT_EXECUTED: &str = "Error: tool call was not executed";

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// A history of these messages, in order.
    pub fn from_messages(messages: impl IntoIterator<Item = Message>) -> Self {
        messages
            .into_iter()
            .fold(History::new(), |h, m| h.push(Arc::new(m)))
    }

    /// This history with one more message at the end (O(1); `self` is
    /// unchanged).
    pub fn push(&self, message: Arc<Message>) -> History {
        let len = self.len() + 1;
        History {
            head: Some(Arc::new(Cell {
                message,
                prev: self.head.clone(),
                len,
            })),
        }
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.head.as_ref().map_or(0, |c| c.len)
    }

    /// Whether there are no messages.
    pub fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// The newest message.
    pub fn last(&self) -> Option<&Message> {
        self.head.as_deref().map(|c| &*c.message)
    }

    /// Whether both are the very same list (not just equal messages).
    pub fn same_as(&self, other: &History) -> bool {
        match (&self.head, &other.head) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    /// The history without its newest message.
    pub fn parent(&self) -> History {
        History {
            head: self.head.as_ref().and_then(|c| c.prev.clone()),
        }
    }

    /// The newest message as a shared pointer.
    pub fn last_shared(&self) -> Option<Arc<Message>> {
        self.head.as_ref().map(|c| c.message.clone())
    }

    /// Messages newest first.
    pub fn iter_rev(&self) -> impl Iterator<Item = &Message> {
        let mut cur = self.head.as_deref();
        std::iter::from_fn(move || {
            let cell = cur?;
            cur = cell.prev.as_deref();
            Some(&*cell.message)
        })
    }

    /// Messages oldest first, as stored.
    pub fn to_vec(&self) -> Vec<&Message> {
        let mut out: Vec<&Message> = Vec::with_capacity(self.len());
        out.extend(self.iter_rev());
        out.reverse();
        out
    }

    /// The messages a chat model must receive, in protocol order:
    ///
    /// 1. every system message first (then `extra_system`, in order);
    /// 2. each tool result right after the AI message that asked for it,
    ///    in the order of the calls: an AI message's results are the tool
    ///    messages that follow it, up to the next AI message (servers reuse
    ///    call ids across turns, `call_0` or `call_abc123` every turn, so an
    ///    id alone does not say which turn a result answers);
    /// 3. a call without a result gets a synthetic error result
    ///    ([`TOOL_NOT_EXECUTED`]) — chat APIs reject dangling calls;
    /// 4. a tool result that answers no call of the AI message before it is
    ///    dropped (chat APIs reject it too), with a `tracing` warning.
    ///
    /// Consecutive AI messages are kept apart, never merged.
    pub fn assemble<'a>(&'a self, extra_system: &'a [String]) -> Vec<Cow<'a, Message>> {
        let all = self.to_vec();
        let mut out: Vec<Cow<'a, Message>> = Vec::with_capacity(all.len() + extra_system.len());
        out.extend(
            all.iter()
                .filter(|m| matches!(m, Message::System { .. }))
                .map(|m| Cow::Borrowed(*m)),
        );
        out.extend(
            extra_system
                .iter()
                .map(|s| Cow::Owned(Message::system(s.clone()))),
        );
        // The calls of the latest AI message: what a tool result may answer.
        let mut open_calls: &[crate::message::ToolCall] = &[];
        for (i, m) in all.iter().enumerate() {
            match m {
                Message::System { .. } => {}
                Message::Tool { tool_call_id, .. } => {
                    if !open_calls.iter().any(|c| c.id == *tool_call_id) {
                        tracing::warn!(
                            tool_call_id,
                            "dropping a tool result that answers no call of the AI message before it"
                        );
                    }
                }
                Message::Ai { tool_calls, .. } if !tool_calls.is_empty() => {
                    open_calls = tool_calls;
                    out.push(Cow::Borrowed(*m));
                    let turn = &all[i + 1..];
                    let turn = &turn[..turn
                        .iter()
                        .position(|m| matches!(m, Message::Ai { .. }))
                        .unwrap_or(turn.len())];
                    for call in tool_calls {
                        let result = turn.iter().find(|r| {
                            matches!(r, Message::Tool { tool_call_id, .. } if *tool_call_id == call.id)
                        });
                        match result {
                            Some(result) => out.push(Cow::Borrowed(*result)),
                            None => out.push(Cow::Owned(Message::Tool {
                                content: TOOL_NOT_EXECUTED.to_string(),
                                tool_call_id: call.id.clone(),
                                name: Some(call.name.clone()),
                                status: crate::message::ToolStatus::Error,
                            })),
                        }
                    }
                }
                Message::Ai { .. } => {
                    open_calls = &[];
                    out.push(Cow::Borrowed(*m));
                }
                _ => out.push(Cow::Borrowed(*m)),
            }
        }
        out
    }
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.to_vec()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use serde_json::json;

    #[test]
    fn push_shares_the_prefix() {
        let a = History::new().push(Arc::new(Message::human("a")));
        let b = a.push(Arc::new(Message::ai("b")));
        let c = a.push(Arc::new(Message::ai("c")));
        assert_eq!(a.len(), 1);
        assert_eq!(b.len(), 2);
        assert!(b.parent().same_as(&c.parent()));
        assert_eq!(
            c.to_vec().iter().map(|m| m.text()).collect::<Vec<_>>(),
            ["a", "c"]
        );
    }

    #[test]
    fn deep_history_drops_without_overflow() {
        let mut h = History::new();
        let m = Arc::new(Message::human("x"));
        for _ in 0..1_000_000 {
            h = h.push(m.clone());
        }
        assert_eq!(h.len(), 1_000_000);
        drop(h);
    }

    #[test]
    fn assemble_orders_system_first_and_patches_dangling_calls() {
        let h = History::from_messages([
            Message::human("hi"),
            Message::system("be brief"),
            Message::ai_with_tools(
                "",
                vec![
                    ToolCall::new("c1", "ls", json!({})),
                    ToolCall::new("c2", "ls", json!({})),
                ],
            ),
            Message::human("interrupting"),
            Message::tool("listing", "c1"),
            Message::tool("stray", "nobody"),
            Message::ai("done"),
            Message::ai("still done"),
        ]);
        let extra = vec!["tools section".to_string()];
        let got: Vec<(String, String)> = h
            .assemble(&extra)
            .iter()
            .map(|m| (m.role().to_string(), m.text().to_string()))
            .collect();
        let want = [
            ("system", "be brief"),
            ("system", "tools section"),
            ("human", "hi"),
            ("ai", ""),
            ("tool", "listing"),
            ("tool", TOOL_NOT_EXECUTED),
            ("human", "interrupting"),
            ("ai", "done"),
            ("ai", "still done"),
        ];
        assert_eq!(
            got,
            want.map(|(a, b)| (a.to_string(), b.to_string())).to_vec()
        );
    }
}
