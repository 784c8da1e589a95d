//! OAuth for remote MCP servers (the MCP authorization spec, through rmcp's
//! `auth` module): the login ([`McpLogin`]) and the authorized HTTP client
//! a connection uses.
//!
//! ```text
//!  lc-agent mcp login NAME
//!    POST initialize (no token) ─▶ 401 + WWW-Authenticate (resource_metadata, scope)
//!    protected-resource metadata ─▶ authorization-server metadata (RFC 8414, OIDC
//!    and path fallbacks) ─▶ client: pre-registered | dynamic registration
//!    ─▶ authorize URL (PKCE S256, scopes, `resource`) ─▶ printed, browser opened
//!    ◀── redirect to http://127.0.0.1:PORT/callback (or the URL pasted) ─▶ code exchange
//!    ─▶ tokens in the token file (tokens.rs)
//!
//!  a connection (connection.rs)
//!    token file has a token ─▶ AuthClient: bearer on every request, refreshed
//!                              before it expires and once after a 401
//!    `grant: client_credentials` ─▶ id + secret exchanged for a token at connect
//!    401 / 403 insufficient_scope ─▶ "run `lc-agent mcp login NAME`"
//! ```
//!
//! Tokens never enter a session, a blueprint or a log line (rmcp's own
//! `Debug` output redacts them, and so does [`OAuthSettings`]'s).

use std::future::Future;

use rmcp::service::ClientInitializeError;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    ClientCredentialsConfig, CredentialStore, OAuthClientConfig, OAuthState,
};
use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::config::{McpEndpoint, McpServerConfig, OAuthSettings};
use super::error::McpError;
use super::tokens::{ServerTokens, TokenFile};

/// The client name lc-agent registers under.
const CLIENT_NAME: &str = "lc-agent";

/// The path of the login's redirect listener.
const CALLBACK_PATH: &str = "/callback";

/// The HTTP client a connection to an OAuth-capable server uses.
pub(crate) type OAuthHttp = AuthClient<reqwest_mcp::Client>;

fn auth_error(server: &str, e: AuthError) -> McpError {
    match e {
        AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_) => {
            McpError::LoginNeeded {
                server: server.to_string(),
            }
        }
        e => McpError::Auth {
            server: server.to_string(),
            source: Box::new(e),
        },
    }
}

/// The plain HTTP client under the OAuth one, as rmcp's transport builds its
/// own: no idle pooling, redirects not followed.
fn http_client() -> Result<reqwest_mcp::Client, String> {
    reqwest_mcp::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(reqwest_mcp::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())
}

/// The authorized client for `url`: the stored token (refreshed as needed),
/// or a client-credentials token; without either, requests go out bare and
/// a 401 becomes [`McpError::LoginNeeded`].
pub(crate) async fn authorized_client(
    server: &str,
    url: &str,
    oauth: Option<&OAuthSettings>,
    tokens: &TokenFile,
) -> Result<OAuthHttp, McpError> {
    let fail = |e| auth_error(server, e);
    let store = tokens.server(server, url);
    let mut manager = AuthorizationManager::new(url).await.map_err(fail)?;
    manager.set_credential_store(store.clone());
    let http = http_client().map_err(|e| fail(AuthError::InternalError(e)))?;
    match oauth {
        Some(settings) if settings.client_credentials => {
            let (Some(client_id), Some(client_secret)) =
                (settings.client_id.clone(), settings.client_secret.clone())
            else {
                return Err(fail(AuthError::ClientCredentialsError(
                    "the client-credentials grant needs `clientId` and `clientSecret`".into(),
                )));
            };
            let resolution = manager.resolve_metadata().await.map_err(fail)?;
            manager.set_metadata(resolution.metadata);
            let config = ClientCredentialsConfig::ClientSecret {
                client_id,
                client_secret,
                scopes: settings.scopes.clone(),
                resource: Some(url.to_string()),
            };
            manager
                .validate_client_credentials_metadata(&config)
                .map_err(fail)?;
            manager
                .configure_client_credentials(&config)
                .map_err(fail)?;
            manager
                .exchange_client_credentials(&config)
                .await
                .map_err(fail)?;
        }
        _ if store.has_token().await && manager.initialize_from_store().await.map_err(fail)? => {
            // A confidential pre-registered client refreshes with its secret.
            if let Some(settings) = oauth
                && let (Some(id), Some(secret)) = (
                    settings.client_id.as_deref(),
                    settings.client_secret.as_deref(),
                )
            {
                manager
                    .configure_client(
                        OAuthClientConfig::new(
                            id,
                            redirect_uri(settings.redirect_port.unwrap_or(0)),
                        )
                        .with_client_secret(secret)
                        .with_scopes(settings.scopes.clone()),
                    )
                    .map_err(fail)?;
            }
        }
        _ => {}
    }
    Ok(AuthClient::new(http, manager))
}

/// [`McpError::LoginNeeded`] or [`McpError::InsufficientScope`] when the
/// server's answer in `error`'s chain asks for authorization.
///
/// The handshake's error keeps the transport's error in a field, not as
/// its `source()`: that variant is looked into here.
pub(crate) fn login_needed(
    server: &str,
    error: &(dyn std::error::Error + 'static),
) -> Option<McpError> {
    let mut next = Some(error);
    while let Some(e) = next {
        match e.downcast_ref::<ClientInitializeError>() {
            Some(ClientInitializeError::TransportError { error, .. }) => {
                return login_needed(server, error);
            }
            Some(ClientInitializeError::LegacyFallbackFailed { discover, fallback }) => {
                return login_needed(server, fallback.as_ref())
                    .or_else(|| login_needed(server, discover.as_ref()));
            }
            _ => {}
        }
        if e.downcast_ref::<AuthRequiredError>().is_some() {
            return Some(McpError::LoginNeeded {
                server: server.to_string(),
            });
        }
        if let Some(scope) = e.downcast_ref::<InsufficientScopeError>() {
            return Some(McpError::InsufficientScope {
                server: server.to_string(),
                scope: scope
                    .required_scope
                    .clone()
                    .unwrap_or_else(|| "a wider scope".into()),
            });
        }
        if let Some(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) =
            e.downcast_ref::<AuthError>()
        {
            return Some(McpError::LoginNeeded {
                server: server.to_string(),
            });
        }
        next = e.source();
    }
    None
}

fn redirect_uri(port: u16) -> String {
    format!("http://127.0.0.1:{port}{CALLBACK_PATH}")
}

/// A login in progress (`lc-agent mcp login NAME`): the URL a person opens,
/// and the loopback listener that receives the authorization server's
/// redirect (see the module's documentation).
pub struct McpLogin {
    server: String,
    session: AuthorizationSession,
    listener: TcpListener,
    tokens: ServerTokens,
    file: std::path::PathBuf,
}

impl std::fmt::Debug for McpLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpLogin")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl McpLogin {
    /// Discovers how server `name` (an HTTP entry of the configuration)
    /// authorizes, registers lc-agent with its authorization server unless
    /// `oauth.clientId` names a pre-registered client, and prepares the
    /// authorization URL. `scopes` adds to the configured ones (none: those
    /// the server's challenge or metadata name).
    pub async fn start(
        name: &str,
        config: &McpServerConfig,
        scopes: &[String],
    ) -> Result<Self, McpError> {
        let fail = |e| auth_error(name, e);
        let McpEndpoint::Http {
            url,
            headers,
            oauth,
        } = config.resolve(name)?
        else {
            return Err(McpError::Config(super::config::ConfigError::Invalid {
                server: name.to_string(),
                reason: "logging in is for HTTP servers (`url`); this one is spawned".into(),
            }));
        };
        let oauth = oauth.unwrap_or_default();
        if oauth.client_credentials {
            return Err(McpError::Config(super::config::ConfigError::Invalid {
                server: name.to_string(),
                reason: "it uses the client-credentials grant: no login needed".into(),
            }));
        }
        let listener = TcpListener::bind(("127.0.0.1", oauth.redirect_port.unwrap_or(0)))
            .await
            .map_err(|e| McpError::Serve {
                what: "cannot open the login's redirect listener on 127.0.0.1".into(),
                source: Box::new(e),
            })?;
        let port = listener
            .local_addr()
            .map_err(|e| McpError::Serve {
                what: "cannot open the login's redirect listener".into(),
                source: Box::new(e),
            })?
            .port();
        let challenge = challenge(&url, &headers).await;
        let file = TokenFile::default_path();
        let tokens = TokenFile::at(&file).server(name, &url);
        let mut manager = AuthorizationManager::new(url.as_str())
            .await
            .map_err(fail)?;
        manager.set_credential_store(tokens.clone());
        let mut request =
            AuthorizationRequest::new(redirect_uri(port)).with_client_name(CLIENT_NAME);
        let wanted: Vec<String> = oauth.scopes.iter().chain(scopes).cloned().collect();
        if !wanted.is_empty() {
            request = request.with_scopes(wanted);
        }
        if let Some(id) = &oauth.client_id {
            request = request.with_preregistered_client(id);
        }
        if let Some(secret) = &oauth.client_secret {
            request = request.with_client_secret(secret);
        }
        if let Some(challenge) = challenge {
            request = request.with_challenge(challenge);
        }
        let mut state = OAuthState::Unauthorized(manager);
        state.start_authorization(request).await.map_err(fail)?;
        let OAuthState::Session(session) = state else {
            return Err(fail(AuthError::InternalError(
                "the authorization did not start".into(),
            )));
        };
        Ok(Self {
            server: name.to_string(),
            session,
            listener,
            tokens,
            file,
        })
    }

    /// The URL to open in a browser.
    pub fn url(&self) -> &str {
        self.session.get_authorization_url()
    }

    /// The file the tokens go to.
    pub fn token_file(&self) -> &std::path::Path {
        &self.file
    }

    /// Waits for the redirect (on the loopback listener, or the redirected
    /// URL `pasted` yields, for a browser on another machine), exchanges the
    /// code for tokens and stores them. Returns the granted scopes.
    pub async fn finish(
        self,
        pasted: impl Future<Output = Option<String>>,
    ) -> Result<Vec<String>, McpError> {
        let fail = |e| auth_error(&self.server, e);
        let redirected = tokio::select! {
            url = receive_redirect(&self.listener) => url,
            Some(url) = pasted => url,
        };
        if let Ok(parsed) = reqwest_mcp::Url::parse(&redirected)
            && let Some((_, error)) = parsed.query_pairs().find(|(k, _)| k == "error")
        {
            let description = parsed
                .query_pairs()
                .find(|(k, _)| k == "error_description")
                .map(|(_, d)| format!(": {d}"))
                .unwrap_or_default();
            return Err(fail(AuthError::AuthorizationFailed(format!(
                "the authorization server answered `{error}`{description}"
            ))));
        }
        self.session
            .handle_callback_url(&redirected)
            .await
            .map_err(fail)?;
        let stored = self.tokens.load().await.map_err(fail)?;
        if stored.as_ref().is_none_or(|s| s.token_response.is_none()) {
            return Err(fail(AuthError::InternalError(
                "the tokens were not stored".into(),
            )));
        }
        Ok(stored.map(|s| s.granted_scopes).unwrap_or_default())
    }
}

/// The `WWW-Authenticate` challenge of an unauthenticated `initialize`, if
/// the server answers 401 or 403 (discovery then starts from it; without
/// one, rmcp probes the well-known URLs).
async fn challenge(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Option<String> {
    let client = http_client().ok()?;
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            serde_json::json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}}
            })
            .to_string(),
        );
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let response = request.send().await.ok()?;
    if !matches!(response.status().as_u16(), 401 | 403) {
        return None;
    }
    response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Serves the loopback redirect: answers each request, returns the first
/// one on [`CALLBACK_PATH`] with a `code` or an `error` as a full URL.
async fn receive_redirect(listener: &TcpListener) -> String {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        let mut buf = Vec::new();
        let mut chunk = [0u8; 2048];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let head = String::from_utf8_lossy(&buf);
        let target = head
            .lines()
            .next()
            .and_then(|line| line.split_whitespace().nth(1))
            .unwrap_or("/")
            .to_string();
        let is_callback = target.starts_with(CALLBACK_PATH)
            && (target.contains("code=") || target.contains("error="));
        let body = if is_callback {
            "<!doctype html><title>lc-agent</title><p>lc-agent received the authorization; you can close this tab.</p>"
        } else {
            "<!doctype html><title>lc-agent</title><p>Waiting for the authorization redirect.</p>"
        };
        let status = if is_callback {
            "200 OK"
        } else {
            "404 Not Found"
        };
        let response = format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
        if is_callback {
            return format!("http://127.0.0.1{target}");
        }
    }
}
