//! The model's memory tools: `remember` stores a lasting fact about the
//! user, `recall` searches everything remembered (facts, past turns,
//! summaries).
//!
//! ```text
//!  remember {text, tags?}  ─▶ MemoryStore::add(fact)     ─▶ "Remembered: ..."
//!  recall {query, limit?}  ─▶ MemoryStore::search(user)  ─▶ "- [fact 2026-11-20] ..." lines
//! ```
//!
//! The user is the session's ([`user_of`]); a store that fails gives the
//! model an `Error: ...` result, never an aborted run.

use lc_agent::{
    tool_args, tool_args::AtLeast, RunnableNetwork, ToolContext, ToolError, ToolOutput, TypedTool,
};
use serde::Deserialize;
use serde_json::{json, Value};

use super::entry::{MemoryEntry, MemoryHit, MemoryKind, MemoryQuery};
use super::store::MemoryStore;

/// The session metadata key naming the session's user.
pub const USER_KEY: &str = "user";

/// The `remember` tool's name.
pub(super) const REMEMBER: &str = "remember";

/// The `recall` tool's name.
pub(super) const RECALL: &str = "recall";

/// Most hits `recall` returns.
const MAX_RECALL: usize = 20;

/// The user a network works for: its session's `metadata["user"]` when
/// that is a valid user name, else `fallback`.
pub(crate) fn user_of(network: &RunnableNetwork, fallback: &str) -> String {
    network
        .session()
        .metadata_value(USER_KEY)
        .and_then(|v| v.as_str().map(str::to_string))
        .filter(|u| lc_agent::validate_user(u).is_ok())
        .unwrap_or_else(|| fallback.to_string())
}

/// One memory as the model reads it.
pub(super) fn format_hit(hit: &MemoryHit) -> String {
    format_entry(&hit.entry)
}

/// One entry as the model reads it: `- [kind date] text` (continuation
/// lines indented).
pub(super) fn format_entry(entry: &MemoryEntry) -> String {
    format!(
        "- [{} {}] {}",
        entry.kind,
        entry.created_at.format("%Y-%m-%d"),
        entry.text.trim().replace('\n', "\n  ")
    )
}

/// The arguments of `remember` (read by [`lc_agent::tool_args`]).
#[derive(Deserialize)]
pub struct RememberArgs<'a> {
    /// The fact.
    pub text: &'a str,
    /// Labels (none when absent).
    pub tags: Option<Vec<String>>,
}

/// The `remember` tool: stores a fact for the session's user.
#[derive(Debug, Clone)]
pub struct Remember {
    store: MemoryStore,
    default_user: String,
}

impl Remember {
    /// The tool over `store`, for `default_user` when the session names none.
    pub fn new(store: MemoryStore, default_user: impl Into<String>) -> Self {
        Self {
            store,
            default_user: default_user.into(),
        }
    }
}

impl TypedTool for Remember {
    const NAME: &'static str = REMEMBER;
    type Args<'a> = RememberArgs<'a>;

    fn description(&self) -> &str {
        "Store a lasting fact about the user or their work (a preference, a decision, a name, \
         a setting) so that you remember it in later conversations. One fact per call, \
         written so it makes sense on its own."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The fact, self-contained."},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Optional labels."}
            },
            "required": ["text"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Self::Args<'_>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let user = user_of(&ctx.network, &self.default_user);
        let entry = MemoryEntry::new(user, MemoryKind::Fact, args.text.trim())
            .with_tags(args.tags.unwrap_or_default());
        match self.store.add(&entry).await {
            Ok(()) => Ok(ToolOutput::ok(format!("Remembered: {}", entry.text))),
            Err(e) => Ok(ToolOutput::error(format!(
                "Error: could not remember that: {e}"
            ))),
        }
    }
}

/// The arguments of `recall` (read by [`lc_agent::tool_args`]).
#[derive(Deserialize)]
pub struct RecallArgs<'a> {
    /// What to look for.
    pub query: &'a str,
    /// At most this many memories (default 5, at most 20).
    pub limit: Option<AtLeast<1>>,
}

/// The `recall` tool: searches the session's user's memories.
#[derive(Debug, Clone)]
pub struct Recall {
    store: MemoryStore,
    default_user: String,
}

impl Recall {
    /// The tool over `store`, for `default_user` when the session names none.
    pub fn new(store: MemoryStore, default_user: impl Into<String>) -> Self {
        Self {
            store,
            default_user: default_user.into(),
        }
    }
}

impl TypedTool for Recall {
    const NAME: &'static str = RECALL;
    type Args<'a> = RecallArgs<'a>;

    fn description(&self) -> &str {
        "Search what you remember about the user from earlier conversations: facts, past \
         turns and summaries, most relevant first. Use it when the user refers to something \
         from before that is not in this conversation."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for, in plain words."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RECALL, "description": "At most this many memories (default 5)."}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Self::Args<'_>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let limit = args.limit.map_or(MemoryQuery::DEFAULT_LIMIT, AtLeast::get);
        if limit > MAX_RECALL {
            return Err(tool_args::invalid(
                RECALL,
                format!("`limit` must be at most {MAX_RECALL}, got {limit}"),
            ));
        }
        let user = user_of(&ctx.network, &self.default_user);
        let query = MemoryQuery::new(args.query).limit(limit);
        match self.store.search(&user, &query).await {
            Ok(hits) if hits.is_empty() => Ok(ToolOutput::ok("No memories match.")),
            Ok(hits) => Ok(ToolOutput::ok(
                hits.iter().map(format_hit).collect::<Vec<_>>().join("\n"),
            )),
            Err(e) => Ok(ToolOutput::error(format!(
                "Error: could not search memories: {e}"
            ))),
        }
    }
}
