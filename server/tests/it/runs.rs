//! Runs as records, against a real server on loopback: background runs,
//! one run per session (409 names it), numbered events a client reattaches
//! to, cancel, checkpoints after every node, limits, a message while a call
//! waits for a decision (refused: issue 21.3), runs left by a killed
//! process, and a shutdown that hands runs back.

use std::time::Duration;

use futures::StreamExt;
use lc_agent::{ListConfig, Turn};
use lc_agent_server::RunSettings;
use lc_agent_test_support::server::*;
use lc_agent_test_support::sse;
use serde_json::{json, Value};

fn slow(text: &str, ms: u64) -> Turn {
    Turn::text(text).delayed(Duration::from_millis(ms))
}

async fn background(base: &str, session: &str, body: Value) -> reqwest::Response {
    let mut body = body;
    body["background"] = json!(true);
    post(&format!("{base}/api/sessions/{session}/runs"), ALICE, body).await
}

/// The SSE events of a body with their ids: (id, name, data).
fn numbered(body: &str) -> Vec<(u64, String, Value)> {
    sse::events(body)
        .into_iter()
        .map(|e| (e.id.expect("every event has an id"), e.name, e.data))
        .collect()
}

#[tokio::test]
async fn a_background_run_is_a_record_from_queued_to_done_and_a_second_run_gets_409_naming_it() {
    let server = start(scripted(vec![slow("all done", 600)])).await;
    let base = server.url.clone();
    let session = new_session(&base, ALICE).await;
    let r = background(&base, &session, json!({"content": "hello"})).await;
    assert_eq!(r.status(), 202);
    let run: Value = r.json().await.unwrap();
    let id = run["id"].as_str().unwrap().to_string();
    assert_eq!(run["session"], session.as_str());
    assert_eq!(run["user"], "alice");
    assert!(run["created_at"].is_string(), "{run}");

    // One run per session: the second is refused, naming the first.
    let second = background(&base, &session, json!({"content": "again"})).await;
    assert_eq!(second.status(), 409);
    let refused: Value = second.json().await.unwrap();
    assert_eq!(refused["error"]["run"], id.as_str(), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains(&id));

    let running = wait_status(&base, &id, "running", 200).await;
    assert!(running["started_at"].is_string());
    let done = wait_status(&base, &id, "done", 200).await;
    assert_eq!(done["answer"], "all done");
    assert!(done["finished_at"].is_string());
    assert!(done["error"].is_null());
    assert_eq!(done["attempts"], 1);

    let listed = get_json(&format!("{base}/api/sessions/{session}/runs"), ALICE).await;
    assert_eq!(listed["runs"][0]["id"], id.as_str());
    // Another user sees neither the run nor its events.
    assert_eq!(
        get(&format!("{base}/api/runs/{id}"), BOB).await.status(),
        404
    );
    assert_eq!(
        get(&format!("{base}/api/runs/{id}/events"), BOB)
            .await
            .status(),
        404
    );
    // The session is free again.
    let third = background(&base, &session, json!({"content": "third"})).await;
    assert_eq!(third.status(), 202);
    let _ = server.stop().await;
}

#[tokio::test]
async fn events_are_numbered_and_a_client_reattaches_with_last_event_id_or_after() {
    let server = start(scripted(vec![slow("one two three four", 300)])).await;
    let base = server.url.clone();
    let session = new_session(&base, ALICE).await;
    let run: Value = background(&base, &session, json!({"content": "count"}))
        .await
        .json()
        .await
        .unwrap();
    let id = run["id"].as_str().unwrap();
    let url = format!("{base}/api/runs/{id}/events");
    let all = numbered(&get(&url, ALICE).await.text().await.unwrap());
    let seqs: Vec<u64> = all.iter().map(|e| e.0).collect();
    assert_eq!(seqs, (1..=all.len() as u64).collect::<Vec<_>>());
    assert_eq!(all.last().unwrap().1, "done");
    assert!(all.iter().filter(|e| e.1 == "text").count() >= 2, "{all:?}");

    let cut = all.len() as u64 / 2;
    let with_header = client()
        .get(&url)
        .bearer_auth(ALICE)
        .header("Last-Event-ID", cut.to_string())
        .send()
        .await
        .unwrap();
    let rest = numbered(&with_header.text().await.unwrap());
    assert_eq!(rest, all[cut as usize..].to_vec());
    let with_query = numbered(
        &get(&format!("{url}?after={cut}"), ALICE)
            .await
            .text()
            .await
            .unwrap(),
    );
    assert_eq!(with_query, rest);
    let _ = server.stop().await;
}

#[tokio::test]
async fn a_client_that_drops_mid_run_loses_nothing_the_run_finishes_and_a_reconnect_replays() {
    let turns = vec![
        call(
            "t1",
            "write_todos",
            json!({"todos": [{"content": "a", "status": "pending"}]}),
        )
        .delayed(Duration::from_millis(200)),
        slow("finished after the drop", 700),
    ];
    let server = start(scripted(turns)).await;
    let base = server.url.clone();
    let session = new_session(&base, ALICE).await;
    let r = post(
        &format!("{base}/api/sessions/{session}/messages"),
        ALICE,
        json!({"content": "go"}),
    )
    .await;
    assert_eq!(r.status(), 200);
    // Read until the tool call finished, then hang up.
    let mut seen = String::new();
    let mut body = r.bytes_stream();
    while let Some(chunk) = body.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        if seen.contains("tool_call_finished") {
            break;
        }
    }
    drop(body);
    let got = numbered(&seen);
    let last = got.last().unwrap().0;
    let run =
        get_json(&format!("{base}/api/sessions/{session}/runs"), ALICE).await["runs"][0].clone();
    let id = run["id"].as_str().unwrap().to_string();
    assert_eq!(
        run["status"], "running",
        "the run goes on without its client"
    );
    let rest = client()
        .get(format!("{base}/api/runs/{id}/events"))
        .bearer_auth(ALICE)
        .header("Last-Event-ID", last.to_string())
        .send()
        .await
        .unwrap();
    let rest = numbered(&rest.text().await.unwrap());
    assert_eq!(rest.first().unwrap().0, last + 1, "nothing missed");
    let (_, name, data) = rest.last().unwrap();
    assert_eq!(name, "done");
    assert_eq!(data["answer"], "finished after the drop");
    // Every event exactly once, in order.
    let everything = numbered(
        &get(&format!("{base}/api/runs/{id}/events"), ALICE)
            .await
            .text()
            .await
            .unwrap(),
    );
    let joined: Vec<_> = got.into_iter().chain(rest).collect();
    assert_eq!(joined, everything);
    let _ = server.stop().await;
}

#[tokio::test]
async fn cancel_mid_run_ends_it_cancelled_and_the_session_keeps_what_ran() {
    let turns = vec![
        call(
            "t1",
            "write_todos",
            json!({"todos": [{"content": "a", "status": "pending"}]}),
        ),
        slow("never", 5_000),
    ];
    let server = start(scripted(turns)).await;
    let base = server.url.clone();
    let session = new_session(&base, ALICE).await;
    let run: Value = background(&base, &session, json!({"content": "plan"}))
        .await
        .json()
        .await
        .unwrap();
    let id = run["id"].as_str().unwrap().to_string();
    // Wait for the tool's result, then cancel during the slow model call.
    let mut ran = false;
    for _ in 0..100 {
        let s = get_json(&format!("{base}/api/sessions/{session}"), ALICE).await;
        if s["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "tool")
        {
            ran = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    assert!(
        ran,
        "the checkpoint after the tool node is in the store while the run goes on"
    );
    let r = post(&format!("{base}/api/runs/{id}/cancel"), ALICE, json!({})).await;
    assert_eq!(r.status(), 202);
    let started = std::time::Instant::now();
    let cancelled = wait_status(&base, &id, "cancelled", 200).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(cancelled["finished_at"].is_string());
    let events = numbered(
        &get(&format!("{base}/api/runs/{id}/events"), ALICE)
            .await
            .text()
            .await
            .unwrap(),
    );
    let names: Vec<&str> = events.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(names[names.len() - 2..], ["stopped", "done"]);
    assert_eq!(events.last().unwrap().2["stopped"], true);
    // What ran is kept: the todo and its tool result; no answer.
    let s = get_json(&format!("{base}/api/sessions/{session}"), ALICE).await;
    assert_eq!(s["todos"][0]["content"], "a", "{s}");
    assert!(!s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["content"] == "never"));
    // Cancelling again: it is over.
    let again = post(&format!("{base}/api/runs/{id}/cancel"), ALICE, json!({})).await;
    assert_eq!(again.status(), 409);
    let _ = server.stop().await;
}

#[tokio::test]
async fn a_server_run_saves_the_session_after_every_node() {
    let turns = vec![
        call(
            "t1",
            "write_todos",
            json!({"todos": [{"content": "x", "status": "pending"}]}),
        ),
        slow("answer", 800),
    ];
    let server = start(scripted(turns)).await;
    let base = server.url.clone();
    let session = new_session(&base, ALICE).await;
    let run: Value = background(&base, &session, json!({"content": "go"}))
        .await
        .json()
        .await
        .unwrap();
    let id = run["id"].as_str().unwrap().to_string();
    // Read the session straight from the store while the model works on
    // the second turn: the first turn and its tool result are saved.
    let list = ListConfig::json(server.dir.path().join("sessions"))
        .open()
        .unwrap()
        .user("alice")
        .unwrap();
    let sid: uuid::Uuid = session.parse().unwrap();
    let mut saved_mid_run = false;
    for _ in 0..100 {
        let net = list.load(sid).await.unwrap();
        let tool_done = net
            .nodes()
            .iter()
            .any(|n| n.kind() == "tool" && n.is_invoked());
        let status = get_json(&format!("{base}/api/runs/{id}"), ALICE).await["status"].clone();
        if tool_done && status == "running" {
            saved_mid_run = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(saved_mid_run);
    wait_status(&base, &id, "done", 200).await;
    let _ = server.stop().await;
}

#[tokio::test]
async fn a_message_while_a_call_waits_is_refused_naming_the_calls_and_the_decision_finishes_the_run(
) {
    let turns = vec![
        call(
            "w1",
            "write_file",
            json!({"file_path": "/a.txt", "content": "hi"}),
        ),
        Turn::text("written"),
    ];
    let server =
        start_with(|dir| config(scripted(turns), dir).spec(approval_spec("write_file"))).await;
    let base = server.url.clone();
    let session = new_session(&base, ALICE).await;
    let r = background(&base, &session, json!({"content": "write it"})).await;
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let waiting = wait_status(&base, &id, "waiting", 200).await;
    let node = waiting["pending"][0]["node_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(waiting["pending"][0]["tool_call"]["name"], "write_file");

    // The rule (issue 21.3): a message is refused while a call waits, on
    // every endpoint, with the calls named.
    let m = post(
        &format!("{base}/api/sessions/{session}/messages"),
        ALICE,
        json!({"content": "msg while waiting"}),
    )
    .await;
    assert_eq!(m.status(), 409);
    let body: Value = m.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("write_file"),
        "{body}"
    );
    assert_eq!(body["error"]["pending"][0]["node_id"], node.as_str());
    assert_eq!(body["error"]["run"], id.as_str());
    let c = post(
        &format!("{base}/v1/chat/completions"),
        ALICE,
        json!({"session": session, "messages": [{"role": "user", "content": "msg 3"}]}),
    )
    .await;
    assert_eq!(c.status(), 409);
    assert!(c.text().await.unwrap().contains("write_file"));

    // The decision runs the same run on to its end.
    let d = post(
        &format!("{base}/api/sessions/{session}/runs"),
        ALICE,
        json!({"decisions": [{"node_id": node, "decision": "approve"}]}),
    )
    .await;
    assert_eq!(d.status(), 200);
    let events = sse_events(&d.text().await.unwrap());
    assert_eq!(events.last().unwrap().1["answer"], "written");
    assert_eq!(events.last().unwrap().1["run"], id.as_str());
    let done = wait_status(&base, &id, "done", 200).await;
    assert_eq!(done["answer"], "written");
    // The tool call got its result before any later human turn.
    let s = get_json(&format!("{base}/api/sessions/{session}"), ALICE).await;
    let roles: Vec<&str> = s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .filter(|r| *r != "system")
        .collect();
    assert_eq!(roles, ["human", "ai", "tool", "ai"], "{s}");
    assert!(!s.to_string().contains("msg while waiting"));
    let _ = server.stop().await;
}

#[tokio::test]
async fn max_runs_queues_the_rest_a_full_user_gets_429_and_a_run_over_its_time_limit_fails() {
    let server = start_with(|dir| {
        config(scripted(vec![slow("slow", 1_500)]).cycled(), dir).runs(RunSettings {
            max_runs: 1,
            per_user: 2,
            time_limit: Some(Duration::from_millis(700)),
            ..RunSettings::default()
        })
    })
    .await;
    let base = server.url.clone();
    let (s1, s2, s3) = (
        new_session(&base, ALICE).await,
        new_session(&base, ALICE).await,
        new_session(&base, ALICE).await,
    );
    let r1: Value = background(&base, &s1, json!({"content": "1"}))
        .await
        .json()
        .await
        .unwrap();
    let r2: Value = background(&base, &s2, json!({"content": "2"}))
        .await
        .json()
        .await
        .unwrap();
    let full = background(&base, &s3, json!({"content": "3"})).await;
    assert_eq!(full.status(), 429);
    assert_eq!(full.headers()["retry-after"], "2");
    let r1 = r1["id"].as_str().unwrap();
    let r2 = r2["id"].as_str().unwrap();
    wait_status(&base, r1, "running", 200).await;
    // One at a time: the second waits in the queue.
    assert_eq!(
        get_json(&format!("{base}/api/runs/{r2}"), ALICE).await["status"],
        "queued"
    );
    // Bob has a queue of his own.
    let bob = new_session(&base, BOB).await;
    let b = post(
        &format!("{base}/api/sessions/{bob}/runs"),
        BOB,
        json!({"content": "b", "background": true}),
    )
    .await;
    assert_eq!(b.status(), 202);
    // The model takes longer than the limit: the run fails, saying so.
    let failed = wait_status(&base, r1, "failed", 200).await;
    assert!(
        failed["error"].as_str().unwrap().contains("limit"),
        "{failed}"
    );
    wait_status(&base, r2, "failed", 200).await;
    let _ = server.stop().await;
}

#[tokio::test]
async fn runs_left_running_by_a_killed_process_resume_when_the_server_starts_again() {
    // A process was killed mid-run: its session has the question saved
    // (not answered) and its run record says running.
    let first = start(scripted(vec![])).await;
    let session = new_session(&first.url, ALICE).await;
    let dir = first.stop().await;
    let sessions = dir.path().join("sessions");
    let list = ListConfig::json(&sessions)
        .open()
        .unwrap()
        .user("alice")
        .unwrap();
    let net = list.load(session.parse().unwrap()).await.unwrap();
    {
        let _s = net.enter();
        lc_agent::HumanNode::new("left over");
    }
    list.save(&net).await.unwrap();
    let mut run = lc_agent_server::Run::new(net.id(), "alice", "message");
    run.status = lc_agent_server::RunStatus::Running;
    run.attempts = 1;
    run.prepared = true;
    std::fs::create_dir_all(sessions.join(".runs")).unwrap();
    std::fs::write(
        sessions.join(".runs").join(format!("{}.json", run.id)),
        serde_json::to_vec(&run).unwrap(),
    )
    .unwrap();

    let server = start_with(|_| config(scripted(vec![Turn::text("resumed")]), dir.path())).await;
    let done = wait_status(&server.url, &run.id.to_string(), "done", 200).await;
    assert_eq!(done["answer"], "resumed");
    assert_eq!(done["attempts"], 2);
    let s = get_json(&format!("{}/api/sessions/{}", server.url, net.id()), ALICE).await;
    let humans = s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "human")
        .count();
    assert_eq!(humans, 1, "the question is not asked twice");
    let _ = server.stop().await;
}

#[tokio::test]
async fn a_shutdown_hands_back_a_run_and_the_next_start_finishes_it() {
    let first = start_with(|dir| {
        config(scripted(vec![slow("too slow", 5_000)]), dir)
            .shutdown_grace(Duration::from_millis(200))
    })
    .await;
    let session = new_session(&first.url, ALICE).await;
    let run: Value = background(&first.url, &session, json!({"content": "long"}))
        .await
        .json()
        .await
        .unwrap();
    let id = run["id"].as_str().unwrap().to_string();
    wait_status(&first.url, &id, "running", 200).await;
    let dir = first.stop().await;
    let record: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("sessions/.runs").join(format!("{id}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(record["status"], "queued", "handed back: {record}");

    let second = start_with(|_| config(scripted(vec![Turn::text("finished")]), dir.path())).await;
    let done = wait_status(&second.url, &id, "done", 200).await;
    assert_eq!(done["answer"], "finished");
    let events = numbered(
        &get(&format!("{}/api/runs/{id}/events", second.url), ALICE)
            .await
            .text()
            .await
            .unwrap(),
    );
    let seqs: Vec<u64> = events.iter().map(|e| e.0).collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "numbering goes on"
    );
    assert!(events.iter().any(|e| e.1 == "handed_back"));
    let _ = second.stop().await;
    drop(dir);
}
