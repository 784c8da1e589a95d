//! A Redis restart during runs is waited out: two servers on one real
//! redis-server (append-only, fsync always, so a restart keeps its data),
//! 30 runs going on both, each streamed by a follower, when Redis stops
//! for 3 s; every run ends `done` without a node run twice, and its event
//! stream (followed live, and read again after) ends with exactly one end
//! event.

use std::time::Duration;

use lc_agent::{ListConfig, ScriptedChatModel, Turn};
use lc_agent_server::RunEvent;
use lc_agent_test_support::needs;
use lc_agent_test_support::server::*;
use lc_agent_test_support::RedisServer;
use serde_json::{json, Value};

/// The runs of the 3 s restart (the 30 streaming runs).
const RUNS: usize = 30;

/// Redis (append-only, fsync always) and two servers on it sharing one
/// scripted model that counts its calls (each answer takes 1.5 s), with
/// `n` background runs posted to them in turn.
async fn runs_on_two_servers(
    n: usize,
) -> (
    RedisServer,
    ScriptedChatModel,
    TestServer,
    TestServer,
    Vec<String>,
) {
    let redis = RedisServer::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let url = redis.url();
    let model = scripted(vec![
        Turn::text("answer").delayed(Duration::from_millis(1_500))
    ])
    .cycled();
    let on_redis =
        |dir: &std::path::Path| config(model.clone(), dir).sessions(ListConfig::redis(&url));
    let a = start_with(on_redis).await;
    let b = start_with(on_redis).await;
    let mut runs = Vec::new();
    for i in 0..n {
        let base = if i % 2 == 0 { &a.url } else { &b.url };
        let session = new_session(base, ALICE).await;
        let r = post(
            &format!("{base}/api/sessions/{session}/runs"),
            ALICE,
            json!({"content": format!("task {i}"), "background": true}),
        )
        .await;
        assert_eq!(r.status(), 202);
        let run: Value = r.json().await.unwrap();
        runs.push(run["id"].as_str().unwrap().to_string());
    }
    (redis, model, a, b, runs)
}

/// Followers streaming every run's events from the other server than the
/// one it was posted to, through whatever happens; each gives the stream's
/// text once it closes.
fn follow(runs: &[String], a: &TestServer, b: &TestServer) -> Vec<tokio::task::JoinHandle<String>> {
    runs.iter()
        .enumerate()
        .map(|(i, run)| {
            let base = if i % 2 == 0 {
                b.url.clone()
            } else {
                a.url.clone()
            };
            let run = run.clone();
            tokio::spawn(async move {
                let r = client()
                    .get(format!("{base}/api/runs/{run}/events"))
                    .bearer_auth(ALICE)
                    .timeout(Duration::from_secs(120))
                    .send()
                    .await;
                match r {
                    Ok(r) => r.text().await.unwrap_or_default(),
                    Err(_) => String::new(),
                }
            })
        })
        .collect()
}

/// How many events of an SSE stream end the run (the server's own rule,
/// `RunEvent::is_end`).
fn end_events(stream: &str) -> usize {
    sse_events(stream)
        .into_iter()
        .filter(|(name, data)| {
            RunEvent::from_parts(name, data.clone()).is_ok_and(|event| event.is_end())
        })
        .count()
}

#[needs(redis)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_second_redis_restart_fails_no_run() {
    let (mut redis, calls, a, b, runs) = runs_on_two_servers(RUNS).await;
    let followers = follow(&runs, &a, &b);
    tokio::time::sleep(Duration::from_millis(500)).await;
    redis.stop();
    tokio::time::sleep(Duration::from_secs(3)).await;
    redis.restart();

    let mut tally = std::collections::BTreeMap::<String, usize>::new();
    for run in &runs {
        let record = wait_status(&a.url, run, "done", 1_200).await;
        *tally
            .entry(record["status"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
        assert_eq!(record["status"], "done", "{record}");
        let events = get(&format!("{}/api/runs/{run}/events", b.url), ALICE)
            .await
            .text()
            .await
            .unwrap();
        let names: Vec<String> = sse_events(&events).into_iter().map(|(n, _)| n).collect();
        assert_eq!(end_events(&events), 1, "run {run}: {names:?}");
        assert_eq!(names.last().map(String::as_str), Some("done"), "{names:?}");
    }
    // What the followers saw live, through the restart: one `done` each.
    for (run, f) in runs.iter().zip(followers) {
        let body = f.await.unwrap();
        let names: Vec<String> = sse_events(&body).into_iter().map(|(n, _)| n).collect();
        assert_eq!(end_events(&body), 1, "run {run}, followed: {names:?}");
        assert_eq!(names.last().map(String::as_str), Some("done"), "{names:?}");
    }
    eprintln!("after a 3 s restart: {tally:?} of {RUNS}");
    // Nothing ran twice: no run failed and was taken over from its last
    // checkpoint (its model call in flight asked again).
    assert_eq!(calls.calls(), RUNS, "model calls");
    let _ = a.stop().await;
    let _ = b.stop().await;
}

/// The long outage: Redis stops for 60 s — twice the default store
/// patience (30 s) — while the 30 runs stream on two servers. Every run ends
/// `done` or `failed`, and its event stream (read again once Redis is
/// back, as a follower that reconnects after the end does) ends with
/// exactly one end event matching that status (`done`, or `error`): none silent, none
/// duplicated by a takeover. About 70 s: the one long test of the suite.
#[needs(redis)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sixty_second_redis_outage_ends_every_run_exactly_once() {
    let (mut redis, _calls, a, b, runs) = runs_on_two_servers(RUNS).await;
    // Followers stream every run's events through the outage.
    let followers = follow(&runs, &a, &b);
    tokio::time::sleep(Duration::from_millis(500)).await;
    redis.stop();
    tokio::time::sleep(Duration::from_secs(60)).await;
    redis.restart();

    let mut tally = std::collections::BTreeMap::<String, usize>::new();
    for run in &runs {
        // Over within the patience after Redis is back.
        let mut record = Value::Null;
        for _ in 0..400 {
            record = get_json(&format!("{}/api/runs/{run}", a.url), ALICE).await;
            if matches!(record["status"].as_str(), Some("done" | "failed")) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let status = record["status"].as_str().unwrap_or_default().to_string();
        assert!(matches!(status.as_str(), "done" | "failed"), "{record}");
        // A follower reconnecting after the end gets the whole stream.
        let events = get(&format!("{}/api/runs/{run}/events", b.url), ALICE)
            .await
            .text()
            .await
            .unwrap();
        let names: Vec<String> = sse_events(&events).into_iter().map(|(n, _)| n).collect();
        assert_eq!(end_events(&events), 1, "run {run} ({status}): {names:?}");
        let want = if status == "done" { "done" } else { "error" };
        assert_eq!(names.last().map(String::as_str), Some(want), "{names:?}");
        *tally.entry(status).or_default() += 1;
    }
    // What the followers saw through the outage: never two ends.
    for f in followers {
        let body = f.await.unwrap();
        assert!(end_events(&body) <= 1, "{body}");
    }
    eprintln!("after a 60 s outage: {tally:?}");
    let _ = a.stop().await;
    let _ = b.stop().await;
}
