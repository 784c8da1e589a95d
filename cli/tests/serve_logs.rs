//! `lc-agent serve`'s logs, from the real process (issue 21 item 8): one
//! access line per request with its request id, route, status, duration,
//! user and session; a failed run logged with its cause (the model that
//! cannot be reached) while the client gets no address; `--log-format
//! json`; `RUST_LOG` filters.
#![allow(clippy::unwrap_used, unreachable_pub)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

struct Server {
    child: Child,
    url: String,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// The stderr lines so far, once one of them contains `needle` (5 s).
    fn wait_for(&self, needle: &str) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let lines = self.lines.lock().unwrap().clone();
            if lines.iter().any(|l| l.contains(needle)) || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn serve(dir: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lc-agent"));
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--sessions"])
        .arg(dir.join("sessions"))
        .args(extra)
        .env_remove("OPENAI_API_KEY")
        .env_remove("LC_AGENT_TOKEN")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let url = first
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_string();
    let kept = Arc::new(Mutex::new(Vec::new()));
    let sink = kept.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    Server {
        child,
        url,
        lines: kept,
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn json_access_lines_and_a_failed_run_with_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    // A model nobody answers for.
    let port = free_port();
    let model_url = format!("http://127.0.0.1:{port}/v1");
    let server = serve(
        dir.path(),
        &["--log-format", "json", "--model", "m"],
        &[("OPENAI_BASE_URL", &model_url)],
    );
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{}/api/sessions", server.url))
        .header("x-request-id", "req-create-1")
        .json(&json!({"name": "logged"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["x-request-id"], "req-create-1");
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    let lines = server.wait_for("req-create-1");
    let access: Vec<Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == "lc_agent_server::access")
        .collect();
    let line = access
        .iter()
        .find(|v| v["span"]["id"] == "req-create-1")
        .unwrap_or_else(|| panic!("no access line for the request: {lines:#?}"));
    assert_eq!(line["method"], "POST");
    assert_eq!(line["route"], "/api/sessions");
    assert_eq!(line["status"], 201);
    assert_eq!(line["user"], "default");
    assert!(line["duration_ms"].as_f64().is_some(), "{line}");
    assert_eq!(line["level"], "INFO");

    // A run whose model cannot be reached: 502 for the client, without
    // the address; the log has the cause, under the request's id.
    let r = http
        .post(format!("{}/v1/chat/completions", server.url))
        .header("x-request-id", "req-run-2")
        .json(&json!({"session": id, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 502);
    let body = r.text().await.unwrap();
    assert!(!body.contains(&port.to_string()), "{body}");
    let lines = server.wait_for("the run failed");
    let failure = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["message"] == "the run failed")
        .unwrap_or_else(|| panic!("no failure line: {lines:#?}"));
    assert_eq!(failure["level"], "ERROR");
    assert_eq!(failure["session"], id.as_str());
    assert!(
        failure["error"]
            .as_str()
            .unwrap()
            .contains(&port.to_string()),
        "the operator sees where the model was: {failure}"
    );
    let lines = server.wait_for("req-run-2");
    let run_line = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["span"]["id"] == "req-run-2" && v["target"] == "lc_agent_server::access")
        .unwrap_or_else(|| panic!("no access line for the run: {lines:#?}"));
    assert_eq!(run_line["status"], 502);
    assert_eq!(run_line["session"], id.as_str());
    // A token in a query never reaches the log.
    let _ = http
        .get(format!("{}/api/sessions?token=very-secret", server.url))
        .send()
        .await
        .unwrap();
    let lines = server.wait_for("\"path\":\"/api/sessions\"");
    assert!(lines.iter().all(|l| !l.contains("very-secret")));
}

#[tokio::test]
async fn rust_log_filters_and_text_is_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, json!([{"text": "ok"}]).to_string()).unwrap();
    let script = script.display().to_string();
    let quiet = serve(
        dir.path(),
        &["--script", &script],
        &[("RUST_LOG", "lc_agent_server=error")],
    );
    let loud = serve(dir.path(), &["--script", &script], &[]);
    let http = reqwest::Client::new();
    for server in [&quiet, &loud] {
        let r = http
            .get(format!("{}/v1/models", server.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let lines = loud.wait_for("GET /v1/models 200");
    let line = lines
        .iter()
        .find(|l| l.contains("GET /v1/models 200"))
        .unwrap_or_else(|| panic!("no access line: {lines:#?}"));
    assert!(line.contains("lc_agent_server::access"), "{line}");
    assert!(line.contains("route=/v1/models"), "{line}");
    std::thread::sleep(Duration::from_millis(300));
    let quiet_lines = quiet.lines.lock().unwrap().clone();
    assert!(
        quiet_lines.iter().all(|l| !l.contains("/v1/models")),
        "RUST_LOG=error keeps access lines out: {quiet_lines:#?}"
    );
}
