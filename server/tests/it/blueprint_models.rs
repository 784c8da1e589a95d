//! A blueprint's own models through the server: `main` is the server's
//! model, every other `[models.<name>]` is asked at its own server with
//! its own key (`api_key_env`), here a sub-agent's; a sub-agent's own
//! tools allow-list and approval rules hold in the server's runs.

use std::collections::BTreeMap;

use lc_agent::Turn;
use lc_agent_deepagent::{AgentSpec, SubAgentSpec};
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
    let spec = researcher_spec(&small.base_url, None, BTreeMap::new());
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

/// A completion that calls `write_file`.
fn write_call() -> Reply {
    Reply::json(json!({
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "model": "small-model",
        "choices": [{"index": 0,
            "message": {"role": "assistant", "content": null, "tool_calls": [{
                "id": "w1", "type": "function", "function": {"name": "write_file",
                "arguments": "{\"file_path\": \"/out.md\", \"content\": \"written\"}"}}]},
            "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    }))
}

/// A blueprint whose `researcher` runs on `small` (at `url`) with `tools`
/// and `interrupt_on` of its own.
fn researcher_spec(
    url: &str,
    tools: Option<Vec<String>>,
    interrupt_on: BTreeMap<String, Vec<lc_agent_deepagent::DecisionKind>>,
) -> AgentSpec {
    AgentSpec {
        models: models([(
            "small",
            model_at("small-model", url, "LC_AGENT_TEST_SMALL_KEY"),
        )]),
        subagents: vec![SubAgentSpec {
            name: "researcher".into(),
            description: "Finds facts".into(),
            model: Some("small".into()),
            tools,
            interrupt_on,
            ..SubAgentSpec::default()
        }],
        ..AgentSpec::default()
    }
}

fn delegating() -> lc_agent::ScriptedChatModel {
    scripted(vec![
        call(
            "t1",
            "task",
            json!({"description": "Find the fact.", "subagent_type": "researcher"}),
        ),
        Turn::text("The researcher is done."),
    ])
}

async fn ask(base: &str, id: &str) -> Vec<(String, serde_json::Value)> {
    let body = post(
        &format!("{base}/api/sessions/{id}/messages"),
        ALICE,
        json!({"content": "Ask the researcher."}),
    )
    .await
    .text()
    .await
    .unwrap();
    sse_events(&body)
}

fn tool_names(body: &serde_json::Value) -> Vec<String> {
    let mut names: Vec<String> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            t["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_sub_agent_is_offered_only_its_tools_and_a_call_of_another_is_refused() {
    let small = MockServer::start(
        "/v1",
        "/chat/completions",
        vec![write_call(), answer("I could only read.")],
    )
    .await;
    // SAFETY: a variable only this test reads, set before the model that reads it is built.
    unsafe { std::env::set_var("LC_AGENT_TEST_SMALL_KEY", "sk-small-model-key") };
    let spec = researcher_spec(
        &small.base_url,
        Some(vec!["read_file".into(), "grep".into()]),
        BTreeMap::new(),
    );
    let server = start_with(|dir| config(delegating(), dir).spec(spec)).await;
    let base = &server.url;
    let id = new_session(base, ALICE).await;
    let events = ask(base, &id).await;
    assert_eq!(
        events.last().unwrap().1["answer"],
        "The researcher is done.",
        "{events:?}"
    );
    assert_eq!(small.requests(), 2, "the sub-agent's two turns");
    assert_eq!(tool_names(&small.body(0)), ["grep", "read_file"]);
    assert_eq!(tool_names(&small.body(1)), ["grep", "read_file"]);
    assert!(small.body(1)["messages"]
        .to_string()
        .contains("may not call `write_file`; its tools are: grep, read_file"));
    let session: serde_json::Value = get_json(&format!("{base}/api/sessions/{id}"), ALICE).await;
    assert!(session["files"].get("/out.md").is_none(), "{session}");
    let _ = server.stop().await;
}

#[tokio::test]
async fn a_sub_agents_own_approval_rule_holds_its_call_in_the_server() {
    use lc_agent_deepagent::DecisionKind;
    let small = MockServer::start(
        "/v1",
        "/chat/completions",
        vec![write_call(), answer("Written.")],
    )
    .await;
    // SAFETY: a variable only this test reads, set before the model that reads it is built.
    unsafe { std::env::set_var("LC_AGENT_TEST_SMALL_KEY", "sk-small-model-key") };
    let spec = researcher_spec(
        &small.base_url,
        None,
        BTreeMap::from([(
            "write_file".to_string(),
            vec![DecisionKind::Approve, DecisionKind::Reject],
        )]),
    );
    let server = start_with(|dir| config(delegating(), dir).spec(spec)).await;
    let base = &server.url;
    let id = new_session(base, ALICE).await;
    let events = ask(base, &id).await;
    let needed = events
        .iter()
        .find(|(n, _)| n == "approval_needed")
        .unwrap_or_else(|| panic!("approval_needed: {events:?}"));
    let pending = &needed.1["pending"][0];
    assert_eq!(pending["tool_call"]["name"], "write_file");
    assert_eq!(pending["allowed"], json!(["approve", "reject"]));
    assert_eq!(small.requests(), 1, "the sub-agent waits");
    let session: serde_json::Value = get_json(&format!("{base}/api/sessions/{id}"), ALICE).await;
    assert!(session["files"].get("/out.md").is_none());
    let _ = server.stop().await;
}
