//! A client's own tool round in a stateless history — an assistant
//! message with `tool_calls`, the `tool` messages answering them — sent by
//! the `openai` Python package, reaches the model server as those tool
//! calls and tool results, in order; a `tool` message that answers no call
//! (or a call left unanswered, or a user message with null content) is
//! OpenAI's 400 naming the message, before any model call.

use lc_agent::OpenAiChatModel;
use lc_agent_test_support::needs;
use lc_agent_test_support::python;
use lc_agent_test_support::server::*;
use lc_agent_test_support::{MockServer, Reply};
use serde_json::{json, Value};

/// A request's messages without the system message, reduced to what the
/// conversation says: role, text, the call a result answers, the calls
/// an assistant message makes.
fn conversation(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let calls: Vec<Value> = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| json!([c["id"], c["function"]["name"], c["function"]["arguments"]]))
                .collect();
            let text = match &m["content"] {
                Value::Null => json!(""),
                other => other.clone(),
            };
            json!({"role": m["role"], "content": text, "tool_call_id": m["tool_call_id"], "calls": calls})
        })
        .collect()
}

#[needs(python_openai)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_tool_round_reaches_the_model_in_order() {
    let upstream = MockServer::start(
        "/v1",
        "/chat/completions",
        vec![Reply::json(json!({
            "choices": [{"message": {"role": "assistant", "content": "TOMORROW ANSWER"}, "finish_reason": "stop"}]
        }))],
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
        "/tests/python/tool_history_client.py"
    );
    let url = server.url.clone();
    let got = tokio::task::spawn_blocking(move || {
        python::run_json(script.as_ref(), &[url.as_str(), ALICE])
    })
    .await
    .unwrap();
    assert_eq!(got["answer"], "TOMORROW ANSWER", "{got}");
    assert_eq!(
        upstream.requests(),
        1,
        "the refused histories reached no model"
    );

    let sent = upstream.body(0);
    assert_eq!(sent["messages"][0]["role"], "system", "{sent}");
    let turn = |role: &str, content: &str, id: Value, calls: Value| json!({"role": role, "content": content, "tool_call_id": id, "calls": calls});
    assert_eq!(
        conversation(&sent),
        vec![
            turn("user", "WEATHER IN PARIS AND ROME?", Value::Null, json!([])),
            turn(
                "assistant",
                "",
                Value::Null,
                json!([
                    ["call_a", "weather", "{\"city\":\"Paris\"}"],
                    ["call_b", "weather", "{\"city\":\"Rome\"}"]
                ])
            ),
            turn("tool", "PARIS SUNNY", json!("call_a"), json!([])),
            turn("tool", "ROME RAINY", json!("call_b"), json!([])),
            turn(
                "assistant",
                "Paris is sunny, Rome is rainy.",
                Value::Null,
                json!([])
            ),
            turn("user", "AND TOMORROW?", Value::Null, json!([])),
        ],
        "{sent}"
    );

    let refused = |param: &str| json!({"status": 400, "param": param, "code": "invalid_value", "type": "invalid_request_error"});
    assert_eq!(got["stray"], refused("messages[4].tool_call_id"), "{got}");
    assert_eq!(
        got["unanswered"],
        refused("messages[2].tool_calls"),
        "{got}"
    );
    assert_eq!(got["null_content"], refused("messages[0].content"), "{got}");
    let _ = server.stop().await;
}
