//! `OpenAiChatModel` against a real local HTTP server (axum on 127.0.0.1)
//! that answers with protocol-shaped responses and records what it got
//! (streams: `openai_streaming.rs`; failures: `openai_failures.rs`;
//! servers' quirks: `openai_quirks.rs`).

use std::sync::Arc;
use std::time::Duration;

use lc_agent::{
    ChatModel, ChatRequest, ChatResponse, History, Message, ModelError, ModelRoutes, StreamDelta,
    ToolCall, ToolSpec, Usage,
};
use lc_agent::{OpenAiChatModel, OpenAiChatModelBuilder};
use lc_agent_test_support::{MockServer, Reply};
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::openai_streaming::stream_of;

pub(crate) const KEY: &str = "sk-test-5f2b9c1e-do-not-leak";

// ---------------------------------------------------------------------------
// The mock server.

/// A server at `/v1/chat/completions`.
pub(crate) async fn openai_server(replies: Vec<Reply>) -> MockServer {
    MockServer::start("/v1", "/chat/completions", replies).await
}

/// A model pointed at a mock server, with fast retries.
pub(crate) trait ModelAt {
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

pub(crate) fn snapshot(name: &str, value: &Value) {
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_json_snapshot!(name, value);
    });
}

pub(crate) fn ask(text: &str) -> ChatRequest {
    ChatRequest::new(History::from_messages([Message::human(text)]))
}

pub(crate) fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model-2024-01-01",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    })
}

pub(crate) fn text_completion(text: &str) -> Value {
    completion(json!({"role": "assistant", "content": text}), "stop")
}

pub(crate) fn chunk(delta: Value, finish_reason: Value) -> String {
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

pub(crate) fn call_delta(
    index: usize,
    id: Option<&str>,
    name: Option<&str>,
    arguments: &str,
) -> String {
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

pub(crate) fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Current weather in `city`.".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    }
}

pub(crate) async fn stream_collect(
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

// ---------------------------------------------------------------------------
// Retries, errors, timeouts.

// ---------------------------------------------------------------------------
// Configuration and secrets.

// `OpenAiChatModel::from_env` is tested in tests/environment (it changes
// the process environment); the tests here set the base URL and key
// explicitly, so the builder never reads it.

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
