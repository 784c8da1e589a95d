//! The server's tests' own server: `lc-agent-server` in the test process on
//! a loopback port (a JSON session store in a temporary directory, two
//! users), and the HTTP calls they make to it; or, for a route that needs
//! no connection, its router called directly ([`InProcess`], as axum tests
//! its routers with `tower::ServiceExt::oneshot`). Behind this crate's
//! `server` feature, which only the server crate's tests turn on.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use lc_agent::ListConfig;
use lc_agent::{ChatModel, ScriptedChatModel, ToolCall, Turn};
use lc_agent_deepagent::{AgentSpec, DecisionKind, ModelSpec};
use lc_agent_server::{serve, AppState, ServerConfig, Tokens};
use serde_json::{json, Value};
use tower::ServiceExt;

/// A server running in the test process; [`TestServer::stop`] shuts it
/// down gracefully.
pub struct TestServer {
    /// Its base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    /// Its state, for what a test checks inside.
    pub state: Arc<AppState>,
    /// The temporary directory its configuration was given.
    pub dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// The task that serves it (ends after a stop).
    pub task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    /// Shuts the server down gracefully; the store's directory lives on
    /// in what it returns.
    pub async fn stop(mut self) -> tempfile::TempDir {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
        self.dir
    }
}

/// Alice's bearer token.
pub const ALICE: &str = "token-alice";
/// Bob's bearer token.
pub const BOB: &str = "token-bob";

/// A configuration with `model`, sessions as JSON files under `dir`, and
/// the users alice ([`ALICE`]) and bob ([`BOB`]).
pub fn config(model: impl ChatModel + 'static, dir: &Path) -> ServerConfig {
    ServerConfig::new(Arc::new(model))
        .sessions(ListConfig::json(dir.join("sessions")))
        .tokens(
            Tokens::parse(&format!("alice:{ALICE},bob:{BOB}"))
                .unwrap_or_else(|e| panic!("the test tokens: {e}")),
        )
}

/// Starts a server with the configuration `config` makes for a new
/// temporary directory.
pub async fn start_with(config: impl FnOnce(&Path) -> ServerConfig) -> TestServer {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let state = AppState::new(config(dir.path()))
        .unwrap_or_else(|e| panic!("the test server's state: {e}"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!(
        "http://{}",
        listener.local_addr().expect("the listener's address")
    );
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn({
        let state = state.clone();
        async move {
            serve(listener, state, async {
                let _ = rx.await;
            })
            .await
            .unwrap_or_else(|e| panic!("the test server failed: {e}"));
        }
    });
    TestServer {
        url,
        state,
        dir,
        stop: Some(tx),
        task,
    }
}

/// Starts a server with `model` and [`config`]'s defaults.
pub async fn start(model: impl ChatModel + 'static) -> TestServer {
    start_with(|dir| config(model, dir)).await
}

/// A scripted model that replays `turns`.
pub fn scripted(turns: Vec<Turn>) -> ScriptedChatModel {
    ScriptedChatModel::new(turns)
}

/// A turn that calls one tool.
pub fn call(id: &str, name: &str, args: Value) -> Turn {
    Turn::tool_calls([ToolCall::new(id, name, args)])
}

/// The events of an SSE body: (event name, JSON data).
pub fn sse_events(body: &str) -> Vec<(String, Value)> {
    crate::sse::named(body)
}

/// A plain HTTP client.
pub fn client() -> reqwest::Client {
    reqwest::Client::new()
}

fn sent(result: reqwest::Result<reqwest::Response>) -> reqwest::Response {
    result.unwrap_or_else(|e| panic!("the request failed: {e}"))
}

/// `GET url` as the user of `token`.
pub async fn get(url: &str, token: &str) -> reqwest::Response {
    sent(client().get(url).bearer_auth(token).send().await)
}

/// `GET url` as the user of `token`, its body as JSON.
pub async fn get_json(url: &str, token: &str) -> Value {
    get(url, token)
        .await
        .json()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: no JSON: {e}"))
}

/// `POST url` with a JSON body as the user of `token`.
pub async fn post(url: &str, token: &str, body: Value) -> reqwest::Response {
    sent(
        client()
            .post(url)
            .bearer_auth(token)
            .json(&body)
            .send()
            .await,
    )
}

/// `DELETE url` as the user of `token`.
pub async fn delete(url: &str, token: &str) -> reqwest::Response {
    sent(client().delete(url).bearer_auth(token).send().await)
}

/// Creates a session as the user of `token`; its id.
pub async fn new_session(base: &str, token: &str) -> String {
    let r = post(&format!("{base}/api/sessions"), token, json!({"name": "t"})).await;
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.expect("the new session as JSON");
    created["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id in {created}"))
        .to_string()
}

/// Polls `GET /api/runs/{run}` as Alice every 50 ms until its status is
/// `want`, `tries` times at most; the run's record. Panics with the last
/// record seen ([`crate::poll::run_status`]).
pub async fn wait_status(base: &str, run: &str, want: &str, tries: usize) -> Value {
    crate::poll::run_status(&client(), base, run, Some(ALICE), want, tries).await
}

/// A blueprint's models: `main` (answered by the server's own scripted
/// model) and `others` by name.
pub fn models(
    others: impl IntoIterator<Item = (&'static str, ModelSpec)>,
) -> BTreeMap<String, ModelSpec> {
    let main = ModelSpec {
        model: "scripted".into(),
        ..ModelSpec::default()
    };
    std::iter::once(("main".to_string(), main))
        .chain(
            others
                .into_iter()
                .map(|(name, spec)| (name.to_string(), spec)),
        )
        .collect()
}

/// A model entry asked at `base_url` for `model`, with the key in the
/// variable `key_env`.
pub fn model_at(model: &str, base_url: &str, key_env: &str) -> ModelSpec {
    ModelSpec {
        model: model.into(),
        base_url: Some(base_url.to_string()),
        api_key_env: Some(key_env.to_string()),
        ..ModelSpec::default()
    }
}

/// A blueprint whose main model is the scripted one and whose calls of
/// `tool` wait for a person to approve or reject them.
pub fn approval_spec(tool: &str) -> AgentSpec {
    AgentSpec {
        models: models([]),
        interrupt_on: BTreeMap::from([(
            tool.to_string(),
            vec![DecisionKind::Approve, DecisionKind::Reject],
        )]),
        ..AgentSpec::default()
    }
}

/// The server's router in the test process, without a socket: each
/// request goes straight to it (`tower::ServiceExt::oneshot`). For routes
/// that need no connection (no streaming, no client address, no
/// shutdown); faster than a [`TestServer`] and an HTTP client.
pub struct InProcess {
    router: axum::Router,
    /// Its state, for what a test checks inside.
    pub state: Arc<AppState>,
    /// The temporary directory its configuration was given.
    pub dir: tempfile::TempDir,
}

/// What the router answered: status, headers and the whole body.
pub struct Answer {
    /// The status.
    pub status: axum::http::StatusCode,
    /// The headers.
    pub headers: axum::http::HeaderMap,
    /// The body.
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl InProcess {
    /// The router of a server with the configuration `config` makes for a
    /// new temporary directory.
    pub fn with(config: impl FnOnce(&Path) -> ServerConfig) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let state = AppState::new(config(dir.path()))
            .unwrap_or_else(|e| panic!("the test server's state: {e}"));
        Self {
            router: lc_agent_server::router(state.clone()),
            state,
            dir,
        }
    }

    /// The router of a server with `model` and [`config`]'s defaults.
    pub fn new(model: impl ChatModel + 'static) -> Self {
        Self::with(|dir| config(model, dir))
    }

    /// Sends `request`; the whole answer.
    pub async fn send(&self, request: axum::http::Request<axum::body::Body>) -> Answer {
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .unwrap_or_else(|e| match e {});
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(body, usize::MAX)
            .await
            .unwrap_or_else(|e| panic!("reading the answer's body: {e}"));
        Answer {
            status: parts.status,
            headers: parts.headers,
            body: body.to_vec(),
        }
    }

    /// `GET path` as the user of `token`, with these extra headers.
    pub async fn get(&self, path: &str, token: &str, headers: &[(&str, &str)]) -> Answer {
        let mut request = axum::http::Request::get(path)
            .header("host", "127.0.0.1")
            .header("authorization", format!("Bearer {token}"));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(axum::body::Body::empty())
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        self.send(request).await
    }

    /// `POST path` with a JSON `body` as the user of `token`.
    pub async fn post(&self, path: &str, token: &str, body: &Value) -> Answer {
        let request = axum::http::Request::post(path)
            .header("host", "127.0.0.1")
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body.to_string()))
            .unwrap_or_else(|e| panic!("POST {path}: {e}"));
        self.send(request).await
    }
}
