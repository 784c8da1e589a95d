//! Summarization: a long conversation keeps fitting its model's context
//! window. Nothing is deleted: a summary is a node, and requests below it
//! send the system messages, the summary and the messages after its cut
//! point (see [`lc_agent::history`]).
//!
//! ```text
//!  chat node about to run ─▶ on_pre_invoke: triggers?
//!     tokens of the next request ≥ fraction × context window (0.85)
//!     tokens of the next request ≥ an absolute limit
//!     human turns since the last summary ≥ N (only when configured)
//!        │ yes
//!        ▼
//!  old = messages since the last cut, except the newest 6 (an AI message
//!        and its tool results are never split)
//!  `summary` step model(previous summary + old) ──fails──▶ nothing changes; retried
//!        │ ok                                              at the next trigger
//!        ▼
//!  backend.append("/conversation_history/<session-id>.md", old)   (the session's files)
//!  parents ─▶ SummaryNode(kept) ─▶ chat node      NetworkEvent::SummaryWritten
//! ```
//!
//! The context window of a model is, in order: the blueprint's entry for
//! it ([`ContextWindows`]), what the model says
//! ([`ChatModel::context_window`](lc_agent::ChatModel::context_window):
//! configured, or learned from its server), the table of well-known
//! models, the default. A request that still does not fit after the
//! summary (a huge message, a window smaller than the system prompt and
//! tools) fails before it is sent with
//! [`ModelError::ContextOverflow`](lc_agent::ModelError::ContextOverflow),
//! saying how many tokens it has and how many fit — unless the window is
//! only the default guess, when the server decides.
//!
//! The summary model is the route of step [`SUMMARY_STEP`] (see
//! [`lc_agent::routing`]), else the network's chat model. Each summary
//! rolls the previous one forward, so its request is as small as the
//! messages it adds.
//!
//! **On demand.** [`compact`] (a chat's `/compact`) writes a summary now,
//! by the same path and into the same node kind: one request to the
//! summary model, the older messages appended to the history file, and a
//! [`SummaryNode`](lc_agent::SummaryNode) after the current leaf, so the
//! next request sends the summary instead of the turns it stands for.
//!
//! ```text
//!  ... human ─▶ chat ─▶ summary (kept = 0) ─▶ next human ─▶ chat   request: system + summary + next
//! ```

use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::CHAT_STEP;
use lc_agent::{
    Attachments, ChatNode, ChatRequest, History, Message, ModelRoutes, NetworkError,
    NetworkModifier, NodeRef, Result, RunnableNetwork, SummaryExt, UsageExt,
};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::tokens::{counter_for_model, ContextWindows, TokenCounter};
use crate::window_fit::{
    answer_room, ask_tokenizer, BytesBound, Calibration, Overhead, SMALL_WINDOW,
};
use lc_agent_filesystem::{BackendSource, StateBackend};

/// The model-routing step of summary requests.
pub const SUMMARY_STEP: &str = "summary";

/// The modifier's id.
pub(crate) const SUMMARIZATION_ID: &str = "summarization";

/// Where the older history is written: `<dir>/<session-id>.md`.
pub(crate) const HISTORY_DIR: &str = "/conversation_history";

/// The system prompt of a summary request.
pub(crate) const SUMMARY_PROMPT: &str =
    "You write the running summary of a conversation between a \
user and an AI agent, so that the agent can continue the work without the older messages. \
Keep: the user's goals and requests, decisions and their reasons, facts learned (file paths, \
names, numbers, errors), what was done with which tools and what came of it, and what is still \
open. Leave out pleasantries and repetition. Write plain prose and short lists, at most a few \
hundred words. Answer with the updated summary only.";

/// The text that opens a summary in requests.
pub(crate) const SUMMARY_HEADING: &str = "Summary of the earlier conversation";

/// Characters of one message a summary request shows at most (the
/// history file keeps everything).
const MESSAGE_CAP: usize = 4_000;

/// How summaries are triggered and what they keep (serializable: it is
/// part of an agent blueprint).
///
/// ```
/// use lc_agent_deepagent::SummarizationConfig;
///
/// let config = SummarizationConfig {
///     trigger_tokens: Some(50_000),
///     ..SummarizationConfig::default()
/// };
/// assert_eq!(config.trigger_fraction, Some(0.85));
/// assert_eq!(config.keep_messages, 6);
/// // No summary by turn count unless asked for.
/// assert_eq!(SummarizationConfig::default().every_human_turns, None);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SummarizationConfig {
    /// Summarize when the next request would reach this fraction of the
    /// model's context window (`None`: never by fraction).
    pub trigger_fraction: Option<f64>,
    /// Summarize when the next request would reach this many tokens.
    pub trigger_tokens: Option<usize>,
    /// Summarize every this many human turns (`None`, the default: never
    /// by turns; summaries come when a request nears the context window).
    pub every_human_turns: Option<usize>,
    /// The newest messages kept verbatim (more when that would split an
    /// AI message from its tool results).
    pub keep_messages: usize,
    /// Context windows per model.
    pub context_windows: ContextWindows,
    /// Count tokens approximately even where the real tokenizer is built
    /// in.
    pub approximate_tokens: bool,
    /// The folder of the history files.
    pub history_dir: String,
}

impl Default for SummarizationConfig {
    fn default() -> Self {
        Self {
            trigger_fraction: Some(0.85),
            trigger_tokens: None,
            every_human_turns: None,
            keep_messages: 6,
            context_windows: ContextWindows::default(),
            approximate_tokens: false,
            history_dir: HISTORY_DIR.to_string(),
        }
    }
}

/// Why a summary could not be written (the conversation stays as it was;
/// the next trigger tries again).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SummaryError {
    /// No route for the `summary` step and no chat model.
    #[error("no model for the `summary` step and no chat model")]
    NoModel,
    /// The summary model is not registered.
    #[error("no chat model named `{0}` is registered for summaries")]
    UnknownModel(String),
    /// The summary model failed.
    #[error("the summary model failed: {0}")]
    Model(#[from] lc_agent::ModelError),
    /// The summary model answered with no text.
    #[error("the summary model `{0}` answered with no text")]
    Empty(String),
}

/// Why a summary was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Trigger {
    /// The request reached the fraction of the context window.
    Fraction,
    /// The request reached the absolute token limit.
    Tokens,
    /// Enough human turns since the last summary.
    Turns,
    /// Asked for ([`compact`]).
    Asked,
}

/// Why [`compact`] wrote no summary (the conversation stays as it was).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// The conversation has no messages since the latest summary beyond
    /// the ones to keep.
    #[error("nothing to summarize: no messages since the latest summary")]
    Nothing,
    /// The node to summarize after has not run (a turn is still pending).
    #[error("a turn is still pending; finish it before summarizing")]
    Pending,
    /// The summary model failed or gave no text.
    #[error(transparent)]
    Summary(#[from] SummaryError),
    /// The history file could not be written.
    #[error("the history file {path} could not be written: {message}")]
    History {
        /// The file.
        path: String,
        /// What the backend said.
        message: String,
    },
    /// The summary node could not join the graph.
    #[error(transparent)]
    Network(#[from] NetworkError),
}

/// What [`compact`] wrote.
#[derive(Debug, Clone)]
pub struct Compaction {
    /// The summary node (after the node summarized up to).
    pub node: NodeRef,
    /// Messages summarized this time (those since the previous summary's
    /// cut, system messages aside; the previous summary is rolled in).
    pub summarized: usize,
    /// Messages before the summary still sent verbatim.
    pub kept: usize,
    /// Estimated tokens of the next request before the summary (its
    /// messages, plus the system sections and tools of the latest
    /// request this summarizer saw).
    pub tokens_before: usize,
    /// The same estimate with the summary.
    pub tokens_after: usize,
    /// The summary model's name.
    pub model: String,
}

/// The network's summarizer: its [`SummarizationModifier`] when one is
/// attached (its settings, backend and token counter), else a default one
/// writing the history file to the session's own files.
pub fn summarizer_of(network: &RunnableNetwork) -> SummarizationModifier {
    network
        .modifier_as::<SummarizationModifier>(SUMMARIZATION_ID)
        .unwrap_or_default()
}

/// Summarizes the conversation up to the current leaf now, keeping no
/// message verbatim: one request to the summary model, then a summary
/// node after the leaf, so the next request sends the system messages,
/// the summary and what follows it (see the module docs of `summarization.rs`).
///
/// ```
/// use lc_agent::{ChatRequest, HumanNode, RunnableNetwork, ScriptedChatModel};
/// use lc_agent_deepagent::compact;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// // An offline stand-in: it answers the turn, then writes the summary.
/// let model = ScriptedChatModel::new(["a long answer about many things", "The user asked; it was answered."]);
/// let net = RunnableNetwork::builder().default_node("chat").chat_model("m").model("m", model).build();
/// { let _scope = net.enter(); HumanNode::new("a long question about many things"); }
/// net.invoke().await?;
/// let done = compact(&net).await?;
/// assert_eq!((done.summarized, done.kept), (2, 0));
/// assert!(done.tokens_after < done.tokens_before);
/// assert_eq!(ChatRequest::new(net.history()).messages().len(), 1, "the summary alone");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub async fn compact(network: &RunnableNetwork) -> std::result::Result<Compaction, CompactError> {
    let leaf = network.current_leaf().ok_or(CompactError::Nothing)?;
    summarizer_of(network)
        .compact_after(network, &leaf, 0)
        .await
}

/// Summarizes the conversation before a chat node when a trigger fires
/// (see the module docs of `summarization.rs`).
///
/// ```
/// use lc_agent::{Attachments, HumanNode, RunnableNetwork, ScriptedChatModel, SummaryNode};
/// use lc_agent_deepagent::{SummarizationConfig, SummarizationModifier};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// // An offline stand-in: it answers each turn, and writes the summary.
/// let model = ScriptedChatModel::new(["one", "two", "The user counted.", "three"]);
/// let net = RunnableNetwork::builder().default_node("chat").chat_model("m").model("m", model).build();
/// let config = SummarizationConfig {
///     every_human_turns: Some(2),
///     keep_messages: 1,
///     ..SummarizationConfig::default()
/// };
/// net.add_modifier(SummarizationModifier::new(config))?;
/// for text in ["1", "2", "3"] {
///     { let _scope = net.enter(); HumanNode::new(text); }
///     net.invoke().await?;
/// }
/// assert!(net.nodes().iter().any(|n| n.kind() == SummaryNode::KIND));
/// assert_eq!(net.history().latest_summary().unwrap().kept, 1);
/// # Ok::<(), lc_agent::NetworkError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct SummarizationModifier {
    config: Arc<SummarizationConfig>,
    backend: BackendSource,
    counter: Option<Arc<dyn TokenCounter>>,
    /// The latest request's parts beyond its messages (system sections
    /// and tool specs), seen in `on_chat_request`: the next request's
    /// estimate adds their tokens.
    overhead: Arc<Mutex<Overhead>>,
    /// The estimate's correction by the server's own counts
    /// (`window_fit.rs`).
    calibration: Arc<Mutex<Calibration>>,
}

impl std::fmt::Debug for SummarizationModifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummarizationModifier")
            .field("config", &self.config)
            .field("backend", &self.backend)
            .field("counter", &self.counter)
            .finish()
    }
}

impl Default for SummarizationModifier {
    fn default() -> Self {
        Self::new(SummarizationConfig::default())
    }
}

impl SummarizationModifier {
    /// A summarizer with this configuration, writing the history file to
    /// the session's own files ([`StateBackend`]).
    pub fn new(config: SummarizationConfig) -> Self {
        Self {
            config: Arc::new(config),
            backend: StateBackend::factory().into(),
            counter: None,
            overhead: Arc::new(Mutex::new(Overhead::default())),
            calibration: Arc::new(Mutex::new(Calibration::default())),
        }
    }

    /// Writes the history file through this backend (the file tools' own,
    /// so that `read_file` finds it).
    #[must_use]
    pub fn backend(mut self, backend: impl Into<BackendSource>) -> Self {
        self.backend = backend.into();
        self
    }

    /// Counts tokens with this counter (default: the one for the model,
    /// see [`counter_for_model`]).
    #[must_use]
    pub fn counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = Some(counter);
        self
    }

    /// The path of a session's history file.
    pub(crate) fn history_path(&self, network: &RunnableNetwork) -> String {
        format!(
            "{}/{}.md",
            self.config.history_dir.trim_end_matches('/'),
            network.session().id()
        )
    }

    fn counter_for(&self, model: &str) -> Arc<dyn TokenCounter> {
        match &self.counter {
            Some(c) => c.clone(),
            None if self.config.approximate_tokens => Arc::new(crate::tokens::ApproxCounter),
            None => counter_for_model(model),
        }
    }

    /// [`Self::counter_for`], with a tokenizer's first load (a fraction of
    /// a second of CPU) off the async threads, so that nothing else waits
    /// on it (a Ctrl-C, the other tasks of a server).
    async fn counter_loaded(&self, model: &str) -> Arc<dyn TokenCounter> {
        if self.counter.is_some() || self.config.approximate_tokens {
            return self.counter_for(model);
        }
        let name = model.to_string();
        match tokio::task::spawn_blocking(move || counter_for_model(&name)).await {
            Ok(counter) => counter,
            Err(_) => Arc::new(crate::tokens::ApproxCounter),
        }
    }

    /// Tokens of the latest request's system sections and tool specs, by
    /// `counter`.
    fn overhead_tokens(&self, counter: &dyn TokenCounter) -> usize {
        self.overhead.lock().tokens(counter)
    }

    /// The fewest tokens that fire a token trigger for a `window`-token
    /// model, if any token trigger is set.
    fn token_limit(&self, window: usize) -> Option<usize> {
        let config = &self.config;
        let fraction = config
            .trigger_fraction
            .map(|f| (f * window as f64).ceil().max(0.0) as usize);
        match (config.trigger_tokens, fraction) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Which trigger fires for a request of `input` to `model`, and the
    /// estimated tokens.
    ///
    /// The real tokenizer loads only when its count can matter: a byte
    /// count bounds a byte-level tokenizer's tokens from above, so while
    /// that bound stays under every token trigger only the turn trigger
    /// can fire, and a summary about to be written (a model call) is
    /// counted exactly for its record.
    async fn trigger(
        &self,
        input: &History,
        model: &str,
        window: usize,
    ) -> (Option<Trigger>, usize) {
        let config = &self.config;
        // The human turns since the latest summary: counted only when a
        // turn count can trigger one (a walk over the recent messages).
        let humans = || {
            let after = input.latest_summary().map_or(0, |s| s.position);
            input
                .since_cut()
                .iter()
                .filter(|(pos, m)| *pos > after && matches!(m, Message::Human { .. }))
                .count()
        };
        let request = ChatRequest::new(input.clone());
        let bound = if self.counter.is_some() || self.config.approximate_tokens {
            None
        } else {
            let bytes = BytesBound.count_request(&request) + self.overhead_tokens(&BytesBound);
            Some(self.calibration.lock().scale(bytes))
        };
        let turns_due = config
            .every_human_turns
            .is_some_and(|n| n > 0 && humans() >= n);
        if let Some(bound) = bound
            && self.token_limit(window).is_none_or(|limit| bound < limit)
            && !turns_due
        {
            return (None, bound);
        }
        let counter = self.counter_loaded(model).await;
        let tokens = self
            .calibration
            .lock()
            .scale(counter.count_request(&request) + self.overhead_tokens(&*counter));
        let trigger = if config.trigger_tokens.is_some_and(|limit| tokens >= limit) {
            Some(Trigger::Tokens)
        } else if config.trigger_fraction.is_some()
            && self
                .token_limit(window)
                .is_some_and(|limit| tokens >= limit)
        {
            Some(Trigger::Fraction)
        } else if turns_due {
            Some(Trigger::Turns)
        } else {
            None
        };
        (trigger, tokens)
    }

    /// The context window of the model registered as `model`, and whether
    /// it is known (not the default guess): see the module docs of `summarization.rs`.
    async fn window(&self, network: &RunnableNetwork, model: &str) -> (usize, bool) {
        let windows = &self.config.context_windows;
        if let Some(window) = windows.own_window(model) {
            return (window, true);
        }
        if let Some(chat_model) = network.model(model)
            && let Some(window) = chat_model.context_window().await
        {
            return (window, true);
        }
        match ContextWindows::known_window(model) {
            Some(window) => (window, true),
            None => (windows.default_window(), false),
        }
    }

    /// Summarizes the conversation up to `after` (a node that has run)
    /// now, keeping its newest `keep` messages verbatim (more when that
    /// would split an AI message from its tool results); the summary node
    /// goes after `after` (see [`compact`]).
    pub async fn compact_after(
        &self,
        network: &RunnableNetwork,
        after: &NodeRef,
        keep: usize,
    ) -> std::result::Result<Compaction, CompactError> {
        if !after.is_invoked() {
            let before = network.input_of(after);
            return Err(if before.since_cut().is_empty() {
                CompactError::Nothing
            } else {
                CompactError::Pending
            });
        }
        let history = network.history_of(after);
        let recent = history.since_cut();
        let first_kept = plan_cut(&recent, keep).ok_or(CompactError::Nothing)?;
        let model = network.model_for_step(CHAT_STEP).unwrap_or_default();
        let counter = self.counter_loaded(&model).await;
        let overhead = self.overhead_tokens(&*counter);
        let tokens_before = counter.count_request(&ChatRequest::new(history.clone())) + overhead;
        crate::hooks::pre_compact(network, "manual").await;
        let (text, mut meta, path) = self
            .write_summary(network, &history, &recent, first_kept)
            .await?;
        let kept = kept_of(&history, &recent, first_kept);
        let summarizer = meta
            .get("chat_model_name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        meta.insert("trigger".into(), json!(Trigger::Asked));
        meta.insert("tokens_before".into(), json!(tokens_before));
        meta.insert("history_file".into(), json!(path));
        let node = network.append_summary(after, text, kept, meta)?;
        let tokens_after =
            counter.count_request(&ChatRequest::new(network.history_of(&node))) + overhead;
        node.set_metadata("tokens_after", json!(tokens_after));
        Ok(Compaction {
            node,
            summarized: first_kept,
            kept,
            tokens_before,
            tokens_after,
            model: summarizer,
        })
    }

    /// The shared path of every summary: asks the summary model (the
    /// previous summary rolled forward, the messages of `recent` before
    /// `first_kept`), appends those messages to the history file. The
    /// summary text, what its node records, and the history file.
    async fn write_summary(
        &self,
        network: &RunnableNetwork,
        history: &History,
        recent: &[(usize, &Message)],
        first_kept: usize,
    ) -> std::result::Result<(String, Map<String, Value>, String), CompactError> {
        let old = &recent[..first_kept];
        let previous = history.latest_summary();
        let (text, meta) = self
            .summarize(network, previous.as_ref().map(|s| s.message.text()), old)
            .await?;
        let path = self.history_path(network);
        let mut chunk = format!(
            "## Messages {} to {}\n\n",
            old.first().map_or(0, |m| m.0),
            old.last().map_or(0, |m| m.0)
        );
        for (_, m) in old {
            chunk.push_str(&transcript_line(m, None));
        }
        let backend = self.backend.resolve(network);
        backend
            .append(&path, &chunk)
            .await
            .map_err(|e| CompactError::History {
                path: path.clone(),
                message: e.to_string(),
            })?;
        Ok((text, meta, path))
    }

    /// Asks the summary model; the summary text and what the node records.
    async fn summarize(
        &self,
        network: &RunnableNetwork,
        previous: Option<&str>,
        old: &[(usize, &Message)],
    ) -> std::result::Result<(String, Map<String, Value>), SummaryError> {
        let name = network
            .model_for_step(SUMMARY_STEP)
            .ok_or(SummaryError::NoModel)?;
        let model = network
            .model(&name)
            .ok_or_else(|| SummaryError::UnknownModel(name.clone()))?;
        let mut ask = String::new();
        if let Some(previous) = previous {
            ask.push_str("The summary so far:\n\n");
            ask.push_str(strip_heading(previous));
            ask.push_str("\n\nThe conversation that followed:\n\n");
        } else {
            ask.push_str("The conversation:\n\n");
        }
        for (_, m) in old {
            ask.push_str(&transcript_line(m, Some(MESSAGE_CAP)));
        }
        let request = ChatRequest::new(History::from_messages([
            Message::system(SUMMARY_PROMPT),
            Message::human(ask),
        ]));
        // Traced as `summarize` around a `chat {model}` call (feature
        // `otel` of lc-agent; nothing otherwise).
        let summary_span = lc_agent::telemetry::summary_span();
        let chat_span =
            summary_span.in_scope(|| lc_agent::telemetry::chat_span(&name, SUMMARY_STEP));
        let response = {
            use tracing::Instrument;
            model
                .complete(&request)
                .instrument(chat_span.clone())
                .instrument(summary_span)
                .await?
        };
        let text = response.content.trim();
        if text.is_empty() {
            return Err(SummaryError::Empty(name));
        }
        let mut meta = Map::new();
        meta.insert("chat_model_name".into(), json!(name));
        let usage = match response.usage {
            Some(usage) => usage,
            None => network.usage_estimator().estimate(&request, &response),
        };
        let counted_as = match response.model.as_deref().filter(|m| !m.is_empty()) {
            Some(model) => {
                meta.insert(lc_agent::RESPONSE_MODEL_KEY.into(), json!(model));
                model
            }
            None => name.as_str(),
        };
        // The summary's call counts in the session's totals like a turn's.
        network.record_usage(counted_as, &usage);
        lc_agent::telemetry::record_chat(&chat_span, &request, &response, &usage);
        meta.insert(lc_agent::TOKEN_USAGE_KEY.into(), json!(usage));
        Ok((format!("{SUMMARY_HEADING}:\n\n{text}"), meta))
    }
}

/// The model a chat node will ask (its own, its step's route, the
/// network's).
fn model_of(network: &RunnableNetwork, chat: &ChatNode) -> String {
    chat.chat_model_name
        .clone()
        .or_else(|| network.model_for_step(chat.step.as_deref().unwrap_or(CHAT_STEP)))
        .unwrap_or_default()
}

/// The summary text without its heading.
fn strip_heading(summary: &str) -> &str {
    summary
        .strip_prefix(SUMMARY_HEADING)
        .and_then(|s| s.strip_prefix(":"))
        .map_or(summary, str::trim_start)
}

/// One message as a markdown transcript entry.
fn transcript_line(m: &Message, cap: Option<usize>) -> String {
    let text = m.text();
    let text = match cap {
        Some(cap) if text.chars().count() > cap => {
            let cut: String = text.chars().take(cap).collect();
            format!("{cut} [... {} more characters]", text.chars().count() - cap)
        }
        _ => text.to_string(),
    };
    let gap = if text.is_empty() { "" } else { " " };
    let mut out = match m {
        Message::Tool { name, .. } => {
            format!(
                "**tool** `{}`:{gap}{text}\n",
                name.as_deref().unwrap_or("?")
            )
        }
        other => format!("**{}**:{gap}{text}\n", other.role()),
    };
    for call in m.tool_calls() {
        out.push_str(&format!("  - calls `{}` {}\n", call.name, call.arguments));
    }
    out.push('\n');
    out
}

/// How many messages before a summary written at the end of `history`
/// stay verbatim when the kept ones start at `recent[first_kept]`.
fn kept_of(history: &History, recent: &[(usize, &Message)], first_kept: usize) -> usize {
    recent
        .get(first_kept)
        .map_or(0, |(position, _)| history.len() + 1 - position)
}

/// Where the kept messages start: an index into `recent` that keeps at
/// least `keep` messages and never leaves a tool result without the AI
/// message before it. `None` when nothing would be left to summarize.
fn plan_cut(recent: &[(usize, &Message)], keep: usize) -> Option<usize> {
    if keep == 0 {
        return (!recent.is_empty()).then_some(recent.len());
    }
    let mut cut = recent.len().checked_sub(keep)?;
    while cut > 0 && matches!(recent[cut].1, Message::Tool { .. }) {
        cut -= 1;
    }
    (cut > 0).then_some(cut)
}

#[async_trait]
impl NetworkModifier for SummarizationModifier {
    fn id(&self) -> &str {
        SUMMARIZATION_ID
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    /// Late, so that it sees the system sections of the other modifiers.
    fn priority(&self) -> i32 {
        100
    }

    /// A sub-agent's (or a route's) conversation is summarized by the same
    /// rules; its request overhead is its own.
    fn for_sub_network(&self) -> Option<Arc<dyn NetworkModifier>> {
        Some(Arc::new(SummarizationModifier {
            overhead: Arc::new(Mutex::new(Overhead::default())),
            ..self.clone()
        }))
    }

    async fn on_chat_request(
        &self,
        network: &RunnableNetwork,
        node: &NodeRef,
        request: &mut ChatRequest,
    ) -> Result<()> {
        let model = node
            .downcast::<ChatNode>()
            .map(|chat| model_of(network, chat))
            .unwrap_or_default();
        *self.overhead.lock() = Overhead {
            system: request.system.clone(),
            tools: request.tools.clone(),
        };
        let (window, known) = self.window(network, &model).await;
        if !known {
            return Ok(());
        }
        // A small window: a bounded answer (the server's default is the
        // rest of the window), and every request counted, so that the
        // server's count calibrates the estimate.
        let room = answer_room(window);
        if let Some(room) = room
            && request.sampling.max_tokens.is_none()
        {
            request.sampling.max_tokens = u32::try_from(room).ok();
        }
        // Under the byte bound's window, no tokenizer is needed to know
        // that the request fits.
        let exact = self.counter.is_some() || self.config.approximate_tokens;
        if !exact && window >= SMALL_WINDOW && BytesBound.count_request(request) <= window {
            return Ok(());
        }
        let counter = self.counter_loaded(&model).await;
        let estimate = counter.count_request(request);
        let chat_model = network.model(&model);
        ask_tokenizer(&self.calibration, chat_model.as_deref(), request, &*counter).await;
        let tokens = {
            let mut calibration = self.calibration.lock();
            calibration.sent(node.id(), estimate);
            calibration.scale(estimate)
        };
        if tokens > window {
            return Err(lc_agent::ModelError::ContextOverflow {
                tokens: Some(tokens),
                window: Some(window),
            }
            .into());
        }
        Ok(())
    }

    /// The server's count of a request this modifier estimated
    /// calibrates the next estimates (`window_fit.rs`).
    async fn on_post_invoke(&self, _network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        if node.downcast::<ChatNode>().is_none() {
            return Ok(());
        }
        let usage = node
            .metadata_value(lc_agent::TOKEN_USAGE_KEY)
            .and_then(|v| serde_json::from_value::<lc_agent::Usage>(v).ok());
        match usage {
            Some(usage) if !usage.estimated => self
                .calibration
                .lock()
                .observed(node.id(), usage.prompt_tokens),
            _ => {}
        }
        Ok(())
    }

    async fn on_pre_invoke(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        let Some(chat) = node.downcast::<ChatNode>() else {
            return Ok(());
        };
        if node.is_invoked() || chat.step.as_deref() == Some(SUMMARY_STEP) {
            return Ok(());
        }
        let model = model_of(network, chat);
        let input = network.input_of(node);
        let (window, _) = self.window(network, &model).await;
        // Whether a summary is due costs O(new messages) a turn (memoized
        // counts); the recent messages are gathered only when one is.
        let (Some(trigger), tokens) = self.trigger(&input, &model, window).await else {
            return Ok(());
        };
        let recent = input.since_cut();
        let Some(first_kept) = plan_cut(&recent, self.config.keep_messages) else {
            tracing::debug!(?trigger, "a summary is due, but every message is kept");
            return Ok(());
        };
        let kept = kept_of(&input, &recent, first_kept);
        crate::hooks::pre_compact(network, "auto").await;
        let (text, mut meta, path) = match self
            .write_summary(network, &input, &recent, first_kept)
            .await
        {
            Ok(done) => done,
            Err(e) => {
                tracing::warn!(error = %e, ?trigger, "the summary failed; the conversation stays as it is and the next trigger retries");
                return Ok(());
            }
        };
        meta.insert("trigger".into(), json!(trigger));
        meta.insert("tokens_before".into(), json!(tokens));
        meta.insert("history_file".into(), json!(path));
        network.insert_summary(node, text, kept, meta)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lc_agent::ToolCall;

    #[test]
    fn the_cut_never_splits_a_tool_call_from_its_results() {
        let msgs = [
            Message::human("q"),
            Message::ai_with_tools(
                "",
                vec![
                    ToolCall::new("a", "ls", json!({})),
                    ToolCall::new("b", "ls", json!({})),
                ],
            ),
            Message::tool("1", "a"),
            Message::tool("2", "b"),
            Message::ai("done"),
        ];
        let recent: Vec<(usize, &Message)> =
            msgs.iter().enumerate().map(|(i, m)| (i + 1, m)).collect();
        // Keeping 2 would start at a tool result: back to its AI message.
        assert_eq!(plan_cut(&recent, 2), Some(1));
        assert_eq!(plan_cut(&recent, 1), Some(4));
        assert_eq!(plan_cut(&recent, 5), None);
        assert_eq!(plan_cut(&recent, 3), Some(1));
        assert_eq!(plan_cut(&recent, 0), Some(5), "keeping none summarizes all");
        assert_eq!(plan_cut(&[], 0), None);
    }

    #[test]
    fn headings_are_stripped_before_rolling_forward() {
        assert_eq!(strip_heading(&format!("{SUMMARY_HEADING}:\n\nabc")), "abc");
        assert_eq!(strip_heading("plain"), "plain");
    }
}
