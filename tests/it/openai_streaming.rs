//! `OpenAiChatModel`'s streams, against a real local HTTP server: tool
//! calls split over chunks, a name and id repeated in every chunk, a
//! stream without `[DONE]`, failures mid-stream, a server that answers a
//! streamed request unstreamed, a tool call lost from a stream.

use crate::openai::{
    ask, call_delta, chunk, completion, openai_server, snapshot, stream_collect, weather_tool,
    ModelAt,
};
use lc_agent::{Events, ModelError, StreamDelta, ToolCall, Usage};
use lc_agent_test_support::Reply;
use serde_json::{json, Value};

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
pub(crate) fn stream_of(texts: &[String]) -> Vec<String> {
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
