//! Hooks through a real server: the server's own `HooksModifier` (from its
//! configuration, as `lc-agent serve --settings` makes it) refuses a
//! write with a `PreToolUse` hook (the model reads why, the run goes on),
//! logs every call with another, and a crashing `PostToolUse` hook and a
//! hanging `Stop` hook are reported as `hook` SSE events without stopping
//! the run. The model is a scripted one (a stand-in for a real model).
//! `/v1/tools/execute` runs the same hooks first: a refusal is the call's
//! result, a rewrite is what runs, an `ask` is a 403.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lc_agent::Turn;
use lc_agent_deepagent::{HookSettings, HooksModifier};
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

fn named<'a>(events: &'a [(String, Value)], name: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, v)| v)
        .collect()
}

#[tokio::test]
async fn the_servers_hooks_refuse_log_and_report_failures_as_events() {
    let model = scripted(vec![
        call(
            "c1",
            "write_file",
            json!({"file_path": "/secrets/key.md", "content": "k"}),
        ),
        call(
            "c2",
            "write_file",
            json!({"file_path": "/notes.md", "content": "n"}),
        ),
        Turn::text("Done."),
    ]);
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("calls.jsonl");
    let settings = json!({"hooks": {
        "PreToolUse": [{"matcher": "write_file", "hooks": [
            {"type": "command", "command": "grep -q '\"/secrets/' && { echo 'secrets stay untouched' >&2; exit 2; }; exit 0"},
            {"type": "command", "command": format!("cat >> {0}; echo >> {0}", log.display())}
        ]}],
        "PostToolUse": [{"hooks": [{"type": "command", "command": "exit 3"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "sleep 30", "timeout": 1}]}]
    }});
    let settings = HookSettings::parse(&settings.to_string(), "server-settings.json").unwrap();
    let server = start_with(|dir| {
        config(model, dir).modifier_shared(Arc::new(HooksModifier::new(settings, dir)))
    })
    .await;
    let base = &server.url;
    let id = new_session(base, ALICE).await;
    let clock = Instant::now();
    let r = post(
        &format!("{base}/api/sessions/{id}/messages"),
        ALICE,
        json!({"content": "Write the notes."}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let events = sse_events(&r.text().await.unwrap());
    assert!(
        clock.elapsed() < Duration::from_secs(20),
        "{:?}",
        clock.elapsed()
    );

    let hooks = named(&events, "hook");
    let report = |event: &str, outcome: &str| {
        hooks
            .iter()
            .filter(|h| h["event"] == event && h["outcome"] == outcome)
            .collect::<Vec<_>>()
    };
    let blocked = report("PreToolUse", "blocked");
    assert_eq!(blocked.len(), 1, "{hooks:?}");
    assert_eq!(blocked[0]["message"], "secrets stay untouched");
    assert!(blocked[0]["node_id"].is_string(), "{hooks:?}");
    let failed = report("PostToolUse", "failed");
    assert_eq!(failed.len(), 1, "only the call that ran: {hooks:?}");
    assert_eq!(failed[0]["message"], "exit code 3");
    assert_eq!(report("Stop", "timed_out").len(), 1, "{hooks:?}");
    let done = named(&events, "done");
    assert_eq!(done.len(), 1, "the run went on to its answer: {events:?}");
    assert_eq!(done[0]["answer"], "Done.");

    // The refused file was never written; the model read why.
    let session: Value = get_json(&format!("{base}/api/sessions/{id}"), ALICE).await;
    let text = session.to_string();
    assert!(
        text.contains("Error: a PreToolUse hook blocked this call: secrets stay untouched"),
        "{text}"
    );
    assert!(
        text.contains("/notes.md") && !text.contains("\"/secrets/key.md\":"),
        "{text}"
    );
    // The logging hook saw both calls, decided nothing.
    let logged: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let paths: Vec<&Value> = logged
        .iter()
        .map(|e| &e["tool_input"]["file_path"])
        .collect();
    assert_eq!(paths, [&json!("/secrets/key.md"), &json!("/notes.md")]);
    assert!(
        logged.iter().all(|e| e["session_id"] == json!(id)),
        "{logged:?}"
    );
}

#[tokio::test]
async fn the_tool_endpoint_runs_the_servers_hooks_first() {
    let settings = lc_agent_test_support::trust::gate_hooks().to_string();
    let settings = HookSettings::parse(&settings, "server-settings.json").unwrap();
    let server = start_with(|dir| {
        config(scripted(vec![]), dir).modifier_shared(Arc::new(HooksModifier::new(settings, dir)))
    })
    .await;
    let base = &server.url;
    let write = |id: &str, path: &str| {
        json!({"id": id, "type": "function", "function": {"name": "write_file",
            "arguments": json!({"file_path": path, "content": "draft"}).to_string()}})
    };
    let r = post(
        &format!("{base}/v1/tools/execute"),
        ALICE,
        json!({"tool_calls": [write("a", "/secrets/key.md"), write("b", "/draft.md")]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    let results = body["results"].as_array().unwrap();
    // The refused call's result is the hook's reason; the other one ran as
    // the hook rewrote it, and the PostToolUse hook added to its result.
    assert_eq!(
        (
            &results[0]["tool_call_id"],
            &results[0]["success"],
            &results[0]["error"]
        ),
        (
            &json!("a"),
            &json!(false),
            &json!("Error: a PreToolUse hook blocked this call: secrets stay untouched")
        ),
        "{body}"
    );
    assert_eq!(
        (&results[1]["tool_call_id"], &results[1]["result"]),
        (
            &json!("b"),
            &json!("Successfully wrote to /final.md\n\nFrom a PostToolUse hook: checked by the post hook")
        ),
        "{body}"
    );
    // A hook's ask refuses the batch: nobody approves here, nothing runs.
    let r = post(
        &format!("{base}/v1/tools/execute"),
        ALICE,
        json!({"tool_calls": [write("c", "/ask.md")]}),
    )
    .await;
    assert_eq!(r.status(), 403);
    let text = r.text().await.unwrap();
    assert!(
        text.contains("a PreToolUse hook asked: a person reads ask.md first"),
        "{text}"
    );
    let _ = server.stop().await;
}
