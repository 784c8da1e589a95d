//! One set of rules at every door: `/v1/tools/execute` with a `session`
//! keeps the session's file caps as its runs do (a file over the cap is
//! refused by the file tools, a batch that would take the session's files
//! over their total is not kept).

use lc_agent_test_support::server::*;
use serde_json::{json, Value};

fn call(name: &str, arguments: Value) -> Value {
    json!({"id": "c", "type": "function", "function": {"name": name, "arguments": arguments.to_string()}})
}

#[tokio::test]
async fn the_tool_endpoint_keeps_a_sessions_file_caps() {
    let server = start_with(|dir| {
        config(scripted(vec![]), dir)
            .max_file_bytes(1_000)
            .max_session_files_bytes(2_500)
    })
    .await;
    let base = &server.url;
    let session = new_session(base, ALICE).await;
    let execute = |calls: Vec<Value>| {
        let session = session.clone();
        async move {
            post(
                &format!("{base}/v1/tools/execute"),
                ALICE,
                json!({"session": session, "tool_calls": calls}),
            )
            .await
        }
    };
    let r = execute(vec![call(
        "write_file",
        json!({"file_path": "/a.txt", "content": "a".repeat(600)}),
    )])
    .await;
    assert_eq!(r.status(), 200);
    // An edit that would leave 2,400 bytes in a file capped at 1,000.
    let r = execute(vec![call(
        "edit_file",
        json!({"file_path": "/a.txt", "old_string": "a", "new_string": "aaaa", "replace_all": true}),
    )])
    .await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    let result = &body["results"][0];
    assert_eq!(result["success"], false, "{body}");
    let view = get_json(&format!("{base}/api/sessions/{session}"), ALICE).await;
    assert_eq!(
        view["files"]["/a.txt"]["content"].as_str().map(str::len),
        Some(600),
        "{}",
        view["files"]
    );

    // Files each under the cap, over the session's total: nothing kept.
    let calls: Vec<Value> = (0..4)
        .map(|i| {
            call(
                "write_file",
                json!({"file_path": format!("/b{i}.txt"), "content": "b".repeat(900)}),
            )
        })
        .collect();
    let r = execute(calls).await;
    assert_eq!(r.status(), 413, "{}", r.text().await.unwrap());
    let view = get_json(&format!("{base}/api/sessions/{session}"), ALICE).await;
    assert!(view["files"].get("/b0.txt").is_none(), "{}", view["files"]);
    let _ = server.stop().await;
}
