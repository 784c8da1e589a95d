//! Issue 21.1: a non-streamed completion that outlasts `--timeout` must
//! not run the agent again on each client retry. The `openai` Python SDK
//! (default retries) against a real server: one session, one run, one
//! model call, and the SDK gets the answer; an `Idempotency-Key` names
//! the same run on every try. A try refused with 429 does not use up its
//! key, a key reused with another body is 422, and the 408 says what
//! reattaches (issue 31 item 8).

use std::time::Duration;

use lc_agent::Turn;
use lc_agent_server::RunSettings;
use lc_agent_test_support::needs;
use lc_agent_test_support::python;
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

#[needs(python_openai)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdks_retries_of_a_timed_out_completion_reattach_to_one_run() {
    let model = scripted(vec![
        Turn::text("patient answer").delayed(Duration::from_millis(2_500))
    ]);
    let calls = model.clone();
    let server = start_with(|dir| config(model, dir).request_timeout(Duration::from_secs(1))).await;
    let url = server.url.clone();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/openai_timeout.py"
    );
    let got =
        tokio::task::spawn_blocking(move || python::run_json(script.as_ref(), &[&url, ALICE]))
            .await
            .unwrap();
    assert_eq!(got["content"], "patient answer", "{got}");
    // The SDK must say how many retries it took (none reported fails).
    let retries = got["retries"]
        .as_u64()
        .unwrap_or_else(|| panic!("the SDK reported no retries: {got}"));
    assert!(retries >= 1, "the SDK retried: {got}");
    // One call of the SDK: one session, one run, one model call.
    assert_eq!(calls.calls(), 1);
    let sessions = get_json(&format!("{}/api/sessions", server.url), ALICE).await;
    assert_eq!(sessions["total"], 1, "{sessions}");
    let session = got["session"].as_str().unwrap();
    assert_eq!(sessions["sessions"][0]["id"], session);
    let runs = get_json(
        &format!("{}/api/sessions/{session}/runs", server.url),
        ALICE,
    )
    .await;
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1, "{runs}");
    assert_eq!(runs["runs"][0]["id"], got["run"]);
    let _ = server.stop().await;
}

#[tokio::test]
async fn a_timeout_names_the_run_and_session_and_the_same_idempotency_key_reattaches() {
    let model = scripted(vec![
        Turn::text("keyed").delayed(Duration::from_millis(1_200)),
        Turn::text("second request"),
    ]);
    let calls = model.clone();
    let server =
        start_with(|dir| config(model, dir).request_timeout(Duration::from_millis(500))).await;
    let url = format!("{}/v1/chat/completions", server.url);
    let body = json!({"messages": [{"role": "user", "content": "hi"}]});
    let send = |key: &'static str| {
        client()
            .post(&url)
            .bearer_auth(ALICE)
            .header("Idempotency-Key", key)
            .json(&body)
            .send()
    };
    let first = send("k-1").await.unwrap();
    assert_eq!(first.status(), 408);
    let timed_out: Value = first.json().await.unwrap();
    let run = timed_out["run"].as_str().unwrap().to_string();
    let session = timed_out["session"].as_str().unwrap().to_string();
    assert_eq!(timed_out["error"]["run"], run.as_str());
    let message = timed_out["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("same Idempotency-Key") && !message.contains("same body"),
        "{message}"
    );
    // The run goes on; the same key (once it is over) gets its answer.
    for _ in 0..100 {
        let r = get_json(&format!("{}/api/runs/{run}", server.url), ALICE).await;
        if r["status"] == "done" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let again = send("k-1").await.unwrap();
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["x-lc-agent-run"], run.as_str());
    let answer: Value = again.json().await.unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "keyed");
    assert_eq!(answer["session"], session.as_str());
    assert_eq!(calls.calls(), 1);
    // Another key (or none) is another request.
    let other = send("k-2").await.unwrap();
    assert_eq!(other.status(), 200);
    assert_ne!(other.headers()["x-lc-agent-run"], run.as_str());
    assert_eq!(calls.calls(), 2);
    let _ = server.stop().await;
}

#[tokio::test]
async fn a_try_refused_with_429_does_not_use_up_its_key_and_another_body_is_422() {
    let model = scripted(vec![
        Turn::text("busy").delayed(Duration::from_millis(800)),
        Turn::text("the keyed answer"),
        Turn::text("never"),
    ]);
    let calls = model.clone();
    let server = start_with(|dir| {
        config(model, dir).runs(RunSettings {
            per_user: 1,
            ..RunSettings::default()
        })
    })
    .await;
    let base = server.url.clone();
    // A run of Alice's fills her queue.
    let session = new_session(&base, ALICE).await;
    let busy: Value = post(
        &format!("{base}/api/sessions/{session}/runs"),
        ALICE,
        json!({"content": "x", "background": true}),
    )
    .await
    .json()
    .await
    .unwrap();
    let url = format!("{base}/v1/chat/completions");
    let send = |content: &'static str| {
        client()
            .post(&url)
            .bearer_auth(ALICE)
            .header("Idempotency-Key", "k-429")
            .json(&json!({"messages": [{"role": "user", "content": content}]}))
            .send()
    };
    let refused = send("hello").await.unwrap();
    assert_eq!(refused.status(), 429);
    wait_status(&base, busy["id"].as_str().unwrap(), "done", 200).await;
    // The key was not used up: the next try runs, and every later try
    // names that same run.
    let ran = send("hello").await.unwrap();
    assert_eq!(ran.status(), 200);
    let run = ran.headers()["x-lc-agent-run"]
        .to_str()
        .unwrap()
        .to_string();
    let answer: Value = ran.json().await.unwrap();
    assert_eq!(
        answer["choices"][0]["message"]["content"],
        "the keyed answer"
    );
    for _ in 0..2 {
        let again = send("hello").await.unwrap();
        assert_eq!(again.status(), 200);
        assert_eq!(again.headers()["x-lc-agent-run"], run.as_str());
    }
    // The key with another body is refused, not answered with the run's answer.
    let other = send("something else").await.unwrap();
    assert_eq!(other.status(), 422);
    let error: Value = other.json().await.unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Idempotency-Key `k-429`"),
        "{error}"
    );
    // Two model calls (the busy run, the keyed one); two sessions.
    assert_eq!(calls.calls(), 2);
    let sessions = get_json(&format!("{base}/api/sessions"), ALICE).await;
    assert_eq!(sessions["total"], 2, "{sessions}");
    let _ = server.stop().await;
}

#[tokio::test]
async fn a_timeout_without_a_key_says_a_plain_resend_is_a_new_run_and_it_is() {
    let model = scripted(vec![
        Turn::text("slow").delayed(Duration::from_millis(1_000)),
        Turn::text("second").delayed(Duration::from_millis(1_000)),
    ]);
    let calls = model.clone();
    let server =
        start_with(|dir| config(model, dir).request_timeout(Duration::from_millis(400))).await;
    let url = format!("{}/v1/chat/completions", server.url);
    let body = json!({"messages": [{"role": "user", "content": "hi"}]});
    let r = post(&url, ALICE, body.clone()).await;
    assert_eq!(r.status(), 408);
    let first: Value = r.json().await.unwrap();
    let message = first["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("a plain resend starts a new run") && !message.contains("same body"),
        "{message}"
    );
    // What the text says is what happens: the same body again, by the
    // same user, without a key or the SDK's retry header, is a new run.
    let r = post(&url, ALICE, body).await;
    assert_eq!(r.status(), 408);
    let second: Value = r.json().await.unwrap();
    assert_ne!(first["run"], second["run"], "{first} {second}");
    assert_ne!(first["session"], second["session"], "{first} {second}");
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(calls.calls(), 2);
    let _ = server.stop().await;
}

/// Clients sending the same body at the same moment (the load example's
/// 16 clients posting "hello", two tabs, two scripts) are not retries of
/// each other: without a retry marker or a key, each first try starts its
/// own run and gets its own answer, never another request's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_tries_of_the_same_body_are_never_joined() {
    let model = scripted(vec![
        Turn::text("own answer").delayed(Duration::from_millis(50))
    ])
    .cycled();
    let calls = model.clone();
    let server = start_with(|dir| config(model, dir)).await;
    let body = json!({"messages": [{"role": "user", "content": "hello"}]});
    let mut tries = Vec::new();
    for _ in 0..32 {
        let (url, body) = (server.url.clone(), body.clone());
        tries.push(tokio::spawn(async move {
            let r = post(&format!("{url}/v1/chat/completions"), ALICE, body).await;
            assert_eq!(r.status(), 200);
            r.headers()["x-lc-agent-run"].to_str().unwrap().to_string()
        }));
    }
    let mut runs = std::collections::BTreeSet::new();
    for t in tries {
        runs.insert(t.await.unwrap());
    }
    assert_eq!(runs.len(), 32, "one run per request");
    assert_eq!(calls.calls(), 32, "one model call per request");
    let _ = server.stop().await;
}
