//! Permission modes through the server, over real HTTP on loopback with a
//! scripted model: a session made in `plan` refuses a write (the run goes
//! on, the model reads why) while a read runs, and the tool endpoint
//! refuses it too; PATCH changes the mode; in `accept-edits` a write runs
//! unasked while `execute` waits; `bypass` is refused unless the server
//! allows it, and a run in it holds nothing and starts with a warning.

use lc_agent_deepagent::{PermissionMode, Workspace};
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

async fn patch(url: &str, token: &str, body: Value) -> reqwest::Response {
    client()
        .patch(url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn say(session: &str, text: &str) -> Vec<(String, Value)> {
    let body = post(
        &format!("{session}/messages"),
        ALICE,
        json!({"content": text}),
    )
    .await
    .text()
    .await
    .unwrap();
    sse_events(&body)
}

fn write_and_run() -> lc_agent::Turn {
    lc_agent::Turn::tool_calls([
        lc_agent::ToolCall::new(
            "w",
            "write_file",
            json!({"file_path": "/a.txt", "content": "a"}),
        ),
        lc_agent::ToolCall::new("e", "execute", json!({"command": "echo ran > ran.txt"})),
    ])
}

#[tokio::test]
async fn plan_refuses_a_write_on_a_run_and_on_the_tool_endpoint_and_patch_changes_it() {
    let model = scripted(vec![
        lc_agent::Turn::tool_calls([
            lc_agent::ToolCall::new("l", "ls", json!({"path": "/"})),
            lc_agent::ToolCall::new(
                "w",
                "write_file",
                json!({"file_path": "/a.md", "content": "x"}),
            ),
        ]),
        lc_agent::Turn::text("Here is my plan."),
    ]);
    let server = start(model).await;
    let base = &server.url;
    let r = post(
        &format!("{base}/api/sessions"),
        ALICE,
        json!({"name": "p", "mode": "plan"}),
    )
    .await;
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.unwrap();
    assert_eq!(created["mode"], "plan");
    let session = format!("{base}/api/sessions/{}", created["id"].as_str().unwrap());

    let events = say(&session, "Write a.md").await;
    let done = events.iter().find(|(n, _)| n == "done").expect("done");
    assert_eq!(done.1["answer"], "Here is my plan.");
    let shown = get_json(&session, ALICE).await;
    assert!(shown["files"].get("/a.md").is_none(), "{shown}");
    // The model read why (the refusal is the call's result).
    let refused = shown["messages"].as_array().unwrap().iter().any(|m| {
        m["content"]
            .as_str()
            .is_some_and(|t| t.contains("`write_file` was not run: the session is in plan mode"))
    });
    assert!(refused, "{shown}");
    assert_eq!(shown["mode"], "plan");

    // The tool endpoint follows the session's mode.
    let call = json!({"session": created["id"], "tool_calls": [
        {"id": "w", "type": "function", "function": {"name": "write_file",
         "arguments": "{\"file_path\": \"/b.md\", \"content\": \"x\"}"}}]});
    let r = post(&format!("{base}/v1/tools/execute"), ALICE, call.clone()).await;
    assert_eq!(r.status(), 403);
    let message = r.json::<Value>().await.unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("plan mode"), "{message}");

    // PATCH changes it; an unknown mode is refused; bypass is not allowed here.
    let r = patch(&session, ALICE, json!({"mode": "accept-edits"})).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["mode"], "accept-edits");
    assert_eq!(get_json(&session, ALICE).await["mode"], "accept-edits");
    assert_eq!(
        patch(&session, ALICE, json!({"mode": "yolo"}))
            .await
            .status(),
        422
    );
    let r = patch(&session, ALICE, json!({"mode": "bypass"})).await;
    assert_eq!(r.status(), 403);
    assert_eq!(get_json(&session, ALICE).await["mode"], "accept-edits");
    let r = post(&format!("{base}/v1/tools/execute"), ALICE, call).await;
    assert_eq!(r.status(), 200);
    assert!(get_json(&session, ALICE).await["files"]
        .get("/b.md")
        .is_some());
    let _ = server.stop().await;
}

#[tokio::test]
async fn accept_edits_writes_unasked_while_execute_waits() {
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().to_path_buf();
    let server = start_with(|dir| {
        config(scripted(vec![write_and_run()]), dir)
            .workspace(Workspace::directory(&root_path).shell(true))
            .default_mode(PermissionMode::AcceptEdits)
    })
    .await;
    let id = new_session(&server.url, ALICE).await;
    let session = format!("{}/api/sessions/{id}", server.url);
    assert_eq!(get_json(&session, ALICE).await["mode"], "accept-edits");
    let events = say(&session, "Write and run").await;
    let needed = events
        .iter()
        .find(|(n, _)| n == "approval_needed")
        .expect("approval_needed");
    let pending = needed.1["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["tool_call"]["name"], "execute");
    assert_eq!(
        std::fs::read_to_string(root.path().join("alice/a.txt")).unwrap(),
        "a"
    );
    assert!(!root.path().join("alice/ran.txt").exists());
    let _ = server.stop().await;
}

#[tokio::test]
async fn bypass_needs_the_servers_leave_and_a_run_in_it_holds_nothing_and_warns() {
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().to_path_buf();
    let server = start_with(|dir| {
        config(
            scripted(vec![write_and_run(), lc_agent::Turn::text("Done.")]),
            dir,
        )
        .workspace(Workspace::directory(&root_path).shell(true))
        .allow_bypass(true)
    })
    .await;
    let id = new_session(&server.url, ALICE).await;
    let session = format!("{}/api/sessions/{id}", server.url);
    assert_eq!(get_json(&session, ALICE).await["mode"], "default");
    let r = patch(&session, ALICE, json!({"mode": "bypass"})).await;
    assert_eq!(r.status(), 200);
    let events = say(&session, "Write and run").await;
    let started = events
        .iter()
        .find(|(n, _)| n == "run_started")
        .expect("run_started");
    assert!(
        started.1["warning"]
            .as_str()
            .is_some_and(|w| w.contains("bypass mode")),
        "{}",
        started.1
    );
    assert!(events.iter().all(|(n, _)| n != "approval_needed"));
    let done = events.iter().find(|(n, _)| n == "done").expect("done");
    assert_eq!(done.1["answer"], "Done.");
    assert!(root.path().join("alice/a.txt").exists());
    assert!(root.path().join("alice/ran.txt").exists());
    let _ = server.stop().await;
}
