//! [`FileToolServer`]: the file tools served to any MCP client, over
//! stdio or streamable HTTP, confined exactly as the backend confines them.
//!
//! ```text
//!  MCP client ── stdio | POST /mcp (Authorization: Bearer <token>) ──▶ FileToolServer
//!    tools/list ─▶ ls, read_file, write_file, edit_file, glob, grep, delete (+ execute with a shell)
//!    tools/call ─▶ PreToolUse hooks (with_hooks) ─▶ filesystem::run_tool(backend, name, args)
//!                  ─▶ PostToolUse hooks ─▶ the spec's text, isError when it says `Error: ...`
//!                  ─▶ notifications/message {tool, status} when the client set a log level
//!    resources/list | read | templates/list | subscribe ─▶ resources.rs (the same backend)
//! ```
//!
//! The tool types, their descriptions, schemas and output strings are the
//! ones a network's [`FilesystemModifier`](lc_agent_filesystem::FilesystemModifier)
//! offers; nothing is re-implemented here. A [`LocalShellBackend`](lc_agent_filesystem::LocalShellBackend)
//! adds `execute`, which runs without asking anyone: serve it only to
//! clients you trust with a shell in that directory.

// rmcp marks MCP logging deprecated (SEP-2577); clients still use it.
#![allow(deprecated)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use lc_agent::{ToolCall, ToolOutput, ToolStatus};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use super::error::McpError;
use super::resources::{self, Session};
use crate::bearer::{bearer_token, bind_allowed, same_token};
use crate::hooks::HooksModifier;
use lc_agent_filesystem::{offered_tools, run_tool, Backend, Execute, FileTool};

/// Calls served so far (names them for the hooks' `tool_use_id`).
static CALLS: AtomicU64 = AtomicU64::new(0);

/// The path the HTTP transport answers on.
pub const MCP_HTTP_PATH: &str = "/mcp";

/// The environment variable holding the HTTP bearer token.
pub const TOKEN_ENV: &str = "LC_AGENT_TOKEN";

/// The file tools as an MCP server (see the [module docs](super)).
#[derive(Clone)]
pub struct FileToolServer {
    backend: Arc<dyn Backend>,
    tools: Arc<[rmcp::model::Tool]>,
    /// The `PreToolUse`/`PostToolUse` hooks every call meets.
    hooks: Option<Arc<HooksModifier>>,
    /// The client's log level and watched files (one per HTTP session).
    session: Arc<Session>,
}

impl std::fmt::Debug for FileToolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_ref()).collect();
        f.debug_struct("FileToolServer")
            .field("tools", &names)
            .finish_non_exhaustive()
    }
}

impl FileToolServer {
    /// Serves the tools over `backend`: the six file tools, and `execute`
    /// when the backend runs commands.
    ///
    /// ```
    /// use lc_agent_filesystem::FilesystemBackend;
    /// use lc_agent_deepagent::mcp::FileToolServer;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let server = FileToolServer::new(FilesystemBackend::new(dir.path()).unwrap());
    /// assert_eq!(server.tool_names(), ["ls", "read_file", "write_file", "edit_file", "glob", "grep", "delete"]);
    /// ```
    pub fn new(backend: impl Backend + 'static) -> Self {
        Self::shared(Arc::new(backend))
    }

    /// The file tools over a shared backend.
    pub fn shared(backend: Arc<dyn Backend>) -> Self {
        let tools = offered_tools(backend.clone(), backend.as_ref())
            .iter()
            .map(|tool| {
                let schema = match tool.parameters() {
                    Value::Object(map) => map,
                    _ => serde_json::Map::new(),
                };
                rmcp::model::Tool::new(
                    tool.name().to_string(),
                    tool.description().to_string(),
                    schema,
                )
            })
            .collect();
        Self {
            backend,
            tools,
            hooks: None,
            session: Arc::default(),
        }
    }

    /// Runs every call through `hooks`' `PreToolUse` and `PostToolUse`
    /// hooks (a `PreToolUse` `ask` refuses: nobody can approve here).
    #[must_use]
    pub fn with_hooks(mut self, hooks: HooksModifier) -> Self {
        self.hooks = Some(Arc::new(hooks));
        self
    }

    /// The names of the tools served.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_ref()).collect()
    }

    /// Serves one client on this process's stdin/stdout until it leaves.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let service = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| McpError::Serve {
                what: "the stdio handshake failed".into(),
                source: Box::new(e),
            })?;
        service.waiting().await.map_err(|e| McpError::Serve {
            what: "the stdio session ended badly".into(),
            source: Box::new(e),
        })?;
        Ok(())
    }

    /// The HTTP app: streamable HTTP on [`MCP_HTTP_PATH`]; with a token,
    /// every request must carry `Authorization: Bearer <token>`.
    pub(crate) fn http_router(self, token: Option<String>) -> axum::Router {
        let mut config = StreamableHttpServerConfig::default();
        if token.is_some() {
            // The token is what keeps other sites out (DNS rebinding needs
            // it too), so the Host header may be any name of this machine.
            config = config.disable_allowed_hosts();
        }
        let service: StreamableHttpService<FileToolServer, LocalSessionManager> =
            StreamableHttpService::new(
                move || {
                    Ok(Self {
                        session: Arc::default(),
                        ..self.clone()
                    })
                },
                LocalSessionManager::default().into(),
                config,
            );
        let router = axum::Router::new().route_service(MCP_HTTP_PATH, service);
        match token {
            Some(token) => router.layer(axum::middleware::from_fn_with_state(
                Arc::<str>::from(token),
                require_bearer,
            )),
            None => router,
        }
    }

    /// Serves HTTP on `listener` until `shutdown` completes. A listener off
    /// loopback needs a token.
    pub async fn serve_http(
        self,
        listener: tokio::net::TcpListener,
        token: Option<String>,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), McpError> {
        let addr = listener.local_addr().map_err(|e| McpError::Serve {
            what: "the listener has no address".into(),
            source: Box::new(e),
        })?;
        check_token(addr, token.as_deref())?;
        axum::serve(listener, self.http_router(token))
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|e| McpError::Serve {
                what: format!("serving HTTP on {addr} failed"),
                source: Box::new(e),
            })
    }
}

/// Refuses a non-loopback address without a token.
///
/// ```
/// use lc_agent_deepagent::mcp::check_token;
///
/// assert!(check_token("127.0.0.1:8000".parse().unwrap(), None).is_ok());
/// assert!(check_token("0.0.0.0:8000".parse().unwrap(), None).is_err());
/// assert!(check_token("0.0.0.0:8000".parse().unwrap(), Some("t")).is_ok());
/// ```
pub fn check_token(addr: SocketAddr, token: Option<&str>) -> Result<(), McpError> {
    let has_token = token.is_some_and(|t| !t.is_empty());
    if !bind_allowed(addr, has_token) {
        return Err(McpError::TokenRequired { addr });
    }
    Ok(())
}

/// Lets a request through only with the bearer token.
async fn require_bearer(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token);
    match given {
        Some(given) if same_token(given, &token) => next.run(request).await,
        _ => (
            StatusCode::UNAUTHORIZED,
            [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong bearer token\n",
        )
            .into_response(),
    }
}

impl ServerHandler for FileToolServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_logging()
            .build();
        if let Some(resources) = capabilities.resources.as_mut() {
            resources.subscribe = Some(true);
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("lc-agent", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "File tools confined to one directory: ls, read_file, write_file, edit_file, \
                 glob, grep, delete (and execute when the server was started with a shell). Paths are \
                 absolute inside that directory, starting with /. The files are also resources \
                 (file:///<path>), which can be read and subscribed to.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, rmcp::ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        resources::list(self.backend.as_ref(), cursor.as_deref()).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, rmcp::ErrorData> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, rmcp::ErrorData> {
        resources::read(self.backend.as_ref(), &request.uri)
            .await
            .map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        self.session
            .subscribe(self.backend.clone(), context.peer, &request.uri)
            .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        self.session.unsubscribe(&request.uri)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        self.session.set_level(request.level);
        Ok(())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        if !self.tools.iter().any(|t| t.name == request.name) {
            let message = if request.name == Execute::NAME {
                "`execute` needs a server started with a shell (--shell)".to_string()
            } else {
                format!(
                    "unknown tool `{}`; the tools are {}",
                    request.name,
                    self.tool_names().join(", ")
                )
            };
            return Err(rmcp::ErrorData::invalid_params(message, None));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let backend = self.backend.clone();
        let run = |call: ToolCall| async move {
            let args = call.parsed_arguments().unwrap_or_default();
            run_tool(backend.as_ref(), &call.name, &args)
                .await
                .unwrap_or_else(|| {
                    ToolOutput::error(format!("Error: unknown tool `{}`", call.name))
                })
        };
        let call = ToolCall::new(
            format!("mcp_call_{}", CALLS.fetch_add(1, Ordering::Relaxed)),
            request.name.to_string(),
            args,
        );
        let output = match &self.hooks {
            Some(hooks) => {
                hooks
                    .run_call(&lc_agent::RunnableNetwork::new(), call, run)
                    .await
            }
            None => run(call).await,
        };
        let (level, status) = match output.status {
            ToolStatus::Ok => (rmcp::model::LoggingLevel::Info, "ok"),
            _ => (rmcp::model::LoggingLevel::Warning, "error"),
        };
        self.session
            .log(
                &context.peer,
                level,
                serde_json::json!({"tool": request.name, "status": status}),
            )
            .await;
        let content = vec![ContentBlock::text(output.content)];
        Ok(match output.status {
            ToolStatus::Ok => CallToolResult::success(content),
            _ => CallToolResult::error(content),
        }
        .into())
    }
}
