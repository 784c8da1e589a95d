//! Token counting and context windows: how big a request is, and how big
//! it may get for a model.
//!
//! ```text
//!  model name ──▶ counter_for_model ──▶ TiktokenCounter (o200k_base | cl100k_base)   feature `tokens`
//!                                  └──▶ ApproxCounter (≈ 4 characters a token)    always there
//!  model name ──▶ ContextWindows ──▶ tokens the model reads at most
//!                 (your entries, then the built-in table, then the default)
//! ```
//!
//! The real tokenizer comes from `tiktoken-rs`, behind the cargo feature
//! `tokens` (on by default); without it every counter is the approximate
//! one. Models outside the OpenAI families have tokenizers of their own;
//! `o200k_base` counts them closely enough to decide when to summarize.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use lc_agent::{ChatRequest, Message};
use serde::{Deserialize, Serialize};

/// Tokens every message costs beyond its text (role and separators), as
/// OpenAI's chat format counts them.
pub(crate) const MESSAGE_OVERHEAD: usize = 4;

/// Tokens that prime the model's reply.
pub(crate) const REPLY_PRIMING: usize = 3;

/// Counts tokens.
///
/// ```
/// use lc_agent_deepagent::{ApproxCounter, TokenCounter};
///
/// assert_eq!(ApproxCounter.count("twelve chars"), 3);
/// ```
pub trait TokenCounter: Send + Sync + std::fmt::Debug {
    /// What counts (`o200k_base`, `cl100k_base`, `approximate`). Two
    /// counters with one name must count alike: requests memoize their
    /// messages' counts under it ([`lc_agent::History::count_sent`]).
    fn name(&self) -> &'static str;

    /// Tokens in `text`.
    fn count(&self, text: &str) -> usize;

    /// Tokens of one message: its text, its tool calls, the overhead.
    fn count_message(&self, message: &Message) -> usize {
        let calls: usize = message
            .tool_calls()
            .iter()
            .map(|c| self.count(&c.name) + self.count(&c.arguments) + MESSAGE_OVERHEAD)
            .sum();
        MESSAGE_OVERHEAD + self.count(message.text()) + calls
    }

    /// Tokens of a whole request: its messages in protocol order (after
    /// the latest summary, see [`lc_agent::History::assemble`]) and its
    /// tool specs.
    /// Memoized along the history under [`TokenCounter::name`]: counting
    /// a growing conversation at every turn costs O(new messages) a turn.
    fn count_request(&self, request: &ChatRequest) -> usize {
        let messages = request
            .history
            .count_sent(&request.system, self.name(), &|m| {
                self.count_message(m) as u64
            }) as usize;
        let tools: usize = request
            .tools
            .iter()
            .map(|t| {
                self.count(&t.name)
                    + self.count(&t.description)
                    + self.count(&t.parameters.to_string())
            })
            .sum();
        messages + tools + REPLY_PRIMING
    }
}

/// The cheap estimate: one token per four characters (rounded up). No
/// vocabulary to load; within about 20% of a real tokenizer on English
/// prose and code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApproxCounter;

impl TokenCounter for ApproxCounter {
    fn name(&self) -> &'static str {
        "approximate"
    }

    fn count(&self, text: &str) -> usize {
        text.chars().count().div_ceil(4)
    }
}

/// A byte-pair encoding of the OpenAI families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, GPT-4.5, GPT-5, the `o` series, gpt-oss; the
    /// default for other families.
    O200kBase,
    /// GPT-4, GPT-4 Turbo, GPT-3.5 Turbo, `text-embedding-*`.
    Cl100kBase,
}

impl Encoding {
    /// The encoding a model name uses (case and a provider prefix such as
    /// `openai/` do not matter).
    ///
    /// ```
    /// use lc_agent_deepagent::Encoding;
    ///
    /// assert_eq!(Encoding::for_model("gpt-4o-mini"), Encoding::O200kBase);
    /// assert_eq!(Encoding::for_model("openai/gpt-4-turbo"), Encoding::Cl100kBase);
    /// assert_eq!(Encoding::for_model("qwen2.5-coder:7b"), Encoding::O200kBase);
    /// ```
    pub fn for_model(model: &str) -> Self {
        let name = normalize(model);
        const O200K: [&str; 8] = [
            "gpt-4o",
            "gpt-4.1",
            "gpt-4.5",
            "gpt-5",
            "chatgpt-4o",
            "gpt-oss",
            "o1",
            "o3",
        ];
        if O200K.iter().any(|p| name.starts_with(p)) || name.starts_with("o4") {
            Encoding::O200kBase
        } else if ["gpt-4", "gpt-3.5", "text-embedding"]
            .iter()
            .any(|p| name.starts_with(p))
        {
            Encoding::Cl100kBase
        } else {
            Encoding::O200kBase
        }
    }

    /// The encoding's name (`o200k_base`, `cl100k_base`).
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }
}

/// Errors of making a counter.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The tokenizer's vocabulary could not be loaded.
    #[error("cannot load the {encoding} tokenizer: {message}")]
    Load {
        /// The encoding.
        encoding: &'static str,
        /// Why.
        message: String,
    },
    /// The context-window file could not be read.
    #[error("cannot read the context windows file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The context-window file is not valid TOML of the expected shape.
    #[error("invalid context windows (TOML): {0}")]
    Toml(#[from] toml::de::Error),
}

/// The real tokenizer (`tiktoken-rs`): counts exactly what OpenAI models
/// count. The vocabulary loads once per process (tens of milliseconds).
///
/// ```
/// use lc_agent_deepagent::{Encoding, TiktokenCounter, TokenCounter};
///
/// let counter = TiktokenCounter::new(Encoding::O200kBase)?;
/// assert_eq!(counter.count("Hello world"), 2);
/// # Ok::<(), lc_agent_deepagent::TokenError>(())
/// ```
#[cfg(feature = "tokens")]
#[derive(Clone)]
pub struct TiktokenCounter {
    encoding: Encoding,
    bpe: &'static tiktoken_rs::CoreBPE,
}

#[cfg(feature = "tokens")]
impl TiktokenCounter {
    /// A counter of this encoding.
    pub fn new(encoding: Encoding) -> Result<Self, TokenError> {
        use std::sync::OnceLock;
        type Loaded = Result<tiktoken_rs::CoreBPE, String>;
        static O200K: OnceLock<Loaded> = OnceLock::new();
        static CL100K: OnceLock<Loaded> = OnceLock::new();
        let loaded = match encoding {
            Encoding::O200kBase => O200K.get_or_init(|| {
                tracing::debug!(encoding = encoding.name(), "loading the tokenizer");
                tiktoken_rs::o200k_base().map_err(|e| e.to_string())
            }),
            Encoding::Cl100kBase => CL100K.get_or_init(|| {
                tracing::debug!(encoding = encoding.name(), "loading the tokenizer");
                tiktoken_rs::cl100k_base().map_err(|e| e.to_string())
            }),
        };
        match loaded {
            Ok(bpe) => Ok(Self { encoding, bpe }),
            Err(message) => Err(TokenError::Load {
                encoding: encoding.name(),
                message: message.clone(),
            }),
        }
    }

    /// The counter for a model name (see [`Encoding::for_model`]).
    pub(crate) fn for_model(model: &str) -> Result<Self, TokenError> {
        Self::new(Encoding::for_model(model))
    }
}

#[cfg(feature = "tokens")]
impl std::fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenCounter")
            .field("encoding", &self.encoding)
            .finish()
    }
}

#[cfg(feature = "tokens")]
impl TokenCounter for TiktokenCounter {
    fn name(&self) -> &'static str {
        self.encoding.name()
    }

    /// Linear in the text: tiktoken's merges are quadratic in the length
    /// of one word, so a long text is counted in pieces cut before a
    /// whitespace (once a piece holds `PIECE` bytes) and inside a run
    /// of `RUN` bytes without any (a base64 blob, a minified line),
    /// where no real token is that long. Short texts count exactly.
    fn count(&self, text: &str) -> usize {
        if text.len() <= PIECE {
            return self.bpe.encode_ordinary(text).len();
        }
        // A long run repeats itself more often than not: count each
        // distinct piece once.
        let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        pieces(text)
            .map(|piece| {
                *seen
                    .entry(piece)
                    .or_insert_with(|| self.bpe.encode_ordinary(piece).len())
            })
            .sum()
    }
}

/// Bytes of a piece of a long text before it is cut at a whitespace.
#[cfg(feature = "tokens")]
const PIECE: usize = 4096;

/// Bytes without whitespace or punctuation after which a long text is cut
/// anyway (longer than any token of the vocabularies).
#[cfg(feature = "tokens")]
const RUN: usize = 64;

/// `text` in pieces (see [`TiktokenCounter::count`]), on char boundaries.
#[cfg(feature = "tokens")]
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut run = 0;
        let mut cut = rest.len();
        for (i, c) in rest.char_indices() {
            if i > 0 && ((c.is_whitespace() && i >= PIECE) || run >= RUN) {
                cut = i;
                break;
            }
            run = if c.is_alphanumeric() {
                run + c.len_utf8()
            } else {
                0
            };
        }
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

/// The best counter for a model: the real tokenizer with the `tokens`
/// feature (the approximate one, with a warning, if its vocabulary does
/// not load), else [`ApproxCounter`].
pub fn counter_for_model(model: &str) -> Arc<dyn TokenCounter> {
    #[cfg(feature = "tokens")]
    {
        match TiktokenCounter::for_model(model) {
            Ok(counter) => return Arc::new(counter),
            Err(e) => tracing::warn!(error = %e, "counting tokens approximately"),
        }
    }
    let _ = model;
    Arc::new(ApproxCounter)
}

/// Context windows of well-known models (by name prefix; the longest
/// matching prefix wins).
pub(crate) const KNOWN_CONTEXT_WINDOWS: &[(&str, usize)] = &[
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.5", 128_000),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-oss", 131_072),
    ("o1", 200_000),
    ("o1-mini", 128_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("claude", 200_000),
    ("gemini", 1_048_576),
    ("llama3", 8_192),
    ("llama3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama3.3", 131_072),
    ("llama-3", 8_192),
    ("llama-3.1", 131_072),
    ("llama-3.2", 131_072),
    ("llama-3.3", 131_072),
    ("qwen2.5", 32_768),
    ("qwen3", 40_960),
    ("mistral", 32_768),
    ("mixtral", 32_768),
    ("deepseek", 65_536),
];

/// The window of a model that no entry names.
pub(crate) const DEFAULT_CONTEXT_WINDOW: usize = 32_768;

/// How many tokens each model reads at most: your entries (exact name,
/// then the longest matching prefix), then the windows of well-known models, then
/// the default. Names are compared in lower case, without a provider
/// prefix (`openai/gpt-4o` is `gpt-4o`).
///
/// It reads from TOML (a file of its own, or the `context_windows` table
/// of an agent blueprint):
///
/// ```
/// use lc_agent_deepagent::ContextWindows;
///
/// let windows = ContextWindows::from_toml(r#"
///     default = 16000
///     [models]
///     "my-local-model" = 4096
/// "#)?;
/// assert_eq!(windows.window_for("my-local-model:q4"), 4096);
/// assert_eq!(windows.window_for("gpt-4o-mini"), 128_000);
/// assert_eq!(windows.window_for("something-else"), 16_000);
/// # Ok::<(), lc_agent_deepagent::TokenError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextWindows {
    /// The window of a model nothing names (default 32,768).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<usize>,
    /// Model name (or name prefix) -> window, in tokens.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, usize>,
}

impl ContextWindows {
    /// The built-in table and default only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the window of a model name (or prefix).
    #[must_use]
    pub fn with(mut self, model: impl Into<String>, tokens: usize) -> Self {
        self.models.insert(normalize(&model.into()), tokens);
        self
    }

    /// Sets the window of models nothing names.
    #[must_use]
    pub fn with_default(mut self, tokens: usize) -> Self {
        self.default = Some(tokens);
        self
    }

    /// Reads windows from TOML (`default = N` and a `[models]` table).
    pub fn from_toml(text: &str) -> Result<Self, TokenError> {
        let mut windows: Self = toml::from_str(text)?;
        windows.models = std::mem::take(&mut windows.models)
            .into_iter()
            .map(|(k, v)| (normalize(&k), v))
            .collect();
        Ok(windows)
    }

    /// Reads a TOML file of windows.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, TokenError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_toml(&text)
    }

    /// The window of `model`, in tokens.
    pub fn window_for(&self, model: &str) -> usize {
        self.own_window(model)
            .or_else(|| Self::known_window(model))
            .unwrap_or(self.default_window())
    }

    /// The window your entries give `model` (exact name, then the longest
    /// matching prefix), if any.
    pub(crate) fn own_window(&self, model: &str) -> Option<usize> {
        let name = normalize(model);
        if let Some(n) = self.models.get(&name) {
            return Some(*n);
        }
        longest_prefix(self.models.iter().map(|(k, v)| (k.as_str(), *v)), &name)
    }

    /// The window of a well-known model (the table in `tokens.rs`), if any.
    pub fn known_window(model: &str) -> Option<usize> {
        longest_prefix(KNOWN_CONTEXT_WINDOWS.iter().copied(), &normalize(model))
    }

    /// The window of a model nothing names: yours, else
    /// [`DEFAULT_CONTEXT_WINDOW`].
    pub(crate) fn default_window(&self) -> usize {
        self.default.unwrap_or(DEFAULT_CONTEXT_WINDOW)
    }
}

fn longest_prefix<'a>(
    entries: impl Iterator<Item = (&'a str, usize)>,
    name: &str,
) -> Option<usize> {
    entries
        .filter(|(prefix, _)| name.starts_with(&normalize(prefix)))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, n)| n)
}

/// Lower case, without a provider prefix (`openai/`, `ollama/`...).
fn normalize(model: &str) -> String {
    let name = model.rsplit('/').next().unwrap_or(model);
    name.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_windows_pick_the_longest_prefix() {
        let w = ContextWindows::new();
        assert_eq!(w.window_for("gpt-4"), 8_192);
        assert_eq!(w.window_for("gpt-4-turbo-2024-04-09"), 128_000);
        assert_eq!(w.window_for("GPT-4o"), 128_000);
        assert_eq!(w.window_for("o1-mini"), 128_000);
        assert_eq!(w.window_for("o1-preview"), 200_000);
        assert_eq!(w.window_for("ollama/llama3.1:8b"), 131_072);
        assert_eq!(w.window_for("unknown"), DEFAULT_CONTEXT_WINDOW);
        let w = w.with("gpt-4", 1000).with_default(7);
        assert_eq!(w.window_for("gpt-4"), 1000);
        assert_eq!(w.window_for("gpt-4-turbo"), 1000, "own entries come first");
        assert_eq!(w.window_for("unknown"), 7);
    }

    #[test]
    fn bad_toml_is_a_clear_error() {
        let err = ContextWindows::from_toml("models = 5").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid context windows (TOML)"),
            "{err}"
        );
        let err = ContextWindows::from_toml("[models]\nx = \"big\"").unwrap_err();
        assert!(err.to_string().contains("invalid"), "{err}");
        let err = ContextWindows::from_file("/nonexistent/windows.toml").unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent/windows.toml"),
            "{err}"
        );
    }

    #[test]
    fn approximate_counts_characters() {
        assert_eq!(ApproxCounter.count(""), 0);
        assert_eq!(ApproxCounter.count("abcde"), 2);
        assert_eq!(ApproxCounter.count("ééééé"), 2);
        assert_eq!(
            ApproxCounter.count_message(&Message::human("abcd")),
            1 + MESSAGE_OVERHEAD
        );
    }

    #[cfg(feature = "tokens")]
    #[test]
    fn tiktoken_counts_like_openai() {
        let o200k = TiktokenCounter::new(Encoding::O200kBase).unwrap();
        let cl100k = TiktokenCounter::for_model("gpt-4").unwrap();
        assert_eq!(cl100k.encoding, Encoding::Cl100kBase);
        // Reference counts from OpenAI's tiktoken (its cookbook's example).
        assert_eq!(cl100k.count("hello world"), 2);
        assert_eq!(cl100k.count("tiktoken is great!"), 6);
        assert_eq!(o200k.count("hello world"), 2);
        assert!(
            o200k.count(&"lorem ipsum ".repeat(1000))
                < ApproxCounter.count(&"lorem ipsum ".repeat(1000))
        );
        assert_eq!(counter_for_model("gpt-4o").name(), "o200k_base");
    }

    /// Issue 31 item 10: a 1.9 MB message cost seconds of CPU. A long
    /// text counts in linear time, even one long word, and prose counts
    /// as it did (the pieces are cut before a whitespace).
    #[cfg(feature = "tokens")]
    #[test]
    fn a_long_text_counts_in_linear_time() {
        let o200k = TiktokenCounter::new(Encoding::O200kBase).unwrap();
        let prose = "The quick brown fox jumps over the lazy dog. ".repeat(400);
        assert!(prose.len() > PIECE);
        assert_eq!(o200k.count(&prose), o200k.bpe.encode_ordinary(&prose).len());
        let word = "x".repeat(PIECE * 2);
        assert!(
            o200k
                .count(&word)
                .abs_diff(o200k.bpe.encode_ordinary(&word).len())
                * 50
                <= o200k.count(&word)
        );
        assert_eq!(
            pieces(&"é".repeat(5000)).collect::<String>(),
            "é".repeat(5000)
        );
        // 1.9 MB of one word, and of prose: well under a second each
        // (a debug build; the quadratic merge took minutes on the word).
        let hex: String = (0..1_900_000u32)
            .map(|i| {
                char::from(b"0123456789abcdef"[(i.wrapping_mul(2_654_435_761) >> 28) as usize])
            })
            .collect();
        for text in [
            "a".repeat(1_900_000),
            hex,
            prose.repeat(1_900_000 / prose.len()),
        ] {
            let started = std::time::Instant::now();
            let tokens = o200k.count(&text);
            let took = started.elapsed();
            assert!(tokens > 1_900_000 / 150, "{tokens}");
            assert!(
                took < std::time::Duration::from_secs(3),
                "{} bytes: {took:?}",
                text.len()
            );
        }
    }
}

/// Estimates a call's usage with the tokenizer of the model that answered
/// ([`counter_for_model`]) when its server reports none; the deep agent
/// attaches it to its networks
/// ([`UsageExt::set_usage_estimator`](lc_agent::UsageExt::set_usage_estimator)).
///
/// ```
/// use lc_agent::{ChatRequest, ChatResponse, History, Message, UsageEstimator};
/// use lc_agent_deepagent::TokenizerUsage;
///
/// let request = ChatRequest::new(History::from_messages([Message::human("Hello world")]));
/// let usage = TokenizerUsage.estimate(&request, &ChatResponse::text("Hi there"));
/// assert!(usage.estimated);
/// assert_eq!(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TokenizerUsage;

impl lc_agent::UsageEstimator for TokenizerUsage {
    fn estimate(
        &self,
        request: &ChatRequest,
        response: &lc_agent::ChatResponse,
    ) -> lc_agent::Usage {
        let counter = counter_for_model(response.model.as_deref().unwrap_or_default());
        let prompt = counter.count_request(request) as u64;
        let completion = counter.count_message(&response.to_message()) as u64;
        lc_agent::Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
            estimated: true,
            ..lc_agent::Usage::default()
        }
    }
}
