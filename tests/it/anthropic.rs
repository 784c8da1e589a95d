//! `AnthropicChatModel` against a real local HTTP server (axum on
//! 127.0.0.1) that answers as the Messages API does and records what it
//! got: the request's JSON and headers, the answer (whole and streamed),
//! stop reasons, usage, retries, errors, and the agent loop on top.

use std::sync::Arc;
use std::time::Duration;

use lc_agent::{AnthropicChatModel, AnthropicChatModelBuilder, NodeRef};
use lc_agent::{
    ChatModel, ChatNode, ChatRequest, ChatResponse, FnTool, History, HumanNode, Message,
    ModelError, RunnableNetwork, StreamDelta, ToolCall, ToolChoice, ToolSpec, Usage,
};
use lc_agent_test_support::{MockServer, Reply};
use parking_lot::Mutex;
use serde_json::{json, Value};

const KEY: &str = "sk-ant-test-7c1d-do-not-leak";

/// A server at `/v1/messages`.
async fn server(replies: Vec<Reply>) -> MockServer {
    MockServer::start("", "/v1/messages", replies).await
}

/// A model pointed at `server`, with fast retries.
fn model(server: &MockServer) -> AnthropicChatModelBuilder {
    AnthropicChatModel::builder()
        .model("claude-test")
        .base_url(&server.base_url)
        .api_key(KEY)
        .retry_base_delay(Duration::from_millis(1))
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest::new(History::from_messages([Message::human(text)]))
}

fn message(content: Value, stop_reason: &str) -> Value {
    json!({
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-test-20250101",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5,
                  "cache_creation_input_tokens": 100, "cache_read_input_tokens": 200}
    })
}

fn text_message(text: &str) -> Value {
    message(json!([{"type": "text", "text": text}]), "end_turn")
}

fn error_body(kind: &str, text: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": text}}).to_string()
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Current weather in `city`.".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    }
}

fn clock_tool() -> ToolSpec {
    ToolSpec {
        name: "clock".into(),
        description: "The time.".into(),
        parameters: json!({"type": "object", "properties": {}}),
    }
}

async fn stream_collect(
    model: &AnthropicChatModel,
    request: &ChatRequest,
) -> (Result<ChatResponse, ModelError>, Vec<StreamDelta>) {
    let mut deltas = Vec::new();
    let result = model.stream(request, &mut |delta| deltas.push(delta)).await;
    (result, deltas)
}

/// The events of a streamed answer: one text block, then one tool call
/// whose arguments come in three pieces, with pings and an event type
/// this client does not know in between.
fn text_and_tool_events(stop_reason: &str) -> Vec<Value> {
    vec![
        json!({"type": "message_start", "message": {"id": "msg_02", "type": "message", "role": "assistant",
               "model": "claude-test-20250101", "content": [], "stop_reason": null,
               "usage": {"input_tokens": 30, "output_tokens": 1, "cache_read_input_tokens": 7}}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "check. ☀"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": "}}),
        json!({"type": "something_new", "index": 1}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"Paris\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 22}}),
        json!({"type": "message_stop"}),
    ]
}

// ---------------------------------------------------------------------------
// Requests.

#[tokio::test]
async fn a_plain_answer_with_its_headers_usage_and_stop_reason() {
    let server = server(vec![Reply::json(text_message("Hello."))]).await;
    let model = model(&server).build().unwrap();

    let answer = model.complete(&ask("Hi")).await.unwrap();

    assert_eq!(answer.content, "Hello.");
    assert_eq!(answer.finish_reason.as_deref(), Some("stop"));
    assert_eq!(answer.model.as_deref(), Some("claude-test-20250101"));
    assert_eq!(
        answer.usage,
        Some(Usage {
            prompt_tokens: 310,
            completion_tokens: 5,
            total_tokens: 315,
            cache_read_tokens: 200,
            cache_write_tokens: 100,
            ..Usage::default()
        })
    );
    assert_eq!(server.header(0, "x-api-key").as_deref(), Some(KEY));
    assert_eq!(
        server.header(0, "anthropic-version").as_deref(),
        Some("2023-06-01")
    );
    assert_eq!(
        server.authorization(0),
        None,
        "the key goes in x-api-key only"
    );
    assert_eq!(
        server.body(0),
        json!({
            "model": "claude-test",
            "max_tokens": 8192,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
        })
    );
}

#[tokio::test]
async fn the_request_maps_system_tools_tool_calls_and_results() {
    let server = server(vec![Reply::json(text_message("Sunny."))]).await;
    let model = model(&server)
        .max_tokens(300)
        .temperature(0.5)
        .build()
        .unwrap();
    let call = ToolCall::new("toolu_9", "get_weather", json!({"city": "Paris"}));
    let bad = ToolCall {
        id: "call:odd id".into(),
        name: "clock".into(),
        arguments: "not json".into(),
    };
    let mut request = ChatRequest::new(History::from_messages([
        Message::system("You are terse."),
        Message::human("Weather in Paris? And the time?"),
        Message::ai_with_tools("Checking.", vec![call, bad]),
        Message::tool("18°C, sunny", "toolu_9"),
        Message::tool_error("Error: invalid arguments", "call:odd id"),
    ]));
    request.system = vec!["Use the tools.".into()];
    request.tools = vec![weather_tool(), clock_tool()].into();

    model.complete(&request).await.unwrap();

    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        server.body(0),
        json!({
            "model": "claude-test",
            "max_tokens": 300,
            "system": [
                {"type": "text", "text": "You are terse."},
                {"type": "text", "text": "Use the tools.", "cache_control": ephemeral},
            ],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather in Paris? And the time?"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "call_odd_id", "name": "clock", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_9", "content": "18°C, sunny"},
                    {"type": "tool_result", "tool_use_id": "call_odd_id", "content": "Error: invalid arguments", "is_error": true},
                ]},
            ],
            "tools": [
                {"name": "get_weather", "description": "Current weather in `city`.",
                 "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
                {"name": "clock", "description": "The time.",
                 "input_schema": {"type": "object", "properties": {}}, "cache_control": ephemeral},
            ],
            "tool_choice": {"type": "auto"},
            "temperature": 0.5
        })
    );
}

#[tokio::test]
async fn tool_choices_map_to_the_apis_words() {
    let server = server(vec![Reply::json(text_message("ok"))]).await;
    let model = model(&server).prompt_caching(false).build().unwrap();
    let choices = [
        (ToolChoice::Auto, json!({"type": "auto"})),
        (ToolChoice::Required, json!({"type": "any"})),
        (ToolChoice::None, json!({"type": "none"})),
        (
            ToolChoice::Tool("clock".into()),
            json!({"type": "tool", "name": "clock"}),
        ),
    ];
    for (n, (choice, wire)) in choices.into_iter().enumerate() {
        let mut request = ask("time?");
        request.tools = vec![clock_tool()].into();
        request.tool_choice = Some(choice);
        model.complete(&request).await.unwrap();
        assert_eq!(server.body(n)["tool_choice"], wire);
        assert!(
            server.body(n)["tools"][0].get("cache_control").is_none(),
            "prompt caching off"
        );
    }
    let mut request = ChatRequest::new(History::from_messages([
        Message::system("One."),
        Message::system("Two."),
        Message::human("x"),
    ]));
    request.system = vec!["Three.".into()];
    model.complete(&request).await.unwrap();
    assert_eq!(
        server.body(4)["system"],
        "One.\n\nTwo.\n\nThree.",
        "one string without cache markers"
    );
    // No tools, no choice.
    let mut request = ask("time?");
    request.tool_choice = Some(ToolChoice::Required);
    model.complete(&request).await.unwrap();
    assert!(server.body(5).get("tool_choice").is_none());
}

// ---------------------------------------------------------------------------
// Answers.

#[tokio::test]
async fn a_whole_answer_with_a_tool_call() {
    let content = json!([
        {"type": "thinking", "thinking": "hmm", "signature": "x"},
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
    ]);
    let server = server(vec![Reply::json(message(content, "tool_use"))]).await;
    let model = model(&server).build().unwrap();

    let answer = model.complete(&ask("Oslo?")).await.unwrap();

    assert_eq!(answer.content, "Looking.", "thinking is not the answer");
    assert_eq!(
        answer.tool_calls,
        vec![ToolCall::new(
            "toolu_1",
            "get_weather",
            json!({"city": "Oslo"})
        )]
    );
    assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
}

#[tokio::test]
async fn a_streamed_answer_is_assembled_from_its_events() {
    let server = server(vec![Reply::sse_typed(&text_and_tool_events("tool_use"))]).await;
    let model = model(&server).build().unwrap();

    let (answer, deltas) = stream_collect(&model, &ask("Paris?")).await;
    let answer = answer.unwrap();

    assert_eq!(server.body(0)["stream"], true);
    assert_eq!(answer.content, "Let me check. ☀");
    assert_eq!(
        answer.tool_calls,
        vec![ToolCall {
            id: "toolu_01".into(),
            name: "get_weather".into(),
            arguments: "{\"city\": \"Paris\"}".into(),
        }],
        "the arguments as the model wrote them"
    );
    assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(answer.model.as_deref(), Some("claude-test-20250101"));
    let usage = answer.usage.unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cache_read_tokens
        ),
        (37, 22, 7),
        "message_start's prompt, message_delta's output"
    );
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Text("Let me ".into()),
            StreamDelta::Text("check. ☀".into()),
            StreamDelta::ToolCall {
                index: 0,
                id: Some("toolu_01".into()),
                name: Some("get_weather".into()),
                arguments: String::new()
            },
            StreamDelta::ToolCall {
                index: 0,
                id: None,
                name: None,
                arguments: "{\"city\": ".into()
            },
            StreamDelta::ToolCall {
                index: 0,
                id: None,
                name: None,
                arguments: "\"Paris\"}".into()
            },
        ]
    );
}

#[tokio::test]
async fn max_tokens_is_a_cut_off_answer_streamed_or_not() {
    let mut cut = text_message("Half a sen");
    cut["stop_reason"] = json!("max_tokens");
    let events = vec![
        json!({"type": "message_start", "message": {"model": "claude-test", "usage": {"input_tokens": 3}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Half a sen"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 4}}),
        json!({"type": "message_stop"}),
    ];
    let server = server(vec![Reply::json(cut), Reply::sse_typed(&events)]).await;
    let model = model(&server).build().unwrap();

    let whole = model.complete(&ask("Write")).await.unwrap();
    let (streamed, _) = stream_collect(&model, &ask("Write")).await;
    let streamed = streamed.unwrap();

    for answer in [whole, streamed] {
        assert!(answer.is_cut_off(), "{answer:?}");
        assert_eq!(answer.finish_reason.as_deref(), Some("length"));
    }
}

#[tokio::test]
async fn a_tool_call_without_argument_pieces_gets_an_empty_object() {
    let events = vec![
        json!({"type": "message_start", "message": {"model": "claude-test"}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_c", "name": "clock", "input": {}}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_d", "name": "get_weather", "input": {"city": "Rome"}}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
        json!({"type": "message_stop"}),
    ];
    let server = server(vec![Reply::sse_typed(&events)]).await;
    let model = model(&server).build().unwrap();

    let (answer, deltas) = stream_collect(&model, &ask("time?")).await;
    let answer = answer.unwrap();

    assert_eq!(answer.tool_calls[0].arguments, "{}");
    assert_eq!(
        answer.tool_calls[1].arguments, r#"{"city":"Rome"}"#,
        "a server that sends the whole input at the start"
    );
    let arguments: String = deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::ToolCall {
                index: 1,
                arguments,
                ..
            } => Some(arguments.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        arguments, answer.tool_calls[1].arguments,
        "the deltas say it"
    );
}

/// LiteLLM's proxy in front of llama-cpp-python opens a block for every
/// piece of a call's arguments, each repeating the id and name: one call.
#[tokio::test]
async fn blocks_repeating_a_calls_id_continue_that_call() {
    let mut events = vec![json!({"type": "message_start", "message": {"model": "smollm2"}})];
    for (index, piece) in ["{", "\"word\"", ": \"hi\"", "}", ""].iter().enumerate() {
        events.push(
            json!({"type": "content_block_start", "index": index, "content_block":
            {"type": "tool_use", "id": "call__0_lookup", "name": "lookup", "input": {}}}),
        );
        if !piece.is_empty() {
            events.push(
                json!({"type": "content_block_delta", "index": index, "delta":
                {"type": "input_json_delta", "partial_json": piece}}),
            );
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(
        json!({"type": "content_block_start", "index": 5, "content_block":
        {"type": "tool_use", "id": "call__1_lookup", "name": "lookup", "input": {}}}),
    );
    events.push(json!({"type": "content_block_stop", "index": 5}));
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}));
    events.push(json!({"type": "message_stop"}));
    let server = server(vec![Reply::sse_typed(&events)]).await;
    let model = model(&server).build().unwrap();

    let (answer, deltas) = stream_collect(&model, &ask("hi?")).await;
    let answer = answer.unwrap();

    assert_eq!(
        answer.tool_calls,
        vec![
            ToolCall {
                id: "call__0_lookup".into(),
                name: "lookup".into(),
                arguments: r#"{"word": "hi"}"#.into(),
            },
            ToolCall {
                id: "call__1_lookup".into(),
                name: "lookup".into(),
                arguments: "{}".into(),
            },
        ]
    );
    let names = deltas
        .iter()
        .filter(|d| matches!(d, StreamDelta::ToolCall { name: Some(_), .. }))
        .count();
    assert_eq!(names, 2, "each name reported once: {deltas:?}");
}

#[tokio::test]
async fn stream_failures_say_what_happened() {
    let overloaded = vec![
        json!({"type": "message_start", "message": {"model": "claude-test"}}),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ];
    let mut cut_short = text_and_tool_events("end_turn");
    cut_short.truncate(5);
    let mut no_stop = text_and_tool_events("end_turn");
    no_stop.pop();
    let server = server(vec![
        Reply::sse_typed(&overloaded),
        Reply::sse_typed(&cut_short),
        Reply::sse_typed(&[]),
        Reply::sse_typed(&no_stop),
    ])
    .await;
    let model = model(&server).build().unwrap();

    let error = stream_collect(&model, &ask("x")).await.0.unwrap_err();
    assert!(error.to_string().contains("overloaded_error"), "{error}");
    let error = stream_collect(&model, &ask("x")).await.0.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("ended before the answer finished"),
        "{error}"
    );
    let error = stream_collect(&model, &ask("x")).await.0.unwrap_err();
    assert!(error.to_string().contains("without an answer"), "{error}");
    let answer = stream_collect(&model, &ask("x")).await.0.unwrap();
    assert_eq!(
        answer.finish_reason.as_deref(),
        Some("stop"),
        "a stop reason came: no message_stop is fine"
    );
}

#[tokio::test]
async fn a_server_that_does_not_stream_is_read_whole() {
    let server = server(vec![Reply::json(text_message("In one piece."))]).await;
    let model = model(&server).build().unwrap();

    let (answer, deltas) = stream_collect(&model, &ask("x")).await;

    assert_eq!(answer.unwrap().content, "In one piece.");
    assert_eq!(deltas, vec![StreamDelta::Text("In one piece.".into())]);
}

// ---------------------------------------------------------------------------
// Errors and retries.

#[tokio::test]
async fn overloaded_and_rate_limited_answers_are_retried() {
    let server = server(vec![
        Reply::raw(529, error_body("overloaded_error", "Overloaded")),
        Reply::raw(429, error_body("rate_limit_error", "slow down")).header("retry-after", "0"),
        Reply::raw(503, "unavailable"),
        Reply::json(text_message("Finally.")),
    ])
    .await;
    let model = model(&server).build().unwrap();

    let answer = model.complete(&ask("x")).await.unwrap();

    assert_eq!(answer.content, "Finally.");
    assert_eq!(server.requests(), 4);
}

#[tokio::test]
async fn a_500_is_retried_once_and_a_400_not_with_the_servers_words_in_the_error() {
    let body = error_body("api_error", &format!("Internal error (key {KEY})"));
    let server = server(vec![Reply::raw(500, body)]).await;
    let model = model(&server).build().unwrap();
    let error = model.complete(&ask("x")).await.unwrap_err();
    assert_eq!(server.requests(), 2, "a 500 at most once more");
    let ModelError::Http { status: 500, body } = &error else {
        panic!("{error:?}")
    };
    assert!(body.contains("Internal error"), "{body}");
    assert!(
        !error.to_string().contains(KEY),
        "the key is erased: {error}"
    );

    let bad = error_body("invalid_request_error", "messages: roles must alternate");
    let refusing = self::server(vec![Reply::raw(400, bad)]).await;
    let error = self::model(&refusing)
        .build()
        .unwrap()
        .complete(&ask("x"))
        .await
        .unwrap_err();
    assert_eq!(refusing.requests(), 1);
    assert!(
        error.to_string().contains("roles must alternate"),
        "{error}"
    );
}

#[tokio::test]
async fn a_prompt_that_does_not_fit_is_a_context_overflow_and_teaches_the_window() {
    let body = error_body(
        "invalid_request_error",
        "prompt is too long: 210000 tokens > 200000 maximum",
    );
    let server = server(vec![Reply::raw(400, body)]).await;
    let model = model(&server).build().unwrap();
    assert_eq!(
        model.context_window().await,
        None,
        "the caller's table says"
    );

    let error = model.complete(&ask("x")).await.unwrap_err();

    assert!(
        matches!(
            error,
            ModelError::ContextOverflow {
                tokens: Some(210_000),
                window: Some(200_000)
            }
        ),
        "{error:?}"
    );
    assert_eq!(server.requests(), 1, "not retried");
    assert_eq!(model.context_window().await, Some(200_000));
    let configured = AnthropicChatModel::builder()
        .api_key("k")
        .context_window(1000)
        .build()
        .unwrap();
    assert_eq!(configured.context_window().await, Some(1000));
}

// ---------------------------------------------------------------------------
// Configuration.

// `AnthropicChatModel::from_env` is tested in tests/environment (it
// changes the process environment).

// ---------------------------------------------------------------------------
// The agent loop on top.

/// A forced tool call is run through the agent loop; its failure goes back
/// as a `tool_result` with `is_error`, and the model's next answer ends the
/// run.
#[tokio::test]
async fn the_agent_loop_runs_a_forced_call_and_sends_its_result() {
    let call = message(
        json!([{"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Nowhere"}}]),
        "tool_use",
    );
    let server = server(vec![
        Reply::json(call),
        Reply::json(text_message("No such city.")),
    ])
    .await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let calls = seen.clone();
    let tool = FnTool::new(
        "get_weather",
        "Current weather in `city`.",
        weather_tool().parameters,
        move |args, _| {
            calls.lock().push(args.clone());
            async { Err(lc_agent::ToolError::Failed("unknown city".into())) }
        },
    );
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("claude")
        .model("claude", model(&server).build().unwrap())
        .tool(tool)
        .build();
    {
        let _scope = net.enter();
        HumanNode::new("Weather in Nowhere?");
        NodeRef::create(ChatNode {
            tool_choice: Some(ToolChoice::Tool("get_weather".into())),
            ..ChatNode::default()
        });
    }

    let reply = net.invoke().await.unwrap();

    assert_eq!(reply.text(), "No such city.");
    assert_eq!(*seen.lock(), vec![json!({"city": "Nowhere"})]);
    assert_eq!(
        server.body(0)["tool_choice"],
        json!({"type": "tool", "name": "get_weather"})
    );
    let follow_up = server.body(1);
    let last = &follow_up["messages"][2];
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_a");
    assert_eq!(last["content"][0]["is_error"], true);
}
