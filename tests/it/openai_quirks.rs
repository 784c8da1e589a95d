//! `OpenAiChatModel` and the servers' quirks, against a real local HTTP
//! server: no streaming with tools, a bare 500 on a forced tool, an empty
//! stream, a stream that ends without an answer, a prompt that does not
//! fit, a cut-off answer continued, the window asked once.

use std::sync::Arc;

use axum::routing::post;
use axum::Router;
use lc_agent::OpenAiChatModel;
use lc_agent::{ChatModel, Events, ModelError, StreamDelta};
use lc_agent_test_support::Reply;
use serde_json::{json, Value};

use crate::openai::{
    ask, chunk, completion, openai_server, stream_collect, text_completion, weather_tool, ModelAt,
};

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
