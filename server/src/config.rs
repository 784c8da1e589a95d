//! [`ServerConfig`]: what a server serves (the agent, where sessions and
//! files live) and how it guards itself (tokens, limits, CORS).
//!
//! ```text
//!  ServerConfig::new(model)
//!    .workspace(Workspace::directory(dir)[.shell(true)])  the file tools (default: each
//!                                                         session's own files)
//!    .spec(AgentSpec)                                   the agent of new sessions
//!    .sessions(ListConfig::json(dir) | ::redis(url))    where sessions live
//!    .tokens(Tokens::parse("alice:t1,bob:t2"))          bearer token -> user
//!    .body_limit(..) .request_timeout(..) .cors_origin(..) .allow_host(..)
//!    .header_timeout(..) .body_timeout(..) .max_connections(..)   slow clients
//!    .max_requests(..) .max_client_requests(..) .request_reserve(..) .queue_wait(..)
//!    .trusted_proxy(..)                                  fair request slots (slots.rs)
//!    .retention(..) .snapshot_turns(..) .session_cache(..)        the session lists
//!    .default_mode(..) .allow_bypass(..)                 permission modes (modes.rs)
//! ```

use std::sync::Arc;
use std::time::Duration;

use lc_agent::validate_user;
use lc_agent::{ChatModel, ListConfig};
use lc_agent_deepagent::{same_token, AgentSpec, PermissionMode, Workspace};

/// The user of requests when the server runs without tokens.
pub const ANONYMOUS_USER: &str = "default";

/// Errors of reading a server's configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A token entry that cannot be read.
    #[error("LC_AGENT_TOKEN: {0}")]
    Token(String),
    /// A user name that cannot be a session namespace.
    #[error("LC_AGENT_TOKEN: {0}")]
    User(#[source] lc_agent::ListError),
}

/// Bearer tokens and the user each one maps to.
///
/// Read from `LC_AGENT_TOKEN`: comma-separated entries, each `user:token`,
/// or a bare `token` for the user `default`.
///
/// ```
/// use lc_agent_server::Tokens;
/// let tokens = Tokens::parse("alice:secret-a, bob:secret-b").unwrap();
/// assert_eq!(tokens.user_of("secret-b"), Some("bob"));
/// assert_eq!(tokens.user_of("nope"), None);
/// assert_eq!(Tokens::parse("only").unwrap().user_of("only"), Some("default"));
/// assert!(Tokens::parse("alice:").is_err());
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Tokens(Vec<(String, String)>);

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a token.
        f.debug_list()
            .entries(self.0.iter().map(|(user, _)| user))
            .finish()
    }
}

impl Tokens {
    /// No tokens: requests need none (allowed on loopback only).
    pub fn none() -> Self {
        Self::default()
    }

    /// Reads `user:token,user:token` (a bare `token` is the user `default`).
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let mut out = Vec::new();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (user, token) = match entry.split_once(':') {
                Some((user, token)) => (user.trim(), token.trim()),
                None => (ANONYMOUS_USER, entry),
            };
            if token.is_empty() {
                return Err(ConfigError::Token(format!(
                    "the entry for `{user}` has an empty token"
                )));
            }
            validate_user(user).map_err(ConfigError::User)?;
            if out.iter().any(|(_, t)| t == token) {
                return Err(ConfigError::Token(
                    "the same token is given twice".to_string(),
                ));
            }
            out.push((user.to_string(), token.to_string()));
        }
        Ok(Self(out))
    }

    /// The tokens of `LC_AGENT_TOKEN` (none when it is unset or empty).
    pub fn from_env() -> Result<Self, ConfigError> {
        match std::env::var("LC_AGENT_TOKEN") {
            Ok(text) => Self::parse(&text),
            Err(_) => Ok(Self::none()),
        }
    }

    /// Whether there is no token at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The user a token belongs to.
    pub fn user_of(&self, token: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(_, t)| same_token(t, token))
            .map(|(user, _)| user.as_str())
    }

    /// Every user named, each once.
    pub fn users(&self) -> Vec<String> {
        let mut users: Vec<String> = self.0.iter().map(|(u, _)| u.clone()).collect();
        users.dedup();
        users.sort();
        users.dedup();
        users
    }
}

/// Everything a server needs (see the module's documentation).
#[derive(Clone)]
pub struct ServerConfig {
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) model_name: String,
    pub(crate) spec: Option<AgentSpec>,
    pub(crate) workspace: Workspace,
    pub(crate) sessions: ListConfig,
    pub(crate) tokens: Tokens,
    pub(crate) body_limit: usize,
    pub(crate) request_timeout: Duration,
    pub(crate) shutdown_grace: Duration,
    pub(crate) cors_origins: Vec<String>,
    pub(crate) allow_hosts: Vec<String>,
    pub(crate) header_timeout: Duration,
    pub(crate) max_connections: usize,
    /// Request slots per client, the reserve, the body timeout, the
    /// trusted proxies (`slots.rs`).
    pub(crate) slots: SlotSettings,
    pub(crate) silent_timeout: Duration,
    pub(crate) max_file_bytes: u64,
    pub(crate) max_session_files_bytes: u64,
    pub(crate) retention: Option<Duration>,
    pub(crate) snapshot_turns: Option<usize>,
    pub(crate) session_cache: usize,
    pub(crate) modifiers: Vec<Arc<dyn lc_agent::NetworkModifier>>,
    pub(crate) summaries: bool,
    /// `false`: no project memory files in any session's prompt.
    pub(crate) project_memory: bool,
    /// The file tools' read and write limits for every session (`None`: as
    /// its blueprint says).
    pub(crate) file_limits: (Option<u64>, Option<u64>),
    pub(crate) runs: RunSettings,
    /// The permission mode of new sessions (`modes.rs`).
    pub(crate) default_mode: Option<PermissionMode>,
    /// Whether clients may ask for `bypass` (`modes.rs`).
    pub(crate) allow_bypass: bool,
    /// Path rules checked before every session's own.
    pub(crate) permissions: lc_agent_filesystem::Permissions,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("model_name", &self.model_name)
            .field("workspace", &self.workspace)
            .field("sessions", &self.sessions)
            .field("tokens", &self.tokens)
            .field("body_limit", &self.body_limit)
            .field("request_timeout", &self.request_timeout)
            .field("cors_origins", &self.cors_origins)
            .field("allow_hosts", &self.allow_hosts)
            .field("header_timeout", &self.header_timeout)
            .field("max_connections", &self.max_connections)
            .field("slots", &self.slots)
            .field("silent_timeout", &self.silent_timeout)
            .field("max_file_bytes", &self.max_file_bytes)
            .field("max_session_files_bytes", &self.max_session_files_bytes)
            .field("retention", &self.retention)
            .field("snapshot_turns", &self.snapshot_turns)
            .field("session_cache", &self.session_cache)
            .field("runs", &self.runs)
            .finish_non_exhaustive()
    }
}

impl ServerConfig {
    /// A server whose agents use `model` (the main model of every
    /// session), sessions in the default JSON list, no tokens, a 2 MiB body
    /// limit, a 300 s request timeout, no CORS, 10 s to send a request's
    /// headers (and to start the next one on a kept-alive connection),
    /// 15 s for a whole body, 4096 connections open (one that sends
    /// nothing for 5 s is closed; idle ones make room for new ones), 512
    /// requests served at once (64 per client, 32 kept for clients holding
    /// none; 10 s of waiting for a slot, then 429), 8 MiB
    /// per file and 32 MiB in all in a session's own files, sessions
    /// kept forever, and a cache of 64 parsed sessions.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        Self {
            model,
            model_name: "lc-agent".to_string(),
            spec: None,
            workspace: Workspace::Session,
            sessions: ListConfig::default(),
            tokens: Tokens::none(),
            body_limit: 2 * 1024 * 1024,
            request_timeout: Duration::from_secs(300),
            shutdown_grace: Duration::from_secs(10),
            cors_origins: Vec::new(),
            allow_hosts: Vec::new(),
            header_timeout: Duration::from_secs(10),
            max_connections: 4096,
            slots: SlotSettings::default(),
            silent_timeout: Duration::from_secs(5),
            max_file_bytes: 8 << 20,
            max_session_files_bytes: 32 << 20,
            retention: None,
            snapshot_turns: None,
            session_cache: 64,
            modifiers: Vec::new(),
            summaries: true,
            project_memory: true,
            file_limits: (None, None),
            runs: RunSettings::default(),
            default_mode: None,
            allow_bypass: false,
            permissions: lc_agent_filesystem::Permissions::default(),
        }
    }

    /// Path rules for every session (see
    /// [`lc_agent_filesystem::Permissions`]): checked before the rules of a
    /// session's own blueprint, whatever it says; an `ask` rule holds a
    /// session's call for approval, and refuses on `/v1/tools/execute`
    /// (nobody there can approve).
    #[must_use]
    pub fn permissions(mut self, rules: lc_agent_filesystem::Permissions) -> Self {
        self.permissions = rules;
        self
    }

    /// How the server takes and keeps runs: how many at once, per user,
    /// how long each may take, the lease, how long finished runs are kept
    /// (see [`RunSettings`]).
    #[must_use]
    pub fn runs(mut self, settings: RunSettings) -> Self {
        self.runs = settings;
        self
    }

    /// Whether sessions summarize long conversations (default on: older
    /// turns are summarized when a request nears the model's context
    /// window, so a long chat keeps fitting). Applies to every session the
    /// server runs, whatever its stored blueprint says.
    #[must_use]
    pub fn summaries(mut self, on: bool) -> Self {
        self.summaries = on;
        self
    }

    /// Whether sessions read the project memory files (`AGENTS.md`; default
    /// on, as the blueprint says); off applies to every session the server
    /// runs, whatever its stored blueprint says.
    #[must_use]
    pub fn project_memory(mut self, on: bool) -> Self {
        self.project_memory = on;
        self
    }

    /// The file tools' limits for every session the server runs, whatever
    /// its blueprint says (`None`: as it says): the most bytes one
    /// `read_file` returns, and the largest file `write_file`, `edit_file`
    /// and the line tools may leave (see
    /// [`FileLimits`](lc_agent_filesystem::FileLimits)).
    #[must_use]
    pub fn file_limits(
        mut self,
        max_read_bytes: Option<u64>,
        max_write_bytes: Option<u64>,
    ) -> Self {
        self.file_limits = (max_read_bytes, max_write_bytes);
        self
    }

    /// The model id `/v1/models` lists (default `lc-agent`).
    #[must_use]
    pub fn model_name(mut self, name: impl Into<String>) -> Self {
        self.model_name = name.into();
        self
    }

    /// The permission mode of new sessions (default `default`; a
    /// blueprint's `mode` wins). `bypass` here also allows clients to ask
    /// for it.
    #[must_use]
    pub fn default_mode(mut self, mode: PermissionMode) -> Self {
        self.default_mode = Some(mode);
        self
    }

    /// Whether a client may put a session in `bypass` mode (default: no,
    /// such a request is refused with 403).
    #[must_use]
    pub fn allow_bypass(mut self, on: bool) -> Self {
        self.allow_bypass = on;
        self
    }

    /// The blueprint of new sessions' agents (their main model is the
    /// server's; a loaded session's own stored blueprint wins).
    #[must_use]
    pub fn spec(mut self, spec: AgentSpec) -> Self {
        self.spec = Some(spec);
        self
    }

    /// Where the file tools work, for every session (default: each
    /// session's own files). A directory is per user (`<dir>/<user>`,
    /// created on first use) when there are tokens; with a shell, each
    /// `execute` waits for an approval unless the workspace says otherwise.
    /// The server's workspace wins over one stored in a session's blueprint.
    #[must_use]
    pub fn workspace(mut self, workspace: Workspace) -> Self {
        self.workspace = workspace;
        self
    }

    /// Where sessions are kept.
    #[must_use]
    pub fn sessions(mut self, store: ListConfig) -> Self {
        self.sessions = store;
        self
    }

    /// The bearer tokens.
    #[must_use]
    pub fn tokens(mut self, tokens: Tokens) -> Self {
        self.tokens = tokens;
        self
    }

    /// The largest request body, in bytes (larger ones get 413).
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// How long a request may take to answer (then 408); a streamed
    /// answer's stream is not cut.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long a shutdown waits for running sessions before saving them
    /// as they are.
    #[must_use]
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Another modifier on every session's agent, shared by all of them:
    /// MCP tools (`lc_agent_deepagent::mcp::McpTools`, connected once),
    /// say. Its tools are offered by `/v1/tools` and run by the agent.
    #[must_use]
    pub fn modifier_shared(mut self, modifier: Arc<dyn lc_agent::NetworkModifier>) -> Self {
        self.modifiers.push(modifier);
        self
    }

    /// Allows browser pages from `origin` (CORS is off unless named).
    #[must_use]
    pub fn cors_origin(mut self, origin: impl Into<String>) -> Self {
        self.cors_origins.push(origin.into());
        self
    }

    /// Also answers requests whose `Host` is `host` (`name` or
    /// `name:port`). Without tokens the server answers only its own
    /// loopback address (`127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`)
    /// unless a host is allowed here: a page whose DNS name was rebound to
    /// 127.0.0.1 cannot drive it. With tokens and no host named, any `Host`
    /// is answered.
    #[must_use]
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allow_hosts
            .push(host.into().trim().to_ascii_lowercase());
        self
    }

    /// How long a client may take to send a request's headers, and how
    /// long a kept-alive connection may sit idle before its next request
    /// (then the connection is closed).
    #[must_use]
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout;
        self
    }

    /// How long a request's whole body may take to arrive (then 408); it
    /// holds no request slot meanwhile.
    #[must_use]
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.slots.body_timeout = timeout;
        self
    }

    /// How many connections may be open at once. At the cap a new one
    /// takes the place of the oldest idle connection (silent, or between
    /// requests) of the address holding the most idle ones; when every
    /// connection is busy with a request it gets 429 and is closed.
    #[must_use]
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// How many requests are served at once, in all (`slots.rs`).
    #[must_use]
    pub fn max_requests(mut self, max: usize) -> Self {
        self.slots.max_requests = max.max(1);
        self
    }

    /// How many requests one client — a user (its token), or an address
    /// when a request carries no known token — may have served at once;
    /// more wait for a slot (then 429 with `Retry-After`).
    #[must_use]
    pub fn max_client_requests(mut self, max: usize) -> Self {
        self.slots.max_client_requests = max.max(1);
        self
    }

    /// How many of the last free request slots are kept for clients that
    /// hold none, so a new client is served during another's burst.
    #[must_use]
    pub fn request_reserve(mut self, reserve: usize) -> Self {
        self.slots.reserve = reserve;
        self
    }

    /// How long a request waits for a slot before its 429.
    #[must_use]
    pub fn queue_wait(mut self, wait: Duration) -> Self {
        self.slots.queue_wait = wait;
        self
    }

    /// Trusts the proxies of `net`: a request from one of them is counted
    /// for the client its `Forwarded` (or `X-Forwarded-For`) header names
    /// (the first address from the right that is no trusted proxy).
    #[must_use]
    pub fn trusted_proxy(mut self, net: ipnet::IpNet) -> Self {
        self.slots.trusted_proxies.push(net);
        self
    }

    /// How long a new connection may stay silent (send no byte at all)
    /// before it is closed; the header timeout runs from its first byte.
    #[must_use]
    pub fn silent_timeout(mut self, timeout: Duration) -> Self {
        self.silent_timeout = timeout;
        self
    }

    /// The most bytes one file of a session's own files (the files in its
    /// graph) may hold; a call that would write more is undone and told so.
    #[must_use]
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// The most bytes a session's own files may hold in all; a call that
    /// would write more is undone and told so.
    #[must_use]
    pub fn max_session_files_bytes(mut self, bytes: u64) -> Self {
        self.max_session_files_bytes = bytes;
        self
    }

    /// Sessions not saved for this long are removed (each user's list
    /// removes its own expired sessions; Redis keys expire by themselves).
    #[must_use]
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = Some(retention);
        self
    }

    /// How many parsed sessions the server keeps in memory (0: none); a
    /// kept session is checked against the store's revision instead of
    /// being read and parsed again.
    #[must_use]
    pub fn session_cache(mut self, sessions: usize) -> Self {
        self.session_cache = sessions;
        self
    }

    /// Each saved session keeps only the file contents (rewind snapshots)
    /// that rewinds to its last `turns` turns need (see
    /// [`Lists::snapshot_turns`](lc_agent::Lists::snapshot_turns)).
    #[must_use]
    pub fn snapshot_turns(mut self, turns: usize) -> Self {
        self.snapshot_turns = Some(turns);
        self
    }

    /// Opens the session lists: the store, with the retention, the
    /// snapshots kept and the session cache.
    pub(crate) fn lists(&self) -> Result<lc_agent::Lists, lc_agent::ListError> {
        let mut lists = self.sessions.open()?.cache(self.session_cache);
        if let Some(retention) = self.retention {
            lists = lists.retention(retention);
        }
        if let Some(turns) = self.snapshot_turns {
            lists = lists.snapshot_turns(turns);
        }
        Ok(lists)
    }
}

/// How a server takes and keeps runs.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Runs this server executes at once (more wait in the queue).
    pub max_runs: usize,
    /// Queued and running runs one user may have (more get 429).
    pub per_user: usize,
    /// How long a run may take, from when a server takes it.
    pub time_limit: Option<Duration>,
    /// A run whose server has not renewed its lease for this long is
    /// taken over by another (Redis).
    pub lease: Duration,
    /// How long a finished run's record and events are kept.
    pub keep: Duration,
    /// How long a run waits out a session or run store that cannot be
    /// reached (a Redis restart) before it fails: its saves and events
    /// are tried again, with backoff, meanwhile.
    pub store_patience: Duration,
}

impl Default for RunSettings {
    fn default() -> Self {
        Self {
            max_runs: 32,
            per_user: 64,
            time_limit: Some(Duration::from_secs(3600)),
            lease: Duration::from_secs(15),
            keep: Duration::from_secs(3600),
            store_patience: Duration::from_secs(30),
        }
    }
}

/// How request slots are shared (`slots.rs`: per client, with a reserve for clients holding none).
#[derive(Debug, Clone)]
pub(crate) struct SlotSettings {
    /// Requests served at once, in all.
    pub(crate) max_requests: usize,
    /// Requests one client (a user, or an address without a known token)
    /// may have served at once.
    pub(crate) max_client_requests: usize,
    /// The last free slots, kept for clients that hold none.
    pub(crate) reserve: usize,
    /// How long a request waits for a slot before its 429.
    pub(crate) queue_wait: Duration,
    /// How long a request's whole body may take to arrive (then 408).
    pub(crate) body_timeout: Duration,
    /// Proxies whose `Forwarded` / `X-Forwarded-For` name the client.
    pub(crate) trusted_proxies: Vec<ipnet::IpNet>,
}

impl Default for SlotSettings {
    /// 512 requests at once, 64 per client, 32 kept for clients holding
    /// none, 10 s of waiting for a slot, 15 s for a body, no trusted proxy.
    fn default() -> Self {
        Self {
            max_requests: 512,
            max_client_requests: 64,
            reserve: 32,
            queue_wait: Duration::from_secs(10),
            body_timeout: Duration::from_secs(15),
            trusted_proxies: Vec::new(),
        }
    }
}
