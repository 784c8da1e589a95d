//! Events a network reports while it changes and runs: the one way out of
//! a run for a UI, a progress bar or a log, without polling.
//!
//! ```text
//!  InvokeStarted
//!    NodeAdded ... NodeInvoked | NodeFailed
//!    ToolCallStarted ─▶ ToolCallFinished (status, duration)
//!    Delta ... (streaming)      EmptyAnswer (a model said nothing)
//!                               AnswerCutOff (a model hit its output limit)
//!    SummaryWritten (a summary node joined the conversation)
//!    HookRan (a user's hook command ran: its event, outcome and message)
//!    Steered (a message sent during the run joined it: steering.rs)
//!  InvokeFinished (outcome, duration)
//! ```
//!
//! A sub-network reports to its own subscribers.

use std::sync::Arc;
use std::time::Duration;

use crate::message::ToolStatus;
use crate::model::StreamDelta;
use crate::node::NodeId;
use crate::run::InvokeOutcome;

/// Something that happened in a network.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum NetworkEvent {
    /// A node was added.
    NodeAdded {
        /// The new node.
        node_id: NodeId,
    },
    /// A node ran and has its output.
    NodeInvoked {
        /// The node that ran.
        node_id: NodeId,
    },
    /// A node was removed.
    NodeRemoved {
        /// The removed node.
        node_id: NodeId,
    },
    /// A piece of a streamed model answer.
    Delta {
        /// The chat node producing it.
        node_id: NodeId,
        /// The piece.
        delta: StreamDelta,
    },
    /// `invoke` began (it holds the network's run lock from here).
    InvokeStarted,
    /// `invoke` ended, after the end hooks.
    InvokeFinished {
        /// How it ended.
        outcome: InvokeOutcome,
        /// How long it took.
        elapsed: Duration,
    },
    /// A node failed; it stays pending and its `metadata["error"]` says
    /// the same.
    NodeFailed {
        /// The node.
        node_id: NodeId,
        /// The error's text.
        error: String,
    },
    /// A tool node started its call.
    ToolCallStarted {
        /// The tool node.
        node_id: NodeId,
        /// The call's id, as the model gave it.
        tool_call_id: String,
        /// The tool's name.
        name: String,
    },
    /// A tool node finished its call (errors included: they are results).
    ToolCallFinished {
        /// The tool node.
        node_id: NodeId,
        /// The call's id, as the model gave it.
        tool_call_id: String,
        /// The tool's name.
        name: String,
        /// Whether the result is a success or an error.
        status: ToolStatus,
        /// How long the call took.
        elapsed: Duration,
    },
    /// A model answered with no text and no tool calls (some servers drop
    /// a streamed tool call this way). The run goes on; the chat node
    /// records `metadata["empty_answer"] = true`.
    EmptyAnswer {
        /// The chat node.
        node_id: NodeId,
    },
    /// A model stopped because it reached its output limit (finish reason
    /// `length`): the answer is cut off. The run goes on; the chat node
    /// records `metadata["cut_off"] = true`, and
    /// [`RunnableNetwork::continue_cut_off`](crate::RunnableNetwork::continue_cut_off)
    /// asks the model to go on.
    AnswerCutOff {
        /// The chat node.
        node_id: NodeId,
    },
    /// A summary node joined the graph (see
    /// [`SummaryExt::insert_summary`](crate::SummaryExt::insert_summary)):
    /// requests below it send it instead of the older messages.
    SummaryWritten {
        /// The summary node.
        node_id: NodeId,
        /// Messages right before it that stay verbatim.
        kept: usize,
        /// Messages before those (the ones it stands for, earlier
        /// summaries included).
        summarized: usize,
    },
    /// A message sent while the network ran (its
    /// [`Inbox`](crate::Inbox)) was read at a node boundary: it joined
    /// the conversation as `node_id` (a human node), or, an interrupt
    /// with nothing to say, stopped the run (`node_id` none).
    Steered {
        /// The message's id.
        id: uuid::Uuid,
        /// How it joined: `inject`, `queue` or `interrupt`.
        mode: &'static str,
        /// The human node it became.
        node_id: Option<NodeId>,
    },
    /// A user's hook command ran (the `hooks` of a settings file, run by
    /// the agent layer): what it decided, or how it failed. Reported so a
    /// failing or hanging hook is never silent.
    HookRan {
        /// The tool node it ran for, if any.
        node_id: Option<NodeId>,
        /// The hook event (`PreToolUse`, `Stop`, ...).
        event: String,
        /// The command as the settings wrote it.
        command: String,
        /// `ok`, `blocked`, `failed` or `timed_out`.
        outcome: String,
        /// What it said: the reason of a block, the error of a failure.
        message: String,
    },
}

pub(crate) type Callback = Arc<dyn Fn(&NetworkEvent) + Send + Sync>;
