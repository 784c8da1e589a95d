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

/// A PNG's first bytes labelled JPEG, base64.
const PNG_AS_JPEG: &str = "data:image/jpeg;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[tokio::test]
async fn image_parts_are_checked_the_same_way_at_every_door() {
    let server = start(scripted(vec![])).await;
    let base = &server.url;
    let session = new_session(base, ALICE).await;
    for url in [
        "data:image/png;base64,not base64!",
        PNG_AS_JPEG,
        "file:///etc/passwd",
        "http://169.254.169.254/latest/meta-data/",
        "http://127.0.0.1:8080/a.png",
        "http://[::1]/a.png",
        "http://[::ffff:10.0.0.1]/a.png",
        "https://localhost/a.png",
        "http://metadata.google.internal/a.png",
        "http://2130706433/a.png",
        "http://0x7f.1/a.png",
        "http://user@192.168.1.1:80/a.png",
    ] {
        let r = post(
            &format!("{base}/v1/chat/completions"),
            ALICE,
            json!({"messages": [{"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": url}},
            ]}]}),
        )
        .await;
        assert_eq!(r.status(), 400, "completions took {url}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["param"], "messages[0].content[1]", "{body}");
        let r = post(
            &format!("{base}/api/sessions/{session}/messages"),
            ALICE,
            json!({"content": "look", "parts": [{"type": "image", "url": url}]}),
        )
        .await;
        assert_eq!(r.status(), 400, "the session API took {url}");
    }
    let _ = server.stop().await;
}
