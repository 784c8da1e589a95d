//! Steering a live run through `lc-agent serve` (the real binary, real
//! HTTP): a message posted while the session's run goes on gets 202 with
//! its id, joins the run at its next node boundary as its mode says
//! (inject, queue, interrupt) and shows in the run's events in order; a
//! `kill -9` between the 202 and the boundary loses nothing.

use std::time::Duration;

use lc_agent_test_support::poll;
use lc_agent_test_support::serve::{serve_command, Served};
use lc_agent_test_support::sse;
use serde_json::{json, Value};

use crate::common;
use crate::runs::background_run;

fn serve(dir: &std::path::Path, script: &Value) -> Served {
    let script_path = dir.join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let mut command = serve_command(common::built());
    command
        .arg("--script")
        .arg(&script_path)
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .arg("--record")
        .arg(dir.join("calls.jsonl"))
        // A restart's note on the runs it queues again comes after the
        // address, not before it.
        .env("RUST_LOG", "warn");
    Served::start(command)
}

/// What each model call was asked, as `role: text` lines (the cassette).
fn asked(dir: &std::path::Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(dir.join("calls.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|exchange| {
            exchange["request"]["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] != "system")
                .map(|m| {
                    format!(
                        "{}: {}",
                        m["role"].as_str().unwrap(),
                        m["content"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .collect()
}

async fn new_session(http: &reqwest::Client, base: &str) -> String {
    let r = http
        .post(format!("{base}/api/sessions"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Posts a message while the run goes on: 202 with its id, mode and run.
async fn steer(http: &reqwest::Client, base: &str, session: &str, body: Value) -> Value {
    let r = http
        .post(format!("{base}/api/sessions/{session}/messages"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let answer: Value = r.json().await.unwrap();
    assert_eq!(status, 202, "{answer}");
    answer
}

/// The run's events once it is done, as (name, data).
async fn events_when_done(http: &reqwest::Client, base: &str, run: &str) -> Vec<(String, Value)> {
    poll::run_status(
        http,
        base,
        run,
        None,
        "done",
        poll::tries_in(Duration::from_secs(60)),
    )
    .await;
    let body = http
        .get(format!("{base}/api/runs/{run}/events"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    sse::named(&body)
}

/// Waits until the run's events have one named `name`.
async fn wait_event(http: &reqwest::Client, base: &str, run: &str, name: &str) {
    let url = format!("{base}/api/runs/{run}/events");
    let mut response = http.get(&url).send().await.unwrap();
    let mut reader = sse::Reader::default();
    while let Some(chunk) = response.chunk().await.unwrap() {
        if reader.push(&chunk).iter().any(|e| e.name == name) {
            return;
        }
    }
    panic!("the events of run {run} ended without `{name}`");
}

fn position(events: &[(String, Value)], pred: impl Fn(&(String, Value)) -> bool) -> usize {
    events
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("no such event in {events:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_injected_message_joins_the_run_before_its_next_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!([
        {"tool_calls": [{"id": "c1", "name": "write_file", "arguments": {"file_path": "/a.md", "content": "a"}}], "delay_ms": 1500},
        {"content": "Wrote a.md and read your note."}
    ]);
    let server = serve(dir.path(), &script);
    let (http, base) = (reqwest::Client::new(), server.url().to_string());
    let session = new_session(&http, &base).await;
    let run = background_run(&http, &base, &session, "write a.md").await;

    let accepted = steer(
        &http,
        &base,
        &session,
        json!({"content": "also mention b.md"}),
    )
    .await;

    assert_eq!(accepted["mode"], "inject");
    assert_eq!(accepted["run"], run.as_str(), "it joins the run going on");
    let id = accepted["id"].as_str().unwrap().to_string();
    let events = events_when_done(&http, &base, &run).await;
    let steered = position(&events, |(n, d)| n == "steered" && d["id"] == id.as_str());
    assert_eq!(events[steered].1["mode"], "inject");
    let node = events[steered].1["node_id"].clone();
    let human = position(&events, |(n, d)| {
        n == "node_finished" && d["node_id"] == node
    });
    assert_eq!(events[human].1["message"]["content"], "also mention b.md");
    assert!(steered < human, "{events:#?}");
    let done = &events.last().unwrap().1;
    assert_eq!(done["answer"], "Wrote a.md and read your note.");
    // No model call more than the script, and one of them read it last.
    let calls = asked(dir.path());
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert!(
        calls
            .iter()
            .any(|c| c.last().unwrap() == "human: also mention b.md"),
        "{calls:#?}"
    );
    // Read and saved: it left the inbox; the session holds it once.
    let shown: Value = http
        .get(format!("{base}/api/sessions/{session}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["inbox"], json!([]), "{shown}");
    let said = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["content"] == "also mention b.md")
        .count();
    assert_eq!(said, 1, "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_message_is_answered_after_the_run_s_answer_in_the_same_run() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!([
        {"content": "First answer.", "delay_ms": 1500},
        {"content": "Answer to the queued one."}
    ]);
    let server = serve(dir.path(), &script);
    let (http, base) = (reqwest::Client::new(), server.url().to_string());
    let session = new_session(&http, &base).await;
    let run = background_run(&http, &base, &session, "first").await;

    let accepted = steer(
        &http,
        &base,
        &session,
        json!({"content": "then this", "mode": "queue"}),
    )
    .await;

    assert_eq!(accepted["mode"], "queue");
    let events = events_when_done(&http, &base, &run).await;
    let first = position(&events, |(n, d)| {
        n == "node_finished" && d["message"]["content"] == "First answer."
    });
    let steered = position(&events, |(n, _)| n == "steered");
    assert!(first < steered, "the run's answer came first: {events:#?}");
    assert_eq!(
        events.last().unwrap().1["answer"],
        "Answer to the queued one."
    );
    let calls = asked(dir.path());
    assert_eq!(calls.len(), 2);
    assert!(!calls[0].iter().any(|m| m.contains("then this")));
    assert_eq!(
        calls[1][calls[1].len() - 2..],
        ["ai: First answer.", "human: then this"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_runs_no_call_that_had_not_started_and_the_message_is_the_next_turn() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!([
        {"tool_calls": [{"id": "c0", "name": "ls", "arguments": {"path": "/"}}]},
        {"tool_calls": [{"id": "c1", "name": "write_file", "arguments": {"file_path": "/never.md", "content": "x"}}], "delay_ms": 2000},
        {"content": "Stopped; doing the other thing."}
    ]);
    let server = serve(dir.path(), &script);
    let (http, base) = (reqwest::Client::new(), server.url().to_string());
    let session = new_session(&http, &base).await;
    let run = background_run(&http, &base, &session, "write never.md").await;
    // The second model call (2 s) is under way once `ls` finished.
    wait_event(&http, &base, &run, "tool_call_finished").await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    let accepted = steer(
        &http,
        &base,
        &session,
        json!({"content": "stop, do the other thing", "mode": "interrupt"}),
    )
    .await;

    assert_eq!(accepted["mode"], "interrupt");
    let events = events_when_done(&http, &base, &run).await;
    assert_eq!(
        events.last().unwrap().1["answer"],
        "Stopped; doing the other thing."
    );
    let shown: Value = http
        .get(format!("{base}/api/sessions/{session}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        shown["files"].get("/never.md").is_none(),
        "the call that had not started never ran: {}",
        shown["files"]
    );
    let calls = asked(dir.path());
    assert_eq!(calls.len(), 3, "{calls:#?}");
    let last = &calls[2];
    assert!(
        last[last.len() - 2].starts_with("tool: Error: not run: the user interrupted"),
        "{last:#?}"
    );
    assert_eq!(last.last().unwrap(), "human: stop, do the other thing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_accepted_then_kill_9_is_read_by_the_run_after_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!([
        {"content": "First answer.", "delay_ms": 3000},
        {"content": "Read the note too."}
    ]);
    let mut server = serve(dir.path(), &script);
    let (http, base) = (reqwest::Client::new(), server.url().to_string());
    let session = new_session(&http, &base).await;
    let run = background_run(&http, &base, &session, "first").await;
    let accepted = steer(
        &http,
        &base,
        &session,
        json!({"content": "a note", "mode": "queue"}),
    )
    .await;
    let id = accepted["id"].as_str().unwrap().to_string();

    // kill -9 before any boundary (the first model call takes 3 s).
    server.child().kill().unwrap();
    server.child().wait().unwrap();
    let inbox = dir
        .path()
        .join("sessions/.runs/inbox")
        .join(format!("{session}.json"));
    let kept: Value = serde_json::from_slice(&std::fs::read(&inbox).unwrap()).unwrap();
    assert_eq!(kept[0]["id"], id.as_str(), "kept on disk before the 202");
    let restarted = serve(dir.path(), &script);
    let base = restarted.url().to_string();

    let events = events_when_done(&http, &base, &run).await;
    let steered = position(&events, |(n, d)| n == "steered" && d["id"] == id.as_str());
    assert_eq!(events[steered].1["mode"], "queue");
    assert_eq!(events.last().unwrap().1["answer"], "Read the note too.");
    let shown: Value = http
        .get(format!("{base}/api/sessions/{session}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let texts: Vec<&str> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        texts,
        ["first", "First answer.", "a note", "Read the note too."],
        "{shown}"
    );
    assert!(!inbox.exists(), "read and saved: it left the inbox");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_with_nothing_to_say_needs_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &json!([{"content": "hi"}]));
    let (http, base) = (reqwest::Client::new(), server.url().to_string());
    let session = new_session(&http, &base).await;
    let r = http
        .post(format!("{base}/api/sessions/{session}/messages"))
        .json(&json!({"mode": "interrupt"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    assert!(r.text().await.unwrap().contains("nothing to interrupt"));
}
