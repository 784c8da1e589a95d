//! What the models were asked and answered, added up: per model call (a
//! node's `metadata["token_usage"]`), per run, per session (the network's
//! `metadata["usage"]`, kept current as the network runs), per sub-agent
//! (an inner network's usage counts in every network around it) and per
//! user over a time range (add sessions' [`UsageTotals::between`]).
//!
//! ```text
//!  ChatModel ─▶ ChatResponse.usage (or an estimate, `estimated: true`)
//!     │
//!     ▼ ChatNode records it
//!  node.metadata["token_usage"]          one call
//!  net.metadata["usage"]  (UsageTotals)  the session, updated per call,
//!     ▲                                  by model; an inner network's calls
//!     └─ inner network's calls ──────────  count in its outer networks too
//!  UsageTotals::since(&before)           a run: after minus before
//!  Prices::cost / UsageTotals::priced    dollars, for the models with a price
//! ```

use std::collections::BTreeMap;
use std::ops::AddAssign;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{ChatRequest, ChatResponse, Usage};
use crate::network::runtime::Attachments;
use crate::network::RunnableNetwork;
use crate::node::metadata::Entry;
use crate::nodes::NetworkNode;

/// The network metadata key holding its [`UsageTotals`].
pub const USAGE_KEY: &str = "usage";

/// The node metadata key holding one call's [`Usage`].
pub const TOKEN_USAGE_KEY: &str = "token_usage";

/// The node metadata key naming the model the server said answered (its
/// versioned name, `gpt-4o-mini-2024-07-18`), when it said one.
pub const RESPONSE_MODEL_KEY: &str = "response_model";

/// Token counts of one or more model calls.
///
/// ```
/// use lc_agent::{TokenCounts, Usage};
///
/// let mut counts = TokenCounts::default();
/// counts += &Usage { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, ..Usage::default() };
/// counts += &Usage { prompt_tokens: 20, completion_tokens: 1, total_tokens: 21, ..Usage::default() };
/// assert_eq!((counts.calls, counts.total_tokens), (2, 36));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCounts {
    /// Tokens in the prompts (cached ones included).
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Tokens generated (reasoning included).
    #[serde(default)]
    pub completion_tokens: u64,
    /// Both together.
    #[serde(default)]
    pub total_tokens: u64,
    /// Of the prompt tokens, those read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// Of the prompt tokens, those written to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// Of the completion tokens, those the model spent reasoning.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// How many model calls.
    #[serde(default)]
    pub calls: u64,
    /// Of the calls, those whose server reported no usage: their tokens
    /// are an estimate.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub estimated_calls: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl AddAssign<&Usage> for TokenCounts {
    fn add_assign(&mut self, usage: &Usage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(usage.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(usage.completion_tokens);
        self.total_tokens = self.total_tokens.saturating_add(usage.total_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(usage.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(usage.cache_write_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(usage.reasoning_tokens);
        self.calls = self.calls.saturating_add(1);
        if usage.estimated {
            self.estimated_calls = self.estimated_calls.saturating_add(1);
        }
    }
}

impl AddAssign<&TokenCounts> for TokenCounts {
    fn add_assign(&mut self, other: &TokenCounts) {
        for (mine, theirs) in self.fields_mut().into_iter().zip(other.fields()) {
            *mine = mine.saturating_add(theirs);
        }
    }
}

impl TokenCounts {
    /// The names of [`TokenCounts::fields`], as saved.
    const NAMES: [&'static str; 8] = [
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
        "calls",
        "estimated_calls",
    ];

    /// Adds these counts to `saved` (the JSON of counts) in place.
    fn add_to(&self, saved: &mut Value) {
        let Some(map) = saved.as_object_mut() else {
            *saved = serde_json::to_value(self).unwrap_or(Value::Null);
            return;
        };
        // One pass over the saved counts (a handful of keys, compared as
        // text: no hashing per count), then the counts not there yet, a
        // key copied only the first time.
        let fields = self.fields();
        let mut seen = [false; 8];
        for (key, entry) in map.iter_mut() {
            let Some(i) = Self::NAMES.iter().position(|name| *name == key.as_str()) else {
                continue;
            };
            seen[i] = true;
            if fields[i] != 0 {
                *entry = Value::from(entry.as_u64().unwrap_or(0).saturating_add(fields[i]));
            }
        }
        for ((name, n), seen) in Self::NAMES.iter().zip(fields).zip(seen) {
            if n != 0 && !seen {
                map.insert((*name).to_string(), Value::from(n));
            }
        }
    }

    fn fields(&self) -> [u64; 8] {
        [
            self.prompt_tokens,
            self.completion_tokens,
            self.total_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
            self.reasoning_tokens,
            self.calls,
            self.estimated_calls,
        ]
    }

    fn fields_mut(&mut self) -> [&mut u64; 8] {
        [
            &mut self.prompt_tokens,
            &mut self.completion_tokens,
            &mut self.total_tokens,
            &mut self.cache_read_tokens,
            &mut self.cache_write_tokens,
            &mut self.reasoning_tokens,
            &mut self.calls,
            &mut self.estimated_calls,
        ]
    }

    /// These counts less `earlier`'s (never below zero).
    pub(crate) fn since(&self, earlier: &TokenCounts) -> TokenCounts {
        let mut out = *self;
        for (mine, theirs) in out.fields_mut().into_iter().zip(earlier.fields()) {
            *mine = mine.saturating_sub(theirs);
        }
        out
    }

    /// Whether nothing was counted.
    pub(crate) fn is_empty(&self) -> bool {
        self.calls == 0 && self.total_tokens == 0
    }

    /// Whether some of the tokens are an estimate.
    pub fn is_estimated(&self) -> bool {
        self.estimated_calls > 0
    }
}

/// Token counts in all and by model: the usage of a run, a session, a user.
/// Saved in a network's metadata under [`USAGE_KEY`]; `usage.rs`'s module
/// docs say where the numbers come from.
///
/// ```
/// use lc_agent::{Prices, UsageTotals, Usage};
///
/// let mut totals = UsageTotals::default();
/// totals.add("gpt-4o-mini", &Usage { prompt_tokens: 1_000_000, completion_tokens: 0, total_tokens: 1_000_000, ..Usage::default() });
/// totals.add("my-local-model", &Usage { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12, ..Usage::default() });
/// assert_eq!(totals.all.total_tokens, 1_000_012);
/// // Only the model with a price costs something; the other shows tokens only.
/// let cost = Prices::built_in().cost(&totals);
/// assert_eq!(cost.usd, Some(0.15));
/// assert_eq!(cost.unpriced, vec!["my-local-model".to_string()]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageTotals {
    /// Every call together.
    #[serde(flatten)]
    pub all: TokenCounts,
    /// By the model that answered.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_model: BTreeMap<String, TokenCounts>,
}

impl UsageTotals {
    /// Counts one call of `model`.
    pub fn add(&mut self, model: &str, usage: &Usage) {
        self.all += usage;
        // The model is usually counted already: no key to allocate.
        match self.by_model.get_mut(model) {
            Some(counts) => *counts += usage,
            None => *self.by_model.entry(model.to_string()).or_default() += usage,
        }
    }

    /// Adds `other`'s counts to these.
    pub fn merge(&mut self, other: &UsageTotals) {
        self.all += &other.all;
        for (model, counts) in &other.by_model {
            *self.by_model.entry(model.clone()).or_default() += counts;
        }
    }

    /// These totals less `earlier`'s: what a run added, given the session's
    /// totals before and after it. Models with nothing left are dropped.
    pub fn since(&self, earlier: &UsageTotals) -> UsageTotals {
        let by_model = self
            .by_model
            .iter()
            .filter_map(|(model, counts)| {
                let rest = match earlier.by_model.get(model) {
                    Some(before) => counts.since(before),
                    None => *counts,
                };
                (!rest.is_empty()).then(|| (model.clone(), rest))
            })
            .collect();
        UsageTotals {
            all: self.all.since(&earlier.all),
            by_model,
        }
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// Added up from the nodes' `token_usage`, inner networks included.
    pub fn of_nodes(net: &RunnableNetwork) -> UsageTotals {
        let mut totals = UsageTotals::default();
        walk(net, &mut |model, usage, _| totals.add(model, usage));
        totals
    }

    /// Added up from the calls that started in `[from, to)` (RFC 3339
    /// times; `None` is open), inner networks included: a user's usage
    /// over a time range is the sum of this over their sessions.
    pub fn between(net: &RunnableNetwork, from: Option<&str>, to: Option<&str>) -> UsageTotals {
        let from = from.and_then(parse_time);
        let to = to.and_then(parse_time);
        let mut totals = UsageTotals::default();
        walk(net, &mut |model, usage, started| {
            let Some(at) = started else {
                // A call with no time counts only when the range is open.
                if from.is_none() && to.is_none() {
                    totals.add(model, usage);
                }
                return;
            };
            if from.is_some_and(|f| at < f) || to.is_some_and(|t| at >= t) {
                return;
            }
            totals.add(model, usage);
        });
        totals
    }
}

fn parse_time(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// Calls `f(model, usage, started_at)` for every node with a
/// `token_usage`, inner networks included.
/// When a call started (from its node's timings).
type Started = Option<chrono::DateTime<chrono::Utc>>;

fn walk(net: &RunnableNetwork, f: &mut dyn FnMut(&str, &Usage, Started)) {
    // A fork's copied nodes are its origin's calls: counted there, once.
    let inherited = crate::network::fork::inherited_nodes(net);
    let nodes = net.nodes();
    walk_nodes(nodes.iter().filter(|n| !inherited.contains(&n.id())), f);
}

/// The calls of these nodes (and of the networks inside them).
pub(crate) fn totals_of<'a>(nodes: impl Iterator<Item = &'a crate::node::NodeRef>) -> UsageTotals {
    let mut totals = UsageTotals::default();
    walk_nodes(nodes, &mut |model, usage, _| totals.add(model, usage));
    totals
}

fn walk_nodes<'a>(
    nodes: impl Iterator<Item = &'a crate::node::NodeRef>,
    f: &mut dyn FnMut(&str, &Usage, Started),
) {
    for node in nodes {
        if let Some(inner) = node.downcast::<NetworkNode>() {
            walk(inner.network(), f);
        }
        node.with_metadata(|meta| {
            let Some(usage) = meta.get(TOKEN_USAGE_KEY).and_then(Entry::usage) else {
                return;
            };
            let model = meta
                .get_str(RESPONSE_MODEL_KEY)
                .or_else(|| meta.get_str("chat_model_name"))
                .unwrap_or("unknown");
            let started = meta.get("timings").and_then(Entry::started_at);
            f(model, &usage, started);
        });
    }
}

/// Estimates a call's usage when the server reported none.
///
/// The default counts four characters a token; the deep
/// agent attaches a real tokenizer's count. Attach one with
/// [`UsageExt::set_usage_estimator`]; a sub-network uses its outer
/// network's.
pub trait UsageEstimator: Send + Sync {
    /// Tokens of `request` and of `response` (set
    /// [`Usage::estimated`]).
    fn estimate(&self, request: &ChatRequest, response: &ChatResponse) -> Usage;
}

/// The estimate of last resort: four characters a token (rounded up), four
/// tokens per message beyond its text.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ApproxUsage;

impl UsageEstimator for ApproxUsage {
    fn estimate(&self, request: &ChatRequest, response: &ChatResponse) -> Usage {
        let count = |text: &str| text.chars().count().div_ceil(4) as u64;
        let message = |m: &crate::Message| {
            4 + count(m.text())
                + m.tool_calls()
                    .iter()
                    .map(|c| count(&c.name) + count(&c.arguments))
                    .sum::<u64>()
        };
        // Memoized along the history: a turn costs O(its new messages),
        // not O(conversation) (see History::count_sent).
        let prompt = request
            .history
            .count_sent(&request.system, "lc-agent/approx", &message)
            // Counted once per tool list: the next turn offers the same.
            + request.tools.approx_tokens(|tools| {
                tools
                    .iter()
                    .map(|t| count(&t.name) + count(&t.description) + schema_tokens(&t.parameters))
                    .sum::<u64>()
            });
        let completion = count(&response.content)
            + response
                .tool_calls
                .iter()
                .map(|c| count(&c.name) + count(&c.arguments))
                .sum::<u64>();
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
            estimated: true,
            ..Usage::default()
        }
    }
}

/// How many schemas' counts are kept (see [`schema_tokens`]).
const MAX_SCHEMAS: usize = 64;

/// [`json_tokens`] of a tool's schema, remembered: every chat turn offers
/// the same tools as the turn before, and comparing a schema with one
/// counted lately costs far less than writing it out again.
fn schema_tokens(schema: &Value) -> u64 {
    static COUNTED: std::sync::Mutex<Vec<(Value, u64)>> = std::sync::Mutex::new(Vec::new());
    if let Ok(counted) = COUNTED.lock()
        && let Some((_, n)) = counted.iter().find(|(s, _)| same_json(s, schema))
    {
        return *n;
    }
    let n = json_tokens(schema);
    if let Ok(mut counted) = COUNTED.lock() {
        if counted.len() >= MAX_SCHEMAS {
            counted.remove(0);
        }
        counted.push((schema.clone(), n));
    }
    n
}

/// Whether two JSON values write the same text: equal, object keys in the
/// same order, numbers written alike (a schema built again in another
/// order is only not found).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_json(va, vb))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(va, vb)| same_json(va, vb))
        }
        (Value::Number(x), Value::Number(y)) => {
            x == y && x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits)
        }
        (a, b) => a == b,
    }
}

/// Four characters a token (rounded up) of `value`'s compact JSON text,
/// counted as it is written: no text is built.
fn json_tokens(value: &Value) -> u64 {
    /// Counts the characters of UTF-8 text written to it.
    struct Chars(usize);
    impl std::io::Write for Chars {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            // Every byte but a continuation byte starts a character.
            self.0 += buf.iter().filter(|b| (**b as i8) >= -0x40).count();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut chars = Chars(0);
    // Writing a `Value` to memory cannot fail.
    let _ = serde_json::to_writer(&mut chars, value);
    chars.0.div_ceil(4) as u64
}

/// The estimator a network was given, kept as its extension.
#[derive(Clone)]
struct Estimator(std::sync::Arc<dyn UsageEstimator>);

/// Token usage on a network: the totals kept in its metadata, one call
/// recorded, and the estimator used when a server reports none.
pub trait UsageExt {
    /// This network's usage so far: its metadata's totals when kept there
    /// (a network that ran with this version), else added up from its
    /// nodes ([`UsageTotals::of_nodes`]).
    fn usage(&self) -> UsageTotals;

    /// For a fork: the usage of the nodes it copied from its origin,
    /// counted there and not in [`usage`](UsageExt::usage) (empty for a
    /// network that is not a fork).
    fn inherited_usage(&self) -> UsageTotals;

    /// Counts one model call of `model` in this network's
    /// `metadata["usage"]` and in every network it runs inside (a
    /// sub-agent's calls are its parent's too). A network whose metadata
    /// has no totals yet (saved before they were kept) starts from its
    /// nodes. [`ChatNode`](crate::ChatNode) calls this; a node that calls a
    /// model some other way (a summary) should too, and record the usage
    /// in its own `metadata["token_usage"]`.
    fn record_usage(&self, model: &str, usage: &Usage);

    /// Sets how this network (and the networks inside it) estimates a
    /// call's usage when the server reports none (default: four characters a token).
    fn set_usage_estimator(&self, estimator: std::sync::Arc<dyn UsageEstimator>);

    /// The estimator in force: this network's, else its outer network's,
    /// else the default (four characters a token).
    fn usage_estimator(&self) -> std::sync::Arc<dyn UsageEstimator>;
}

impl UsageExt for RunnableNetwork {
    fn usage(&self) -> UsageTotals {
        self.metadata_value(USAGE_KEY)
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_else(|| UsageTotals::of_nodes(self))
    }

    fn inherited_usage(&self) -> UsageTotals {
        let inherited = crate::network::fork::inherited_nodes(self);
        if inherited.is_empty() {
            return UsageTotals::default();
        }
        let nodes = self.nodes();
        totals_of(nodes.iter().filter(|n| inherited.contains(&n.id())))
    }

    fn record_usage(&self, model: &str, usage: &Usage) {
        let mut call = TokenCounts::default();
        call += usage;
        let mut net = Some(self.clone());
        while let Some(current) = net {
            // The saved totals grow in place (a call per chat node: no
            // copy, parse or re-serialization of the totals).
            let added = current.with_metadata_mut(|metadata| {
                let Some(saved) = crate::network::json_get_mut(metadata, USAGE_KEY) else {
                    return false;
                };
                call.add_to(saved);
                if let Some(map) = saved.as_object_mut() {
                    match crate::network::json_get_mut(map, "by_model") {
                        Some(Value::Object(models)) => {
                            match crate::network::json_get_mut(models, model) {
                                Some(counts) => call.add_to(counts),
                                None => {
                                    models.insert(
                                        model.to_string(),
                                        serde_json::to_value(call).unwrap_or(Value::Null),
                                    );
                                }
                            }
                        }
                        // Not counts by model: left as it is.
                        Some(_) => {}
                        None => {
                            let mut models = serde_json::Map::new();
                            models.insert(
                                model.to_string(),
                                serde_json::to_value(call).unwrap_or(Value::Null),
                            );
                            map.insert("by_model".into(), Value::Object(models));
                        }
                    }
                }
                true
            });
            if !added {
                // Saved before totals were kept: start from its nodes.
                let mut totals = UsageTotals::of_nodes(&current);
                totals.add(model, usage);
                current.set_metadata(
                    USAGE_KEY,
                    serde_json::to_value(totals).unwrap_or(Value::Null),
                );
            }
            net = current.outer();
        }
    }

    fn set_usage_estimator(&self, estimator: std::sync::Arc<dyn UsageEstimator>) {
        self.set_extension(Estimator(estimator));
    }

    fn usage_estimator(&self) -> std::sync::Arc<dyn UsageEstimator> {
        match self.extension::<Estimator>() {
            Some(Estimator(e)) => e,
            None => match self.outer() {
                Some(outer) => outer.usage_estimator(),
                None => std::sync::Arc::new(ApproxUsage),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_tokens_counts_the_characters_of_the_json_text() {
        let value = serde_json::json!({
            "type": "object",
            "description": "naïve «quotes» \"escaped\" \\ and \n a tab\t, 日本語, 🦀",
            "n": [1, -2.5, 1e300, null, true],
        });
        let text = value.to_string();
        assert_eq!(json_tokens(&value), text.chars().count().div_ceil(4) as u64);
        assert_eq!(json_tokens(&serde_json::json!({})), 1);
    }

    #[test]
    fn a_schema_counted_again_is_found_only_when_it_writes_the_same() {
        let a = serde_json::json!({"type": "object", "properties": {"x": {"type": "integer"}}});
        assert_eq!(schema_tokens(&a), json_tokens(&a));
        assert_eq!(schema_tokens(&a.clone()), json_tokens(&a));
        let reordered =
            serde_json::json!({"properties": {"x": {"type": "integer"}}, "type": "object"});
        assert!(!same_json(&a, &reordered));
        assert_eq!(schema_tokens(&reordered), json_tokens(&reordered));
        let other = serde_json::json!({"type": "object", "properties": {"x": {"type": "number"}}});
        assert!(!same_json(&a, &other));
        assert_eq!(schema_tokens(&other), json_tokens(&other));
        assert!(!same_json(
            &serde_json::json!(0.0),
            &serde_json::json!(-0.0)
        ));
        assert!(!same_json(&serde_json::json!(1), &serde_json::json!(1.0)));
        assert!(same_json(
            &serde_json::json!([1, "a", null]),
            &serde_json::json!([1, "a", null])
        ));
    }
}
