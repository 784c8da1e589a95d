//! [`ServerConnection`]: one MCP server, connected on demand and reconnected
//! after a failure, with the last tool list it announced.
//!
//! ```text
//!          call / connect()                       server
//!  ─────────────▶ live? ──no──▶ spawn | HTTP ──▶ initialize ─▶ tools/list ─┐
//!                  │yes                                                     │ cached
//!                  ▼                                                        ▼
//!            tools/call ──(timeout)──▶ result          tool list ◀── notifications/tools/list_changed
//!                  │ transport closed, timeout                           (re-listed in the background)
//!                  ▼
//!            connection dropped (child killed); the next call connects again
//! ```

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, ErrorData, FormElicitationCapability, Implementation,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

use lc_agent_filesystem::KeepAlive;

use super::config::{McpEndpoint, McpServerConfig};
use super::confine::{stdio_process, McpSandbox};
use super::elicitation::{Elicitation, ElicitationAnswer};
use super::error::McpError;
use super::oauth;
use super::tokens::TokenFile;

/// Lines of a server's stderr kept to explain a failed start.
const STDERR_LINES: usize = 5;

/// One tool as the server announced it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RemoteTool {
    /// The server's name for it.
    pub name: String,
    /// Its description (empty when it has none).
    pub description: String,
    /// Its input schema, as sent (with `"type": "object"` added when missing).
    pub schema: Value,
    /// Why the schema cannot be offered to a model, if it cannot.
    pub schema_problem: Option<String>,
}

/// What a call ended with, short of a result.
#[derive(Debug)]
pub(crate) enum CallFailure {
    /// Connecting failed.
    Connect(McpError),
    /// The server answered with a JSON-RPC error (the connection is fine).
    Refused(String),
    /// The connection broke or the server was too slow; it was dropped.
    Broken(String),
    /// No answer in time; the connection was dropped.
    Timeout(Duration),
}

/// The time a server's requests for input waited for a person: a tool
/// call's timeout does not count it.
#[derive(Debug, Default)]
struct AskClock {
    /// Requests waiting now.
    open: usize,
    /// Since when one has been waiting.
    since: Option<Instant>,
    /// The time spent before `since`.
    spent: Duration,
}

impl AskClock {
    /// All the time spent waiting, up to now.
    fn total(&self) -> Duration {
        self.spent + self.since.map_or(Duration::ZERO, |s| s.elapsed())
    }
}

/// A request for input waiting (see [`AskClock`]); it stops counting when
/// dropped.
struct Asking(Arc<Mutex<AskClock>>);

impl Asking {
    fn start(clock: &Arc<Mutex<AskClock>>) -> Self {
        let mut c = clock.lock();
        c.open += 1;
        if c.since.is_none() {
            c.since = Some(Instant::now());
        }
        Self(clock.clone())
    }
}

impl Drop for Asking {
    fn drop(&mut self) {
        let mut c = self.0.lock();
        c.open = c.open.saturating_sub(1);
        if c.open == 0
            && let Some(since) = c.since.take()
        {
            c.spent += since.elapsed();
        }
    }
}

/// The client side of one connection: notices tool-list changes, passes
/// the server's requests for input to a person (when one can answer).
#[derive(Clone)]
struct Handler {
    server: Arc<str>,
    tools: Arc<RwLock<Arc<[RemoteTool]>>>,
    /// Where the server's requests for input go (none: nobody can answer;
    /// the capability is not declared and a request is declined).
    elicit: Option<mpsc::Sender<Elicitation>>,
    /// The session the connection belongs to, if one.
    session: Option<String>,
    asking: Arc<Mutex<AskClock>>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicit.is_some() {
            // Form mode only; the answers are checked against the schema.
            capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::new().with_schema_validation(true)),
            );
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("lc-agent", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let server = &self.server;
        let declined = Ok(ElicitResult::new(ElicitationAction::Decline));
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            tracing::warn!("MCP server `{server}` asked to open a web page for input, which lc-agent does not offer; declined");
            return declined;
        };
        let Some(sender) = &self.elicit else {
            tracing::warn!("MCP server `{server}` asked for input ({message:?}) where nobody can answer; declined");
            return declined;
        };
        let schema = serde_json::to_value(&requested_schema)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let (request, answer) = Elicitation::new(server, message, &schema).map_err(|why| {
            tracing::warn!(
                "MCP server `{server}` asked for input with a form lc-agent cannot show: {why}"
            );
            ErrorData::invalid_params(
                format!("the requested schema is not a flat form: {why}"),
                None,
            )
        })?;
        let request = request.for_session(self.session.clone());
        let _asking = Asking::start(&self.asking);
        if sender.send(request).await.is_err() {
            return declined;
        }
        let answer = tokio::select! {
            answer = answer => answer,
            () = context.ct.cancelled() => {
                tracing::debug!(server = %server, "the MCP server withdrew its request for input");
                return Ok(ElicitResult::new(ElicitationAction::Cancel));
            }
        };
        Ok(match answer {
            Ok(ElicitationAnswer::Accept(content)) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            Ok(ElicitationAnswer::Cancel) => ElicitResult::new(ElicitationAction::Cancel),
            // Dropped unanswered: declined.
            Ok(ElicitationAnswer::Decline) | Err(_) => {
                ElicitResult::new(ElicitationAction::Decline)
            }
        })
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let peer = context.peer;
        let handler = self.clone();
        // Listing is a request: never wait for it inside the notification.
        tokio::spawn(async move {
            match peer.list_all_tools().await {
                Ok(tools) => {
                    tracing::debug!(server = %handler.server, count = tools.len(), "MCP tool list changed");
                    *handler.tools.write() = convert(tools).into();
                }
                Err(e) => {
                    tracing::warn!(server = %handler.server, error = %e, "MCP tool list changed, re-listing failed")
                }
            }
        });
    }
}

type Live = RunningService<RoleClient, Handler>;

/// One configured MCP server (see the [module docs](super)).
pub(crate) struct ServerConnection {
    name: Arc<str>,
    config: McpServerConfig,
    live: tokio::sync::Mutex<Option<Arc<Live>>>,
    tools: Arc<RwLock<Arc<[RemoteTool]>>>,
    /// Where OAuth tokens are kept (HTTP servers).
    tokens: TokenFile,
    /// Where the server's requests for input go (none: declined).
    elicit: Mutex<Option<mpsc::Sender<Elicitation>>>,
    /// The session the connection belongs to (its requests for input say so).
    session: Mutex<Option<String>>,
    /// The time they waited for a person.
    asking: Arc<Mutex<AskClock>>,
    /// Calls under way.
    in_flight: Arc<AtomicUsize>,
    /// The sandbox profile a stdio server runs in (none: unconfined).
    sandbox: Mutex<Option<Arc<McpSandbox>>>,
    /// What the running stdio server's sandbox needs while it lives.
    keep: Mutex<Option<KeepAlive>>,
}

impl std::fmt::Debug for ServerConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConnection")
            .field("name", &self.name)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ServerConnection {
    /// A server, not connected yet.
    pub(crate) fn new(name: impl Into<String>, config: McpServerConfig) -> Self {
        Self {
            name: name.into().into(),
            config,
            live: tokio::sync::Mutex::new(None),
            tools: Arc::new(RwLock::new(Arc::from(Vec::new()))),
            tokens: TokenFile::at(TokenFile::default_path()),
            elicit: Mutex::new(None),
            session: Mutex::new(None),
            asking: Arc::default(),
            in_flight: Arc::default(),
            sandbox: Mutex::new(None),
            keep: Mutex::new(None),
        }
    }

    /// Runs a stdio server in `sandbox` from the next connection on
    /// (see `confine.rs`).
    pub(crate) fn set_sandbox(&self, sandbox: Arc<McpSandbox>) {
        *self.sandbox.lock() = Some(sandbox);
    }

    /// Sends the server's requests for input to `sender`, and declares
    /// the capability (from the next connection on: it is declared at the
    /// handshake).
    pub(crate) fn set_elicitation(&self, sender: mpsc::Sender<Elicitation>) {
        *self.elicit.lock() = Some(sender);
    }

    /// The same server, a connection of its own (not connected yet).
    pub(crate) fn sibling(&self) -> Self {
        let own = Self::new(self.name.to_string(), self.config.clone());
        Self {
            tokens: self.tokens.clone(),
            sandbox: Mutex::new(self.sandbox.lock().clone()),
            ..own
        }
    }

    /// Tags the server's requests for input with `session` (the network
    /// the connection serves alone).
    pub(crate) fn set_session(&self, session: String) {
        *self.session.lock() = Some(session);
    }

    /// Whether a call is under way (a request for input waits inside one).
    pub(crate) fn is_busy(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) > 0
    }

    /// The server's name in the configuration.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The tools it announced last (empty before the first connection).
    pub(crate) fn tools(&self) -> Arc<[RemoteTool]> {
        self.tools.read().clone()
    }

    /// Whether a connection is open.
    pub(crate) async fn is_connected(&self) -> bool {
        self.live
            .lock()
            .await
            .as_ref()
            .is_some_and(|l| !l.is_closed())
    }

    /// Connects unless connected; lists the tools on a new connection.
    pub(crate) async fn connect(&self) -> Result<(), McpError> {
        self.live().await.map(|_| ())
    }

    /// Closes the connection (a spawned server is stopped).
    pub(crate) async fn disconnect(&self) {
        if let Some(live) = self.live.lock().await.take() {
            live.cancellation_token().cancel();
        }
    }

    async fn live(&self) -> Result<Arc<Live>, McpError> {
        let mut slot = self.live.lock().await;
        if let Some(live) = slot.as_ref()
            && !live.is_closed()
        {
            return Ok(live.clone());
        }
        *slot = None;
        let limit = self.config.connect_timeout();
        let live = match tokio::time::timeout(limit, self.open()).await {
            Ok(live) => Arc::new(live?),
            Err(_) => {
                return Err(McpError::Timeout {
                    server: self.name.to_string(),
                    what: "the MCP handshake and tools/list".into(),
                    seconds: limit.as_secs_f64(),
                })
            }
        };
        *slot = Some(live.clone());
        Ok(live)
    }

    /// Drops `live` if it is still the current connection.
    async fn drop_live(&self, live: &Arc<Live>) {
        let mut slot = self.live.lock().await;
        if slot
            .as_ref()
            .is_some_and(|current| Arc::ptr_eq(current, live))
        {
            *slot = None;
        }
        live.cancellation_token().cancel();
    }

    async fn open(&self) -> Result<Live, McpError> {
        let handler = Handler {
            server: self.name.clone(),
            tools: self.tools.clone(),
            elicit: self.elicit.lock().clone(),
            session: self.session.lock().clone(),
            asking: self.asking.clone(),
        };
        let server = self.name.to_string();
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let connected = match self.config.resolve(&server)? {
            McpEndpoint::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let sandbox = self.sandbox.lock().clone();
                let (cmd, keep) = stdio_process(
                    &server,
                    sandbox.as_deref(),
                    self.config.sandbox,
                    &command,
                    &args,
                    &env,
                    cwd.as_deref(),
                )?;
                // The previous process's (if any) goes: it was killed with
                // its connection.
                *self.keep.lock() = keep;
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|source| McpError::Spawn {
                        server: server.clone(),
                        command: command.clone(),
                        source,
                    })?;
                if let Some(stderr) = stderr {
                    let tail = stderr_tail.clone();
                    let name = self.name.clone();
                    tokio::spawn(async move {
                        let mut lines = tokio::io::BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            tracing::debug!(server = %name, "{line}");
                            let mut tail = tail.lock();
                            if tail.len() == STDERR_LINES {
                                tail.pop_front();
                            }
                            tail.push_back(line);
                        }
                    });
                }
                handler.serve(transport).await.map_err(|e| Box::new(e) as _)
            }
            McpEndpoint::Http {
                url,
                headers,
                oauth,
            } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
                let mut custom = HashMap::new();
                let mut bearer = false;
                for (name, value) in headers {
                    if name.eq_ignore_ascii_case("authorization")
                        && let Some(token) = value.strip_prefix("Bearer ")
                    {
                        config = config.auth_header(token.to_string());
                        bearer = true;
                        continue;
                    }
                    let invalid = |reason: String| {
                        McpError::Config(super::config::ConfigError::Invalid {
                            server: server.clone(),
                            reason,
                        })
                    };
                    let name = http::HeaderName::try_from(name.as_str())
                        .map_err(|e| invalid(format!("header name `{name}`: {e}")))?;
                    let value = http::HeaderValue::try_from(value.as_str())
                        .map_err(|e| invalid(format!("header `{name}`: {e}")))?;
                    custom.insert(name, value);
                }
                let config = config.custom_headers(custom);
                if bearer {
                    // A token of the configuration's own: no OAuth.
                    let transport = StreamableHttpClientTransport::from_config(config);
                    handler.serve(transport).await.map_err(|e| Box::new(e) as _)
                } else {
                    let client =
                        oauth::authorized_client(&server, &url, oauth.as_ref(), &self.tokens)
                            .await?;
                    let transport = StreamableHttpClientTransport::with_client(client, config);
                    handler.serve(transport).await.map_err(|e| Box::new(e) as _)
                }
            }
        };
        let live = connected.map_err(|source: super::error::Cause| {
            self.login_needed(&*source)
                .unwrap_or_else(|| McpError::Connect {
                    server: server.clone(),
                    stderr: tail_text(&stderr_tail.lock()),
                    source,
                })
        })?;
        let tools = live.list_all_tools().await.map_err(|e| {
            self.login_needed(&e)
                .unwrap_or_else(|| McpError::ListTools {
                    server: server.clone(),
                    source: Box::new(e),
                })
        })?;
        *self.tools.write() = convert(tools).into();
        tracing::debug!(server = %self.name, tools = self.tools.read().len(), "MCP server connected");
        Ok(live)
    }

    /// "Run `lc-agent mcp login`" when `error` is the server asking for
    /// authorization and a login would give it: an HTTP server whose
    /// entry has no `Authorization` header of its own (a refused
    /// configured token is a failure to connect, not a login to do).
    fn login_needed(&self, error: &(dyn std::error::Error + 'static)) -> Option<McpError> {
        let own_header = self
            .config
            .headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization"));
        if self.config.url.is_none() || own_header {
            return None;
        }
        oauth::login_needed(&self.name, error)
    }

    /// Calls `tool` with `args`; the result's JSON, or why there is none.
    pub(crate) async fn call(&self, tool: &str, args: Value) -> Result<Value, CallFailure> {
        let _busy = Busy::start(&self.in_flight);
        let live = self.live().await.map_err(CallFailure::Connect)?;
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        let limit = self.config.call_timeout();
        match self.within(limit, live.call_tool(params)).await {
            Ok(Ok(result)) => serde_json::to_value(&result)
                .map_err(|e| CallFailure::Refused(format!("its result is not JSON: {e}"))),
            Ok(Err(ServiceError::McpError(e))) => Err(CallFailure::Refused(e.message.to_string())),
            Ok(Err(ServiceError::UnexpectedResponse)) => Err(CallFailure::Refused(
                "it answered with something other than a tool result (input requests and tasks are not supported)".into(),
            )),
            Ok(Err(e)) => {
                self.drop_live(&live).await;
                match self.login_needed(&e) {
                    Some(login) => Err(CallFailure::Connect(login)),
                    None => Err(CallFailure::Broken(e.to_string())),
                }
            }
            Err(_) => {
                self.drop_live(&live).await;
                Err(CallFailure::Timeout(limit))
            }
        }
    }
}

impl ServerConnection {
    /// `call`'s result, unless it takes longer than `limit`, not counting
    /// the time the server's requests for input waited for a person.
    async fn within<T>(
        &self,
        limit: Duration,
        call: impl std::future::Future<Output = T>,
    ) -> Result<T, ()> {
        let started = Instant::now();
        let asked_before = self.asking.lock().total();
        tokio::pin!(call);
        let mut deadline = started + limit;
        loop {
            tokio::select! {
                done = &mut call => return Ok(done),
                () = tokio::time::sleep_until(deadline) => {
                    let (asked, open) = {
                        let clock = self.asking.lock();
                        (clock.total().saturating_sub(asked_before), clock.open > 0)
                    };
                    let later = started + limit + asked;
                    let now = Instant::now();
                    if open {
                        deadline = later.max(now + Duration::from_secs(1));
                    } else if later > now {
                        deadline = later;
                    } else {
                        return Err(());
                    }
                }
            }
        }
    }
}

/// A call under way, counted while it lives.
struct Busy(Arc<AtomicUsize>);

impl Busy {
    fn start(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `: line | line` of the last stderr lines, or nothing.
fn tail_text(lines: &VecDeque<String>) -> String {
    let lines: Vec<&str> = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!(" (its stderr: {})", lines.join(" | "))
    }
}

/// The SDK's tools as [`RemoteTool`]s, schemas checked.
fn convert(tools: Vec<rmcp::model::Tool>) -> Vec<RemoteTool> {
    tools
        .into_iter()
        .map(|tool| {
            let mut schema = (*tool.input_schema).clone();
            schema
                .entry("type")
                .or_insert_with(|| Value::String("object".into()));
            let schema = Value::Object(schema);
            RemoteTool {
                name: tool.name.to_string(),
                description: tool.description.map(|d| d.to_string()).unwrap_or_default(),
                schema_problem: schema_problem(&schema),
                schema,
            }
        })
        .collect()
}

/// Why `schema` is not an arguments schema a model can be given, if so.
pub(crate) fn schema_problem(schema: &Value) -> Option<String> {
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => return Some(format!("`type` must be \"object\", not {other}")),
        None => {}
    }
    match schema.get("properties") {
        None => {}
        Some(Value::Object(props)) => {
            if let Some((name, _)) = props
                .iter()
                .find(|(_, p)| !(p.is_object() || p.is_boolean()))
            {
                return Some(format!("property `{name}` is not a schema"));
            }
        }
        Some(other) => return Some(format!("`properties` must be an object, not {other}")),
    }
    match schema.get("required") {
        None => None,
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => None,
        Some(other) => Some(format!("`required` must be a list of names, not {other}")),
    }
}
