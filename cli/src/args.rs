//! The flag groups several subcommands share, each a `#[derive(Args)]`
//! struct flattened where it is used, and what each group opens:
//!
//! ```text
//!  ModelArgs      [--provider P] --model NAME | --script F  ─▶ the main ChatModel
//!                 [--model-timeout SECONDS] (each request's timeout, over the blueprint's)
//!                 | --replay FILE.jsonl, [--record FILE.jsonl] (a cassette: replayed, or recorded)
//!  WorkspaceArgs  --root DIR [--shell [--sandbox MODE]]     ─▶ Workspace (where the file tools work)
//!                 [--allow|--deny|--ask OPS:GLOBS]...       ─▶ Permissions (permissions.rs)
//!  StoreArgs      --sessions DIR | --redis URL [--prefix P] ─▶ ListConfig (where sessions live)
//!                 [--session-ttl AGE] [--keep-snapshots N] ─▶ Lists (how long, how much)
//! ```
//!
//! A flag shared by `run`, `chat` and `serve` is added here, once.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use lc_agent::{ChatModel, ListConfig, Provider, ScriptedChatModel, ToolCall, Turn};
use lc_agent::{ListError, Lists, NetworkList, SessionId};
use lc_agent::{Match, RecordingChatModel, ReplayChatModel};
use lc_agent_deepagent::{AgentSpec, ModelSpec, Workspace, MAIN_MODEL};
use lc_agent_filesystem::{DomainPattern, FileLimits, SandboxMode, SandboxNetwork};
use serde::Deserialize;
use serde_json::Value;

use crate::error::{CliError, CliResult};

/// The chat model.
#[derive(Debug, Clone, Args)]
pub(crate) struct ModelArgs {
    /// The model name (default `OPENAI_MODEL`, or `ANTHROPIC_MODEL` with
    /// `--provider anthropic`); the server is `OPENAI_BASE_URL` /
    /// `ANTHROPIC_BASE_URL`, the key `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`.
    #[arg(long, conflicts_with = "script")]
    pub(crate) model: Option<String>,
    /// The model's provider: `openai` (any OpenAI-compatible server) or
    /// `anthropic` (the Messages API). Default: the one the session's
    /// blueprint recorded, else `anthropic` when only `ANTHROPIC_API_KEY`
    /// is set, else `openai`. Recorded in the session's blueprint.
    #[arg(long, value_name = "openai|anthropic", env = "LC_AGENT_PROVIDER")]
    pub(crate) provider: Option<Provider>,
    /// Replay this scripted model (offline): a JSON list of turns
    /// `{"content", "tool_calls": [{"id", "name", "arguments"}], "delay_ms"}`.
    #[arg(long)]
    pub(crate) script: Option<PathBuf>,
    /// How many tokens the model reads at most (default: what its server
    /// says, else the table of known models); summaries keep the
    /// conversation inside it. Recorded in the session's blueprint.
    #[arg(long, value_name = "TOKENS", env = "LC_AGENT_CONTEXT_WINDOW", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) context_window: Option<u64>,
    /// How long a model request may take, in seconds (default: the
    /// blueprint's `timeout_secs` of `[models.main]`, else 120): the
    /// whole answer, or — streamed — until it starts and then between two
    /// pieces, so an answer still producing tokens lives past it. A slow
    /// local model on a loaded CPU may need more.
    #[arg(long, value_name = "SECONDS", env = "LC_AGENT_MODEL_TIMEOUT", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) model_timeout: Option<u64>,
    /// No summaries of long conversations (on by default for a new
    /// session: older turns are summarized when a request nears the
    /// context window; a resumed session keeps what it was made with).
    #[arg(long)]
    pub(crate) no_summaries: bool,
    /// No project memory files (`AGENTS.md` from the workspace root up to
    /// the repository root, and the user's configuration directory) in the
    /// system prompt. Recorded in the session's blueprint.
    #[arg(long)]
    pub(crate) no_project_memory: bool,
    /// Record every request to the model and its answer (streamed pieces
    /// and errors too) in this cassette, JSON lines with secrets erased
    /// (replaced if it exists); `--replay FILE` plays it back offline.
    #[arg(long, value_name = "FILE.jsonl", conflicts_with = "replay")]
    pub(crate) record: Option<PathBuf>,
    /// Answer from this cassette (written by `--record`) instead of a
    /// model: no server, no key. A request that differs from the recorded
    /// one fails, saying what differs. The model's name is the recorded
    /// one unless `--model` gives it.
    #[arg(long, value_name = "FILE.jsonl", conflicts_with = "script")]
    pub(crate) replay: Option<PathBuf>,
    /// With `--replay`, compare only these parts of a request
    /// (comma-separated: messages, conversation (all but system messages),
    /// tools, tool_names, tool_choice; default: messages,tools,tool_choice).
    #[arg(long, value_name = "PARTS", requires = "replay", value_delimiter = ',')]
    pub(crate) replay_match: Option<Vec<Match>>,
}

impl ModelArgs {
    /// The provider: `--provider`, else `recorded` (a blueprint's), else
    /// the one the environment configures ([`Provider::from_env`]).
    pub(crate) fn provider(&self, recorded: Option<Provider>) -> Provider {
        self.provider
            .or(recorded)
            .unwrap_or_else(Provider::from_env)
    }

    /// The provider of `spec`'s main model ([`ModelArgs::provider`]),
    /// recorded on it, so a resumed session asks the same provider; a
    /// `note:` on stderr when `--provider` replaces a recorded one.
    /// A scripted or replayed model asks no provider: nothing is recorded.
    pub(crate) fn record_provider(&self, spec: &mut AgentSpec) -> Provider {
        let recorded = spec.models.get(MAIN_MODEL).and_then(|m| m.provider);
        let provider = self.provider(recorded);
        if self.script.is_some() || self.replay.is_some() {
            return provider;
        }
        if let Some(was) = recorded.filter(|was| *was != provider) {
            eprintln!("note: --provider: the session's model was asked of {was}, now {provider}");
        }
        if let Some(main) = spec.models.get_mut(MAIN_MODEL) {
            main.provider = Some(provider);
        }
        provider
    }

    /// [`ModelArgs::context_window`] as a number of tokens.
    pub(crate) fn context_window(&self) -> Option<usize> {
        self.context_window
            .and_then(|tokens| usize::try_from(tokens).ok())
    }

    /// Whether summaries are on: off with `--no-summaries`; else on for a
    /// new session, and as the stored blueprint says for a resumed one
    /// (`None`).
    pub(crate) fn summaries(&self, resumed: bool) -> Option<bool> {
        if self.no_summaries {
            Some(false)
        } else if resumed {
            None
        } else {
            Some(true)
        }
    }

    /// The model: replayed (`--replay`), scripted (over and over when
    /// `cycled`), or this provider's (see [`ModelArgs::provider`]), with
    /// this context window (a resumed session's; a replayed model has the
    /// recorded one); recorded with `--record`.
    /// A blueprint's `[models.main]` (`declared`) names the model, its
    /// endpoint and key unless `--model`, `--script` or `--replay` says
    /// otherwise.
    pub(crate) fn open_main(
        &self,
        cycled: bool,
        context_window: Option<usize>,
        provider: Provider,
        declared: Option<&ModelSpec>,
    ) -> CliResult<Arc<dyn ChatModel>> {
        // `--model-timeout`, else the blueprint's (also when `--model`
        // names another model).
        let timeout = self
            .model_timeout
            .or(declared.and_then(|spec| spec.timeout_secs));
        let declared = declared.filter(|_| self.model.is_none());
        let model = match declared {
            Some(spec) if self.script.is_none() && self.replay.is_none() => {
                let spec = ModelSpec {
                    provider: Some(provider),
                    context_window: context_window.or(spec.context_window),
                    timeout_secs: timeout,
                    ..spec.clone()
                };
                spec.open()
                    .map_err(|e| CliError::usage(format!("[models.main]: {e}")))?
            }
            _ => self.open_model(cycled, context_window, provider, timeout)?,
        };
        match &self.record {
            Some(path) => Ok(Arc::new(
                RecordingChatModel::create(model, path)
                    .map_err(|e| CliError::usage(format!("--record: {e}")))?
                    .named(self.name()),
            )),
            None => Ok(model),
        }
    }

    /// The cassette of `--replay`.
    fn replay_model(&self, path: &Path) -> CliResult<ReplayChatModel> {
        let model =
            ReplayChatModel::open(path).map_err(|e| CliError::usage(format!("--replay: {e}")))?;
        Ok(match &self.replay_match {
            Some(parts) => model.matching(parts.iter().copied()),
            None => model,
        })
    }

    /// The model to answer: replayed, scripted or the provider's (with
    /// requests timed out after `timeout` seconds when given).
    fn open_model(
        &self,
        cycled: bool,
        context_window: Option<usize>,
        provider: Provider,
        timeout: Option<u64>,
    ) -> CliResult<Arc<dyn ChatModel>> {
        if let Some(path) = &self.replay {
            return Ok(Arc::new(self.replay_model(path)?));
        }
        match &self.script {
            Some(path) => {
                let model = script_model(path)?;
                Ok(Arc::new(if cycled { model.cycled() } else { model }))
            }
            None => match timeout {
                None => provider.open(self.model.clone(), None, context_window),
                Some(secs) => timed(provider, self.model.clone(), context_window, secs),
            }
            .map_err(|e| CliError::usage(e.to_string())),
        }
    }

    /// The model's name, as a blueprint records it (a replayed model's
    /// is the recorded one unless `--model` gives it).
    pub(crate) fn name(&self) -> String {
        if let (Some(path), None) = (&self.replay, &self.model)
            && let Some(name) = ReplayChatModel::open(path)
                .ok()
                .and_then(|replay| replay.model_name().map(str::to_string))
        {
            return name;
        }
        match (&self.script, &self.model) {
            (Some(_), _) => "scripted".to_string(),
            (None, Some(name)) => name.clone(),
            (None, None) => {
                let provider = self.provider(None);
                // No name given, a server of one's own: the model it lists,
                // the one the requests name (asked once per process).
                let named =
                    std::env::var(provider.row().model_env).is_ok_and(|v| !v.trim().is_empty());
                let own_server =
                    std::env::var(provider.row().base_url_env).is_ok_and(|v| !v.trim().is_empty());
                if provider == Provider::OpenAi
                    && !named
                    && own_server
                    && let Ok(model) = lc_agent::OpenAiChatModel::builder().build()
                {
                    return model.model_name().to_string();
                }
                provider.default_model()
            }
        }
    }
}

/// `provider`'s model (as [`Provider::open`] opens it) with requests
/// timed out after `secs` seconds (`--model-timeout`).
fn timed(
    provider: Provider,
    model: Option<String>,
    context_window: Option<usize>,
    secs: u64,
) -> Result<Arc<dyn ChatModel>, lc_agent::ModelError> {
    let timeout = std::time::Duration::from_secs(secs);
    // The builders share these settings' names, not a trait.
    macro_rules! build {
        ($builder:expr) => {{
            let mut builder = $builder.timeout(timeout);
            if let Some(model) = model {
                builder = builder.model(model);
            }
            if let Some(tokens) = context_window {
                builder = builder.context_window(tokens);
            }
            Ok(Arc::new(builder.build()?))
        }};
    }
    match provider {
        Provider::OpenAi => build!(lc_agent::OpenAiChatModel::builder()),
        Provider::Anthropic => build!(lc_agent::AnthropicChatModel::builder()),
    }
}

#[derive(Deserialize)]
struct ScriptTurn {
    #[serde(default)]
    content: String,
    #[serde(default)]
    tool_calls: Vec<ScriptCall>,
    /// How long the model takes to answer, in milliseconds.
    #[serde(default)]
    delay_ms: u64,
}

#[derive(Deserialize)]
struct ScriptCall {
    id: String,
    name: String,
    #[serde(default)]
    arguments: Value,
}

/// The scripted model of a `--script` file.
fn script_model(path: &Path) -> CliResult<ScriptedChatModel> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
    let turns: Vec<ScriptTurn> = serde_json::from_str(&text)
        .map_err(|e| CliError::usage(format!("{} is not a script: {e}", path.display())))?;
    let turns = turns.into_iter().map(|t| Turn {
        content: t.content,
        tool_calls: t
            .tool_calls
            .into_iter()
            .map(|c| ToolCall::new(c.id, c.name, c.arguments))
            .collect(),
        delay: (t.delay_ms > 0).then(|| std::time::Duration::from_millis(t.delay_ms)),
    });
    Ok(ScriptedChatModel::new(turns))
}

/// Where the file tools work.
#[derive(Debug, Clone, Args)]
pub(crate) struct WorkspaceArgs {
    /// The directory the file tools work in (confined); default: the
    /// session's own files.
    #[arg(long, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,
    /// Offer `execute` in --root too (each call asks for approval); needs
    /// --root (`acp`: the editor's folder when --root is not given).
    #[arg(long)]
    pub(crate) shell: bool,
    /// With --shell: the sandbox commands run in — `workspace-write`
    /// (default: write only --root, not its .git or .lc-agent, even
    /// before they exist; no network), `read-only`, or `full` (no
    /// sandbox: commands run as you, on purpose). Made by bubblewrap
    /// where it works (namespaces: the host's processes hidden), else by
    /// Landlock + seccomp (containers); no capabilities under either,
    /// also as root. LC_AGENT_SANDBOX_MECHANISM=landlock|bubblewrap
    /// forces one.
    #[arg(long, value_name = "MODE", requires = "shell")]
    pub(crate) sandbox: Option<SandboxMode>,
    /// Another directory the sandbox lets commands and MCP stdio servers
    /// read (a toolchain: `--sandbox-read ~/.cargo --sandbox-read
    /// ~/.rustup`); repeatable.
    #[arg(long, value_name = "DIR", requires = "root")]
    pub(crate) sandbox_read: Vec<PathBuf>,
    /// Another directory they may write (a cache); repeatable.
    #[arg(long, value_name = "DIR", requires = "root")]
    pub(crate) sandbox_write: Vec<PathBuf>,
    /// An environment variable they get, by name (`--sandbox-env
    /// CARGO_HOME`); otherwise only PATH, HOME (the root) and LANG.
    #[arg(long, value_name = "NAME", requires = "root")]
    pub(crate) sandbox_env: Vec<String>,
    /// The network commands and MCP stdio servers get: `off` (default: none
    /// at all), `on` (the host's), or `allow` (only the domains of
    /// --sandbox-allow-domain, HTTP and HTTPS through lc-agent's proxy on
    /// loopback; raw IP addresses and other names refused).
    #[arg(long, value_name = "off|on|allow", requires = "root")]
    pub(crate) sandbox_network: Option<SandboxNetwork>,
    /// A domain they may reach through the proxy (`crates.io`, or
    /// `*.crates.io` for its subdomains); repeatable; implies
    /// --sandbox-network allow.
    #[arg(long, value_name = "DOMAIN", requires = "root")]
    pub(crate) sandbox_allow_domain: Vec<DomainPattern>,
    /// Path rules: --allow, --deny, --ask.
    #[command(flatten)]
    pub(crate) permissions: crate::permissions::PermissionArgs,
}

impl WorkspaceArgs {
    /// The workspace the flags name, if they name one (an error when
    /// allowed domains come with a network that ignores them).
    pub(crate) fn workspace(&self) -> CliResult<Option<Workspace>> {
        let Some(root) = &self.root else {
            if self.shell {
                return Err(CliError::usage(
                    "--shell needs --root DIR: the directory commands run in",
                ));
            }
            return Ok(None);
        };
        let mode = self.sandbox.unwrap_or_default();
        if self.shell && mode == SandboxMode::Full {
            warn_unconfined();
        }
        Workspace::directory(root)
            .shell(self.shell)
            .sandbox(mode)
            .sandbox_extras(
                self.sandbox_read.iter().cloned(),
                self.sandbox_write.iter().cloned(),
                self.sandbox_env.iter().cloned(),
            )
            .sandbox_network(
                self.sandbox_network,
                self.sandbox_allow_domain.iter().cloned(),
            )
            .map(Some)
            .map_err(CliError::usage)
    }
}

/// Says on stderr, once, that `--sandbox full` runs commands unconfined.
pub(crate) fn warn_unconfined() {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        eprintln!(
            "warning: --sandbox full: commands run unconfined, as you (they can read and \
             write anything you can, and reach the network)"
        );
    });
}

/// The file tools' size limits (the blueprint's `[files]`).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct FileLimitArgs {
    /// The most bytes one read_file returns (default 262144, at least
    /// 8192); it stops at a whole line and says how to read on.
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_read_bytes: Option<u64>,
    /// The largest file write_file, edit_file and the line tools may leave
    /// (default 4 GiB); a call over it is refused and changes nothing.
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_write_bytes: Option<u64>,
}

impl FileLimitArgs {
    /// The limits the flags give on top of `limits`.
    pub(crate) fn over(&self, mut limits: FileLimits) -> FileLimits {
        if let Some(bytes) = self.max_read_bytes {
            limits = limits.max_read_bytes(bytes);
        }
        if let Some(bytes) = self.max_write_bytes {
            limits = limits.max_write_bytes(bytes);
        }
        limits
    }
}

/// Where sessions live.
#[derive(Debug, Clone, Args)]
pub(crate) struct StoreArgs {
    /// The JSON sessions directory (default `$LC_AGENT_HOME/sessions`,
    /// else `~/.lc-agent/sessions`).
    #[arg(long, global = true, value_name = "DIR", conflicts_with = "redis")]
    pub(crate) sessions: Option<PathBuf>,
    /// Keep sessions in Redis at this URL (shared between processes).
    #[arg(long, global = true, value_name = "URL")]
    pub(crate) redis: Option<String>,
    /// The Redis key prefix (default `lc_agent`).
    #[arg(long, global = true, requires = "redis")]
    pub(crate) prefix: Option<String>,
    /// Remove sessions not saved for this long (e.g. 30d, 12h, 90m); in
    /// Redis the user's keys expire after it too.
    #[arg(long, global = true, value_name = "AGE", value_parser = parse_age, alias = "retention")]
    pub(crate) session_ttl: Option<Duration>,
    /// Each session keeps the file contents (rewind snapshots) of its last
    /// N turns only; rewinds further back report those files as not kept.
    #[arg(long, global = true, value_name = "N")]
    pub(crate) keep_snapshots: Option<usize>,
}

impl StoreArgs {
    /// The session store the flags name.
    pub(crate) fn config(&self) -> ListConfig {
        ListConfig::from_options(
            self.sessions.clone(),
            self.redis.clone(),
            self.prefix.clone(),
        )
    }

    /// The store opened, with the retention flags applied.
    pub(crate) fn lists(&self) -> Result<Lists, ListError> {
        let mut lists = self.config().open()?;
        if let Some(ttl) = self.session_ttl {
            lists = lists.retention(ttl);
        }
        if let Some(turns) = self.keep_snapshots {
            lists = lists.snapshot_turns(turns);
        }
        Ok(lists)
    }

    /// `user`'s session list.
    pub(crate) fn open(&self, user: &str) -> CliResult<Arc<dyn NetworkList>> {
        self.lists()
            .and_then(|lists| lists.user(user))
            .map_err(|e| CliError::usage(e.to_string()))
    }
}

/// `30d`, `12h`, `90m`, `45s` or plain seconds.
pub(crate) fn parse_age(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not an age: use a number and s, m, h or d (e.g. 30d)"))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}`: use s, m, h or d"
            ))
        }
    };
    if n == 0 {
        return Err("the retention must be longer than 0".to_string());
    }
    Ok(Duration::from_secs(n.saturating_mul(secs)))
}

/// A full id, or the one session whose id starts with `prefix` (corrupt
/// sessions included, so they can be exported or removed).
pub(crate) async fn find_session(list: &dyn NetworkList, prefix: &str) -> CliResult<SessionId> {
    let prefix = prefix.trim().to_ascii_lowercase();
    if prefix.is_empty() {
        return Err(CliError::failed("an empty session id"));
    }
    let mut matches = Vec::new();
    for entry in list
        .list_everything()
        .await
        .map_err(|e| CliError::failed(e.to_string()))?
    {
        let id = match entry {
            Ok(info) => Some(info.id),
            Err(ListError::Corrupt { id, .. }) => id,
            Err(_) => None,
        };
        if let Some(id) = id
            && id.to_string().starts_with(&prefix)
            && !matches.contains(&id)
        {
            matches.push(id);
        }
    }
    match matches.as_slice() {
        [id] => Ok(*id),
        [] => Err(CliError::failed(format!(
            "no session of user `{}` matches `{prefix}`",
            list.user()
        ))),
        many => Err(CliError::failed(format!(
            "`{prefix}` matches {} sessions; give more of the id",
            many.len()
        ))),
    }
}
