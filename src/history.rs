//! The conversation a chat node reads, shared between nodes.
//!
//! A [`History`] is a persistent list: a node's history is its parent's
//! history plus the parent's output, built in O(1) by pointing at the
//! parent's list. Ten thousand turns therefore cost ten thousand small
//! allocations, not fifty million copies; the full list is only walked when
//! a model actually reads it ([`History::assemble`]).
//!
//! **Summaries.** A message pushed with [`History::push_summary`] stands
//! for the conversation before it, except its newest `kept` messages. Each
//! cell also points at the conversation's system messages so far and at
//! the latest summary, so a request costs O(messages since the summary's
//! cut point), however long the conversation is:
//!
//! ```text
//!  positions   1 ........ c-1 | c ........ s-1 | s (summary, kept = s-c) | s+1 ... head
//!              summarized       kept verbatim                               after it
//!  assemble:   system messages + extra sections + summary + c..s-1 + s+1..head
//! ```

use std::borrow::Cow;
use std::sync::Arc;

use crate::message::Message;

struct Cell {
    message: Arc<Message>,
    prev: Option<Arc<Cell>>,
    len: usize,
    /// The conversation's system messages up to here (summaries left
    /// out), oldest first: a history of their own.
    systems: History,
    /// The latest summary at or before this message.
    summary: Option<Arc<Mark>>,
    /// Memoized running sums of [`History::count_sent`]: per counter key,
    /// the count of the messages a request may send verbatim (not system
    /// messages, not summaries) from the first message up to this one.
    /// Kept inline (no allocation per message).
    sums: parking_lot::Mutex<[Option<(&'static str, u64)>; MAX_COUNTERS]>,
}

/// How many counters' running sums a message keeps (the estimate of last
/// resort and a tokenizer's; more counters still count right, only
/// without the memo).
const MAX_COUNTERS: usize = 2;

impl Cell {
    /// Whether a request may send this message verbatim after the cut
    /// point (system messages go first, a summary stands apart).
    fn counted(&self) -> bool {
        let is_summary = self.summary.as_deref().is_some_and(|m| m.at == self.len);
        !is_summary && !matches!(*self.message, Message::System { .. })
    }

    fn memo(&self, key: &'static str) -> Option<u64> {
        self.sums
            .lock()
            .iter()
            .flatten()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }
}

/// Where a summary sits and what it stands for.
struct Mark {
    message: Arc<Message>,
    /// The summary's own position (1-based).
    at: usize,
    /// How many messages right before it stay verbatim.
    kept: usize,
    /// The history up to the cut point (positions `1..cut`): what the
    /// summary stands for.
    before_cut: History,
}

impl Mark {
    /// The position of the first message a request still sends verbatim.
    fn cut(&self) -> usize {
        self.at.saturating_sub(self.kept).max(1)
    }
}

/// The latest summary of a [`History`] (see [`History::latest_summary`]).
#[derive(Debug, Clone)]
pub struct SummaryInfo {
    /// The summary message.
    pub message: Arc<Message>,
    /// Its position in the history (1-based).
    pub position: usize,
    /// How many messages right before it stay verbatim in requests.
    pub kept: usize,
}

impl SummaryInfo {
    /// The position of the first message that requests still send
    /// verbatim (1-based); everything before it is summarized.
    #[cfg(test)]
    pub(crate) fn cut(&self) -> usize {
        self.position.saturating_sub(self.kept).max(1)
    }
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
pub(crate) const TOOL_NOT_EXECUTED: &str = "Error: tool call was not executed";

impl History {
    /// An empty history.
    pub(crate) fn new() -> Self {
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
    pub(crate) fn push(&self, message: Arc<Message>) -> History {
        let systems = match (&*message, &self.head) {
            (Message::System { .. }, _) => self.systems().push_plain(message.clone()),
            (_, Some(cell)) => cell.systems.clone(),
            (_, None) => History::new(),
        };
        let summary = self.head.as_ref().and_then(|c| c.summary.clone());
        self.push_cell(message, systems, summary)
    }

    /// This history with a summary at the end: `message` stands for
    /// everything before it except its newest `kept` messages (O(1)).
    /// Requests then send the system messages, this summary, those `kept`
    /// messages and whatever follows (see [`History::assemble`]); the
    /// history itself keeps every message.
    pub(crate) fn push_summary(&self, message: Arc<Message>, kept: usize) -> History {
        let at = self.len() + 1;
        let kept = kept.min(self.len());
        let mut before_cut = self.clone();
        for _ in 0..kept {
            before_cut = before_cut.parent();
        }
        let mark = Arc::new(Mark {
            message: message.clone(),
            at,
            kept,
            before_cut,
        });
        self.push_cell(message, self.systems(), Some(mark))
    }

    /// This history plus the newest message of `other`, a summary staying
    /// a summary (how sibling histories join).
    pub(crate) fn push_last_of(&self, other: &History) -> History {
        match other.head.as_deref() {
            None => self.clone(),
            Some(cell) => match cell.summary.as_deref() {
                Some(mark) if mark.at == cell.len => {
                    self.push_summary(cell.message.clone(), mark.kept)
                }
                _ => self.push(cell.message.clone()),
            },
        }
    }

    fn push_cell(
        &self,
        message: Arc<Message>,
        systems: History,
        summary: Option<Arc<Mark>>,
    ) -> History {
        History {
            head: Some(Arc::new(Cell {
                message,
                prev: self.head.clone(),
                len: self.len() + 1,
                systems,
                summary,
                sums: parking_lot::Mutex::new([None; MAX_COUNTERS]),
            })),
        }
    }

    /// A push for the list of system messages itself (no bookkeeping).
    fn push_plain(&self, message: Arc<Message>) -> History {
        self.push_cell(message, History::new(), None)
    }

    /// The system messages so far (summaries left out), oldest first.
    fn systems(&self) -> History {
        self.head
            .as_ref()
            .map(|c| c.systems.clone())
            .unwrap_or_default()
    }

    /// The latest summary, if the history has one.
    pub fn latest_summary(&self) -> Option<SummaryInfo> {
        let mark = self.head.as_ref()?.summary.as_deref()?;
        Some(SummaryInfo {
            message: mark.message.clone(),
            position: mark.at,
            kept: mark.kept,
        })
    }

    /// The messages after the latest summary's cut point (all of them
    /// without a summary), oldest first, each with its position (1-based);
    /// system messages and summaries are left out. O(messages since the
    /// cut point).
    pub fn since_cut(&self) -> Vec<(usize, &Message)> {
        let cut = self
            .head
            .as_ref()
            .and_then(|c| c.summary.as_deref())
            .map_or(1, Mark::cut);
        let mut out = Vec::new();
        let mut cur = self.head.as_deref();
        while let Some(cell) = cur {
            if cell.len < cut {
                break;
            }
            let is_summary = cell.summary.as_deref().is_some_and(|m| m.at == cell.len);
            if !is_summary && !matches!(*cell.message, Message::System { .. }) {
                out.push((cell.len, &*cell.message));
            }
            cur = cell.prev.as_deref();
        }
        out.reverse();
        out
    }

    /// `count` added up over the messages a request sends
    /// ([`ChatRequest::messages`](crate::ChatRequest::messages)):
    /// the system messages, `extra_system`, the latest summary and the
    /// messages since its cut point. The running sums are memoized per
    /// message under `key` (name the counting: two different counts must
    /// not share a key), so counting a growing conversation at every turn
    /// costs O(new messages) a turn, not O(conversation).
    ///
    /// The synthetic results a request adds for dangling tool
    /// calls, and the stray results it drops, are not accounted for: this
    /// is for estimates.
    ///
    /// ```
    /// use lc_agent::{History, Message};
    ///
    /// let h = History::from_messages([Message::system("be brief"), Message::human("hi"), Message::ai("hello")]);
    /// let chars = |m: &Message| m.text().len() as u64;
    /// assert_eq!(h.count_sent(&["extra".to_string()], "bytes", &chars), 8 + 5 + 2 + 5);
    /// ```
    pub fn count_sent(
        &self,
        extra_system: &[String],
        key: &'static str,
        count: &dyn Fn(&Message) -> u64,
    ) -> u64 {
        let systems: u64 = self.systems().iter_rev().map(count).sum();
        let extra: u64 = extra_system
            .iter()
            .map(|s| count(&Message::system(s.clone())))
            .sum();
        let mark = self.head.as_ref().and_then(|c| c.summary.as_deref());
        let (summary, before) = match mark {
            Some(mark) => (
                count(&mark.message),
                mark.before_cut.running_sum(key, count),
            ),
            None => (0, 0),
        };
        let since_cut = self.running_sum(key, count).saturating_sub(before);
        systems + extra + summary + since_cut
    }

    /// The count of the messages a request may send verbatim, from the
    /// first up to the newest, memoized per cell under `key`: walks back
    /// to the newest memoized cell only.
    fn running_sum(&self, key: &'static str, count: &dyn Fn(&Message) -> u64) -> u64 {
        let mut pending: smallvec::SmallVec<[&Cell; 4]> = smallvec::SmallVec::new();
        let mut sum = 0;
        let mut cur = self.head.as_deref();
        while let Some(cell) = cur {
            if let Some(memo) = cell.memo(key) {
                sum = memo;
                break;
            }
            pending.push(cell);
            cur = cell.prev.as_deref();
        }
        for cell in pending.into_iter().rev() {
            if cell.counted() {
                sum += count(&cell.message);
            }
            let mut sums = cell.sums.lock();
            if !sums.iter().flatten().any(|(k, _)| *k == key)
                && let Some(free) = sums.iter_mut().find(|s| s.is_none())
            {
                *free = Some((key, sum));
            }
        }
        sum
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
    pub(crate) fn same_as(&self, other: &History) -> bool {
        match (&self.head, &other.head) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    /// The history without its newest message.
    pub(crate) fn parent(&self) -> History {
        History {
            head: self.head.as_ref().and_then(|c| c.prev.clone()),
        }
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
    /// 1. every system message first (then `extra_system`, in order, then
    ///    the latest summary, when there is one: the messages it stands for
    ///    are left out, and the cost is O(messages since its cut point));
    /// 2. each tool result right after the AI message that asked for it,
    ///    in the order of the calls: an AI message's results are the tool
    ///    messages that follow it, up to the next AI message (servers reuse
    ///    call ids across turns, `call_0` or `call_abc123` every turn, so an
    ///    id alone does not say which turn a result answers);
    /// 3. a call without a result gets a synthetic error result
    ///    (`Error: tool call was not executed`) — chat APIs reject dangling calls;
    /// 4. a tool result that answers no call of the AI message before it is
    ///    dropped (chat APIs reject it too), with a `tracing` warning.
    ///
    /// Consecutive AI messages are kept apart, never merged.
    pub(crate) fn assemble<'a>(&'a self, extra_system: &'a [String]) -> Vec<Cow<'a, Message>> {
        let all: Vec<&Message> = self.since_cut().into_iter().map(|(_, m)| m).collect();
        let systems = self
            .head
            .as_ref()
            .map(|c| c.systems.to_vec())
            .unwrap_or_default();
        let mut out: Vec<Cow<'a, Message>> =
            Vec::with_capacity(systems.len() + extra_system.len() + 1 + all.len());
        out.extend(systems.into_iter().map(Cow::Borrowed));
        out.extend(
            extra_system
                .iter()
                .map(|s| Cow::Owned(Message::system(s.clone()))),
        );
        if let Some(mark) = self.head.as_ref().and_then(|c| c.summary.as_deref()) {
            out.push(Cow::Borrowed(&*mark.message));
        }
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
                                parts: Vec::new(),
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

    fn roles_and_texts(h: &History) -> Vec<(String, String)> {
        h.assemble(&[])
            .iter()
            .map(|m| (m.role().to_string(), m.text().to_string()))
            .collect()
    }

    #[test]
    fn a_summary_replaces_what_it_stands_for() {
        let h = History::from_messages([
            Message::system("rules"),
            Message::human("q1"),
            Message::ai("a1"),
            Message::human("q2"),
            Message::ai_with_tools("", vec![ToolCall::new("c1", "ls", json!({}))]),
            Message::tool("listing", "c1"),
        ]);
        // Keeps the AI message and its result; stands for q1, a1, q2.
        let h = h.push_summary(Arc::new(Message::system("SUMMARY 1")), 2);
        let h = h.push(Arc::new(Message::ai("a2")));
        let h = h.push(Arc::new(Message::system("late rule")));
        assert_eq!(h.len(), 9, "the history keeps every message");
        let want = [
            ("system", "rules"),
            ("system", "late rule"),
            ("system", "SUMMARY 1"),
            ("ai", ""),
            ("tool", "listing"),
            ("ai", "a2"),
        ];
        assert_eq!(
            roles_and_texts(&h),
            want.map(|(a, b)| (a.to_string(), b.to_string())).to_vec()
        );
        let info = h.latest_summary().unwrap();
        assert_eq!((info.position, info.kept, info.cut()), (7, 2, 5));
        assert_eq!(
            h.since_cut()
                .iter()
                .map(|(p, m)| (*p, m.text()))
                .collect::<Vec<_>>(),
            [(5, ""), (6, "listing"), (8, "a2")]
        );

        // A second summary keeps the first one's kept messages out and
        // only the latest summary is sent.
        let h = h
            .push(Arc::new(Message::human("q3")))
            .push_summary(Arc::new(Message::system("SUMMARY 2")), 1)
            .push(Arc::new(Message::ai("a3")));
        let want = [
            ("system", "rules"),
            ("system", "late rule"),
            ("system", "SUMMARY 2"),
            ("human", "q3"),
            ("ai", "a3"),
        ];
        assert_eq!(
            roles_and_texts(&h),
            want.map(|(a, b)| (a.to_string(), b.to_string())).to_vec()
        );
        // Sibling joins keep a summary a summary.
        let joined = h.parent().parent().push_last_of(&h.parent());
        assert_eq!(joined.latest_summary().unwrap().message.text(), "SUMMARY 2");
    }

    #[test]
    fn assembling_after_a_summary_walks_only_the_recent_messages() {
        let mut h = History::from_messages([Message::system("rules")]);
        for i in 0..50_000 {
            h = h.push(Arc::new(Message::human(format!("q{i}"))));
        }
        h = h.push_summary(Arc::new(Message::system("S")), 4);
        h = h.push(Arc::new(Message::ai("latest")));
        assert_eq!(h.since_cut().len(), 5);
        assert_eq!(h.assemble(&[]).len(), 7);
    }

    #[test]
    fn count_sent_counts_what_assemble_sends() {
        let mut h = History::from_messages([Message::system("rules"), Message::human("old")]);
        for i in 0..20 {
            h = h.push(Arc::new(Message::human(format!("question {i}"))));
            h = h.push(Arc::new(Message::ai(format!("answer {i}"))));
        }
        let len = |m: &Message| m.text().len() as u64;
        let sent = |h: &History, extra: &[String]| -> u64 {
            h.assemble(extra)
                .iter()
                .map(|m| m.text().len() as u64)
                .sum()
        };
        let extra = vec!["tools".to_string()];
        assert_eq!(h.count_sent(&extra, "len", &len), sent(&h, &extra));
        h = h.push_summary(Arc::new(Message::system("a summary")), 3);
        h = h.push(Arc::new(Message::system("late rules")));
        h = h.push(Arc::new(Message::human("next")));
        assert_eq!(h.count_sent(&extra, "len", &len), sent(&h, &extra));
        // A second summary, keeping nothing.
        h = h.push_summary(Arc::new(Message::system("S2")), 0);
        h = h.push(Arc::new(Message::ai("after")));
        assert_eq!(h.count_sent(&[], "len", &len), sent(&h, &[]));
    }

    #[test]
    fn count_sent_counts_each_message_once_as_a_conversation_grows() {
        // Quadratic estimates made a 15,000-turn session take minutes: each
        // turn must count only its new messages.
        let calls = std::sync::atomic::AtomicU64::new(0);
        let count = |m: &Message| {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            m.text().len() as u64
        };
        let mut h = History::from_messages([Message::system("rules")]);
        let turns = 2_000u64;
        for i in 0..turns {
            h = h.push(Arc::new(Message::human(format!("q{i}"))));
            h.count_sent(&[], "counting", &count);
            h = h.push(Arc::new(Message::ai("ok")));
        }
        // Per turn: the system message (walked, not memoized) and the two
        // new messages.
        assert!(
            calls.load(std::sync::atomic::Ordering::Relaxed) <= 3 * turns,
            "{} counts for {turns} turns",
            calls.load(std::sync::atomic::Ordering::Relaxed)
        );
        let want: u64 = h
            .since_cut()
            .iter()
            .map(|(_, m)| m.text().len() as u64)
            .sum::<u64>()
            + 5;
        assert_eq!(h.count_sent(&[], "counting", &count), want);
    }
}
