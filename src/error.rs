//! Errors, one enum per boundary.

/// A node id, as in [`crate::NodeId`] (named here without importing the
/// node module, so errors stay at the bottom of the crate).
type NodeId = uuid::Uuid;

/// Errors of building, running, saving and loading networks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetworkError {
    /// A node id that is not in the network.
    #[error("node {0} is not in this network")]
    UnknownNode(NodeId),
    /// Connecting these nodes would make a cycle.
    #[error("connecting {child} under {parent} would create a cycle")]
    Cycle {
        /// The would-be parent.
        parent: NodeId,
        /// The would-be child.
        child: NodeId,
    },
    /// A node belongs to another network.
    #[error("node {0} already belongs to another network")]
    ForeignNode(NodeId),
    /// A modifier with this id is already attached.
    #[error("a modifier with id `{0}` is already attached")]
    DuplicateModifier(String),
    /// A node failed while running; its `metadata["error"]` says the same.
    #[error("node {node} ({kind}) failed: {message}")]
    NodeFailed {
        /// The failing node.
        node: NodeId,
        /// Its kind.
        kind: String,
        /// What went wrong (the source's message).
        message: String,
        /// The node's own error (a [`NetworkError`] such as
        /// [`NetworkError::Model`] or [`NetworkError::Io`]); downcast it to
        /// match on it. Error-chain walkers (`anyhow`, `Error::source`)
        /// reach it and its own causes.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A modifier hook failed.
    #[error("modifier `{modifier}` failed: {message}")]
    Modifier {
        /// The modifier's id.
        modifier: String,
        /// What went wrong.
        message: String,
        /// The hook's own error (a [`NetworkError`], or another boundary's
        /// error such as a session list's); downcast it to match on it.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The model went round in circles: the same call again, two calls
    /// alternating, calls that all failed, or empty answers, turn after
    /// turn. It was told once and kept on, so the run stopped before
    /// asking again (the graph stays valid; the next `invoke` may go on).
    #[error("the model is stuck: {what}, {turns} turns in a row without progress; it was told once to change course and did not, so the run stopped (the session is kept: rephrase the request, or use a larger model)")]
    Stuck {
        /// What repeated, in words (`` `read_file` with the same arguments ``).
        what: String,
        /// How many turns in a row made no progress.
        turns: usize,
    },
    /// The run reached its step limit (model turns in one `invoke`).
    #[error("step limit reached: {limit} model turns in one invoke; the network is left valid and can be saved or invoked again")]
    StepLimit {
        /// The limit that was reached.
        limit: usize,
    },
    /// A model was asked more times in one `invoke` than its call limit
    /// allows ([`CallLimitsExt::set_model_call_limit`](crate::CallLimitsExt::set_model_call_limit)).
    #[error("call limit reached: model `{model}` was asked {limit} times in this run, its limit; the network is left valid and can be saved or invoked again")]
    CallLimit {
        /// The model's registered name.
        model: String,
        /// The limit that was reached.
        limit: usize,
    },
    /// The model's final answer did not fit its output schema
    /// ([`crate::OutputSchema`]) after the answers allowed.
    #[error("the answer is not valid against the output schema after {attempts} answers: {}", errors.join("; "))]
    SchemaMismatch {
        /// How many answers were read.
        attempts: usize,
        /// What was wrong with the last one.
        errors: Vec<String>,
    },
    /// Only a human message or a tool result can be said differently.
    #[error("node {node} is a {kind} node: only a human message or a tool result can be edited")]
    NotEditable {
        /// The node.
        node: NodeId,
        /// Its kind.
        kind: String,
    },
    /// Nothing to invoke and no output to return.
    #[error("the network has no nodes")]
    Empty,
    /// A chat node names a model that is not registered.
    #[error("no chat model named `{0}` is registered")]
    UnknownModel(String),
    /// A chat node has no model name and neither has its network.
    #[error("no chat model is configured: set the network's chat_model_name or the node's")]
    NoChatModel,
    /// The model failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A saved network could not be read.
    #[error("invalid saved network: {0}")]
    Format(String),
    /// JSON (de)serialization failed.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    /// I/O failed (saving or loading a file).
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// Errors of chat models.
///
/// Where a Rust error lies underneath (the HTTP client's, the JSON parser's,
/// the URL parser's), the variant keeps it in its `source` field, shared
/// (`Arc`) so that the error stays `Clone`. [`std::error::Error::source`]
/// returns that `Arc` (same text, same causes below it), and
/// `source.downcast_ref::<E>()` on the field gets the error's type back.
/// `message` tells the whole story on its own (the causes' text included,
/// secrets erased); it is what `Display` shows.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The endpoint could not be reached (after retries).
    #[error("could not reach the model endpoint: {message}")]
    Connect {
        /// What failed, with its causes, on one line.
        message: String,
        /// The underlying error (for the OpenAI model, a `reqwest::Error`).
        #[source]
        source: std::sync::Arc<dyn std::error::Error + Send + Sync>,
    },
    /// The endpoint answered with an HTTP error (after retries).
    #[error("model endpoint returned HTTP {status}: {body}")]
    Http {
        /// HTTP status code.
        status: u16,
        /// The response body, shortened.
        body: String,
    },
    /// The request timed out.
    #[error("model request timed out after {0:?}")]
    Timeout(std::time::Duration),
    /// The response was not what the protocol says.
    #[error("invalid model response: {message}")]
    InvalidResponse {
        /// What is wrong with it.
        message: String,
        /// The parser's error, when parsing failed (e.g. a
        /// `serde_json::Error`).
        #[source]
        source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
    },
    /// Configuration is missing or wrong.
    #[error("model configuration: {message}")]
    Config {
        /// What is missing or wrong.
        message: String,
        /// The underlying error, when there is one (e.g. the URL parser's).
        #[source]
        source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
    },
    /// The request does not fit the model's context window (said by the
    /// server, or found before sending).
    #[error("{}", overflow_text(*tokens, *window))]
    ContextOverflow {
        /// The request's size in tokens, when known.
        tokens: Option<usize>,
        /// How many tokens the model reads at most, when known.
        window: Option<usize>,
    },
    /// The request carries images and the model cannot read them (its
    /// settings say so, or its server refused them).
    #[error("model `{model}` cannot read images ({reason}); use a model that can, or leave the image out")]
    ImagesNotSupported {
        /// The model's name.
        model: String,
        /// How that is known: the model's setting or the server's answer.
        reason: String,
    },
    /// A scripted model ran out of turns.
    #[error("scripted model `{name}` has no more turns (played {played})")]
    ScriptExhausted {
        /// The scripted model's name.
        name: String,
        /// How many turns it played.
        played: usize,
    },
    /// Recording to or replaying from a cassette failed (see
    /// [`CassetteError`]).
    #[error(transparent)]
    Cassette(#[from] CassetteError),
    /// Any other failure.
    #[error("{0}")]
    Other(String),
}

/// Errors of cassettes: the JSON-lines files that
/// [`RecordingChatModel`](crate::RecordingChatModel) writes and
/// [`ReplayChatModel`](crate::ReplayChatModel) plays back. Each names the
/// file.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// The cassette could not be read (missing, unreadable).
    #[error("cannot read the cassette {}: {source}", path.display())]
    Read {
        /// The cassette.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
    /// The cassette could not be written.
    #[error("cannot write the cassette {}: {source}", path.display())]
    Write {
        /// The cassette.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
    /// A line of the file is not a recorded exchange.
    #[error("{} is not a cassette (line {line}: {reason})", path.display())]
    NotACassette {
        /// The file.
        path: std::path::PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A line was written in a format version this program does not read.
    #[error("the cassette {} has format `{found}` on line {line}; this lc-agent reads `{expected}` (record it again)", path.display())]
    Version {
        /// The cassette.
        path: std::path::PathBuf,
        /// The 1-based line number.
        line: usize,
        /// The version found.
        found: String,
        /// The version this program reads.
        expected: String,
    },
    /// A request differs from every recorded one still to play.
    #[error("the request differs from the one recorded in the cassette {} (answer {answer} of {recorded}; compared: {compared}):\n{diff}\n(record the run again, or compare less)", path.display())]
    Mismatch {
        /// The cassette.
        path: std::path::PathBuf,
        /// The 1-based number of the recorded answer it was compared with.
        answer: usize,
        /// How many answers the cassette recorded.
        recorded: usize,
        /// The parts of the request compared (e.g. `messages, tools, tool_choice`).
        compared: String,
        /// What differs, one line per difference (recorded, then now).
        diff: String,
    },
    /// Every recorded answer was played.
    #[error("the cassette {} has no more recorded answers (it recorded {recorded})", path.display())]
    Exhausted {
        /// The cassette.
        path: std::path::PathBuf,
        /// How many answers it recorded.
        recorded: usize,
    },
}

/// The text of [`ModelError::ContextOverflow`].
fn overflow_text(tokens: Option<usize>, window: Option<usize>) -> String {
    let size = match (tokens, window) {
        (Some(tokens), Some(window)) => format!(": it has {tokens} tokens and {window} fit"),
        (Some(tokens), None) => format!(": it has {tokens} tokens"),
        (None, Some(window)) => format!(" of {window} tokens"),
        (None, None) => String::new(),
    };
    format!(
        "the request does not fit the model's context window{size} \
         (compact the conversation or start a new one, or use a model with a larger window)"
    )
}

/// Errors of tools. The tool node turns them into an `Error: ...` tool
/// result the model reads; they never abort the run.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool with this name is available.
    #[error("Unknown tool `{name}`. Available tools: {available}")]
    UnknownTool {
        /// The requested name.
        name: String,
        /// Comma-separated names of the tools that exist.
        available: String,
    },
    /// The arguments are not valid JSON.
    #[error("Invalid arguments for {tool}: not valid JSON ({source})")]
    InvalidJson {
        /// The tool's name.
        tool: String,
        /// The parser's error.
        #[source]
        source: std::sync::Arc<serde_json::Error>,
    },
    /// The arguments have the wrong shape.
    #[error("Invalid arguments for {tool}: {reason}")]
    InvalidArguments {
        /// The tool's name.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// The tool took too long.
    #[error("Tool `{tool}` timed out after {seconds} s")]
    Timeout {
        /// The tool's name.
        tool: String,
        /// The limit in seconds.
        seconds: f64,
    },
    /// The tool ran and failed; the message is shown to the model.
    #[error("{0}")]
    Failed(String),
}

/// `Result` with [`NetworkError`].
pub type Result<T, E = NetworkError> = std::result::Result<T, E>;

/// An error and its causes, `: `-joined, for a person to read (a cause
/// whose text is in the message already is not repeated).
///
/// ```
/// let io = std::io::Error::other("disk full");
/// let list = lc_agent::ListError::from(io);
/// assert_eq!(lc_agent::error_chain(&list), "io: disk full");
/// ```
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}
