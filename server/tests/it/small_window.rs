//! A model with a small context window (under `LEAN_BELOW` tokens, as
//! llama-cpp-python's default 2,048): the server's agents run lean, as
//! `lc-agent run` and `chat` do — the request the model receives offers
//! only the lean tools, with their short descriptions.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lc_agent::{ChatModel, ChatRequest, ChatResponse, ModelError};
use lc_agent_test_support::server::*;
use serde_json::json;

/// Answers every request with one text and keeps the requests; reports
/// `window` as its context window.
struct Recorder {
    window: Option<usize>,
    seen: Arc<Mutex<Vec<ChatRequest>>>,
}

#[async_trait]
impl ChatModel for Recorder {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.seen.lock().unwrap().push(request.clone());
        Ok(ChatResponse::text("Done."))
    }

    async fn context_window(&self) -> Option<usize> {
        self.window
    }
}

/// The tools offered in the first request of one message to a new session.
async fn offered(window: Option<usize>) -> ChatRequest {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let model = Recorder {
        window,
        seen: seen.clone(),
    };
    let server = start(model).await;
    let base = &server.url;
    let id = new_session(base, ALICE).await;
    let body = post(
        &format!("{base}/api/sessions/{id}/messages"),
        ALICE,
        json!({"content": "List the files."}),
    )
    .await
    .text()
    .await
    .unwrap();
    let events = sse_events(&body);
    assert_eq!(events.last().unwrap().1["answer"], "Done.", "{events:?}");
    let first = seen.lock().unwrap().first().cloned();
    server.stop().await;
    first.expect("the model was asked")
}

fn names(request: &ChatRequest) -> Vec<String> {
    request.tools.iter().map(|t| t.name.clone()).collect()
}

#[tokio::test]
async fn a_small_window_gets_the_lean_tools() {
    let lean = offered(Some(2048)).await;
    let tools = names(&lean);
    for left_out in ["glob", "write_todos", "task"] {
        assert!(!tools.contains(&left_out.to_string()), "{tools:?}");
    }
    let read = lean
        .tools
        .iter()
        .find(|t| t.name == "read_file")
        .unwrap_or_else(|| panic!("no read_file in {tools:?}"));
    assert_eq!(read.description, "Read a file (offset, limit: lines).");
    assert!(
        !lean.system.iter().any(|s| s.starts_with("## Filesystem")),
        "{:?}",
        lean.system
    );

    // A window the model does not report: the full set.
    let full = names(&offered(None).await);
    for tool in ["glob", "write_todos", "task", "read_file"] {
        assert!(full.contains(&tool.to_string()), "{full:?}");
    }
}
