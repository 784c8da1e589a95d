//! The model clients' configuration from the process environment
//! (`OpenAiChatModel::from_env`, `AnthropicChatModel::from_env`,
//! `Provider::from_env`). These tests set and remove environment variables,
//! so they live in a test binary of their own (no other test of the
//! process can read a half-changed environment) and take [`ENV`] in turn.

// Test code: a failed step is a failed test.
#![allow(clippy::unwrap_used, unreachable_pub)]

use lc_agent::{
    AnthropicChatModel, ChatModel, ChatRequest, History, Message, ModelError, OpenAiChatModel,
};
use lc_agent_test_support::{MockServer, Reply};
use serde_json::{json, Value};
use tokio::sync::Mutex;

/// Held by each test while it changes the environment.
static ENV: Mutex<()> = Mutex::const_new(());

/// A key that must never show in a `Debug` output.
const ANTHROPIC_KEY: &str = "sk-ant-test-7c1d-do-not-leak";

fn ask(text: &str) -> ChatRequest {
    ChatRequest::new(History::from_messages([Message::human(text)]))
}

/// A chat completion answering `text`.
fn text_completion(text: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model-2024-01-01",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": null, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    })
}

/// `OPENAI_BASE_URL`, `OPENAI_API_KEY` and `OPENAI_MODEL`: fallbacks, a
/// local server without a key, and explicit settings beating them.
/// (Multi-threaded: a model built without a name asks this test's server
/// for its models.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_environment_fallbacks_and_keyless_local_servers() {
    let _env = ENV.lock().await;
    let server = MockServer::start(
        "/v1",
        "/chat/completions",
        vec![Reply::json(text_completion("hi"))],
    )
    .await;

    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::set_var("OPENAI_BASE_URL", format!("{}/", server.base_url)) };
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::set_var("OPENAI_API_KEY", "sk-from-env") };
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::set_var("OPENAI_MODEL", "env-model") };
    let model = OpenAiChatModel::from_env().unwrap();
    assert_eq!(model.model_name(), "env-model");
    assert_eq!(model.base_url(), server.base_url, "trailing slash trimmed");
    model.complete(&ask("hi")).await.unwrap();
    assert_eq!(
        server.authorization(0).as_deref(),
        Some("Bearer sk-from-env")
    );
    assert_eq!(server.body(0)["model"], "env-model");

    // A local server needs no key: no Authorization header at all.
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::remove_var("OPENAI_API_KEY") };
    let model = OpenAiChatModel::from_env().unwrap();
    assert!(format!("{model:?}").contains("api_key: None"));
    model.complete(&ask("hi")).await.unwrap();
    assert_eq!(server.authorization(1), None);

    // A server other than OpenAI's must be told which model to use.
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::remove_var("OPENAI_MODEL") };
    let missing_model = OpenAiChatModel::from_env().unwrap_err();
    assert!(
        matches!(&missing_model, ModelError::Config { message: m, .. } if m.contains("OPENAI_MODEL")),
        "{missing_model}"
    );
    let missing_model = OpenAiChatModel::builder()
        .base_url("http://localhost:1/v1")
        .build();
    assert!(matches!(missing_model, Err(ModelError::Config { .. })));

    // OpenAI itself needs a key: no key and no base URL is a configuration
    // error (its model defaults to gpt-4o-mini).
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::remove_var("OPENAI_BASE_URL") };
    let error = OpenAiChatModel::from_env().unwrap_err();
    assert!(
        matches!(&error, ModelError::Config { message: m, .. } if m.contains("OPENAI_API_KEY"))
    );

    // Explicit settings beat the environment.
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::set_var("OPENAI_API_KEY", "sk-from-env") };
    let model = OpenAiChatModel::builder()
        .model("m")
        .base_url(&server.base_url)
        .api_key("sk-explicit")
        .build()
        .unwrap();
    model.complete(&ask("hi")).await.unwrap();
    assert_eq!(
        server.authorization(2).as_deref(),
        Some("Bearer sk-explicit")
    );
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::remove_var("OPENAI_API_KEY") };
}

/// `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL` and `ANTHROPIC_MODEL`, and
/// the provider they select.
#[test]
fn anthropic_configuration_from_the_environment_and_its_errors() {
    let _env = ENV.blocking_lock();
    for name in [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_MODEL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    ] {
        // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
        unsafe { std::env::remove_var(name) };
    }
    let error = AnthropicChatModel::from_env().unwrap_err().to_string();
    assert!(error.contains("ANTHROPIC_API_KEY"), "{error}");

    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::set_var("ANTHROPIC_API_KEY", ANTHROPIC_KEY) };
    let model = AnthropicChatModel::from_env().unwrap();
    assert_eq!(
        model.model_name(),
        lc_agent::Provider::Anthropic.row().default_model
    );
    assert_eq!(
        lc_agent::Provider::Anthropic.default_model(),
        lc_agent::Provider::Anthropic.row().default_model
    );
    assert_eq!(
        lc_agent::Provider::from_env(),
        lc_agent::Provider::Anthropic
    );
    assert_eq!(
        model.base_url(),
        lc_agent::Provider::Anthropic.row().default_base_url
    );
    assert!(!format!("{model:?}").contains(ANTHROPIC_KEY));

    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::set_var("ANTHROPIC_MODEL", "claude-haiku-4-5") };
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::set_var("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/v1/") };
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::remove_var("ANTHROPIC_API_KEY") };
    let model = AnthropicChatModel::from_env().unwrap();
    assert_eq!(model.model_name(), "claude-haiku-4-5");
    assert_eq!(
        model.base_url(),
        "http://127.0.0.1:9",
        "a gateway needs no key"
    );

    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::set_var("ANTHROPIC_BASE_URL", "ftp://example.com") };
    let error = AnthropicChatModel::from_env().unwrap_err().to_string();
    assert!(error.contains("ftp"), "{error}");
    for name in ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL"] {
        // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
        unsafe { std::env::remove_var(name) };
    }
}

/// A server listing its models at `GET /v1/models` (these ids) and
/// answering every chat completion with "hi", its request's model echoed
/// in the answer's `model`.
async fn serving_models(ids: &[&str]) -> String {
    use axum::routing::{get, post};
    let list = json!({"object": "list", "data": ids.iter().map(|id| json!({"id": id, "object": "model"})).collect::<Vec<_>>()});
    let app = axum::Router::new()
        .route("/v1/models", get(move || async move { axum::Json(list) }))
        .route(
            "/v1/chat/completions",
            post(|axum::Json(body): axum::Json<Value>| async move {
                let mut answer = text_completion("hi");
                answer["model"] = body["model"].clone();
                axum::Json(answer)
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/v1")
}

/// Without `OPENAI_MODEL`, a server that lists exactly one model is asked
/// for that one; one that lists several is an error naming them and the
/// variable. (Multi-threaded: the question is asked on a thread of its
/// own while this test's runtime serves the answer.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_only_model_a_server_lists_is_used_when_none_is_named() {
    let _env = ENV.lock().await;
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::remove_var("OPENAI_MODEL") };
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::remove_var("OPENAI_API_KEY") };
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::remove_var("OPENAI_BASE_URL") };

    let one = serving_models(&["qwen2.5-0.5b-instruct-q4_k_m.gguf"]).await;
    let model = OpenAiChatModel::builder().base_url(&one).build().unwrap();
    assert_eq!(model.model_name(), "qwen2.5-0.5b-instruct-q4_k_m.gguf");
    let answer = model.complete(&ask("hi")).await.unwrap();
    assert_eq!(
        answer.model.as_deref(),
        Some("qwen2.5-0.5b-instruct-q4_k_m.gguf")
    );
    // Through the provider, as the CLI and the server open it.
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::set_var("OPENAI_BASE_URL", &one) };
    let opened = lc_agent::Provider::OpenAi.open(None, None, None);
    assert!(opened.is_ok(), "{:?}", opened.err());
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::remove_var("OPENAI_BASE_URL") };

    let several = serving_models(&["a-model", "b-model"]).await;
    let error = OpenAiChatModel::builder()
        .base_url(&several)
        .build()
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("OPENAI_MODEL") && text.contains("`a-model`") && text.contains("`b-model`"),
        "{text}"
    );
}

/// `LC_AGENT_MODEL_TIMEOUT` (seconds) sets every provider's timeout when
/// the builder does not; a streamed answer still producing tokens lives
/// past it, a server that says nothing for longer does not.
#[tokio::test]
async fn the_model_timeout_comes_from_the_environment_and_streams_outlive_it() {
    let _env = ENV.lock().await;
    let chunk = |text: &str| {
        format!(
            r#"{{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":null}}]}}"#
        )
    };
    // Six pieces 150 ms apart: about 0.9 s in all, against a 0.4 s limit.
    let mut reply = Reply::sse(&[]);
    for word in ["one ", "two ", "three ", "four ", "five ", "six"] {
        reply = reply.then(
            std::time::Duration::from_millis(150),
            &format!("data: {}\n\n", chunk(word)),
        );
    }
    let reply = reply.then(std::time::Duration::ZERO, "data: [DONE]\n\n");
    let server = MockServer::start(
        "/v1",
        "/chat/completions",
        vec![
            reply,
            Reply::json(text_completion("late")).after(std::time::Duration::from_millis(1500)),
        ],
    )
    .await;
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::set_var("LC_AGENT_MODEL_TIMEOUT", "0.4") };
    let model = OpenAiChatModel::builder()
        .model("m")
        .base_url(&server.base_url)
        .max_retries(0)
        .build()
        .unwrap();
    let answer = model.stream(&ask("count"), &mut |_| {}).await.unwrap();
    assert_eq!(answer.content, "one two three four five six");
    let error = model.complete(&ask("count")).await.unwrap_err();
    assert!(
        matches!(error, ModelError::Timeout(t) if t.as_millis() == 400),
        "{error}"
    );

    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::set_var("LC_AGENT_MODEL_TIMEOUT", "soon") };
    let error = OpenAiChatModel::builder()
        .model("m")
        .base_url(&server.base_url)
        .build()
        .unwrap_err();
    assert!(
        error.to_string().contains("LC_AGENT_MODEL_TIMEOUT"),
        "{error}"
    );
    // SAFETY: this binary's tests take ENV in turn, and no other thread reads the environment meanwhile.
    unsafe { std::env::remove_var("LC_AGENT_MODEL_TIMEOUT") };
}
