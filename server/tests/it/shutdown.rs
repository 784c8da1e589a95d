//! A graceful shutdown saves the sessions still running once the grace
//! period is over: the work a run did so far is in the store.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lc_agent::{ChatModel, ChatRequest, ChatResponse, ModelError, ToolCall};
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

/// Writes a file on its first turn, then takes far too long.
#[derive(Default)]
struct WritesThenHangs(AtomicUsize);

#[async_trait::async_trait]
impl ChatModel for WritesThenHangs {
    async fn complete(&self, _request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let tool_calls = if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            vec![ToolCall::new(
                "w",
                "write_file",
                json!({"file_path": "/done-so-far.md", "content": "kept"}),
            )]
        } else {
            tokio::time::sleep(Duration::from_secs(60)).await;
            vec![]
        };
        Ok(ChatResponse {
            content: String::new(),
            tool_calls,
            usage: None,
            finish_reason: None,
            model: None,
        })
    }
}

#[tokio::test]
async fn shutdown_saves_running_sessions_after_the_grace_period() {
    let server = start_with(|dir| {
        config(WritesThenHangs::default(), dir).shutdown_grace(Duration::from_millis(300))
    })
    .await;
    let base = server.url.clone();
    let created: Value = post(&format!("{base}/api/sessions"), ALICE, json!({}))
        .await
        .json()
        .await
        .unwrap();
    let id: uuid::Uuid = created["id"].as_str().unwrap().parse().unwrap();
    let response = post(
        &format!("{base}/api/sessions/{id}/messages"),
        ALICE,
        json!({"content": "go"}),
    )
    .await;
    assert_eq!(response.status(), 200);
    // Wait until the file is written (the model then hangs).
    let mut body = response.bytes_stream();
    use futures::StreamExt;
    let mut seen = String::new();
    while !seen.contains("tool_call_finished") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let state = server.state.clone();
    assert_eq!(state.running(), 1);
    let dir = tokio::time::timeout(Duration::from_secs(10), server.stop())
        .await
        .expect("the server did not stop after its grace period");
    // Read the store directly: the run's file is saved.
    let list = lc_agent::JsonNetworkList::new(dir.path().join("sessions"))
        .with_user("alice")
        .unwrap();
    let net = lc_agent::NetworkList::load(&list, id).await.unwrap();
    assert_eq!(net.files()["/done-so-far.md"].content, ["kept"]);
}
