//! [`MemoryModifier`]: long-term memory in a conversation — relevant
//! memories and the latest summary in the system prompt, every finished
//! turn stored, a summary every N turns written in the background, and
//! the `remember` / `recall` tools.
//!
//! ```text
//!  chat request ─▶ search(user, the last human text, top k; not this session's turns)
//!               ─▶ system += "## Long-term memory" + latest summary + memories
//!  invoke done  ─▶ turn = human text + final answer ─▶ add(turn, tag session:<id>)
//!               │   human node metadata["memory_turn"] = entry id (stored once)
//!               └─ turns − summarized ≥ N ─▶ tokio::spawn ─▶ `summary` model ─▶ add(summary)
//!                                             (failure: logged, tried again after the next turn)
//! ```
//!
//! The user is the session's `metadata["user"]` ([`user_of`]), else the
//! modifier's default user. The session keeps the counts
//! (`metadata["memory_turns"]`, `metadata["memory_summarized_turns"]`), so
//! a resumed session goes on counting. Memory failures never fail a turn:
//! a search that fails leaves the prompt without memories, a turn that
//! cannot be stored is tried again at the end of the next invoke; both
//! are logged.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{
    Attachments, ChatRequest, History, InvokeOutcome, Message, ModelRoutes, NetworkModifier,
    NodeRef, Result, RunnableNetwork, Tool,
};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::task::JoinHandle;

use super::entry::{session_tag, MemoryEntry, MemoryKind, MemoryQuery};
use super::store::MemoryStore;
use super::tools::{format_entry, format_hit, user_of, Recall, Remember};

/// The user when the session names none.
pub(super) const DEFAULT_USER: &str = "default";

/// Session metadata: how many turns of the session memory stored.
pub const TURNS_KEY: &str = "memory_turns";

/// Session metadata: how many of those the latest summary covers.
pub const SUMMARIZED_KEY: &str = "memory_summarized_turns";

/// Human-node metadata: the id of the turn entry stored for it.
pub const TURN_KEY: &str = "memory_turn";

/// The model step that writes summaries (see `lc_agent::routing`).
pub(super) const SUMMARY_STEP: &str = "summary";

/// The system-prompt section's heading and what it says about the tools.
pub(super) const MEMORY_PROMPT: &str = "## Long-term memory

You remember this user across conversations. Use `remember` to store a lasting fact (a \
preference, a decision, a name) and `recall` to search what you remember when the user refers \
to something from before.";

/// The instructions of the summary model.
pub(super) const SUMMARY_PROMPT: &str =
    "You keep a running summary of a user's conversations with an \
assistant. Given the previous summary (if any) and the latest turns, write the new summary: \
the user's goals, decisions, preferences and open questions, in a few short paragraphs. Keep \
what still matters from the previous summary. Answer with the summary only.";

/// Long-term memory for a network (see the [module docs](super)).
///
/// ```
/// use lc_agent::{Attachments, HumanNode, RunnableNetwork, ScriptedChatModel};
/// use lc_agent_deepagent::memory::{MemoryEntry, MemoryKind, MemoryModifier, MemoryStore};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = MemoryStore::in_memory()?;
/// store.add(&MemoryEntry::new("alice", MemoryKind::Fact, "Alice's favourite editor is Helix")).await?;
///
/// let model = ScriptedChatModel::new(["You use Helix."]);
/// let net = RunnableNetwork::builder().default_node("chat").chat_model("m").model("m", model.clone()).build();
/// net.set_metadata("user", "alice".into());
/// net.add_modifier(MemoryModifier::new(store.clone()))?;
/// { let _s = net.enter(); HumanNode::new("Which editor do I like?"); }
/// net.invoke().await?;
///
/// // The fact went into the system prompt; the turn is stored.
/// let entries = store.entries("alice").await?;
/// assert_eq!(entries[1].text, "User: Which editor do I like?\nAssistant: You use Helix.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct MemoryModifier {
    id: String,
    store: MemoryStore,
    default_user: String,
    top_k: usize,
    summary_every: usize,
    background: Arc<Background>,
}

/// The summaries being written.
#[derive(Default)]
struct Background {
    /// Sessions with a summary on its way.
    running: Mutex<HashSet<uuid::Uuid>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for MemoryModifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryModifier")
            .field("store", &self.store)
            .field("default_user", &self.default_user)
            .field("top_k", &self.top_k)
            .field("summary_every", &self.summary_every)
            .finish_non_exhaustive()
    }
}

impl MemoryModifier {
    /// The modifier (id `memory`) over `store`: 5 memories per request, a
    /// summary every 8 turns, user `default` when the session names none.
    pub fn new(store: MemoryStore) -> Self {
        Self {
            id: "memory".to_string(),
            store,
            default_user: DEFAULT_USER.to_string(),
            top_k: 5,
            summary_every: 8,
            background: Arc::default(),
        }
    }

    /// The user when the session's metadata names none.
    #[must_use]
    pub(crate) fn default_user(mut self, user: impl Into<String>) -> Self {
        self.default_user = user.into();
        self
    }

    /// How many memories go into each request (0: none, only the summary).
    #[must_use]
    pub fn top_k(mut self, k: usize) -> Self {
        self.top_k = k;
        self
    }

    /// A summary every `n` stored turns (0: never).
    #[must_use]
    pub fn summary_every(mut self, n: usize) -> Self {
        self.summary_every = n;
        self
    }

    /// Waits for the summaries being written (before a process exits, say).
    pub async fn flush(&self) {
        loop {
            let tasks: Vec<JoinHandle<()>> = std::mem::take(&mut *self.background.tasks.lock());
            if tasks.is_empty() {
                return;
            }
            for task in tasks {
                if let Err(e) = task.await {
                    tracing::warn!(error = %e, "a memory summary task failed");
                }
            }
        }
    }

    /// The system-prompt section for a request whose last human text is `question`.
    async fn section(&self, network: &RunnableNetwork, user: &str, question: &str) -> String {
        let mut section = MEMORY_PROMPT.to_string();
        match self.store.latest(user, MemoryKind::Summary).await {
            Ok(Some(summary)) => {
                section.push_str("\n\nSummary of earlier conversations:\n");
                section.push_str(summary.text.trim());
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(user, error = %e, "memory: could not read the latest summary"),
        }
        if self.top_k > 0 && !question.trim().is_empty() {
            let query = MemoryQuery::new(question)
                .limit(self.top_k)
                .kind(MemoryKind::Fact)
                .kind(MemoryKind::Turn)
                .exclude_tag(session_tag(network.session().id()));
            match self.store.search(user, &query).await {
                Ok(hits) if !hits.is_empty() => {
                    section.push_str(
                        "\n\nWhat you remember that may be relevant (most relevant first):\n",
                    );
                    let lines: Vec<String> = hits.iter().map(format_hit).collect();
                    section.push_str(&lines.join("\n"));
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(user, error = %e, "memory: search failed; answering without memories")
                }
            }
        }
        section
    }

    /// Stores the turn that just finished, once.
    async fn store_turn(&self, network: &RunnableNetwork) {
        let Some((human, text)) = finished_turn(network) else {
            return;
        };
        let session = network.session();
        let user = user_of(network, &self.default_user);
        let entry = MemoryEntry::new(user.clone(), MemoryKind::Turn, text)
            .with_tags([session_tag(session.id())]);
        if let Err(e) = self.store.add(&entry).await {
            tracing::warn!(user, error = %e, "memory: could not store the turn; trying again after the next invoke");
            return;
        }
        human.set_metadata(TURN_KEY, Value::String(entry.id.clone()));
        let turns = count(&session, TURNS_KEY) + 1;
        session.set_metadata(TURNS_KEY, turns.into());
        if self.summary_every > 0
            && turns >= count(&session, SUMMARIZED_KEY) + self.summary_every as u64
        {
            self.spawn_summary(network, user, turns);
        }
    }

    fn spawn_summary(&self, network: &RunnableNetwork, user: String, turns: u64) {
        let session = network.session();
        if !self.background.running.lock().insert(session.id()) {
            return;
        }
        let model = network
            .model_for_step(SUMMARY_STEP)
            .and_then(|name| network.model(&name).map(|m| (name, m)));
        let store = self.store.clone();
        let background = self.background.clone();
        let task = tokio::spawn(async move {
            let done = async {
                let (name, model) = model.ok_or_else(|| {
                    format!(
                        "no model for the `{SUMMARY_STEP}` step (route it with set_model_route)"
                    )
                })?;
                let since = count(&session, SUMMARIZED_KEY);
                let fresh = turns.saturating_sub(since) as usize;
                let tag = session_tag(session.id());
                let recent = store
                    .search(
                        &user,
                        &MemoryQuery::new("")
                            .kind(MemoryKind::Turn)
                            .tag(tag.clone())
                            .limit(fresh),
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                let previous = store
                    .latest(&user, MemoryKind::Summary)
                    .await
                    .map_err(|e| e.to_string())?;
                let mut input = String::new();
                if let Some(previous) = previous {
                    input.push_str(&format!("Previous summary:\n{}\n\n", previous.text.trim()));
                }
                input.push_str("Latest turns:\n");
                for hit in recent.iter().rev() {
                    input.push_str(&format_entry(&hit.entry));
                    input.push('\n');
                }
                let request = ChatRequest::new(History::from_messages([
                    Message::system(SUMMARY_PROMPT),
                    Message::human(input),
                ]));
                let response = model
                    .complete(&request)
                    .await
                    .map_err(|e| format!("model {name}: {e}"))?;
                if response.content.trim().is_empty() {
                    return Err(format!("model {name} wrote an empty summary"));
                }
                let summary =
                    MemoryEntry::new(user.clone(), MemoryKind::Summary, response.content.trim())
                        .with_tags([tag]);
                store.add(&summary).await.map_err(|e| e.to_string())?;
                session.set_metadata(SUMMARIZED_KEY, turns.into());
                Ok::<(), String>(())
            };
            if let Err(e) = done.await {
                tracing::warn!(user, error = %e, "memory: the summary failed; trying again after the next turn");
            }
            background.running.lock().remove(&session.id());
        });
        self.background.tasks.lock().push(task);
    }
}

/// A count kept in the session's metadata.
fn count(session: &RunnableNetwork, key: &str) -> u64 {
    session
        .metadata_value(key)
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

/// The turn that just finished, when it is not stored yet: its human node
/// and the text to store (what the user said, the final answer).
fn finished_turn(network: &RunnableNetwork) -> Option<(NodeRef, String)> {
    let leaf = network.current_leaf()?;
    let answer = leaf.output()?;
    if !matches!(answer.as_ref(), Message::Ai { tool_calls, .. } if tool_calls.is_empty()) {
        return None;
    }
    let mut node = leaf;
    let human = loop {
        if matches!(node.output().as_deref(), Some(Message::Human { .. })) {
            break node;
        }
        node = network.parents(node.id()).into_iter().next()?;
    };
    if human.metadata_value(TURN_KEY).is_some() {
        return None;
    }
    let question = human.output()?.text().trim().to_string();
    let answer = answer.text().trim();
    if question.is_empty() && answer.is_empty() {
        return None;
    }
    Some((human, format!("User: {question}\nAssistant: {answer}")))
}

#[async_trait]
impl NetworkModifier for MemoryModifier {
    fn id(&self) -> &str {
        &self.id
    }

    async fn on_chat_request(
        &self,
        network: &RunnableNetwork,
        _node: &NodeRef,
        request: &mut ChatRequest,
    ) -> Result<()> {
        let question = request
            .history
            .iter_rev()
            .find(|m| matches!(m, Message::Human { .. }))
            .map(|m| m.text().to_string())
            .unwrap_or_default();
        let user = user_of(network, &self.default_user);
        let section = self.section(network, &user, &question).await;
        request.system.push(section);
        Ok(())
    }

    async fn on_end_invoke(
        &self,
        network: &RunnableNetwork,
        outcome: &InvokeOutcome,
    ) -> Result<()> {
        if *outcome == InvokeOutcome::Completed {
            self.store_turn(network).await;
        }
        Ok(())
    }

    fn tools(&self, _network: &RunnableNetwork) -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(Remember::new(self.store.clone(), self.default_user.clone())),
            Arc::new(Recall::new(self.store.clone(), self.default_user.clone())),
        ]
    }
}
