//! Load figures of the server: requests per second and p50/p99 latency of
//! `POST /v1/tools/execute` and of a chat turn through
//! `POST /v1/chat/completions` (the scripted instant model, so the figures
//! are the server's own cost: routing, JSON, building the agent, the run's
//! record and queue, saving the session after every node), at 1, 16 and 64
//! concurrent clients; background runs (`"background": true`, then their
//! events) at 1 and 16 clients, with the queue's own latency (`queue_ms`
//! of each run: from its input saved to a server taking it); then the
//! memory an idle session holds in the server; then what a turn costs as
//! its session grows: the median turn at 1, 100 and 1,000 turns of one
//! session, with the session cache (the default) and without it, and the
//! bytes the process writes per turn (files and sockets: with incremental
//! saves, proportional to the turn, not to the session).
//!
//! Needs nothing installed: the server runs in this process on a loopback
//! port, with sessions in a temporary JSON list; the clients (reqwest) share
//! the machine with it, as a load generator on the same box would.
//!
//! Run: `cargo run --release -p lc-agent-server --example load [SECONDS_PER_STEP]`
//! (set `LC_AGENT_LOAD_REDIS=redis://127.0.0.1:6379` to keep the sessions in
//! a running Redis instead: no fsync per save; `LC_AGENT_LOAD_ONLY=turns`
//! runs only the turn costs (`LC_AGENT_LOAD_TURNS=10000`: a longer session),
//! `LC_AGENT_LOAD_ONLY=runs` only the direct and
//! the background runs at 1 and 16 clients)

use std::sync::Arc;
use std::time::{Duration, Instant};

use lc_agent::ListConfig;
use lc_agent::{ScriptedChatModel, Turn};
use lc_agent_server::{serve, AppState, ServerConfig};
use serde_json::{json, Value};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// `clients` loops posting `body` to `url` for `secs`; prints the figures.
async fn load(label: &str, url: &str, body: Value, clients: usize, secs: f64) {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (http, url, body) = (http.clone(), url.to_string(), body.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut failures = Vec::new();
            while Instant::now() < deadline {
                let t = Instant::now();
                match http.post(&url).json(&body).send().await {
                    Ok(r) if r.status().is_success() => match r.bytes().await {
                        Ok(_) => latencies.push(t.elapsed()),
                        Err(e) => failures.push(format!("the answer's body: {}", chain(&e))),
                    },
                    Ok(r) => {
                        let status = r.status();
                        let body = r.text().await.unwrap_or_default();
                        failures.push(format!("{status}: {body}"));
                    }
                    Err(e) => failures.push(chain(&e)),
                }
            }
            (latencies, failures)
        }));
    }
    let started = Instant::now();
    let mut all = Vec::new();
    let mut failed = Vec::new();
    for t in tasks {
        let (l, f) = t.await.expect("client task");
        all.extend(l);
        failed.extend(f);
    }
    let failures = failed.len();
    report_failures(label, &failed);
    let elapsed = started.elapsed().as_secs_f64();
    all.sort();
    println!(
        "{label:<28} {clients:>3} clients  {:>8.0} req/s  p50 {:>8.3} ms  p99 {:>8.3} ms  ({} ok, {failures} failed)",
        all.len() as f64 / elapsed,
        percentile(&all, 0.50).as_secs_f64() * 1000.0,
        percentile(&all, 0.99).as_secs_f64() * 1000.0,
        all.len(),
    );
}

/// An error and its causes, on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// Prints what failed (the first five, and how many of each kind): a
/// failure under load is a finding, not a figure.
fn report_failures(label: &str, failed: &[String]) {
    for what in failed.iter().take(5) {
        eprintln!("  {label}: failed: {what}");
    }
    if failed.len() > 5 {
        eprintln!("  {label}: ... and {} more", failed.len() - 5);
    }
}

/// The median of `turns`' latencies in `range` (1-based turn numbers).
fn median(turns: &[Duration], range: std::ops::RangeInclusive<usize>) -> f64 {
    let mut some: Vec<Duration> = turns[range.start() - 1..*range.end()].to_vec();
    some.sort();
    percentile(&some, 0.5).as_secs_f64() * 1000.0
}

/// One session, 1,000 turns (or `LC_AGENT_LOAD_TURNS`) in a row through
/// `/v1/chat/completions`; the median turn around turn 1, 100, 1,000 (and
/// the last).
async fn turn_costs(store: &ListConfig, cache: usize) -> Result<(), Box<dyn std::error::Error>> {
    // `LC_AGENT_LOAD_TURNS=10000` measures a longer session.
    let turns_n: usize = std::env::var("LC_AGENT_LOAD_TURNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n| *n >= 1000)
        .unwrap_or(1000);
    let model = Arc::new(ScriptedChatModel::new([Turn::text("ok")]).cycled());
    let state = AppState::new(
        ServerConfig::new(model)
            .sessions(store.clone())
            .session_cache(cache),
    )?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(serve(listener, state, std::future::pending()));
    let http = reqwest::Client::new();
    let url = format!("{base}/v1/chat/completions");
    let mut session: Option<String> = None;
    let mut turns = Vec::with_capacity(turns_n);
    let mut written = Vec::with_capacity(turns_n);
    for i in 0..turns_n {
        let mut body =
            json!({"messages": [{"role": "user", "content": format!("turn {i}: hello")}]});
        if let Some(id) = &session {
            body["session"] = json!(id);
        }
        let t = Instant::now();
        let w = wchar();
        let answer: Value = http.post(&url).json(&body).send().await?.json().await?;
        turns.push(t.elapsed());
        written.push(wchar().saturating_sub(w));
        if session.is_none() {
            session = answer["session"].as_str().map(str::to_string);
        }
    }
    let (first, hundred, thousand) = (
        median(&turns, 1..=10),
        median(&turns, 96..=105),
        median(&turns, 991..=1000),
    );
    println!(
        "turn cost, session cache {cache:>3}: turn 1 {first:>7.3} ms  turn 100 {hundred:>7.3} ms  turn 1000 {thousand:>7.3} ms  (1000 / 1: {:.2}x)",
        thousand / first
    );
    if turns_n > 1000 {
        let last = median(&turns, turns_n - 9..=turns_n);
        println!(
            "turn cost, session cache {cache:>3}: turn {turns_n} {last:>7.3} ms  ({turns_n} / 1: {:.2}x)",
            last / first
        );
    }
    let mean_kib = |r: std::ops::Range<usize>| {
        let n = r.len() as f64;
        written[r].iter().sum::<u64>() as f64 / n / 1024.0
    };
    println!(
        "bytes written per turn (files and sockets, /proc/self/io wchar, mean of 10): turn 1 {:.1} KiB  turn 100 {:.1} KiB  turn 1000 {:.1} KiB  turn {turns_n} {:.1} KiB",
        mean_kib(0..10),
        mean_kib(95..105),
        mean_kib(990..1000),
        mean_kib(turns_n - 10..turns_n)
    );
    Ok(())
}

/// Bytes this process passed to `write` and friends so far (files and
/// sockets), from `/proc/self/io` (0 where there is none).
fn wchar() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("wchar:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// `clients` loops of background runs for `secs`; prints runs/s, the
/// end-to-end latency and the queue's own latency.
async fn background(
    base: &str,
    clients: usize,
    secs: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let http = reqwest::Client::new();
    let mut sessions = Vec::new();
    for _ in 0..clients {
        let session: Value = http
            .post(format!("{base}/api/sessions"))
            .json(&json!({}))
            .send()
            .await?
            .json()
            .await?;
        sessions.push(session["id"].as_str().unwrap_or_default().to_string());
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for sid in sessions {
        let (http, base) = (http.clone(), base.to_string());
        tasks.push(tokio::spawn(async move {
            let (mut total, mut queue, mut failures) = (Vec::new(), Vec::new(), Vec::new());
            while Instant::now() < deadline {
                let t = Instant::now();
                let posted = http
                    .post(format!("{base}/api/sessions/{sid}/runs"))
                    .json(&json!({"content": "hello", "background": true}))
                    .send()
                    .await;
                let posted = match posted {
                    Ok(posted) if posted.status() == 202 => posted,
                    Ok(posted) => {
                        let status = posted.status();
                        let body = posted.text().await.unwrap_or_default();
                        failures.push(format!("posting a run: {status}: {body}"));
                        continue;
                    }
                    Err(e) => {
                        failures.push(format!("posting a run: {}", chain(&e)));
                        continue;
                    }
                };
                let run = match posted.json::<Value>().await {
                    Ok(run) => run,
                    Err(e) => {
                        failures.push(format!("the posted run: {}", chain(&e)));
                        continue;
                    }
                };
                let id = run["id"].as_str().unwrap_or_default().to_string();
                let events = match http
                    .get(format!("{base}/api/runs/{id}/events"))
                    .send()
                    .await
                {
                    Ok(r) if r.status() == 200 => match r.text().await {
                        Ok(text) if text.contains("event: done") => Ok(()),
                        Ok(text) => Err(format!("run {id}'s events end without done: {text}")),
                        Err(e) => Err(format!("run {id}'s events: {}", chain(&e))),
                    },
                    Ok(r) => Err(format!("run {id}'s events: {}", r.status())),
                    Err(e) => Err(format!("run {id}'s events: {}", chain(&e))),
                };
                match events {
                    Ok(()) => total.push(t.elapsed()),
                    Err(what) => failures.push(what),
                }
                if let Ok(r) = http.get(format!("{base}/api/runs/{id}")).send().await
                    && let Ok(run) = r.json::<Value>().await
                    && let Some(ms) = run["queue_ms"].as_f64()
                {
                    queue.push(Duration::from_secs_f64(ms / 1000.0));
                }
            }
            (total, queue, failures)
        }));
    }
    let (mut total, mut queue, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for t in tasks {
        let (a, b, f) = t.await?;
        total.extend(a);
        queue.extend(b);
        failed.extend(f);
    }
    let failures = failed.len();
    report_failures("background runs", &failed);
    let elapsed = started.elapsed().as_secs_f64();
    total.sort();
    queue.sort();
    println!(
        "{:<28} {clients:>3} clients  {:>8.0} runs/s p50 {:>8.3} ms  p99 {:>8.3} ms  queue p50 {:>6.3} ms  p99 {:>6.3} ms  ({} ok, {failures} failed)",
        "background runs (202 + SSE)",
        total.len() as f64 / elapsed,
        percentile(&total, 0.50).as_secs_f64() * 1000.0,
        percentile(&total, 0.99).as_secs_f64() * 1000.0,
        percentile(&queue, 0.50).as_secs_f64() * 1000.0,
        percentile(&queue, 0.99).as_secs_f64() * 1000.0,
        total.len(),
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The server's warnings and errors on stderr (a 500's cause is in its
    // log only); `RUST_LOG` chooses others.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let dir = tempfile::tempdir()?;
    if std::env::var("LC_AGENT_LOAD_ONLY").is_ok_and(|v| v == "turns") {
        let store = match std::env::var("LC_AGENT_LOAD_REDIS") {
            Ok(url) => ListConfig::redis(url),
            Err(_) => ListConfig::json(dir.path().join("turns")),
        };
        println!("sessions: {store:?}");
        // `LC_AGENT_LOAD_CACHE=64` measures with the session cache only.
        let caches: Vec<usize> = match std::env::var("LC_AGENT_LOAD_CACHE") {
            Ok(n) => n.split(',').filter_map(|c| c.trim().parse().ok()).collect(),
            Err(_) => vec![64, 0],
        };
        for cache in caches {
            turn_costs(&store, cache).await?;
        }
        return Ok(());
    }
    let only_runs = std::env::var("LC_AGENT_LOAD_ONLY").is_ok_and(|v| v == "runs");
    // A scripted stand-in model: every turn answers "ok" at once.
    let model = Arc::new(ScriptedChatModel::new([Turn::text("ok")]).cycled());
    let store = match std::env::var("LC_AGENT_LOAD_REDIS") {
        Ok(url) => ListConfig::redis(url),
        Err(_) => ListConfig::json(dir.path().join("sessions")),
    };
    println!("sessions: {store:?}");
    let state = AppState::new(ServerConfig::new(model).sessions(store))?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(serve(listener, state.clone(), std::future::pending()));

    let execute = json!({"tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "write_file", "arguments": "{\"file_path\": \"/a.md\", \"content\": \"hi\"}"}},
        {"id": "b", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    ]});
    let chat = json!({"model": "lc-agent", "messages": [{"role": "user", "content": "hello"}]});
    println!(
        "lc-agent-server load ({secs} s per step, {} cores)",
        std::thread::available_parallelism()?.get()
    );
    if only_runs {
        // The queue's figures next to direct runs, in the same process.
        for clients in [1, 16] {
            load(
                "POST /v1/chat/completions",
                &format!("{base}/v1/chat/completions"),
                chat.clone(),
                clients,
                secs,
            )
            .await;
            background(&base, clients, secs).await?;
        }
        return Ok(());
    }
    for clients in [1, 16, 64] {
        load(
            "POST /v1/tools/execute",
            &format!("{base}/v1/tools/execute"),
            execute.clone(),
            clients,
            secs,
        )
        .await;
    }
    for clients in [1, 16, 64] {
        load(
            "POST /v1/chat/completions",
            &format!("{base}/v1/chat/completions"),
            chat.clone(),
            clients,
            secs,
        )
        .await;
    }

    // Background runs: each client has a session of its own, posts a run
    // with `background: true` (202), follows its events to the end, and
    // reads the record's `queue_ms` (from its input saved to a server
    // taking it: the queue's own latency).
    for clients in [1, 16] {
        background(&base, clients, secs).await?;
    }

    // Idle sessions live in the store, not in the server: create 1000 and
    // see how much the process grew.
    let http = reqwest::Client::new();
    let before = rss_kib();
    for _ in 0..1000 {
        http.post(format!("{base}/api/sessions"))
            .json(&json!({}))
            .send()
            .await?
            .bytes()
            .await?;
    }
    let after = rss_kib();
    println!(
        "memory per idle session: {:.2} KiB (RSS {before} KiB -> {after} KiB over 1000 new sessions; the session cache keeps at most 64 parsed sessions)",
        after.saturating_sub(before) as f64 / 1000.0
    );

    let turns = match std::env::var("LC_AGENT_LOAD_REDIS") {
        Ok(url) => ListConfig::redis(url).prefix("lc_agent_load_turns"),
        Err(_) => ListConfig::json(dir.path().join("turns")),
    };
    for cache in [64, 0] {
        turn_costs(&turns, cache).await?;
    }
    Ok(())
}
