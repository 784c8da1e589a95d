//! A stateless OpenAI history is the conversation: `/v1/chat/completions`
//! without a session, sent `[system, user₁, assistant₁, user₂]` (what
//! every plain SDK loop sends each turn), reaches the model with every
//! message in order, and the answer returned — streamed and not, and in
//! the run's record — is the model's answer to the last message.

use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{ChatModel, ChatRequest, ChatResponse, ModelError};
use lc_agent_test_support::server::*;
use parking_lot::Mutex;
use serde_json::{json, Value};

/// One request's messages: (role, text).
type Sent = Vec<(String, String)>;

/// Records every request's messages and answers `REPLY`.
#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<Sent>>>,
}

const REPLY: &str = "THE SECOND ANSWER";

#[async_trait]
impl ChatModel for Recorder {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let sent: Sent = request
            .messages()
            .iter()
            .map(|m| (m.role().to_string(), m.text().to_string()))
            .collect();
        self.seen.lock().push(sent);
        Ok(ChatResponse::text(REPLY))
    }
}

fn history(stream: bool) -> Value {
    json!({
        "stream": stream,
        "messages": [
            {"role": "system", "content": "CLIENT SYSTEM"},
            {"role": "user", "content": "FIRST QUESTION"},
            {"role": "assistant", "content": "FIRST ANSWER"},
            {"role": "user", "content": [{"type": "text", "text": "SECOND QUESTION"}]},
        ],
    })
}

/// The non-system messages the model was sent, and whether the client's
/// system prompt was among the system messages.
fn conversation(sent: &[(String, String)]) -> (Vec<(String, String)>, bool) {
    let client_system = sent
        .iter()
        .any(|(role, text)| role == "system" && text.contains("CLIENT SYSTEM"));
    let rest = sent
        .iter()
        .filter(|(role, _)| role != "system")
        .cloned()
        .collect();
    (rest, client_system)
}

fn expected() -> Vec<(String, String)> {
    [
        ("human", "FIRST QUESTION"),
        ("ai", "FIRST ANSWER"),
        ("human", "SECOND QUESTION"),
    ]
    .iter()
    .map(|(r, t)| (r.to_string(), t.to_string()))
    .collect()
}

#[tokio::test]
async fn a_stateless_history_reaches_the_model_whole_and_its_answer_comes_back() {
    let model = Recorder::default();
    let seen = model.seen.clone();
    let server = start(model).await;
    let url = format!("{}/v1/chat/completions", server.url);

    let r = post(&url, ALICE, history(false)).await;
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.unwrap();
    assert_eq!(
        answer["choices"][0]["message"]["content"], REPLY,
        "{answer}"
    );
    let sent = seen.lock().pop().expect("the model was asked");
    let (rest, client_system) = conversation(&sent);
    assert!(
        client_system,
        "the client's system prompt is lost: {sent:?}"
    );
    assert_eq!(rest, expected(), "what the model was sent: {sent:?}");
    // The run's record says the same answer.
    let run = answer["run"].as_str().unwrap();
    let record = get_json(&format!("{}/api/runs/{run}", server.url), ALICE).await;
    assert_eq!(record["answer"], REPLY, "{record}");

    // Streamed: the answer, and nothing after it.
    let r = post(&url, ALICE, history(true)).await;
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    let text: String = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str::<Value>(d).unwrap())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    assert_eq!(text, REPLY, "{body}");
    let sent = seen.lock().pop().expect("the model was asked");
    let (rest, client_system) = conversation(&sent);
    assert!(client_system, "{sent:?}");
    assert_eq!(rest, expected(), "{sent:?}");
    let _ = server.stop().await;
}

#[tokio::test]
async fn a_model_the_server_does_not_serve_is_not_found_as_openai_says() {
    let server = start(Recorder::default()).await;
    let url = format!("{}/v1/chat/completions", server.url);
    let ask =
        |model: &str| json!({"model": model, "messages": [{"role": "user", "content": "hi"}]});
    let r = post(&url, ALICE, ask("gpt-4o")).await;
    assert_eq!(r.status(), 404);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "model_not_found", "{body}");
    assert_eq!(body["error"]["param"], "model", "{body}");
    let served = get_json(&format!("{}/v1/models", server.url), ALICE).await;
    let name = served["data"][0]["id"].as_str().unwrap();
    let r = post(&url, ALICE, ask(name)).await;
    assert_eq!(r.status(), 200);
    // A missing messages, and a user message without content: OpenAI's 400.
    let r = post(&url, ALICE, json!({"model": name})).await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["param"], "messages", "{body}");
    let r = post(
        &url,
        ALICE,
        json!({"messages": [{"role": "user", "content": null}]}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let _ = server.stop().await;
}
