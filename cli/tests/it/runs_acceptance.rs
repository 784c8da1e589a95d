//! Durable runs, acceptance (issue 24), against real processes: two
//! `lc-agent serve` on one redis-server started here, background runs over
//! many sessions with a scripted model that takes time per turn, and
//! `kill -9` of one server mid-way. Every run ends `done`, no model call
//! runs twice (counted per run's question in each server's `--record`
//! cassette), every session holds its turns in order, and an SSE client
//! attached to the killed server reconnects to the other with
//! `Last-Event-ID` and sees every event exactly once.
//!
//! The issue asks for 100 runs over 20 sessions: that is what runs here
//! (`LC_AGENT_ACCEPTANCE_SESSIONS` / `_RUNS` scale it).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lc_agent_test_support::needs;
use lc_agent_test_support::poll;
use lc_agent_test_support::serve::{serve_command, Served};
use lc_agent_test_support::sse;
use lc_agent_test_support::RedisServer;
use serde_json::{json, Value};

use crate::common;

fn serve(dir: &std::path::Path, name: &str, redis: &str, delay_ms: u64) -> Served {
    let script = dir.join("script.json");
    std::fs::write(
        &script,
        json!([{"content": "answer", "delay_ms": delay_ms}]).to_string(),
    )
    .unwrap();
    let mut command = serve_command(common::built());
    command
        .arg("--script")
        .arg(&script)
        .args(["--redis", redis, "--run-lease", "2", "--record"])
        .arg(dir.join(format!("{name}.jsonl")));
    Served::start(command)
}

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The question of each model call a cassette recorded, counted.
fn calls(cassette: &std::path::Path, counts: &mut HashMap<String, usize>) {
    let Ok(text) = std::fs::read_to_string(cassette) else {
        return;
    };
    for line in text.lines() {
        let Ok(exchange) = serde_json::from_str::<Value>(line) else {
            continue; // a line cut by the kill
        };
        let question = exchange["request"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "human")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string();
        *counts.entry(question).or_default() += 1;
    }
}

/// Posts a background run of `text`, switching to the live server when
/// the other is gone; a 409 names the session's run (a try whose answer
/// was lost with the killed server), which is then the one to follow.
async fn submit(
    http: &reqwest::Client,
    bases: &[String],
    at: &mut usize,
    sid: &str,
    text: &str,
) -> String {
    loop {
        let r = http
            .post(format!("{}/api/sessions/{sid}/runs", bases[*at]))
            .json(&json!({"content": text, "background": true}))
            .send()
            .await;
        match r {
            Ok(r) if r.status() == 202 => {
                return r.json::<Value>().await.unwrap()["id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            }
            Ok(r) if r.status() == 409 => {
                let body: Value = r.json().await.unwrap();
                match body["error"]["run"].as_str() {
                    Some(run) => return run.to_string(),
                    None => panic!("409 without a run: {body}"),
                }
            }
            Ok(r) if r.status() == 429 => tokio::time::sleep(Duration::from_millis(200)).await,
            Ok(r) => panic!("{}: {}", r.status(), r.text().await.unwrap()),
            Err(_) => *at = 1,
        }
    }
}

/// The run's end: `Some(run)` done, `None` when its server died before
/// saving its input (to be sent again; nothing of it ran). Asks the other
/// server once this one is gone; 60 s at most.
async fn wait_done(
    http: &reqwest::Client,
    bases: &[String],
    at: &mut usize,
    run: &str,
) -> Option<Value> {
    let tries = poll::tries_in(Duration::from_secs(60));
    let now_at = AtomicUsize::new(*at);
    let now_at = &now_at;
    let ended = poll::until(&format!("run {run} ends"), tries, || async move {
        let url = format!("{}/api/runs/{run}", bases[now_at.load(Ordering::SeqCst)]);
        let Ok(r) = http.get(&url).send().await else {
            now_at.store(1, Ordering::SeqCst);
            return Err(format!("{url} unreachable"));
        };
        let Ok(record) = r.json::<Value>().await else {
            now_at.store(1, Ordering::SeqCst); // cut off by the kill
            return Err(format!("{url} cut off"));
        };
        match record["status"]
            .as_str()
            .unwrap_or_else(|| panic!("not a run: {record}"))
        {
            "done" => Ok(Some(record)),
            "failed" if record["error"].as_str().unwrap().contains("send it again") => Ok(None),
            "failed" | "cancelled" => panic!("a run did not end done: {record}"),
            _ => Err(record.to_string()),
        }
    })
    .await;
    *at = now_at.load(Ordering::SeqCst);
    ended
}

/// Reads SSE from `r` into `out` (id, event) until the stream ends or
/// breaks; whether it ended with `done`.
async fn read_sse(
    r: reqwest::Response,
    out: &mut Vec<(u64, String)>,
    mut on_event: impl FnMut(&str, &Value),
) -> bool {
    let mut done = false;
    sse::read(r, |event| {
        let Some(id) = event.id else { return true };
        on_event(&event.name, &event.data);
        out.push((id, event.name.clone()));
        done = event.name == "done";
        !done
    })
    .await;
    done
}

#[needs(redis)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_kill_9_one_mid_way_and_every_run_ends_done_exactly_once() {
    let redis = RedisServer::start();
    let sessions = env_count("LC_AGENT_ACCEPTANCE_SESSIONS", 20);
    let per_session = env_count("LC_AGENT_ACCEPTANCE_RUNS", 5);
    let dir = tempfile::tempdir().unwrap();
    let (da, db) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&da).unwrap();
    std::fs::create_dir_all(&db).unwrap();
    let mut a = serve(&da, "a", &redis.url(), 400);
    let b = serve(&db, "b", &redis.url(), 400);
    let bases = vec![a.url().to_string(), b.url().to_string()];
    let http = reqwest::Client::new();

    let mut ids = Vec::new();
    for i in 0..sessions + 1 {
        let r = http
            .post(format!("{}/api/sessions", bases[i % 2]))
            .json(&json!({"name": format!("s{i}")}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        ids.push(
            r.json::<Value>().await.unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let watched = ids.pop().unwrap();

    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut clients = Vec::new();
    for (i, sid) in ids.iter().cloned().enumerate() {
        let (http, bases, done) = (http.clone(), bases.clone(), done.clone());
        clients.push(tokio::spawn(async move {
            let mut at = i % 2;
            let mut runs = Vec::new();
            for k in 0..per_session {
                let text = format!("s{i}-r{k}");
                let run = loop {
                    let run = submit(&http, &bases, &mut at, &sid, &text).await;
                    if wait_done(&http, &bases, &mut at, &run).await.is_some() {
                        break run;
                    }
                };
                done.fetch_add(1, Ordering::SeqCst);
                runs.push(run);
            }
            runs
        }));
    }
    // Mid-way: a client follows a run's events on server A, and A is
    // killed while the run's model call is in flight.
    let total = sessions * per_session;
    while done.load(Ordering::SeqCst) < total * 2 / 5 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut at = 0;
    let run = submit(&http, &bases, &mut at, &watched, "watched").await;
    let r = http
        .get(format!("{}/api/runs/{run}/events", a.url()))
        .send()
        .await
        .unwrap();
    let mut seen = Vec::new();
    let mut killed_at = None;
    let ended = read_sse(r, &mut seen, |name, data| {
        if killed_at.is_none() && name == "node_added" && data["kind"] == "chat" {
            let _ = a.child().kill(); // SIGKILL
            killed_at = Some(done.load(Ordering::SeqCst));
        }
    })
    .await;
    assert!(
        !ended,
        "the stream from the killed server cannot have ended with done"
    );
    let killed_at = killed_at.expect("the watched run's model call began");
    let last = seen.last().map_or(0, |e| e.0);
    let again = http
        .get(format!("{}/api/runs/{run}/events", b.url()))
        .header("Last-Event-ID", last.to_string())
        .send()
        .await
        .unwrap();
    assert!(
        read_sse(again, &mut seen, |_, _| {}).await,
        "the reconnect ends with done"
    );
    let seqs: Vec<u64> = seen.iter().map(|e| e.0).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "every event exactly once: {seen:?}"
    );

    let mut all_runs = Vec::new();
    for c in clients {
        all_runs.extend(c.await.unwrap());
    }
    let elapsed = started.elapsed();
    assert_eq!(all_runs.len(), total);
    // Every run done (asked of the live server).
    let mut taken_over = 0;
    for run in &all_runs {
        let r: Value = http
            .get(format!("{}/api/runs/{run}", b.url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(r["status"], "done", "{r}");
        assert_eq!(r["answer"], "answer");
        if r["attempts"].as_u64().unwrap() > 1 {
            taken_over += 1;
        }
    }
    // No finished model call ran twice. The one exception is the node in
    // flight on A when it was killed (README: what a kill loses): a call
    // whose answer A had, but whose node A had not checkpointed yet, runs
    // again on B, which took its run over. So: no question twice on one
    // server, and one on each only for runs B took over.
    let (mut on_a, mut on_b) = (HashMap::new(), HashMap::new());
    calls(&da.join("a.jsonl"), &mut on_a);
    calls(&db.join("b.jsonl"), &mut on_b);
    let mut counts = HashMap::new();
    let mut repeated = Vec::new();
    for i in 0..sessions {
        for k in 0..per_session {
            let q = format!("s{i}-r{k}");
            let (x, y) = (
                on_a.get(&q).copied().unwrap_or(0),
                on_b.get(&q).copied().unwrap_or(0),
            );
            assert!(x <= 1 && y <= 1, "model calls for {q}: {x} on A, {y} on B");
            assert!(x + y >= 1, "no model call for {q}");
            if x + y == 2 {
                repeated.push(q.clone());
            }
            counts.insert(q, 1);
        }
    }
    assert!(
        repeated.len() <= taken_over,
        "{repeated:?} ran on both servers, but B took over only {taken_over} runs"
    );
    counts.insert(
        "watched".to_string(),
        on_a.get("watched").copied().unwrap_or(0) + on_b.get("watched").copied().unwrap_or(0),
    );
    assert_eq!(counts.get("watched"), Some(&1));
    // No session lost or torn: its turns, in order, each answered.
    for (i, sid) in ids.iter().enumerate() {
        let s: Value = http
            .get(format!("{}/api/sessions/{sid}", b.url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let turns: Vec<(String, String)> = s["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] != "system")
            .map(|m| {
                (
                    m["role"].as_str().unwrap().to_string(),
                    m["content"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let want: Vec<(String, String)> = (0..per_session)
            .flat_map(|k| {
                [
                    ("human".to_string(), format!("s{i}-r{k}")),
                    ("ai".to_string(), "answer".to_string()),
                ]
            })
            .collect();
        assert_eq!(turns, want, "session {sid}");
    }
    eprintln!(
        "{total} runs over {sessions} sessions in {:.1} s; server A killed after {killed_at} done; {taken_over} runs taken over by B; {} calls in flight at the kill ran again on B",
        elapsed.as_secs_f64(),
        repeated.len()
    );
    drop(b);
}
