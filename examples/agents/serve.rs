//! # The agent over HTTP: an OpenAI-style request runs the whole agent
//!
//! Shows: `lc-agent-server` in-process on a loopback port. A plain
//! OpenAI chat-completions request makes the agent call `write_file` on
//! the server and answer; the reply's `session` id continues the same
//! saved session on the next request; the session API shows the file the
//! agent wrote and the graph. `lc-agent serve` runs the same server from
//! the command line (and serves the web page at `/`).
//!
//! Needs: nothing; it runs offline with a `ScriptedChatModel` that replays
//! fixed answers (a stand-in for a real model), and keeps its sessions in
//! a temporary directory.
//!
//! Run: `cargo run --example serve`

use std::sync::Arc;

use lc_agent::ListConfig;
use lc_agent::{ScriptedChatModel, ToolCall, Turn};
use lc_agent_server::{serve, AppState, ServerConfig};
use serde_json::{json, Value};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = ScriptedChatModel::new([
        Turn::tool_calls([ToolCall::new(
            "call-1",
            "write_file",
            json!({"file_path": "/haiku.md", "content": "An old silent pond"}),
        )]),
        Turn::text("I wrote the haiku's first line to /haiku.md."),
        Turn::text("It is still there: the session remembers."),
    ]);
    let dir = tempfile::tempdir()?;
    let config =
        ServerConfig::new(Arc::new(model)).sessions(ListConfig::json(dir.path().join("sessions")));
    let state = AppState::new(config)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, state, async {
        let _ = stopped.await;
    }));
    println!("serving on {base}");

    let http = reqwest::Client::new();
    let first: Value = http
        .post(format!("{base}/v1/chat/completions"))
        .json(&json!({"model": "lc-agent", "messages": [{"role": "user", "content": "Start a haiku in /haiku.md"}]}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let session = first["session"].as_str().unwrap_or_default().to_string();
    println!("answer: {}", first["choices"][0]["message"]["content"]);
    println!("session: {session}");

    let second: Value = http
        .post(format!("{base}/v1/chat/completions"))
        .json(&json!({"session": session, "messages": [{"role": "user", "content": "Is it still there?"}]}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    println!("answer: {}", second["choices"][0]["message"]["content"]);

    let saved: Value = http
        .get(format!("{base}/api/sessions/{session}"))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    println!("/haiku.md: {}", saved["files"]["/haiku.md"]["content"]);
    println!("graph:\n{}", saved["mermaid"].as_str().unwrap_or_default());

    let _ = stop.send(());
    server.await??;
    Ok(())
}
