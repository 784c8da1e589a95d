//! Ownership first, on every route: another user's session or run is 404
//! whatever its state (idle, running, waiting for a decision), with
//! nothing of it in the body, and another user's tries neither reserve nor
//! block it.

use lc_agent::Turn;
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

/// What Alice's waiting call carries: it must never reach Bob.
const SECRET: &str = "alice-secret-plan";

fn waiting_config(dir: &std::path::Path) -> lc_agent_server::ServerConfig {
    let model = scripted(vec![
        call(
            "w1",
            "write_file",
            json!({"file_path": format!("/{SECRET}.md"), "content": SECRET}),
        ),
        Turn::text("Written."),
        Turn::text("Second answer."),
        Turn::text("Third answer."),
    ]);
    config(model, dir).spec(approval_spec("write_file"))
}

/// Every route that names a session, as Bob would try Alice's `id`.
fn tries(base: &str, id: &str, node: &str) -> Vec<(&'static str, String, Option<Value>)> {
    let s = format!("{base}/api/sessions/{id}");
    vec![
        ("GET", s.clone(), None),
        ("PATCH", s.clone(), Some(json!({"name": "taken"}))),
        ("GET", format!("{s}/nodes/{node}"), None),
        (
            "POST",
            format!("{s}/messages"),
            Some(json!({"content": "hi"})),
        ),
        (
            "POST",
            format!("{s}/runs"),
            Some(json!({"content": "hi", "background": true})),
        ),
        (
            "POST",
            format!("{s}/approvals"),
            Some(json!({"decisions": [{"node_id": node, "decision": "approve"}]})),
        ),
        ("POST", format!("{s}/continue"), Some(json!({}))),
        ("POST", format!("{s}/stop"), Some(json!({}))),
        ("POST", format!("{s}/rewind"), Some(json!({"node": node}))),
        ("POST", format!("{s}/fork"), Some(json!({"node": node}))),
        ("GET", format!("{s}/runs"), None),
        (
            "POST",
            format!("{s}/input/{}", uuid::Uuid::new_v4()),
            Some(json!({"action": "decline"})),
        ),
        (
            "POST",
            format!("{base}/v1/chat/completions"),
            Some(json!({"session": id, "messages": [{"role": "user", "content": "hi"}]})),
        ),
        (
            "POST",
            format!("{base}/v1/tools/execute"),
            Some(
                json!({"session": id, "tool_calls": [{"name": "ls", "arguments": {"path": "/"}}]}),
            ),
        ),
        ("DELETE", s, None),
    ]
}

async fn send(method: &str, url: &str, token: &str, body: Option<Value>) -> (u16, String) {
    let c = client();
    let request = match method {
        "GET" => c.get(url),
        "PATCH" => c.patch(url),
        "DELETE" => c.delete(url),
        _ => c.post(url),
    }
    .bearer_auth(token);
    let request = match body {
        Some(body) => request.json(&body),
        None => request,
    };
    let r = request.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test]
async fn another_users_session_is_not_found_on_every_route_whatever_its_state() {
    let server = start_with(waiting_config).await;
    let base = &server.url;

    // Alice's first session waits for a decision on a call that carries SECRET.
    let waiting = new_session(base, ALICE).await;
    let r = post(
        &format!("{base}/api/sessions/{waiting}/runs"),
        ALICE,
        json!({"content": "write the plan", "background": true}),
    )
    .await;
    assert_eq!(r.status(), 202);
    let run: Value = r.json().await.unwrap();
    let run = run["id"].as_str().unwrap().to_string();
    let record = wait_status(base, &run, "waiting", 200).await;
    let node = record["pending"][0]["node_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Her second session is idle.
    let idle = new_session(base, ALICE).await;

    for id in [&waiting, &idle] {
        for (method, url, body) in tries(base, id, &node) {
            let (status, text) = send(method, &url, BOB, body).await;
            assert_eq!(
                status, 404,
                "{method} {url} as another user: {status} {text}"
            );
            for leak in [SECRET, run.as_str(), node.as_str()] {
                assert!(
                    !text.contains(leak),
                    "{method} {url} told another user `{leak}`: {text}"
                );
            }
        }
    }
    // Another user's run is not found either.
    for (method, url) in [
        ("GET", format!("{base}/api/runs/{run}")),
        ("POST", format!("{base}/api/runs/{run}/cancel")),
        ("GET", format!("{base}/api/runs/{run}/events")),
    ] {
        let (status, text) = send(method, &url, BOB, Some(json!({}))).await;
        assert_eq!(status, 404, "{method} {url}: {text}");
        assert!(!text.contains(SECRET), "{text}");
    }

    // Nothing Bob tried reserved or changed Alice's sessions: her decision
    // runs, and her idle session answers at once, every time.
    let r = post(
        &format!("{base}/api/sessions/{waiting}/runs"),
        ALICE,
        json!({"decisions": [{"node_id": node, "decision": "approve"}], "background": true}),
    )
    .await;
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap());
    wait_status(base, &run, "done", 200).await;
    for _ in 0..5 {
        let (status, _) = send(
            "POST",
            &format!("{base}/api/sessions/{idle}/runs"),
            BOB,
            Some(json!({"content": "mine now", "background": true})),
        )
        .await;
        assert_eq!(status, 404);
    }
    let r = post(
        &format!("{base}/api/sessions/{idle}/runs"),
        ALICE,
        json!({"content": "hello", "background": true}),
    )
    .await;
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap());
    let shown = get_json(&format!("{base}/api/sessions/{waiting}"), ALICE).await;
    assert_ne!(shown["name"], "taken", "{shown}");
    let _ = server.stop().await;
}

#[tokio::test]
async fn deleting_a_session_cancels_its_waiting_run() {
    let server = start_with(waiting_config).await;
    let base = &server.url;
    let session = new_session(base, ALICE).await;
    let r = post(
        &format!("{base}/api/sessions/{session}/runs"),
        ALICE,
        json!({"content": "write the plan", "background": true}),
    )
    .await;
    let run: Value = r.json().await.unwrap();
    let run = run["id"].as_str().unwrap().to_string();
    wait_status(base, &run, "waiting", 200).await;

    let r = delete(&format!("{base}/api/sessions/{session}"), ALICE).await;
    assert_eq!(r.status(), 204);
    let record = get_json(&format!("{base}/api/runs/{run}"), ALICE).await;
    assert_eq!(record["status"], "cancelled", "{record}");
    // Its stream ends with the cancel's end event; a cancel now says it
    // is over.
    let events = get(&format!("{base}/api/runs/{run}/events"), ALICE)
        .await
        .text()
        .await
        .unwrap();
    let last = sse_events(&events).pop().expect("events");
    assert_eq!(last.0, "done", "{events}");
    assert_eq!(last.1["status"], "cancelled", "{events}");
    let r = post(&format!("{base}/api/runs/{run}/cancel"), ALICE, json!({})).await;
    assert_eq!(r.status(), 409, "{}", r.text().await.unwrap());
    let _ = server.stop().await;
}
