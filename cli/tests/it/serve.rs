//! `lc-agent serve` as a process: an independent OpenAI client (the
//! `openai` Python package) streaming and not, a graceful shutdown, and
//! two servers on one Redis serving the same sessions without a lost update.

use std::process::Command;

use lc_agent_test_support::needs;
use lc_agent_test_support::python;
use lc_agent_test_support::serve::{serve_command, Served};
use lc_agent_test_support::RedisServer;
use serde_json::{json, Value};

use crate::common;

fn serve(dir: &std::path::Path, script: &Value, extra: &[&str], env: &[(&str, &str)]) -> Served {
    let script_path = dir.join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let mut command = serve_command(common::built());
    command
        .arg("--script")
        .arg(&script_path)
        .args(extra)
        .envs(env.iter().copied());
    Served::start(command)
}

#[needs(python_openai)]
#[test]
fn the_openai_python_client_streaming_and_not() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!([
        {"tool_calls": [{"id": "c1", "name": "write_file", "arguments": {"file_path": "/hello.txt", "content": "hello"}}]},
        {"content": "Wrote /hello.txt."},
        {"content": "Nothing else to do."}
    ]);
    let sessions = dir.path().join("sessions");
    let server = serve(
        dir.path(),
        &script,
        &["--sessions", sessions.to_str().unwrap()],
        &[("LC_AGENT_TOKEN", "alice:sk-test")],
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/openai_client.py");
    let got = python::run_json(script.as_ref(), &[server.url(), "sk-test"]);
    assert_eq!(got["models"], json!(["lc-agent"]));
    assert_eq!(got["first"], "Wrote /hello.txt.");
    assert_eq!(got["first_finish"], "stop");
    assert_eq!(got["streamed"], "Nothing else to do.");
    assert_eq!(got["stream_finish"], "stop");
    assert_eq!(got["bad_status"], 400);
    // The session is alice's, on disk, with the file the agent wrote.
    let id = got["session"].as_str().unwrap();
    let saved = crate::common::saved_document(&sessions.join("alice"), id);
    assert!(saved.contains("/hello.txt") && saved.contains("And now?"));
}

#[test]
fn sigterm_stops_the_server_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut server = serve(
        dir.path(),
        &json!([{"content": "hi"}]),
        &["--sessions", sessions.to_str().unwrap()],
        &[],
    );
    let status = Command::new("kill")
        .args(["-TERM", &server.child().id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = server.child().wait().unwrap();
    assert!(exit.success(), "{exit:?}");
}

#[test]
fn a_non_loopback_address_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.json");
    std::fs::write(&script, "[]").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["serve", "--addr", "0.0.0.0:0", "--script"])
        .arg(&script)
        .env_remove("LC_AGENT_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("LC_AGENT_TOKEN"));
}

#[needs(redis)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_redis_100_runs_20_sessions_no_lost_update() {
    let redis = RedisServer::start();
    let url = redis.url();
    let dir = tempfile::tempdir().unwrap();
    let script = json!([{"content": "ok"}]);
    let a = serve(dir.path(), &script, &["--redis", &url], &[]);
    let b = serve(dir.path(), &script, &["--redis", &url], &[]);
    let http = reqwest::Client::new();
    let mut ids = Vec::new();
    for i in 0..20 {
        let base = if i % 2 == 0 { a.url() } else { b.url() };
        let r: Value = http
            .post(format!("{base}/api/sessions"))
            .json(&json!({"name": format!("s{i}")}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        ids.push(r["id"].as_str().unwrap().to_string());
    }
    // 100 runs, 5 per session, spread over both servers, all at once.
    let mut runs = Vec::new();
    for n in 0..100 {
        let base = if n % 2 == 0 {
            a.url().to_string()
        } else {
            b.url().to_string()
        };
        let id = ids[n % 20].clone();
        let http = http.clone();
        runs.push(tokio::spawn(async move {
            let r = http
                .post(format!("{base}/api/sessions/{id}/messages"))
                .json(&json!({"content": format!("run {n}")}))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let body = r.text().await.unwrap();
            let last = body.rsplit("event: ").next().unwrap_or("").to_string();
            (id, n, status, last)
        }));
    }
    let mut done: std::collections::HashMap<String, Vec<String>> = Default::default();
    let (mut ok, mut conflicts, mut steered) = (0, 0, 0);
    for run in runs {
        let (id, n, status, last) = run.await.unwrap();
        match status {
            200 if last.starts_with("done") => {
                ok += 1;
                done.entry(id).or_default().push(format!("run {n}"));
            }
            // Refused before anything was written (claimed here, or a
            // stale copy), or refused at the end (its turn is not saved).
            200 if last.starts_with("error") && last.contains("409") => conflicts += 1,
            409 => conflicts += 1,
            // Sent while the session's run went on: it joined that run.
            202 => steered += 1,
            other => panic!("run {n}: status {other}, last event {last}"),
        }
    }
    assert_eq!(ok + conflicts + steered, 100);
    assert!(ok >= 20, "{ok} runs succeeded");
    // 0 lost updates, 0 corrupted sessions: every successful run's message
    // is in its session, and every session loads (from either server).
    for (i, id) in ids.iter().enumerate() {
        let base = if i % 2 == 0 { b.url() } else { a.url() };
        let r = http
            .get(format!("{base}/api/sessions/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let session: Value = r.json().await.unwrap();
        let humans: Vec<String> = session["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "human")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect();
        for expected in done.get(id).into_iter().flatten() {
            assert!(
                humans.contains(expected),
                "lost update: {expected} not in session {id}: {humans:?}"
            );
        }
    }
    eprintln!("{ok} runs saved, {conflicts} refused with 409, {steered} joined a run");

    // kill -9 one server with runs in flight; the other serves every session.
    let mut a = a;
    let inflight: Vec<_> = ids
        .iter()
        .map(|id| {
            let http = http.clone();
            let url = format!("{}/api/sessions/{id}/messages", a.url());
            tokio::spawn(async move {
                let _ = http
                    .post(url)
                    .json(&json!({"content": "during the kill"}))
                    .send()
                    .await;
            })
        })
        .collect();
    a.child().kill().unwrap();
    a.child().wait().unwrap();
    for t in inflight {
        let _ = t.await;
    }
    for id in &ids {
        let r = http
            .post(format!("{}/api/sessions/{id}/messages", b.url()))
            .json(&json!({"content": "after the kill"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let body = r.text().await.unwrap();
        assert!(body.contains("event: done"), "{body}");
    }
}

/// `lc-agent serve --mcp FILE`: the MCP servers' tools are every
/// session's, listed by `/v1/tools` and run by `/v1/tools/execute` (here
/// `lc-agent mcp` itself over stdio, its names prefixed where they clash
/// with the agent's own file tools).
#[tokio::test]
async fn serve_offers_the_tools_of_mcp_servers() {
    let dir = tempfile::tempdir().unwrap();
    let served = tempfile::tempdir().unwrap();
    std::fs::write(served.path().join("far.txt"), "from the MCP server\n").unwrap();
    let mcp_json = dir.path().join("mcp.json");
    std::fs::write(
        &mcp_json,
        json!({"mcpServers": {"files": {"command": env!("CARGO_BIN_EXE_lc-agent"),
            "args": ["mcp", "--root", served.path()], "sandbox": "full"}}})
        .to_string(),
    )
    .unwrap();
    let sessions = dir.path().join("sessions");
    let server = serve(
        dir.path(),
        &json!([{"content": "hi"}]),
        &[
            "--sessions",
            sessions.to_str().unwrap(),
            "--mcp",
            mcp_json.to_str().unwrap(),
        ],
        &[],
    );
    let http = reqwest::Client::new();
    let listed: Value = http
        .get(format!("{}/v1/tools", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"files_read_file"), "{names:?}");
    assert!(names.contains(&"read_file"), "{names:?}");

    let ran: Value = http
        .post(format!("{}/v1/tools/execute", server.url()))
        .json(
            &json!({"tool_calls": [{"id": "c1", "type": "function", "function":
            {"name": "files_read_file", "arguments": "{\"file_path\": \"/far.txt\"}"}}]}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let result = &ran["results"][0];
    assert_eq!(result["success"], json!(true), "{ran}");
    assert!(
        result["result"]
            .as_str()
            .unwrap()
            .contains("from the MCP server"),
        "{ran}"
    );
}

#[test]
fn a_small_window_is_said_once_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut command = serve_command(common::built());
    command
        .args(["--context-window", "2048", "--sessions"])
        .arg(&sessions)
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .env("OPENAI_MODEL", "small-model")
        .env("OPENAI_API_KEY", "sk-a-test-key-of-some-length")
        .env("LC_AGENT_HOME", dir.path().join("home"));
    let server = Served::start(command);
    let lines = server.wait_for("note:", std::time::Duration::from_secs(20));
    let notes: Vec<&String> = lines.iter().filter(|l| l.contains("runs lean")).collect();
    assert_eq!(notes.len(), 1, "{lines:?}");
    assert!(notes[0].contains("2048 tokens"), "{lines:?}");
}

/// `lc-agent serve --mcp FILE` with a server that asks for input during a
/// call (the official Python SDK's `ctx.elicit`): the session's run holds
/// the request (`pending_input`), the API's answer reaches the server, and
/// the call goes on with the values.
#[needs(python_mcp)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_asks_the_sessions_person_for_an_mcp_servers_input() {
    let dir = tempfile::tempdir().unwrap();
    let (_sdk, url) = python::mcp_sdk_server(None);
    let mcp_json = dir.path().join("mcp.json");
    std::fs::write(
        &mcp_json,
        json!({"mcpServers": {"booking": {"url": url}}}).to_string(),
    )
    .unwrap();
    let sessions = dir.path().join("sessions");
    let server = serve(
        dir.path(),
        &json!([
            {"tool_calls": [{"id": "b1", "name": "book_table", "arguments": {"day": "Friday"}}]},
            {"content": "Booked."}
        ]),
        &[
            "--sessions",
            sessions.to_str().unwrap(),
            "--mcp",
            mcp_json.to_str().unwrap(),
        ],
        &[],
    );
    let base = server.url();
    let http = reqwest::Client::new();
    let session = send_json(&http, &format!("{base}/api/sessions"), json!({})).await;
    let id = session["id"].as_str().unwrap().to_string();
    let run = send_json(
        &http,
        &format!("{base}/api/sessions/{id}/runs"),
        json!({"content": "Book a table.", "background": true}),
    )
    .await;
    let run = run["id"].as_str().unwrap().to_string();
    let view_url = format!("{base}/api/sessions/{id}");
    let asked = lc_agent_test_support::poll::until(
        "a request for input",
        lc_agent_test_support::poll::tries_in(std::time::Duration::from_secs(30)),
        || async {
            let view = read_json(&http, &view_url).await;
            view["pending_input"]
                .get(0)
                .cloned()
                .ok_or_else(|| view["pending_input"].to_string())
        },
    )
    .await;
    assert_eq!(asked["server"], "booking");
    assert_eq!(asked["message"], "Book a table for Friday?");
    let r = http
        .post(format!(
            "{base}/api/sessions/{id}/input/{}",
            asked["id"].as_str().unwrap()
        ))
        .json(&json!({"action": "accept", "content": {"name": "Bo"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let tries = lc_agent_test_support::poll::tries_in(std::time::Duration::from_secs(30));
    lc_agent_test_support::poll::run_status(&http, base, &run, None, "done", tries).await;
    let view = read_json(&http, &view_url).await;
    let result = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str::<Value>(m["content"].as_str().unwrap()).unwrap());
    assert_eq!(
        result,
        Some(json!({"action": "accept", "declared": true,
               "content": {"name": "Bo", "party": 2, "room": "inside", "vegetarian": false}}))
    );
}

async fn read_json(http: &reqwest::Client, url: &str) -> Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

async fn send_json(http: &reqwest::Client, url: &str, body: Value) -> Value {
    http.post(url)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Issue 49 item 5: `serve` takes `run`'s `--skills`, `--memory`,
/// `--line-tools` and `--fetch-url`: the agents offer the tools, and new
/// sessions record them in their blueprint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_takes_skills_memory_line_tools_and_fetch_url() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let skills = dir.path().join("skills");
    std::fs::create_dir_all(skills.join("greet")).unwrap();
    std::fs::write(
        skills.join("greet/SKILL.md"),
        "---\nname: greet\ndescription: Greets people.\n---\nSay hello.\n",
    )
    .unwrap();
    let server = serve(
        dir.path(),
        &json!([{"content": "Hello."}]),
        &[
            "--sessions",
            sessions.to_str().unwrap(),
            "--skills",
            skills.to_str().unwrap(),
            "--memory",
            "--line-tools",
            "--fetch-url",
            "example.com",
        ],
        &[
            ("LC_AGENT_TOKEN", "alice:sk-test"),
            ("LC_AGENT_HOME", dir.path().join("home").to_str().unwrap()),
        ],
    );
    let client = reqwest::Client::new();
    let tools: Value = client
        .get(format!("{}/v1/tools", server.url()))
        .bearer_auth("sk-test")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{tools}"))
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    for tool in ["insert_lines", "replace_lines", "delete_lines", "fetch_url"] {
        assert!(names.contains(&tool), "{tool} missing: {names:?}");
    }
    let answer: Value = client
        .post(format!("{}/v1/chat/completions", server.url()))
        .bearer_auth("sk-test")
        .json(&json!({"messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = answer["session"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_string();
    let alice = sessions.join("alice");
    let saved = tokio::task::spawn_blocking(move || crate::common::saved_document(&alice, &id))
        .await
        .unwrap();
    let saved: Value = serde_json::from_str(&saved).unwrap();
    let spec = &saved["metadata"]["agent_spec"];
    assert_eq!(spec["line_tools"], true, "{spec}");
    assert!(spec["memory"].is_object(), "{spec}");
    assert!(
        spec["skills"]["dir"]
            .as_str()
            .is_some_and(|d| d.ends_with("skills")),
        "{spec}"
    );
    assert!(
        spec["fetch_url"].to_string().contains("example.com"),
        "{spec}"
    );
}
