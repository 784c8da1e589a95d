//! Starts a real server on a loopback port for a test, and reads SSE.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use lc_agent::ListConfig;
use lc_agent::{ChatModel, ScriptedChatModel, ToolCall, Turn};
use lc_agent_deepagent::approvals::DecisionKind;
use lc_agent_deepagent::spec::{AgentSpec, ModelSpec};
use lc_agent_server::{serve, AppState, ServerConfig, Tokens};
use serde_json::{json, Value};

pub struct TestServer {
    pub url: String,
    pub state: Arc<AppState>,
    pub dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
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

pub const ALICE: &str = "token-alice";
pub const BOB: &str = "token-bob";

pub fn config(model: impl ChatModel + 'static, dir: &std::path::Path) -> ServerConfig {
    ServerConfig::new(Arc::new(model))
        .sessions(ListConfig::json(dir.join("sessions")))
        .tokens(Tokens::parse(&format!("alice:{ALICE},bob:{BOB}")).unwrap())
}

pub async fn start_with(config: impl FnOnce(&std::path::Path) -> ServerConfig) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::new(config(dir.path())).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn({
        let state = state.clone();
        async move {
            serve(listener, state, async {
                let _ = rx.await;
            })
            .await
            .unwrap();
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

pub async fn start(model: impl ChatModel + 'static) -> TestServer {
    start_with(|dir| config(model, dir)).await
}

pub fn scripted(turns: Vec<Turn>) -> ScriptedChatModel {
    ScriptedChatModel::new(turns)
}

pub fn call(id: &str, name: &str, args: Value) -> Turn {
    Turn::tool_calls([ToolCall::new(id, name, args)])
}

/// The events of an SSE body: (event name, JSON data).
pub fn sse_events(body: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for block in body.split("\n\n") {
        let mut name = "message".to_string();
        let mut data = String::new();
        for line in block.lines() {
            if let Some(n) = line.strip_prefix("event:") {
                name = n.trim().to_string();
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push_str(d.trim_start());
            }
        }
        if data.is_empty() {
            continue;
        }
        let value = serde_json::from_str(&data).unwrap_or(Value::String(data));
        out.push((name, value));
    }
    out
}

pub fn client() -> reqwest::Client {
    reqwest::Client::new()
}

/// `GET url` as the user of `token`.
pub async fn get(url: &str, token: &str) -> reqwest::Response {
    client().get(url).bearer_auth(token).send().await.unwrap()
}

/// `GET url` as the user of `token`, its body as JSON.
pub async fn get_json(url: &str, token: &str) -> Value {
    get(url, token).await.json().await.unwrap()
}

/// `POST url` with a JSON body as the user of `token`.
pub async fn post(url: &str, token: &str, body: Value) -> reqwest::Response {
    client()
        .post(url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// `DELETE url` as the user of `token`.
pub async fn delete(url: &str, token: &str) -> reqwest::Response {
    client()
        .delete(url)
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

/// Creates a session as the user of `token`; its id.
pub async fn new_session(base: &str, token: &str) -> String {
    let r = post(&format!("{base}/api/sessions"), token, json!({"name": "t"})).await;
    assert_eq!(r.status(), 201);
    r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A blueprint whose main model is the scripted one and whose calls of
/// `tool` wait for a person to approve or reject them.
pub fn approval_spec(tool: &str) -> AgentSpec {
    AgentSpec {
        models: BTreeMap::from([(
            "main".to_string(),
            ModelSpec {
                model: "scripted".into(),
                provider: None,
                base_url: None,
                context_window: None,
            },
        )]),
        interrupt_on: BTreeMap::from([(
            tool.to_string(),
            vec![DecisionKind::Approve, DecisionKind::Reject],
        )]),
        ..AgentSpec::default()
    }
}
