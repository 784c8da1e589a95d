//! What `/v1/chat/completions` says about a run is true: `finish_reason`
//! (streamed and not) is `length` for a cut-off answer and `tool_calls`
//! (with the held calls) for a run waiting for a decision; a content part
//! the agent cannot read (an image) is refused, not dropped.

use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use lc_agent::{ChatModel, ChatRequest, ChatResponse, ModelError, ScriptedChatModel, Turn};
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

/// Answers like the script; the first answer is cut off by the output limit.
struct CutOffFirst {
    script: ScriptedChatModel,
    cut: AtomicBool,
}

#[async_trait]
impl ChatModel for CutOffFirst {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let mut response = self.script.complete(request).await?;
        if !self.cut.swap(true, Ordering::SeqCst) {
            response.finish_reason = Some("length".into());
        }
        Ok(response)
    }
}

fn cut_off_model() -> CutOffFirst {
    CutOffFirst {
        script: ScriptedChatModel::new(["The list: one, two,", "Done."]),
        cut: AtomicBool::new(false),
    }
}

/// The `data:` chunks of a streamed completion (without `[DONE]`).
fn chunks(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// The last chunk's choice that has a finish reason.
fn finishing(body: &str) -> Value {
    chunks(body)
        .into_iter()
        .filter_map(|c| c["choices"].get(0).cloned())
        .find(|c| !c["finish_reason"].is_null())
        .unwrap_or_else(|| panic!("no finishing chunk in {body}"))
}

async fn complete(base: &str, body: Value) -> reqwest::Response {
    post(&format!("{base}/v1/chat/completions"), ALICE, body).await
}

#[tokio::test]
async fn a_cut_off_answer_finishes_with_length_streamed_and_not() {
    let server = start(cut_off_model()).await;
    let base = &server.url;
    let r = complete(
        base,
        json!({"messages": [{"role": "user", "content": "list"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.unwrap();
    assert_eq!(answer["choices"][0]["finish_reason"], "length", "{answer}");
    assert_eq!(
        answer["choices"][0]["message"]["content"],
        "The list: one, two,"
    );
    // The next answer is whole again.
    let r = complete(
        base,
        json!({"messages": [{"role": "user", "content": "again"}], "stream": true}),
    )
    .await;
    let body = r.text().await.unwrap();
    assert_eq!(finishing(&body)["finish_reason"], "stop", "{body}");
    let _ = server.stop().await;

    let server = start(cut_off_model()).await;
    let r = complete(
        &server.url,
        json!({"messages": [{"role": "user", "content": "list"}], "stream": true}),
    )
    .await;
    let body = r.text().await.unwrap();
    assert_eq!(finishing(&body)["finish_reason"], "length", "{body}");
    let _ = server.stop().await;
}

fn waiting_server_config(dir: &std::path::Path) -> lc_agent_server::ServerConfig {
    let model = scripted(vec![
        call(
            "w1",
            "write_file",
            json!({"file_path": "/a.md", "content": "text"}),
        ),
        Turn::text("Written."),
    ]);
    config(model, dir).spec(approval_spec("write_file"))
}

#[tokio::test]
async fn a_run_waiting_for_approval_finishes_with_tool_calls_naming_the_held_calls() {
    let server = start_with(waiting_server_config).await;
    let r = complete(
        &server.url,
        json!({"messages": [{"role": "user", "content": "write a.md"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.unwrap();
    let choice = &answer["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{answer}");
    let calls = &choice["message"]["tool_calls"];
    assert_eq!(calls[0]["id"], "w1", "{answer}");
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "write_file");
    let args: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args["file_path"], "/a.md");
    assert!(
        choice["message"]["content"]
            .as_str()
            .unwrap()
            .contains("/approvals"),
        "{answer}"
    );
    let _ = server.stop().await;

    let server = start_with(waiting_server_config).await;
    let r = complete(
        &server.url,
        json!({"messages": [{"role": "user", "content": "write a.md"}], "stream": true}),
    )
    .await;
    let body = r.text().await.unwrap();
    let last = finishing(&body);
    assert_eq!(last["finish_reason"], "tool_calls", "{body}");
    assert_eq!(last["delta"]["tool_calls"][0]["index"], 0, "{body}");
    assert_eq!(
        last["delta"]["tool_calls"][0]["function"]["name"],
        "write_file"
    );
    let _ = server.stop().await;
}

#[tokio::test]
async fn an_image_part_reaches_the_session_and_other_parts_are_refused() {
    let app = InProcess::new(scripted(vec![Turn::text("A pixel.")]));
    let url = "data:image/png;base64,iVBORw0KGgo=";
    let body = json!({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is in this picture?"},
        {"type": "image_url", "image_url": {"url": url, "detail": "low"}},
    ]}]});
    let answer = app.post("/v1/chat/completions", ALICE, &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let reply: Value = serde_json::from_slice(&answer.body).unwrap();
    let session = reply["session"].as_str().expect("the session id");
    let saved = app
        .get(&format!("/api/sessions/{session}"), ALICE, &[])
        .await;
    let saved: Value = serde_json::from_slice(&saved.body).unwrap();
    let human = saved["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "human")
        .expect("the question");
    assert_eq!(human["content"], "what is in this picture?");
    assert_eq!(
        human["parts"],
        json!([{"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo=", "detail": "low"}]),
        "{saved}"
    );
    // A part the agent cannot read is refused, naming it.
    let body = json!({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "listen"},
        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
    ]}]});
    let answer = app.post("/v1/chat/completions", ALICE, &body).await;
    assert_eq!(answer.status, 400, "{}", answer.text());
    let error: Value = serde_json::from_slice(&answer.body).unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("messages[0].content[1]") && message.contains("input_audio"),
        "{message}"
    );
}

#[tokio::test]
async fn n_other_than_one_is_refused() {
    let app = InProcess::new(scripted(vec![Turn::text("one")]));
    let body = json!({"n": 2, "messages": [{"role": "user", "content": "two answers"}]});
    let answer = app.post("/v1/chat/completions", ALICE, &body).await;
    assert_eq!(answer.status, 400, "{}", answer.text());
    assert!(answer.text().contains("`n`"), "{}", answer.text());
}

#[tokio::test]
async fn the_pages_timeout_text_names_the_servers_flag() {
    let app = InProcess::new(scripted(vec![]));
    let page = app.get("/assets/app.js", ALICE, &[]).await;
    assert_eq!(page.status, 200);
    let js = page.text();
    let line = js
        .lines()
        .find(|l| l.contains("case 408"))
        .expect("the page's 408 text");
    // `lc-agent serve --timeout` (the server's own 408 says so too).
    assert!(
        line.contains("--timeout") && !line.contains("--request-timeout"),
        "{line}"
    );
}
