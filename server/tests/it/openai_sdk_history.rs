//! The `openai` Python package's plain loop — no session, the whole
//! history each turn — against the server with a model behind a real HTTP
//! model server: what the model server receives is the conversation in
//! order (the client's system prompt in the one system message, the
//! earlier question and answer, the picture), with the client's sampling
//! fields; the answers that come back are the model's answers to the last
//! message; an out-of-range field is OpenAI's 400 naming it.

use lc_agent::OpenAiChatModel;
use lc_agent_test_support::needs;
use lc_agent_test_support::python;
use lc_agent_test_support::server::*;
use lc_agent_test_support::{MockServer, Reply};
use serde_json::{json, Value};

const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn answer(text: &str) -> Reply {
    Reply::json(json!({
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]
    }))
}

/// A request's messages without the system message: (role, content).
fn conversation(body: &Value) -> Vec<(String, Value)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].clone(),
            )
        })
        .collect()
}

#[needs(python_openai)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_sdk_loop_gets_the_answer_to_its_last_message() {
    let upstream = MockServer::start(
        "/v1",
        "/chat/completions",
        vec![answer("FIRST ANSWER"), answer("SECOND ANSWER")],
    )
    .await;
    let model = OpenAiChatModel::builder()
        .model("m")
        .base_url(&upstream.base_url)
        .api_key("k")
        .max_retries(0)
        .build()
        .unwrap();
    let server = start_with(|dir| config(model, dir)).await;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/history_client.py"
    );
    let url = server.url.clone();
    let data_url = format!("data:image/png;base64,{PIXEL}");
    let got = tokio::task::spawn_blocking(move || {
        python::run_json(script.as_ref(), &[url.as_str(), ALICE, data_url.as_str()])
    })
    .await
    .unwrap();
    assert_eq!(got["first"], "FIRST ANSWER", "{got}");
    assert_eq!(got["second"], "SECOND ANSWER", "{got}");
    assert_eq!(upstream.requests(), 2, "one model call per turn");

    let second = upstream.body(1);
    let system = second["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(second["messages"][0]["role"], "system", "{second}");
    assert!(system.contains("CLIENT SYSTEM"), "{second}");
    assert_eq!(
        conversation(&second),
        vec![
            ("user".to_string(), json!("FIRST QUESTION")),
            ("assistant".to_string(), json!("FIRST ANSWER")),
            (
                "user".to_string(),
                json!([
                    {"type": "text", "text": "SECOND QUESTION"},
                    {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PIXEL}")}}
                ])
            ),
        ],
        "{second}"
    );
    // The client's sampling reached the model server.
    assert_eq!(second["temperature"], json!(0.3), "{second}");
    assert_eq!(second["top_p"], json!(0.9), "{second}");
    assert_eq!(second["max_tokens"], 50, "{second}");
    assert_eq!(second["stop"], json!(["END"]), "{second}");
    assert_eq!(second["seed"], 7, "{second}");
    // The first turn asked none.
    assert!(upstream.body(0).get("temperature").is_none());

    // temperature 7: OpenAI's 400, naming the field, before any model call.
    assert_eq!(
        got["refused"],
        json!({"status": 400, "param": "temperature", "code": "invalid_value", "type": "invalid_request_error"}),
        "{got}"
    );
    assert_eq!(upstream.requests(), 2);
    let _ = server.stop().await;
}
