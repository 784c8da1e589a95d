//! `OpenAiChatModel` against a real local HTTP server (axum on 127.0.0.1)
//! that answers with protocol-shaped responses and records what it got.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::post;
use axum::Router;
use lc_agent::{
    ChatModel, ChatRequest, ChatResponse, Events, History, Message, ModelError, ModelRoutes,
    StreamDelta, ToolCall, ToolSpec, Usage,
};
use lc_agent::{OpenAiChatModel, OpenAiChatModelBuilder};
use lc_agent_test_support::{MockServer, Reply};
use parking_lot::Mutex;
use serde_json::{json, Value};

const KEY: &str = "sk-test-5f2b9c1e-do-not-leak";

// ---------------------------------------------------------------------------
// The mock server.

/// A server at `/v1/chat/completions`.
async fn openai_server(replies: Vec<Reply>) -> MockServer {
    MockServer::start("/v1", "/chat/completions", replies).await
}

/// A model pointed at a mock server, with fast retries.
trait ModelAt {
    fn model(&self) -> OpenAiChatModelBuilder;
}

impl ModelAt for MockServer {
    fn model(&self) -> OpenAiChatModelBuilder {
        OpenAiChatModel::builder()
            .model("test-model")
            .base_url(&self.base_url)
            .api_key(KEY)
            .retry_base_delay(Duration::from_millis(1))
    }
}

// ---------------------------------------------------------------------------
// Helpers.

fn snapshot(name: &str, value: &Value) {
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_json_snapshot!(name, value);
    });
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest::new(History::from_messages([Message::human(text)]))
}

fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model-2024-01-01",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    })
}

fn text_completion(text: &str) -> Value {
    completion(json!({"role": "assistant", "content": text}), "stop")
}

fn chunk(delta: Value, finish_reason: Value) -> String {
    json!({
        "id": "chatcmpl-2",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "test-model-2024-01-01",
        "system_fingerprint": "fp_1",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}]
    })
    .to_string()
}

fn call_delta(index: usize, id: Option<&str>, name: Option<&str>, arguments: &str) -> String {
    let mut call = json!({"index": index, "function": {"arguments": arguments}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    chunk(json!({"tool_calls": [call]}), Value::Null)
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Current weather in `city`.".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    }
}

async fn stream_collect(
    model: &OpenAiChatModel,
    request: &ChatRequest,
) -> (Result<ChatResponse, ModelError>, Vec<StreamDelta>) {
    let mut deltas = Vec::new();
    let result = model.stream(request, &mut |delta| deltas.push(delta)).await;
    (result, deltas)
}

// ---------------------------------------------------------------------------
// Answers.

#[tokio::test]
async fn plain_text_answer() {
    let server = openai_server(vec![Reply::json(text_completion("Hello there!"))]).await;
    let model = server.model().build().unwrap();

    let answer = model.complete(&ask("Hi")).await.unwrap();

    assert_eq!(answer.content, "Hello there!");
    assert!(answer.tool_calls.is_empty());
    assert_eq!(answer.finish_reason.as_deref(), Some("stop"));
    assert_eq!(answer.model.as_deref(), Some("test-model-2024-01-01"));
    assert_eq!(
        answer.usage,
        Some(Usage {
            prompt_tokens: 12,
            completion_tokens: 5,
            total_tokens: 17,
            ..Usage::default()
        })
    );
    assert_eq!(server.requests(), 1);
    assert_eq!(server.authorization(0), Some(format!("Bearer {KEY}")));
    snapshot("openai_request_plain", &server.body(0));
}

#[tokio::test]
async fn request_maps_every_message_kind_and_tools() {
    let server = openai_server(vec![Reply::json(text_completion("ok"))]).await;
    let model = server
        .model()
        .temperature(0.5)
        .max_tokens(256)
        .build()
        .unwrap();
    let history = History::from_messages([
        Message::system("You are terse."),
        Message::human("Weather in Paris, and the time?"),
        Message::ai_with_tools(
            "",
            vec![
                ToolCall::new("call_a", "get_weather", json!({"city": "Paris"})),
                ToolCall::new("call_b", "get_time", json!({"tz": "CET"})),
            ],
        ),
        Message::tool("18°C, sunny", "call_a"),
        Message::tool_error("Error: unknown timezone `CET`", "call_b"),
        Message::ai_with_tools(
            "Let me retry the time.",
            vec![ToolCall {
                id: "call_c".into(),
                name: "get_time".into(),
                arguments: String::new(),
            }],
        ),
        Message::human("Never mind. Thanks!"),
    ]);
    let mut request = ChatRequest::new(history);
    request.system = vec!["Extra section from a modifier.".into()];
    request.tools = vec![
        weather_tool(),
        ToolSpec {
            name: "get_time".into(),
            description: "Current time in time zone `tz`.".into(),
            parameters: json!({"type": "object", "properties": {"tz": {"type": "string"}}}),
        },
    ]
    .into();

    model.complete(&request).await.unwrap();

    let body = server.body(0);
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "tool",
            "user"
        ]
    );
    // An assistant turn with only tool calls sends `content: ""`, never
    // `null` (llama-cpp-python answers `null` with HTTP 500).
    // One system message, at the start: the conversation's, then the
    // modifiers' sections (many chat templates accept only one).
    assert_eq!(
        body["messages"][0]["content"],
        "You are terse.\n\nExtra section from a modifier."
    );
    assert_eq!(body["messages"][2]["content"], "");
    // Tools go with `tool_choice: auto` unless the request says otherwise.
    assert_eq!(body["tool_choice"], "auto");
    // The dangling `call_c` got a synthetic error result.
    assert_eq!(body["messages"][6]["tool_call_id"], "call_c");
    snapshot("openai_request_full", &body);
}

#[tokio::test]
async fn several_tool_calls_in_one_turn() {
    let message = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}},
            {"id": "call_3", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
        ]
    });
    let server = openai_server(vec![Reply::json(completion(message, "tool_calls"))]).await;
    let model = server.model().build().unwrap();
    let mut request = ask("Weather in Paris and Rome, and the time?");
    request.tools = vec![weather_tool()].into();

    let answer = model.complete(&request).await.unwrap();

    assert_eq!(answer.content, "");
    assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        answer.tool_calls,
        vec![
            ToolCall::new("call_1", "get_weather", json!({"city": "Paris"})),
            ToolCall::new("call_2", "get_weather", json!({"city": "Rome"})),
            ToolCall::new("call_3", "get_time", json!({})),
        ]
    );
    assert_eq!(
        answer.to_message(),
        Message::ai_with_tools("", answer.tool_calls.clone())
    );
    snapshot("openai_request_with_tools", &server.body(0));
}

/// A server that reuses one tool-call id every turn (as LiteLLM's mock
/// does, and llama.cpp-style servers do with `call_0`): each turn's call
/// must be answered by that turn's result, not the first turn's.
#[tokio::test]
async fn reused_tool_call_ids_pair_each_call_with_its_own_turn() {
    let call = |n: usize| {
        Reply::json(completion(
            json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [{"id": "call_abc123", "type": "function",
                    "function": {"name": "append", "arguments": format!("{{\"line\":\"turn {n}\"}}")}}]
            }),
            "tool_calls",
        ))
    };
    let server = openai_server(vec![
        call(1),
        call(2),
        call(3),
        Reply::json(text_completion("Done.")),
    ])
    .await;
    let turns = Arc::new(Mutex::new(0usize));
    let append = lc_agent::FnTool::new(
        "append",
        "Appends a line.",
        json!({"type": "object", "properties": {"line": {"type": "string"}}}),
        move |args, _| {
            let turns = turns.clone();
            async move {
                let mut n = turns.lock();
                *n += 1;
                if *n == 1 {
                    Ok(lc_agent::ToolOutput::ok(format!(
                        "Successfully appended {}",
                        args["line"].as_str().unwrap_or("")
                    )))
                } else {
                    Ok(lc_agent::ToolOutput::error(format!(
                        "Error: turn {n} failed"
                    )))
                }
            }
        },
    );
    let net = lc_agent::RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("remote")
        .model("remote", server.model().build().unwrap())
        .tool(append)
        .build();
    {
        let _scope = net.enter();
        lc_agent::HumanNode::new("Append three lines.");
    }
    assert_eq!(net.invoke().await.unwrap().text(), "Done.");
    assert_eq!(server.requests(), 4);
    let last = server.body(3);
    let results: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        results,
        [
            "Successfully appended turn 1",
            "Error: turn 2 failed",
            "Error: turn 3 failed"
        ]
    );
    snapshot("openai_request_reused_call_ids", &last);
}

#[tokio::test]
async fn tool_call_arguments_are_kept_raw() {
    let message = json!({
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_empty", "type": "function", "function": {"name": "list", "arguments": ""}},
            {"id": "call_bad", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Par"}},
            {"type": "function", "function": {"name": "no_id", "arguments": null}},
            {"id": "call_obj", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
        ]
    });
    let server = openai_server(vec![Reply::json(completion(message, "tool_calls"))]).await;
    let answer = server
        .model()
        .build()
        .unwrap()
        .complete(&ask("go"))
        .await
        .unwrap();

    let calls = &answer.tool_calls;
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[0].arguments, "");
    assert_eq!(calls[0].parsed_arguments().unwrap(), json!({}));
    assert_eq!(calls[1].arguments, "{\"city\": \"Par");
    assert!(calls[1].parsed_arguments().is_err());
    assert!(
        calls[2].id.starts_with("call_"),
        "generated id: {}",
        calls[2].id
    );
    assert_eq!(calls[2].arguments, "");
    assert_eq!(
        calls[3].parsed_arguments().unwrap(),
        json!({"city": "Oslo"})
    );
}

#[tokio::test]
async fn tolerates_unknown_fields_and_missing_optional_ones() {
    let body = json!({
        "id": "x",
        "brand_new_top_level": {"nested": [1, 2, 3]},
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Fine.",
                "reasoning_content": "thinking...",
                "annotations": [],
                "tool_calls": [{
                    "id": "call_1", "type": "function", "extra": true,
                    "function": {"name": "f", "arguments": "{}", "strict": false}
                }]
            },
            "finish_reason": "eos_token_reached",
            "stop_reason": 42
        }],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 0}}
    });
    let minimal = json!({"choices": [{"message": {"content": null, "tool_calls": null}}]});
    let server = openai_server(vec![Reply::json(body), Reply::json(minimal)]).await;
    let model = server.model().build().unwrap();

    let answer = model.complete(&ask("a")).await.unwrap();
    assert_eq!(answer.content, "Fine.");
    assert_eq!(
        answer.tool_calls,
        vec![ToolCall::new("call_1", "f", json!({}))]
    );
    assert_eq!(answer.finish_reason.as_deref(), Some("eos_token_reached"));
    assert_eq!(answer.model, None);
    assert_eq!(
        answer.usage,
        Some(Usage {
            prompt_tokens: 3,
            completion_tokens: 4,
            total_tokens: 7,
            ..Usage::default()
        })
    );

    let answer = model.complete(&ask("b")).await.unwrap();
    assert_eq!(answer, ChatResponse::default());
}

#[tokio::test]
async fn malformed_json_is_an_invalid_response() {
    let server = openai_server(vec![
        Reply::raw(200, "{\"choices\": [ this is not json"),
        Reply::json(json!({"choices": []})),
        Reply::json(json!({"error": {"message": "model overloaded"}})),
    ])
    .await;
    let model = server.model().build().unwrap();

    for expected in ["this is not json", "no choices", "model overloaded"] {
        match model.complete(&ask("hi")).await {
            Err(ModelError::InvalidResponse { message, .. }) => {
                assert!(message.contains(expected), "{message}")
            }
            other => panic!("expected InvalidResponse, got {other:?}"),
        }
    }
    assert_eq!(server.requests(), 3, "invalid responses are not retried");
}

// ---------------------------------------------------------------------------
// Streaming.

fn split_tool_call_stream() -> Vec<String> {
    vec![
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": "Let me "}), Value::Null),
        chunk(json!({"content": "check."}), Value::Null),
        call_delta(0, Some("call_a"), Some("get_weather"), ""),
        call_delta(0, None, None, "{\"city\":"),
        call_delta(1, Some("call_b"), Some("get_time"), "{\"tz\""),
        call_delta(0, None, None, " \"Paris\"}"),
        call_delta(1, None, None, ": \"CET\"}"),
        chunk(json!({}), json!("tool_calls")),
        json!({"id": "chatcmpl-2", "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}})
            .to_string(),
        "[DONE]".to_string(),
    ]
}

#[tokio::test]
async fn streaming_assembles_split_tool_calls() {
    let server = openai_server(vec![Reply::sse(&split_tool_call_stream())]).await;
    let model = server.model().build().unwrap();
    let mut request = ask("Weather in Paris and the time?");
    request.tools = vec![weather_tool()].into();

    let (answer, deltas) = stream_collect(&model, &request).await;
    let answer = answer.unwrap();

    assert_eq!(answer.content, "Let me check.");
    assert_eq!(
        answer.tool_calls,
        vec![
            ToolCall {
                id: "call_a".into(),
                name: "get_weather".into(),
                arguments: "{\"city\": \"Paris\"}".into(),
            },
            ToolCall {
                id: "call_b".into(),
                name: "get_time".into(),
                arguments: "{\"tz\": \"CET\"}".into(),
            },
        ]
    );
    assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(answer.model.as_deref(), Some("test-model-2024-01-01"));
    assert_eq!(
        answer.usage,
        Some(Usage {
            prompt_tokens: 20,
            completion_tokens: 9,
            total_tokens: 29,
            ..Usage::default()
        })
    );

    let fragment =
        |index, id: Option<&str>, name: Option<&str>, arguments: &str| StreamDelta::ToolCall {
            index,
            id: id.map(String::from),
            name: name.map(String::from),
            arguments: arguments.into(),
        };
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Text("Let me ".into()),
            StreamDelta::Text("check.".into()),
            fragment(0, Some("call_a"), Some("get_weather"), ""),
            fragment(0, None, None, "{\"city\":"),
            fragment(1, Some("call_b"), Some("get_time"), "{\"tz\""),
            fragment(0, None, None, " \"Paris\"}"),
            fragment(1, None, None, ": \"CET\"}"),
        ]
    );

    let body = server.body(0);
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    snapshot("openai_request_stream", &body);
}

#[tokio::test]
async fn streaming_text_without_done_after_finish_reason() {
    let events = [
        chunk(json!({"content": "Hel"}), Value::Null),
        chunk(json!({"content": "lo", "unknown": 1}), Value::Null),
        chunk(json!({}), json!("stop")),
    ];
    let server = openai_server(vec![Reply::sse(&events)]).await;
    let model = server.model().build().unwrap();

    let (answer, deltas) = stream_collect(&model, &ask("hi")).await;
    let answer = answer.unwrap();

    assert_eq!(answer.content, "Hello");
    assert_eq!(answer.usage, None);
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Text("Hel".into()),
            StreamDelta::Text("lo".into())
        ]
    );
}

#[tokio::test]
async fn streaming_failures() {
    let cut_off = [chunk(json!({"content": "Hel"}), Value::Null)];
    let malformed = [
        chunk(json!({"content": "Hel"}), Value::Null),
        "{\"choices\": [".to_string(),
    ];
    let server_error = [
        chunk(json!({"content": "Hel"}), Value::Null),
        json!({"error": {"message": "upstream died"}}).to_string(),
    ];
    let server = openai_server(vec![
        Reply::sse(&cut_off),
        Reply::sse(&malformed),
        Reply::sse(&server_error),
    ])
    .await;
    let model = server.model().build().unwrap();

    let (result, _) = stream_collect(&model, &ask("1")).await;
    assert!(
        matches!(&result, Err(ModelError::InvalidResponse { message: m, .. }) if m.contains("ended")),
        "{result:?}"
    );
    let (result, _) = stream_collect(&model, &ask("2")).await;
    assert!(
        matches!(&result, Err(ModelError::InvalidResponse { .. })),
        "{result:?}"
    );
    let (result, deltas) = stream_collect(&model, &ask("3")).await;
    assert!(
        matches!(&result, Err(ModelError::Other(m)) if m.contains("upstream died")),
        "{result:?}"
    );
    assert_eq!(deltas, vec![StreamDelta::Text("Hel".into())]);
    assert_eq!(server.requests(), 3);
}

#[tokio::test]
async fn streaming_from_a_server_that_does_not_stream() {
    let message = json!({
        "content": "Sure.",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    });
    let server = openai_server(vec![Reply::json(completion(message, "tool_calls"))]).await;
    let model = server.model().build().unwrap();

    let (answer, deltas) = stream_collect(&model, &ask("hi")).await;

    assert_eq!(answer.unwrap().content, "Sure.");
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Text("Sure.".into()),
            StreamDelta::ToolCall {
                index: 0,
                id: Some("call_1".into()),
                name: Some("f".into()),
                arguments: "{}".into()
            },
        ]
    );
}

// ---------------------------------------------------------------------------
// Retries, errors, timeouts.

#[tokio::test]
async fn retries_429_honouring_retry_after() {
    let server = openai_server(vec![
        Reply::raw(429, r#"{"error": {"message": "slow down"}}"#).header("retry-after", "0"),
        Reply::json(text_completion("made it")),
    ])
    .await;
    // A base delay this long would make the test slow: Retry-After wins.
    let model = server
        .model()
        .retry_base_delay(Duration::from_secs(30))
        .build()
        .unwrap();

    let started = Instant::now();
    let answer = model.complete(&ask("hi")).await.unwrap();

    assert_eq!(answer.content, "made it");
    assert_eq!(server.requests(), 2);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        server.body(0),
        server.body(1),
        "the retry resends the same body"
    );
}

#[tokio::test]
async fn streaming_requests_are_retried_too() {
    let server = openai_server(vec![
        Reply::raw(503, "busy"),
        Reply::sse(&[
            chunk(json!({"content": "ok"}), json!("stop")),
            "[DONE]".into(),
        ]),
    ])
    .await;
    let model = server.model().build().unwrap();

    let (answer, _) = stream_collect(&model, &ask("hi")).await;

    assert_eq!(answer.unwrap().content, "ok");
    assert_eq!(server.requests(), 2);
}

#[tokio::test]
async fn gives_up_after_four_unavailable_answers() {
    let server = openai_server(vec![Reply::raw(503, "overloaded, try later")]).await;
    let model = server.model().build().unwrap();

    let error = model.complete(&ask("hi")).await.unwrap_err();

    match &error {
        ModelError::Http { status, body } => {
            assert_eq!(*status, 503);
            assert_eq!(body, "overloaded, try later");
        }
        other => panic!("expected Http, got {other:?}"),
    }
    assert_eq!(server.requests(), 4, "1 try + 3 retries");
}

#[tokio::test]
async fn a_500_is_retried_at_most_once_and_its_body_is_the_error() {
    // llama-cpp-python answers a request it cannot validate with 500 and a
    // JSON body; asking four times only waits longer for the same answer.
    let body = r#"{"error":{"message":"1 validation error for ChatCompletionRequestAssistantMessage","type":"internal_server_error"}}"#;
    let server = openai_server(vec![Reply::raw(500, body)]).await;
    let model = server.model().build().unwrap();

    let error = model.complete(&ask("hi")).await.unwrap_err();

    assert!(
        matches!(&error, ModelError::Http { status: 500, body: b } if b.contains("validation error")),
        "{error:?}"
    );
    assert!(error.to_string().contains("validation error"), "{error}");
    assert_eq!(server.requests(), 2, "1 try + 1 retry");
}

#[tokio::test]
async fn max_retries_is_configurable() {
    let server = openai_server(vec![Reply::raw(502, "bad gateway")]).await;
    let model = server.model().max_retries(0).build().unwrap();

    let error = model.complete(&ask("hi")).await.unwrap_err();

    assert!(matches!(error, ModelError::Http { status: 502, .. }));
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = openai_server(vec![Reply::raw(
        400,
        r#"{"error": {"message": "Invalid schema for function 'f'"}}"#,
    )])
    .await;
    let model = server.model().build().unwrap();

    let error = model.complete(&ask("hi")).await.unwrap_err();

    assert!(
        matches!(&error, ModelError::Http { status: 400, body } if body.contains("Invalid schema")),
        "{error:?}"
    );
    assert_eq!(server.requests(), 1);
}

/// A base URL on a port nothing listens on: bind one, then let it go.
fn unreachable_base_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

#[tokio::test]
async fn connect_error_after_retries() {
    let model = OpenAiChatModel::builder()
        .model("test-model")
        .base_url(unreachable_base_url())
        .api_key(KEY)
        .retry_base_delay(Duration::from_millis(20))
        .build()
        .unwrap();

    let started = Instant::now();
    let error = model.complete(&ask("hi")).await.unwrap_err();

    assert!(matches!(error, ModelError::Connect { .. }), "{error:?}");
    // Three backoffs of at least 10, 20 and 40 ms (half of each is fixed).
    assert!(started.elapsed() >= Duration::from_millis(70));
    assert!(!error.to_string().contains(KEY));
}

#[tokio::test]
async fn connect_error_keeps_the_http_clients_error_as_its_source() {
    let model = OpenAiChatModel::builder()
        .model("test-model")
        .base_url(unreachable_base_url())
        .api_key(KEY)
        .max_retries(0)
        .build()
        .unwrap();

    let error = model.complete(&ask("hi")).await.unwrap_err();

    let ModelError::Connect { source, .. } = &error else {
        panic!("expected Connect, got {error:?}");
    };
    let http_error = source
        .downcast_ref::<reqwest::Error>()
        .expect("the source is the reqwest error");
    assert!(http_error.is_connect(), "{http_error:?}");
    // `Error::source` leads to it, and on down to the refused connection.
    let source = std::error::Error::source(&error).expect("a source");
    assert_eq!(source.to_string(), http_error.to_string());
    let refused = std::iter::successors(Some(source), |e| e.source())
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        .next()
        .expect("an io::Error down the chain");
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
}

#[tokio::test]
async fn slow_server_times_out() {
    let server = openai_server(vec![
        Reply::json(text_completion("late")).after(Duration::from_secs(5))
    ])
    .await;
    let model = server
        .model()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();

    let started = Instant::now();
    let error = model.complete(&ask("hi")).await.unwrap_err();

    assert!(matches!(error, ModelError::Timeout(_)), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(server.requests(), 1, "timeouts are not retried");
}

#[tokio::test]
async fn stalled_stream_times_out() {
    let first = format!(
        "data: {}\n\n",
        chunk(json!({"content": "Hel"}), Value::Null)
    );
    let stalled = Reply::sse(&[])
        .then(Duration::ZERO, &first)
        .then(Duration::from_secs(5), "data: [DONE]\n\n");
    let server = openai_server(vec![stalled]).await;
    let model = server
        .model()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();

    let started = Instant::now();
    let (result, deltas) = stream_collect(&model, &ask("hi")).await;

    assert!(matches!(result, Err(ModelError::Timeout(_))), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(deltas, vec![StreamDelta::Text("Hel".into())]);
}

// ---------------------------------------------------------------------------
// Configuration and secrets.

#[tokio::test]
async fn api_key_stays_out_of_debug_and_errors() {
    // A server that echoes the key back, as OpenAI's 401 does.
    let echo = format!(r#"{{"error": {{"message": "Incorrect API key provided: {KEY}"}}}}"#);
    let server = openai_server(vec![Reply::raw(401, echo)]).await;
    let builder = server.model();
    assert!(!format!("{builder:?}").contains(KEY));
    let model = builder.build().unwrap();

    let debug = format!("{model:?}");
    assert!(!debug.contains(KEY), "{debug}");
    assert!(debug.contains(r#"api_key: Some("***")"#), "{debug}");

    let error = model.complete(&ask("hi")).await.unwrap_err();
    assert!(matches!(error, ModelError::Http { status: 401, .. }));
    assert_eq!(server.requests(), 1);
    for text in [error.to_string(), format!("{error:?}")] {
        assert!(!text.contains(KEY), "{text}");
        assert!(text.contains("Incorrect API key provided: ***"), "{text}");
    }
    // The key went where it belongs.
    assert_eq!(server.authorization(0), Some(format!("Bearer {KEY}")));
}

#[test]
fn builder_rejects_bad_configuration() {
    let bad_url = OpenAiChatModel::builder()
        .model("m")
        .api_key(KEY)
        .base_url("not a url")
        .build();
    assert!(matches!(bad_url, Err(ModelError::Config { .. })));

    let bad_scheme = OpenAiChatModel::builder()
        .model("m")
        .api_key(KEY)
        .base_url("ftp://example.com/v1")
        .build();
    assert!(matches!(bad_scheme, Err(ModelError::Config { .. })));
}

// `OpenAiChatModel::from_env` is tested in tests/environment (it changes
// the process environment); the tests here set the base URL and key
// explicitly, so the builder never reads it.

/// A streamed answer that lost its tool call (as LiteLLM's streaming does)
/// is neither an error nor silent: the node says so and an event reports it.
#[tokio::test]
async fn a_streamed_answer_that_lost_its_tool_call_is_flagged() {
    let server = openai_server(vec![Reply::sse(&[
        chunk(json!({"role": "assistant", "content": null}), Value::Null),
        chunk(json!({}), json!("tool_calls")),
        "[DONE]".to_string(),
    ])])
    .await;
    let net = lc_agent::RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("remote")
        .model("remote", server.model().build().unwrap())
        .streaming(true)
        .build();
    let mut events = net.subscribe();
    {
        let _scope = net.enter();
        lc_agent::HumanNode::new("Write the notes.");
    }
    let reply = net.invoke().await.unwrap();
    assert_eq!(reply.text(), "");
    let chat = net.current_leaf().unwrap();
    assert_eq!(chat.metadata_value("empty_answer"), Some(json!(true)));
    assert_eq!(
        chat.metadata_value("finish_reason"),
        Some(json!("tool_calls"))
    );
    let got: Vec<lc_agent::NetworkEvent> = std::iter::from_fn(|| events.try_recv().ok()).collect();
    assert!(got.contains(&lc_agent::NetworkEvent::EmptyAnswer { node_id: chat.id() }));
}

/// A stream whose text deltas are these pieces, then the split tool calls
/// of [`split_tool_call_stream`].
fn stream_of(texts: &[String]) -> Vec<String> {
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    events.extend(
        texts
            .iter()
            .map(|t| chunk(json!({"content": t}), Value::Null)),
    );
    events.extend(split_tool_call_stream().into_iter().skip(3));
    events
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// However the network cuts the event stream (inside a `data:` line, a
    /// UTF-8 character, the blank line between events), the assembled answer
    /// and the streamed deltas are the same.
    #[test]
    fn sse_answers_do_not_depend_on_chunk_boundaries(
        texts in proptest::collection::vec("(?s).{0,12}", 0..6),
        cuts in proptest::collection::vec(proptest::prelude::any::<usize>(), 0..24),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let events = stream_of(&texts);
        let (whole, cut) = runtime.block_on(async {
            let server = openai_server(vec![
                Reply::sse_cut(&events, &[]),
                Reply::sse_cut(&events, &cuts),
            ])
            .await;
            let model = server.model().build().unwrap();
            let whole = stream_collect(&model, &ask("a")).await;
            let cut = stream_collect(&model, &ask("a")).await;
            (whole, cut)
        });
        let (whole_answer, whole_deltas) = whole;
        let (cut_answer, cut_deltas) = cut;
        let whole_answer = whole_answer.unwrap();
        let expected: String = texts.concat();
        proptest::prop_assert_eq!(&whole_answer.content, &expected);
        proptest::prop_assert_eq!(whole_answer.tool_calls.len(), 2);
        proptest::prop_assert_eq!(cut_answer.unwrap(), whole_answer);
        proptest::prop_assert_eq!(cut_deltas, whole_deltas);
    }
}

// ---------------------------------------------------------------------------
// Real servers' quirks (each found against llama-cpp-python, LiteLLM, vLLM
// or llama.cpp; the real-server tests are in `tests/real_model.rs`).

/// llama-cpp-python repeats the call's id and whole name in every chunk of
/// a streamed tool call; the name must not become `get_weatherget_weather…`.
#[tokio::test]
async fn a_name_and_id_repeated_in_every_chunk_count_once() {
    let repeated = |arguments: &str| {
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call__0", "type": "function",
                "function": {"name": "get_weather", "arguments": arguments}}]}),
            Value::Null,
        )
    };
    let server = openai_server(vec![Reply::sse(&[
        chunk(json!({"role": "assistant", "content": null}), Value::Null),
        repeated("{\"ci"),
        repeated("ty\": \"Par"),
        repeated("is\"}"),
        chunk(json!({}), json!("tool_calls")),
        "[DONE]".into(),
    ])])
    .await;
    let model = server.model().build().unwrap();
    let mut request = ask("Weather in Paris?");
    request.tools = vec![weather_tool()].into();

    let (answer, deltas) = stream_collect(&model, &request).await;

    let answer = answer.unwrap();
    assert_eq!(answer.tool_calls.len(), 1);
    assert_eq!(answer.tool_calls[0].name, "get_weather");
    assert_eq!(answer.tool_calls[0].id, "call__0");
    assert_eq!(answer.tool_calls[0].arguments, r#"{"city": "Paris"}"#);
    let names: Vec<_> = deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::ToolCall { name: Some(n), .. } => Some(n.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["get_weather"], "the name is reported once");
    let ids = deltas
        .iter()
        .filter(|d| matches!(d, StreamDelta::ToolCall { id: Some(_), .. }))
        .count();
    assert_eq!(ids, 1, "the id is reported once");
}

#[tokio::test]
async fn the_tool_choice_goes_with_the_tools() {
    let server = openai_server(vec![Reply::json(text_completion("ok"))]).await;
    let model = server.model().build().unwrap();
    let with = |choice: Option<lc_agent::ToolChoice>| {
        let mut request = ask("hi");
        request.tools = vec![weather_tool()].into();
        request.tool_choice = choice;
        request
    };

    model.complete(&with(None)).await.unwrap();
    model
        .complete(&with(Some(lc_agent::ToolChoice::Required)))
        .await
        .unwrap();
    model
        .complete(&with(Some(lc_agent::ToolChoice::None)))
        .await
        .unwrap();
    model
        .complete(&with(Some(lc_agent::ToolChoice::Tool(
            "get_weather".into(),
        ))))
        .await
        .unwrap();
    let mut no_tools = ask("hi");
    no_tools.tool_choice = Some(lc_agent::ToolChoice::Required);
    model.complete(&no_tools).await.unwrap();

    assert_eq!(server.body(0)["tool_choice"], "auto");
    assert_eq!(server.body(1)["tool_choice"], "required");
    assert_eq!(server.body(2)["tool_choice"], "none");
    assert_eq!(
        server.body(3)["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
    assert!(
        server.body(4).get("tool_choice").is_none() && server.body(4).get("tools").is_none(),
        "no tools, no choice: {}",
        server.body(4)
    );
}

/// A chat node's own tool choice, else its step's route, reaches the model.
#[tokio::test]
async fn chat_nodes_send_their_tool_choice() {
    let server = openai_server(vec![Reply::json(text_completion("ok"))]).await;
    let net = lc_agent::RunnableNetwork::builder()
        .chat_model("remote")
        .model("remote", server.model().build().unwrap())
        .tool(lc_agent::FnTool::new(
            "get_weather",
            "Weather.",
            json!({"type": "object"}),
            |_args, _ctx| async { Ok(lc_agent::ToolOutput::ok("sunny")) },
        ))
        .build();
    {
        let _scope = net.enter();
        lc_agent::HumanNode::new("one");
        lc_agent::NodeRef::create(lc_agent::ChatNode {
            tool_choice: Some(lc_agent::ToolChoice::Tool("get_weather".into())),
            ..lc_agent::ChatNode::default()
        });
    }
    net.invoke().await.unwrap();
    net.set_tool_choice_route("chat", Some(lc_agent::ToolChoice::Required));
    {
        let _scope = net.enter();
        lc_agent::HumanNode::new("two");
        lc_agent::ChatNode::new();
    }
    net.invoke().await.unwrap();

    assert_eq!(
        server.body(0)["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
    assert_eq!(server.body(1)["tool_choice"], "required");
    // The choice is saved with the node and loads back.
    let again = lc_agent::RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    assert_eq!(again.to_json().unwrap(), net.to_json().unwrap());
    assert_eq!(
        again.tool_choice_for_step("chat"),
        Some(lc_agent::ToolChoice::Required)
    );
}

/// llama-cpp-python will not stream with `tool_choice: auto`; the model
/// asks unstreamed instead (reporting the answer as deltas), and from then
/// on asks that way at once.
#[tokio::test]
async fn a_server_that_will_not_stream_with_tools_is_asked_unstreamed_from_then_on() {
    let refusal = r#"{"error":{"message":"Automatic streaming tool choice is not supported","type":"internal_server_error"}}"#;
    let call = json!({
        "content": null,
        "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]
    });
    let server = openai_server(vec![
        Reply::raw(500, refusal),
        Reply::json(completion(call, "tool_calls")),
        Reply::json(text_completion("Cold.")),
    ])
    .await;
    let model = server.model().build().unwrap();
    let mut request = ask("Weather in Oslo?");
    request.tools = vec![weather_tool()].into();

    let (answer, deltas) = stream_collect(&model, &request).await;
    let answer = answer.unwrap();
    assert_eq!(answer.tool_calls[0].name, "get_weather");
    assert!(
        matches!(&deltas[..], [StreamDelta::ToolCall { name: Some(n), .. }] if n == "get_weather"),
        "{deltas:?}"
    );
    assert_eq!(server.requests(), 2, "the refusal is not retried");
    assert_eq!(server.body(0)["stream"], true);
    assert!(server.body(1).get("stream").is_none());

    // A clone shares what was learned: no second refusal.
    let clone = model.clone();
    let (answer, _) = stream_collect(&clone, &request).await;
    assert_eq!(answer.unwrap().content, "Cold.");
    assert_eq!(server.requests(), 3);
    assert!(server.body(2).get("stream").is_none());
}

/// llama-cpp-python fails a streamed request with a forced tool choice
/// (an output schema sent as a tool) with a bare 500; the model asks it
/// unstreamed and reports the call as deltas. Requests with `auto` still
/// stream afterwards: nothing is remembered.
#[tokio::test]
async fn a_bare_500_on_a_streamed_forced_tool_is_asked_unstreamed() {
    let call = json!({
        "content": null,
        "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]
    });
    let server = openai_server(vec![
        Reply::raw(500, ""),
        Reply::raw(500, ""),
        Reply::json(completion(call, "tool_calls")),
    ])
    .await;
    let model = server.model().build().unwrap();
    let mut request = ask("Weather in Oslo?");
    request.tools = vec![weather_tool()].into();
    request.tool_choice = Some(lc_agent::ToolChoice::Tool("get_weather".into()));

    let (answer, deltas) = stream_collect(&model, &request).await;
    let answer = answer.unwrap();
    assert_eq!(answer.tool_calls[0].name, "get_weather");
    assert!(
        matches!(&deltas[..], [StreamDelta::ToolCall { name: Some(n), .. }] if n == "get_weather"),
        "{deltas:?}"
    );
    let last = server.requests() - 1;
    assert_eq!(server.body(0)["stream"], true);
    assert!(
        server.body(last).get("stream").is_none(),
        "asked unstreamed at last"
    );

    // With `auto`, nothing was learned: a bare 500 there is an error.
    let server = openai_server(vec![Reply::raw(500, ""), Reply::raw(500, "")]).await;
    let model = server.model().build().unwrap();
    let mut request = ask("Weather in Oslo?");
    request.tools = vec![weather_tool()].into();
    let (answer, _) = stream_collect(&model, &request).await;
    assert!(answer.is_err(), "{answer:?}");
    for i in 0..server.requests() {
        assert_eq!(server.body(i)["stream"], true);
    }
}

/// A prompt that does not fit is a `ContextOverflow` with the sizes the
/// server gave, not retried, and the window is remembered.
#[tokio::test]
async fn a_prompt_that_does_not_fit_is_a_context_overflow() {
    let body = r#"{"error":{"message":"Requested tokens (2620) exceed context window of 2048","type":"internal_server_error"}}"#;
    let server = openai_server(vec![Reply::raw(500, body)]).await;
    let model = server.model().build().unwrap();

    let error = model.complete(&ask("a long story")).await.unwrap_err();

    assert!(
        matches!(
            error,
            ModelError::ContextOverflow {
                tokens: Some(2620),
                window: Some(2048)
            }
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("2620 tokens and 2048 fit"),
        "{error}"
    );
    assert_eq!(server.requests(), 1, "asking again cannot help");
    assert_eq!(model.context_window().await, Some(2048));
}

/// llama-cpp-python answers HTTP 200 and then sends nothing at all when it
/// fails while streaming (a prompt that does not fit, `tool_choice: auto`
/// with tools): asked again unstreamed, it says why or answers.
#[tokio::test]
async fn an_empty_stream_is_asked_again_unstreamed() {
    let overflow = r#"{"error":{"message":"This model's maximum context length is 2048 tokens. However, you requested 3020 tokens (3010 in the messages, 10 in the completion).","code":"context_length_exceeded"}}"#;
    let server = openai_server(vec![
        Reply::sse(&[]),
        Reply::raw(400, overflow),
        Reply::sse(&["[DONE]".into()]),
        Reply::json(text_completion("Fine.")),
    ])
    .await;
    let model = server.model().build().unwrap();

    let (result, _) = stream_collect(&model, &ask(&"word ".repeat(3000))).await;
    let error = result.unwrap_err();
    assert!(
        matches!(
            error,
            ModelError::ContextOverflow {
                tokens: Some(3020),
                window: Some(2048)
            }
        ),
        "{error:?}"
    );
    let (result, deltas) = stream_collect(&model, &ask("hi")).await;
    assert_eq!(result.unwrap().content, "Fine.");
    assert_eq!(deltas, vec![StreamDelta::Text("Fine.".into())]);
    assert_eq!(server.requests(), 4);
    assert!(server.body(1).get("stream").is_none());
    assert!(server.body(3).get("stream").is_none());
    // Without tools nothing is remembered: the next request streams.
    stream_collect(&model, &ask("again")).await.0.unwrap();
    assert_eq!(server.body(4)["stream"], true);
}

/// `tool_choice: auto` streamed to llama-cpp-python: an empty stream; the
/// model asks unstreamed and keeps doing so for requests with tools.
#[tokio::test]
async fn an_empty_stream_with_auto_tools_is_remembered() {
    let server = openai_server(vec![
        Reply::sse(&[]),
        Reply::json(text_completion("One.")),
        Reply::json(text_completion("Two.")),
    ])
    .await;
    let model = server.model().build().unwrap();
    let mut request = ask("Weather?");
    request.tools = vec![weather_tool()].into();

    assert_eq!(
        stream_collect(&model, &request).await.0.unwrap().content,
        "One."
    );
    assert_eq!(
        stream_collect(&model, &request).await.0.unwrap().content,
        "Two."
    );
    assert_eq!(server.requests(), 3);
    assert_eq!(server.body(0)["stream"], true);
    assert!(
        server.body(2).get("stream").is_none(),
        "asked unstreamed at once"
    );
}

/// A stream that starts and then ends with nothing of an answer says the
/// server ended without one, and how the prompt compares to the window.
#[tokio::test]
async fn a_stream_that_ends_without_an_answer_says_so() {
    let role_only = [chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let server = openai_server(vec![Reply::sse(&role_only)]).await;
    let model = server.model().context_window(50).build().unwrap();

    let (result, _) = stream_collect(&model, &ask(&"word ".repeat(400))).await;
    let text = result.unwrap_err().to_string();
    assert!(
        text.contains("ended the stream without an answer"),
        "{text}"
    );
    assert!(
        text.contains("larger than the model's context window (50 tokens)"),
        "{text}"
    );
    assert_eq!(server.requests(), 1);
}

/// `finish_reason: length` flags the node and emits an event; the caller
/// may ask the model to go on.
#[tokio::test]
async fn a_cut_off_answer_is_flagged_and_can_be_continued() {
    let server = openai_server(vec![
        Reply::json(completion(
            json!({"role": "assistant", "content": "The first half of"}),
            "length",
        )),
        Reply::json(text_completion("the answer.")),
    ])
    .await;
    let net = lc_agent::RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("remote")
        .model("remote", server.model().build().unwrap())
        .build();
    let mut events = net.subscribe();
    {
        let _scope = net.enter();
        lc_agent::HumanNode::new("Tell me.");
    }
    net.invoke().await.unwrap();
    let chat = net.current_leaf().unwrap();
    assert_eq!(chat.metadata_value("cut_off"), Some(json!(true)));
    let got: Vec<lc_agent::NetworkEvent> = std::iter::from_fn(|| events.try_recv().ok()).collect();
    assert!(got.contains(&lc_agent::NetworkEvent::AnswerCutOff { node_id: chat.id() }));

    let human = net.continue_cut_off().unwrap().expect("a continue turn");
    assert_eq!(human.parents(), vec![chat.id()]);
    let reply = net.invoke().await.unwrap();
    assert_eq!(reply.text(), "the answer.");
    let sent = server.body(1);
    let last = sent["messages"].as_array().unwrap().last().unwrap().clone();
    let prompt = last["content"].as_str().unwrap();
    assert!(
        prompt.starts_with("Your previous answer was cut off"),
        "{prompt}"
    );
    // A complete answer has nothing to continue.
    assert!(net.continue_cut_off().unwrap().is_none());
}

/// Servers that say their window: llama.cpp's `/props`, vLLM's
/// `/v1/models`, Ollama's `/api/show`; each is asked once.
#[tokio::test]
async fn the_window_is_asked_of_the_server_once() {
    use axum::routing::get;
    async fn serve(app: Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}/v1")
    }
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = hits.clone();
    let llama_cpp = serve(Router::new().route(
        "/props",
        get(move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { axum::Json(json!({"default_generation_settings": {"n_ctx": 4096}})) }
        }),
    ))
    .await;
    let vllm = serve(Router::new().route(
        "/v1/models",
        get(|| async {
            axum::Json(json!({"object": "list", "data": [
                {"id": "other", "max_model_len": 1},
                {"id": "m", "max_model_len": 8192}]}))
        }),
    ))
    .await;
    let ollama = serve(Router::new().route(
        "/api/show",
        post(|| async {
            axum::Json(json!({"parameters": "num_ctx 16384", "model_info": {"llama.context_length": 131072}}))
        }),
    ))
    .await;
    let silent = serve(Router::new()).await;
    let model = |url: &str| {
        OpenAiChatModel::builder()
            .model("m")
            .base_url(url)
            .build()
            .unwrap()
    };

    let first = model(&llama_cpp);
    assert_eq!(first.context_window().await, Some(4096));
    assert_eq!(first.clone().context_window().await, Some(4096));
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(model(&vllm).context_window().await, Some(8192));
    assert_eq!(model(&ollama).context_window().await, Some(16384));
    assert_eq!(model(&silent).context_window().await, None);
    let configured = OpenAiChatModel::builder()
        .model("m")
        .base_url(&llama_cpp)
        .context_window(1000)
        .build()
        .unwrap();
    assert_eq!(configured.context_window().await, Some(1000));
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "configured: not asked"
    );
}

/// A forced tool choice is for the turn that makes the call: the turn
/// after the tool results decides for itself (a forced call repeated
/// would never end).
#[tokio::test]
async fn a_forced_choice_is_not_inherited_by_the_next_turn() {
    let call = json!({
        "content": null,
        "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{}"}}]
    });
    let server = openai_server(vec![
        Reply::json(completion(call, "tool_calls")),
        Reply::json(text_completion("Sunny.")),
    ])
    .await;
    let net = lc_agent::RunnableNetwork::builder()
        .chat_model("remote")
        .model("remote", server.model().build().unwrap())
        .tool(lc_agent::FnTool::new(
            "get_weather",
            "Weather.",
            json!({"type": "object"}),
            |_args, _ctx| async { Ok(lc_agent::ToolOutput::ok("sunny")) },
        ))
        .build();
    {
        let _scope = net.enter();
        lc_agent::HumanNode::new("Weather?");
        lc_agent::NodeRef::create(lc_agent::ChatNode {
            tool_choice: Some(lc_agent::ToolChoice::Tool("get_weather".into())),
            ..lc_agent::ChatNode::default()
        });
    }

    assert_eq!(net.invoke().await.unwrap().text(), "Sunny.");
    assert_eq!(server.requests(), 2);
    assert_eq!(
        server.body(0)["tool_choice"]["function"]["name"],
        "get_weather"
    );
    assert_eq!(server.body(1)["tool_choice"], "auto");
}

/// A one-letter API key (`OPENAI_API_KEY=x`, as local recipes set it) masks
/// nothing: an error's words stay readable, and a prompt that does not fit
/// is still recognised as one.
#[tokio::test]
async fn a_short_key_masks_nothing_and_overflows_are_recognised() {
    let overflow = r#"{"error":{"message":"This model's maximum context length is 2048 tokens. However, you requested 5085 tokens (5085 in the messages, 0 in the completion).","code":"context_length_exceeded"}}"#;
    let server = openai_server(vec![
        Reply::raw(400, overflow),
        Reply::raw(
            400,
            r#"{"error":{"message":"max_tokens exceeds the maximum"}}"#,
        ),
    ])
    .await;
    let model = server.model().api_key("x").build().unwrap();
    let error = model.complete(&ask("hi")).await.unwrap_err();
    assert!(
        matches!(
            error,
            ModelError::ContextOverflow {
                tokens: Some(5085),
                window: Some(2048)
            }
        ),
        "{error:?}"
    );
    let error = model.complete(&ask("hi")).await.unwrap_err().to_string();
    assert!(error.contains("max_tokens exceeds the maximum"), "{error}");
    assert!(!error.contains("***"), "{error}");
}

/// A server that is not the API (answering 501 with an HTML page, as
/// Python's `http.server` does for POST) is not taken for one refusing to
/// stream with tools, and its page is not printed: a short error naming
/// the endpoint.
#[tokio::test]
async fn a_501_web_page_is_a_short_clear_error() {
    let page = "<!DOCTYPE HTML>\n<html lang=\"en\">\n    <head>\n        <meta charset=\"utf-8\">\n        <title>Error response</title>\n    </head>\n    <body>\n        <h1>Error response</h1>\n        <p>Error code: 501</p>\n        <p>Message: Unsupported method ('POST').</p>\n        <p>Error code explanation: 501 - Server does not support this operation.</p>\n    </body>\n</html>\n";
    let server = openai_server(vec![
        Reply::raw(501, page).header("content-type", "text/html;charset=utf-8")
    ])
    .await;
    let model = server.model().max_retries(0).build().unwrap();
    let mut request = ask("hi");
    request.tools = vec![weather_tool()].into();
    let (result, _) = stream_collect(&model, &request).await;
    let error = result.unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(error, ModelError::Http { status: 501, .. }),
        "{error:?}"
    );
    assert!(
        text.contains("Error response") && text.contains("chat/completions"),
        "{text}"
    );
    assert!(!text.contains("<html") && !text.contains('\n'), "{text}");
    assert_eq!(server.requests(), 1, "not asked again unstreamed");
}
