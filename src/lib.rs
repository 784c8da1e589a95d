//! # lc-agent: dynamic runnable networks for LLM agents
//!
//! An agent conversation is a **graph of cached nodes**, and the graph *is*
//! the state. A [`RunnableNetwork`] holds nodes in insertion order, their
//! edges (parent lists), metadata and the agent's virtual [`files`](Files).
//! Each node ([`NodeRef`]) runs once: a [`HumanNode`] outputs what the user
//! said, a [`ChatNode`] asks a [`ChatModel`] with the conversation of its
//! ancestors ([`History`]), a [`ToolNode`] runs one [`Tool`] call, a
//! [`NetworkNode`] runs a whole inner network. Once a node has outputs it is
//! never recomputed.
//!
//! ```text
//!  build (scope guard, >>)        invoke()                     save / load
//!  ───────────────────────   ───────────────────────────   ─────────────────
//!  HumanNode::new("hi")  ──▶  on_begin_invoke (modifiers)   to_json()  ─┐
//!        │                    pass: pending nodes in         from_json() ◀┘
//!        ▼                     topological order,            "lc-agent/1"
//!  ChatLoop adds ChatNode      pre-hook ▸ run ▸ post-hook
//!        │                    ToolLoop adds ToolNodes + the
//!        ▼                     next ChatNode (next pass)
//!  output: Message            on_end_invoke (always)
//! ```
//!
//! **Modifiers** ([`NetworkModifier`]) grow the graph while it runs: the
//! default [`ChatLoop`] answers a human leaf with the network's
//! `default_node`; the default [`ToolLoop`] turns tool calls into tool nodes
//! (run concurrently) followed by the next chat node. Modifiers, tools,
//! models and event callbacks are runtime attachments: they are not saved.
//!
//! **Building**: while a [`ScopeGuard`] from [`RunnableNetwork::enter`]
//! lives, new nodes attach to that network as children of its current leaf;
//! `a >> b`, `[a, b] >> c` and `None >> c` rewire edges explicitly.
//!
//! **Saving**: [`RunnableNetwork::to_json`] writes the `lc-agent/1` format
//! (see [`FORMAT`]); loading and saving again gives the same bytes, and
//! kinds the loading program does not know survive as [`GenericNode`]s.
//! A [`NetworkList`] keeps many saved networks (sessions) per user, in JSON
//! files or in Redis ([`ListConfig`] says which).
//!
//! # Layout
//!
//! One file per concept; a folder when a concept has parts. The modules are
//! private: every public item is re-exported here, at the root, once (one
//! path to each type; inside the crate, items are named by their module's
//! path, `crate::network::RunnableNetwork`, not by these re-exports).
//!
//! **A ground floor.** `network/` (the graph, saving, the invoke entry),
//! `node/` (the node, the table of kinds, the generic node), `run/`
//! (invoke's passes, the modifier hooks, the tracer table), `tool.rs` (with
//! `tool_specs.rs`, the tools a request offers), the
//! model trait and `event.rs` know each other by design. Everything else
//! stands on them and is never stood on: the built-in node kinds
//! (`nodes/`), the default loops (`loops/`) and the spans (`telemetry/`)
//! add their rows to the floor's tables (a link-time table, `linkme`)
//! instead of being named by it; each feature's methods on a network are
//! one extension trait in the feature's own file (`ModelRoutes` in
//! routing.rs, `UsageExt` in usage.rs, ...; all in [`prelude`]), and the
//! runtime state it needs is an extension attached by type
//! ([`Attachments::set_extension`]).
//!
//! Declared cycle: node::*, network::*, run, run::invoke, run::modifier, run::hold, run::tracer, tool, tool_specs, model, event
//!
//! (`.ci/module-cycles` reads that line: any other cycle among the modules
//! fails CI, and so does a module that joins this one.) A module's long description lives on its main
//! type (`NetworkList`, `OpenAiChatModel`, `ScopeGuard`, ...). The public
//! modules are [`prelude`] (the types and traits most programs name) and
//! [`tool_args`]: the functions that read a tool's arguments and word
//! their errors (`tool_args::parse`, ...).
//!
//! ```text
//! lib.rs              this map; flat re-exports of the public types
//! network/            RunnableNetwork: the graph and the state
//!   mod.rs            the type, its identity, metadata and files; invoke (run/invoke.rs runs it)
//!   format/           saving: the format `lc-agent/1` (to_json, from_json; the Saving trait)
//!     document.rs     the top-level schema (shared with listings)
//!     write.rs        writing (cached compact JSON of invoked nodes)
//!     read.rs         reading in one pass
//!     journal.rs      incremental saves: the changes since the last save as one journal
//!                     record, and a snapshot plus its journal assembled into one document
//!     base.rs         SaveBase: what a store holds of a network as of its last save (NodeMark per node)
//!   builder.rs        NetworkBuilder
//!   graph.rs          storage: nodes, edges, pending set, topological order, queries
//!   edit.rs           adding, rewiring and removing nodes
//!   fork.rs           TimeTravelExt: fork_at, branch_at, edit_at, rewind_to; files at a node
//!   snapshots.rs      SnapshotsExt: file contents kept for rewinds, by hash, beside the graph (saved,
//!                     journaled per content, taken by forks, trimmed to the last turns)
//!   conversation.rs   what a node reads: input_of / history_of, cached
//!   runtime.rs        Attachments (modifiers, tools, models, settings, extensions by type)
//!                     and Events (callbacks, channels)
//!   scope.rs          the scope guard (which network new nodes join)
//!   ops.rs            `a >> b`, `[a, b] >> c`, connect
//!   mermaid.rs        to_mermaid
//! node/               NodeRef, NodeLogic, NodeContext
//!   state.rs          a node's state, private behind methods (record_output)
//!   metadata.rs       a node's metadata: ordered keys, timings and token usage typed,
//!                     saved exactly as their JSON
//!   id_hash.rs        IdSet / SmallIdMap: per-pass id maps (a short list, else hashed
//!                     by the ids' own random bits)
//!   kinds.rs          the table of kinds: create a node by kind name, load one; the
//!                     built-in kinds add their rows, register_node_kind adds yours
//!   generic.rs        GenericNode: a kind this program does not know, kept as saved
//! nodes/              the built-in kinds: human, system, chat, tool, network
//!                     (NetworkInput: conversation, isolated, routed), summary
//!                     (insert_summary)
//! run/                running a network
//!   invoke.rs         invoke: begin hooks, passes, waves, end hooks
//!   modifier.rs       NetworkModifier, Hooks, how a hook runs; the default modifiers' table
//!   hold.rs           held nodes: work that waits to be released (approvals), and
//!                     sub-network nodes that wait on held work inside (settle); a node
//!                     a pre-invoke hook held or answered does not run
//!   tracer.rs         the spans of a run and its nodes, through a table telemetry fills
//! loops/              the default modifiers: ChatLoop (chat.rs: a human leaf gets the
//!                     default node), ToolLoop (tool.rs: tool calls become tool nodes,
//!                     then the next chat)
//! output_schema.rs    OutputSchema: a final answer's JSON Schema (checked with
//!                     jsonschema), the forced tool for providers without response_format
//! typed_answers.rs    OutputSchemaExt: a step's schema, invoke_typed, rejected answers
//! lc_agent_import.rs  LcAgentImport: networks saved by NVIDIA's LC Agent, converted
//! routing.rs          model routing: step -> model name, in the metadata
//! clear_results.rs   old tool results left out of a request (evicted, or past a budget)
//! call_limits.rs     call limits per tool and per model in one invoke (metadata call_limits)
//! steering/          steering a live run: an Inbox of messages sent while it runs (inbox.rs),
//!                     read at node boundaries by SteeringModifier (mod.rs): inject before
//!                     the next model call, queue after the answer, interrupt
//! tool_retry.rs      tools marked idempotent called again after a failure, with backoff
//! fallback.rs         model fallback: step -> the models asked when its model fails for
//!                     good (recorded on the node: model_fallback)
//! history.rs          History: the conversation, shared between nodes; summaries
//!                     (a request sends systems + latest summary + what follows its cut)
//! message.rs          Message, ToolCall
//! content.rs          ContentPart, ImagePart: images (and text) after a message's text
//! tool.rs             Tool, TypedTool (typed arguments, blanket Tool impl), FnTool
//! tool_specs.rs       ToolSpecs: a request's tools, shared across turns while fixed
//! tool_call.rs        running one tool call (lookup, arguments, retry, timeout)
//! tool_args.rs        reading a tool's arguments: the one wording of argument errors
//! tool_executor.rs    openai_tools (OpenAI definitions), ToolExecutor (a batch of calls, no graph)
//! model/              ChatModel, ChatRequest/ChatResponse, the registry
//!   openai/           OpenAiChatModel: mod.rs (config, request, the ChatModel impl),
//!                     wire.rs (JSON types), stream.rs (SSE assembly), window.rs
//!                     (the context window asked of the server), discover.rs (the
//!                     only model a server lists), remembered.rs (what a server
//!                     cannot do, kept across processes: remember_servers_in),
//!                     embeddings.rs (OpenAiEmbedder: /embeddings, batches, pooling)
//!   anthropic/        AnthropicChatModel (Messages API): mod.rs (config, the ChatModel
//!                     impl), wire.rs (JSON types, roles merged, cache markers),
//!                     stream.rs (message/content-block events assembled)
//!   http/             what both share: transport.rs (sending, retries, timeouts),
//!                     redact.rs (keeping the key out), overflow.rs (prompt too long)
//!   provider/         Provider, by name or from the environment, and the model it opens
//!                     (mod.rs: opening, parsing); table.rs: the provider table (one row
//!                     each: name, variables, defaults), below every provider's folder
//!   embed.rs          Embedder: texts to vectors (memory's search by meaning)
//!   settings.rs       HttpSettings: what every HTTP provider takes, its setters written once
//!   sampling.rs       Sampling: a request's temperature, max_tokens, stop, seed, … passed through
//!   tool_choice.rs    ToolChoice: auto, required, none, a named tool
//!   scripted.rs       ScriptedChatModel for tests and offline runs
//!   cassette/         a real run once, offline forever: RecordingChatModel (record.rs) wraps
//!                     any model and appends each exchange to a JSON-lines cassette
//!                     (exchange.rs: the versioned line), secrets erased (redact.rs);
//!                     ReplayChatModel (replay.rs) plays it back, comparing requests
//!                     (Match) and naming what differs (diff.rs)
//! event.rs            NetworkEvent
//! files.rs            Files, FileData: the agent's virtual files
//! atomic_file.rs      the one durable file writer (temp, fsync, rename)
//! list/               sessions: NetworkList
//!   cache.rs          CachedNetworkList, SessionCache: parsed networks kept, a revision check
//!                     instead of a reload
//!   retention.rs      RetentionList: sessions expire a while after their latest save;
//!                     each keeps the rewind snapshots of its last N turns
//!   checkpoint.rs     CheckpointModifier: a running network saved to its list per node or turn
//!   config.rs         ListConfig (a JSON directory or Redis URL + prefix) and Lists (each
//!                     user's list, opened once): the one place that decides *which sessions*
//!   session.rs        SessionInfo, ListQuery, ListPage, user names
//!   stamp.rs          revisions and timestamps
//!   json/             JsonNetworkList (mod.rs), its listing index (index.rs) and the
//!                     sessions' journals (journal.rs: append, torn tails, compaction)
//!   redis/            RedisNetworkList (mod.rs): keys.rs (hash-tagged layout), save.rs
//!                     (the save transaction, full or a journal append), migrate.rs (legacy keys), connection.rs
//!                     (RedisConnector: one server, TLS or Cluster, via the redis crate)
//! usage.rs            UsageTotals: token usage added up per call, run, session (metadata
//!                     "usage", kept as it runs), sub-agent (counts in its parents), range;
//!                     UsageEstimator (when a server reports none)
//! prices.rs           Prices: USD per million tokens by model (built in, prices.toml, blueprint);
//!                     UsageTotals::priced
//! telemetry/          OpenTelemetry GenAI spans (feature `otel`): mod.rs (chat {model},
//!                     summarize, content capture), spans.rs (their shared parts), run.rs
//!                     (invoke_agent and execute_tool: the floor's tracer row)
//! otel.rs             (feature `otel`) their OTLP exporter, from OTEL_EXPORTER_OTLP_ENDPOINT
//! error.rs            NetworkError, ModelError, ToolError, CassetteError
//! ```
//!
//! # Cargo features
//!
//! One per integration, all on by default: `openai` ([`OpenAiChatModel`],
//! reqwest), `anthropic` ([`AnthropicChatModel`], the same HTTP client)
//! and `redis` ([`RedisNetworkList`], [`ListConfig::Redis`], the `redis`
//! crate with TLS and Cluster). Without them the core — graph,
//! invocation, tools, the scripted model, the JSON session list — builds
//! with neither an HTTP nor a Redis client.
//!
//! `otel` (off by default, on in the CLI and server): the runs make
//! OpenTelemetry GenAI spans ([`telemetry`]) and `otel` exports them
//! over OTLP (HTTP or gRPC) when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
//!
//! Beside this crate: `lc-agent-filesystem` (`modifiers/filesystem/`) holds the
//! file tools over pluggable, confined backends, the filesystem modifier
//! and the eviction of large tool results; `lc-agent-deepagent`
//! (`modifiers/deepagent/`) is the agent layer (todos, sub-agents, supervisor,
//! approvals, summarization, token counting, skills, long-term memory
//! (feature `memory`, tantivy), the `DeepAgent` preset, the `AgentSpec`
//! blueprint) and MCP (`McpTools`, the file tools as an MCP server; feature
//! `mcp`);
//! `lc-agent-cli` (`cli/`) is the `lc-agent` binary (`run`, `chat`,
//! `tool`, `sessions`, `mcp`, `serve`); `lc-agent-server` (`server/`)
//! serves the agent over HTTP (OpenAI-compatible chat completions, tool
//! endpoints, the session API with SSE events, the web page).
//! The network, its nodes, the run and the tools know each other by design (a node knows its network, a network runs its nodes, a
//! tool sees the network it runs in); everything else depends downward.
//!
//! ```
//! use lc_agent::{FnTool, HumanNode, RunnableNetwork, ScriptedChatModel, ToolOutput, Turn};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! // An offline stand-in for a real model: it replays these turns.
//! let model = ScriptedChatModel::new([
//!     Turn::call("call-1", "shout", json!({"text": "hello"})),
//!     Turn::text("The tool said HELLO."),
//! ]);
//! let net = RunnableNetwork::builder()
//!     .default_node("chat")
//!     .chat_model("scripted")
//!     .model("scripted", model.clone())
//!     .tool(FnTool::new("shout", "Upper-cases `text`.",
//!         json!({"type": "object", "properties": {"text": {"type": "string"}}}),
//!         |args, _| async move { Ok(ToolOutput::ok(args["text"].as_str().unwrap_or("").to_uppercase())) }))
//!     .build();
//! {
//!     let _scope = net.enter();
//!     HumanNode::new("Shout hello");
//! }
//! let reply = net.invoke().await?;
//! assert_eq!(reply.text(), "The tool said HELLO.");
//! assert_eq!(model.calls(), 2);
//!
//! let saved = net.to_json()?;
//! let loaded = RunnableNetwork::from_json(&saved)?;
//! assert_eq!(loaded.to_json()?, saved);
//! # Ok::<(), lc_agent::NetworkError>(())
//! # }).unwrap();
//! ```

mod atomic_file;
mod call_limits;
mod clear_results;
mod content;
mod error;
mod event;
mod fallback;
mod files;
mod history;
mod lc_agent_import;
mod list;
mod loops;
mod message;
mod model;
mod network;
mod node;
mod nodes;
#[cfg(feature = "otel")]
pub mod otel;
mod output_schema;
mod prices;
mod routing;
mod run;
mod steering;
pub mod telemetry;
mod tool;
pub mod tool_args;
mod tool_call;
mod tool_executor;
mod tool_retry;
mod tool_specs;
mod typed_answers;
mod usage;

/// The README's examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub use error::{error_chain, CassetteError, ModelError, NetworkError, Result, ToolError};
pub use event::NetworkEvent;
pub use files::{now_rfc3339, FileData, Files};
pub use history::{History, SummaryInfo};
pub use lc_agent_import::LcAgentImport;
#[cfg(feature = "redis")]
pub use list::{
    redis::{Migration, RedisConnection, RedisConnector, RedisConnectorBuilder},
    RedisNetworkList, RedisNetworkListBuilder,
};
pub use list::{
    revision_of, save_patiently, validate_user, CheckpointModifier, CheckpointPolicy,
    JsonNetworkList, ListConfig, ListError, ListPage, ListQuery, Lists, NetworkList, SessionCache,
    SessionId, SessionInfo, CREATED_AT_KEY, UPDATED_AT_KEY,
};
pub use loops::{ChatLoop, ToolLoop};
pub use message::{ContentPart, ImagePart, Message, ToolCall, ToolStatus};
#[cfg(feature = "anthropic")]
pub use model::anthropic::{AnthropicChatModel, AnthropicChatModelBuilder};
pub use model::cassette::{Match, RecordingChatModel, ReplayChatModel};
#[cfg(feature = "openai")]
pub use model::openai::{
    remember_servers_in, OpenAiChatModel, OpenAiChatModelBuilder, OpenAiEmbedder,
};
pub use model::provider::{Provider, ProviderError, ProviderRow};
pub use model::scripted::{ScriptedChatModel, Turn};
pub use model::{
    ChatModel, ChatRequest, ChatResponse, DeltaSink, Embedder, HttpSettings, Sampling, StreamDelta,
    ToolChoice, ToolChoiceError, Usage,
};
pub use network::format::journal::REVISION_KEY;
pub use network::format::FORMAT;
pub use network::{NetworkBuilder, RunnableNetwork, ScopeGuard};
pub use node::register_node_kind;
pub(crate) use node::IdSet;
pub use node::{fields_of, AsAny, GenericNode, NodeContext, NodeId, NodeLogic, NodeRef};
pub use nodes::{
    ChatNode, HumanNode, NetworkInput, NetworkNode, SummaryNode, SystemNode, ToolNode,
};
pub use output_schema::{InvalidSchema, OutputSchema};
pub use prices::{Cost, Price, Prices, PricesError};
pub use routing::CHAT_STEP;
pub use run::{Hooks, InvokeOutcome, NetworkModifier, HELD_INSIDE};
pub use steering::{steered_ids, Inbox, SteerMessage, SteerMode, SteeringModifier};
pub use tool::{FnTool, Tool, ToolContext, ToolOutput, ToolSpec, TypedTool};
pub use tool_executor::{openai_tools, ToolExecution, ToolExecutor};
pub use tool_specs::ToolSpecs;
pub use typed_answers::MAX_ANSWERS;
pub use usage::{
    TokenCounts, UsageEstimator, UsageExt, UsageTotals, RESPONSE_MODEL_KEY, TOKEN_USAGE_KEY,
    USAGE_KEY,
};

// The network's extension traits: one per feature, each implemented for
// `RunnableNetwork` in the feature's own module.
pub use call_limits::CallLimitsExt;
pub use clear_results::ClearResultsExt;
pub use fallback::FallbackExt;
pub use network::fork::TimeTravelExt;
pub use network::format::Saving;
pub use network::runtime::{Attachments, Events};
pub use network::snapshots::SnapshotsExt;
pub use nodes::summary::SummaryExt;
pub use routing::ModelRoutes;
pub use tool_retry::ToolRetryExt;
pub use typed_answers::OutputSchemaExt;

/// Everything a program building and running networks usually names, in
/// one import: the network and node types and every extension trait of
/// [`RunnableNetwork`] (whose methods are then in scope).
///
/// ```
/// use lc_agent::prelude::*;
///
/// let net = RunnableNetwork::new();
/// net.set_model_route("summary", "small"); // ModelRoutes
/// assert_eq!(net.usage().all.prompt_tokens, 0); // UsageExt
/// ```
pub mod prelude {
    pub use crate::{
        Attachments, CallLimitsExt, ChatNode, ClearResultsExt, Events, FallbackExt, HumanNode,
        LcAgentImport, Message, ModelRoutes, NetworkModifier, NodeRef, OutputSchemaExt,
        RunnableNetwork, Saving, SnapshotsExt, SummaryExt, SystemNode, TimeTravelExt, Tool,
        ToolNode, ToolRetryExt, UsageExt,
    };
}
