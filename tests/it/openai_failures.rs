//! `OpenAiChatModel`'s failures against a real local HTTP server: retries
//! (429 with `Retry-After`, 5xx, how many), client errors, unreachable
//! servers, timeouts of a slow answer or a stalled stream, the key kept out
//! of errors, bad configuration, web pages where JSON was expected.

use std::time::{Duration, Instant};

use lc_agent::OpenAiChatModel;
use lc_agent::{ChatModel, ModelError, StreamDelta};
use lc_agent_test_support::Reply;
use serde_json::{json, Value};

use crate::openai::{
    ask, chunk, openai_server, stream_collect, text_completion, weather_tool, ModelAt, KEY,
};

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
