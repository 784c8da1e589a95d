//! A blueprint's own models through the server: `main` is the server's
//! model, every other `[models.<name>]` is asked at its own server with
//! its own key (`api_key_env`), here a sub-agent's.

use std::collections::BTreeMap;

use lc_agent::Turn;
use lc_agent_deepagent::{AgentSpec, ModelSpec, SubAgentSpec};
use lc_agent_test_support::mock_model::{MockServer, Reply};
use lc_agent_test_support::server::*;
use serde_json::json;

fn answer(text: &str) -> Reply {
    Reply::json(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "small-model",
        "choices": [{"index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    }))
}

#[tokio::test]
async fn a_sub_agents_model_is_asked_at_its_own_server() {
    let small = MockServer::start("/v1", "/chat/completions", vec![answer("Found it.")]).await;
    // SAFETY: a variable only this test reads, set before the model that reads it is built.
    unsafe { std::env::set_var("LC_AGENT_TEST_SMALL_KEY", "sk-small-model-key") };
    let spec = AgentSpec {
        models: BTreeMap::from([
            (
                "main".to_string(),
                ModelSpec {
                    model: "scripted".into(),
                    ..ModelSpec::default()
                },
            ),
            (
                "small".to_string(),
                ModelSpec {
                    model: "small-model".into(),
                    base_url: Some(small.base_url.clone()),
                    api_key_env: Some("LC_AGENT_TEST_SMALL_KEY".into()),
                    ..ModelSpec::default()
                },
            ),
        ]),
        subagents: vec![SubAgentSpec {
            name: "researcher".into(),
            description: "Finds facts".into(),
            model: Some("small".into()),
            ..SubAgentSpec::default()
        }],
        ..AgentSpec::default()
    };
    let model = scripted(vec![
        call(
            "t1",
            "task",
            json!({"description": "Find the fact.", "subagent_type": "researcher"}),
        ),
        Turn::text("The researcher found it."),
    ]);
    let server = start_with(|dir| config(model, dir).spec(spec)).await;
    let base = &server.url;
    let id = new_session(base, ALICE).await;
    let body = post(
        &format!("{base}/api/sessions/{id}/messages"),
        ALICE,
        json!({"content": "Ask the researcher."}),
    )
    .await
    .text()
    .await
    .unwrap();
    let events = sse_events(&body);
    assert_eq!(
        events.last().unwrap().1["answer"],
        "The researcher found it.",
        "{events:?}"
    );
    assert_eq!(small.requests(), 1, "the sub-agent's one turn");
    assert_eq!(small.body(0)["model"], "small-model");
    assert!(small.body(0)["messages"]
        .to_string()
        .contains("Find the fact."));
    assert_eq!(
        small.authorization(0).as_deref(),
        Some("Bearer sk-small-model-key")
    );
    let _ = server.stop().await;
}
