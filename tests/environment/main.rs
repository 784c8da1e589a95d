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
#[tokio::test]
async fn openai_environment_fallbacks_and_keyless_local_servers() {
    let _env = ENV.lock().await;
    let server = MockServer::start(
        "/v1",
        "/chat/completions",
        vec![Reply::json(text_completion("hi"))],
    )
    .await;

    std::env::set_var("OPENAI_BASE_URL", format!("{}/", server.base_url));
    std::env::set_var("OPENAI_API_KEY", "sk-from-env");
    std::env::set_var("OPENAI_MODEL", "env-model");
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
    std::env::remove_var("OPENAI_API_KEY");
    let model = OpenAiChatModel::from_env().unwrap();
    assert!(format!("{model:?}").contains("api_key: None"));
    model.complete(&ask("hi")).await.unwrap();
    assert_eq!(server.authorization(1), None);

    // A server other than OpenAI's must be told which model to use.
    std::env::remove_var("OPENAI_MODEL");
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
    std::env::remove_var("OPENAI_BASE_URL");
    let error = OpenAiChatModel::from_env().unwrap_err();
    assert!(
        matches!(&error, ModelError::Config { message: m, .. } if m.contains("OPENAI_API_KEY"))
    );

    // Explicit settings beat the environment.
    std::env::set_var("OPENAI_API_KEY", "sk-from-env");
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
    std::env::remove_var("OPENAI_API_KEY");
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
        std::env::remove_var(name);
    }
    let error = AnthropicChatModel::from_env().unwrap_err().to_string();
    assert!(error.contains("ANTHROPIC_API_KEY"), "{error}");

    std::env::set_var("ANTHROPIC_API_KEY", ANTHROPIC_KEY);
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

    std::env::set_var("ANTHROPIC_MODEL", "claude-haiku-4-5");
    std::env::set_var("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/v1/");
    std::env::remove_var("ANTHROPIC_API_KEY");
    let model = AnthropicChatModel::from_env().unwrap();
    assert_eq!(model.model_name(), "claude-haiku-4-5");
    assert_eq!(
        model.base_url(),
        "http://127.0.0.1:9",
        "a gateway needs no key"
    );

    std::env::set_var("ANTHROPIC_BASE_URL", "ftp://example.com");
    let error = AnthropicChatModel::from_env().unwrap_err().to_string();
    assert!(error.contains("ftp"), "{error}");
    for name in ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL"] {
        std::env::remove_var(name);
    }
}
