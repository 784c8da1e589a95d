//! A sub-agent's `write_file` waits for the approval the session's
//! blueprint asks for, through the server: the run ends with the pending
//! call (SSE `approval_needed`), the session view lists it, the approvals
//! endpoint decides it, and the sub-agent's answer reaches the agent. One
//! scripted model (offline) serves the agent and its sub-agent in turn.

use lc_agent::Turn;
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

/// The agent starts a task; the sub-agent writes /a.md, then answers; the
/// agent answers last.
fn delegating_model() -> lc_agent::ScriptedChatModel {
    scripted(vec![
        call(
            "t1",
            "task",
            json!({"description": "Write /a.md.", "subagent_type": "general-purpose"}),
        ),
        call(
            "w1",
            "write_file",
            json!({"file_path": "/a.md", "content": "from the sub-agent"}),
        ),
        Turn::text("Wrote /a.md."),
        Turn::text("The sub-agent wrote /a.md."),
    ])
}

async fn ask(base: &str, id: &str) -> Vec<(String, Value)> {
    let body = post(
        &format!("{base}/api/sessions/{id}/messages"),
        ALICE,
        json!({"content": "Have /a.md written."}),
    )
    .await
    .text()
    .await
    .unwrap();
    sse_events(&body)
}

#[tokio::test]
async fn a_sub_agents_write_waits_and_the_approvals_endpoint_decides_it() {
    let spec = approval_spec("write_file");
    let server = start_with(|dir| config(delegating_model(), dir).spec(spec)).await;
    let base = &server.url;
    let id = new_session(base, ALICE).await;

    let events = ask(base, &id).await;
    let needed = events
        .iter()
        .find(|(n, _)| n == "approval_needed")
        .expect("approval_needed");
    let pending = &needed.1["pending"][0];
    assert_eq!(pending["tool_call"]["name"], "write_file");
    assert_eq!(pending["tool_call"]["id"], "w1");
    assert_eq!(pending["allowed"], json!(["approve", "reject"]));
    let node_id = pending["node_id"].as_str().unwrap().to_string();

    // The session view shows the nested call; nothing is written yet.
    let session: Value = get_json(&format!("{base}/api/sessions/{id}"), ALICE).await;
    assert_eq!(session["pending_approvals"][0]["node_id"], node_id.as_str());
    assert_eq!(
        session["pending_approvals"][0]["tool_call"]["name"],
        "write_file"
    );
    assert!(session["files"].get("/a.md").is_none());

    let r = post(
        &format!("{base}/api/sessions/{id}/approvals"),
        ALICE,
        json!({"decisions": [{"node_id": node_id, "decision": "approve"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let events = sse_events(&r.text().await.unwrap());
    assert_eq!(
        events.last().unwrap().1["answer"],
        "The sub-agent wrote /a.md."
    );
    let session: Value = get_json(&format!("{base}/api/sessions/{id}"), ALICE).await;
    assert_eq!(session["files"]["/a.md"]["content"], "from the sub-agent");
    assert_eq!(session["pending_approvals"], json!([]));
    let _ = server.stop().await;
}

#[tokio::test]
async fn a_rejected_sub_agent_write_is_never_written() {
    let model = scripted(vec![
        call(
            "t1",
            "task",
            json!({"description": "Write /a.md.", "subagent_type": "general-purpose"}),
        ),
        call(
            "w1",
            "write_file",
            json!({"file_path": "/a.md", "content": "from the sub-agent"}),
        ),
        Turn::text("I was not allowed to write /a.md."),
        Turn::text("The sub-agent was not allowed."),
    ]);
    let spec = approval_spec("write_file");
    let server = start_with(|dir| config(model, dir).spec(spec)).await;
    let base = &server.url;
    let id = new_session(base, ALICE).await;
    ask(base, &id).await;
    let session: Value = get_json(&format!("{base}/api/sessions/{id}"), ALICE).await;
    let node_id = session["pending_approvals"][0]["node_id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = post(
        &format!("{base}/api/sessions/{id}/approvals"),
        ALICE,
        json!({"decisions": [{"node_id": node_id, "decision": "reject", "message": "no"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let events = sse_events(&r.text().await.unwrap());
    assert_eq!(
        events.last().unwrap().1["answer"],
        "The sub-agent was not allowed."
    );
    let session: Value = get_json(&format!("{base}/api/sessions/{id}"), ALICE).await;
    assert!(session["files"].get("/a.md").is_none());
    assert_eq!(session["pending_approvals"], json!([]));
    let _ = server.stop().await;
}
