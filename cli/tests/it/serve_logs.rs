//! `lc-agent serve`'s logs, from the real process (issue 21 item 8): one
//! access line per request with its request id, route, status, duration,
//! user and session; a failed run logged with its cause (the model that
//! cannot be reached) while the client gets no address; `--log-format
//! json`; `RUST_LOG` filters.

use std::time::Duration;

use lc_agent_test_support::free_port;
use lc_agent_test_support::serve::{serve_command, Served};
use serde_json::{json, Value};

use crate::common;

/// How long a test waits for a log line.
const LOG_WAIT: Duration = Duration::from_secs(5);

fn serve(dir: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> Served {
    let mut command = serve_command(common::built());
    command
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .args(extra)
        .envs(env.iter().copied());
    Served::start(command)
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
        .post(format!("{}/api/sessions", server.url()))
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

    let lines = server.wait_for("req-create-1", LOG_WAIT);
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
        .post(format!("{}/v1/chat/completions", server.url()))
        .header("x-request-id", "req-run-2")
        .json(&json!({"session": id, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 502);
    let body = r.text().await.unwrap();
    assert!(!body.contains(&port.to_string()), "{body}");
    let lines = server.wait_for("the run failed", LOG_WAIT);
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
    let lines = server.wait_for("req-run-2", LOG_WAIT);
    let run_line = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["span"]["id"] == "req-run-2" && v["target"] == "lc_agent_server::access")
        .unwrap_or_else(|| panic!("no access line for the run: {lines:#?}"));
    assert_eq!(run_line["status"], 502);
    assert_eq!(run_line["session"], id.as_str());
    // A token in a query never reaches the log.
    let _ = http
        .get(format!("{}/api/sessions?token=very-secret", server.url()))
        .send()
        .await
        .unwrap();
    let lines = server.wait_for("\"path\":\"/api/sessions\"", LOG_WAIT);
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
            .get(format!("{}/v1/models", server.url()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let lines = loud.wait_for("GET /v1/models 200", LOG_WAIT);
    let line = lines
        .iter()
        .find(|l| l.contains("GET /v1/models 200"))
        .unwrap_or_else(|| panic!("no access line: {lines:#?}"));
    assert!(line.contains("lc_agent_server::access"), "{line}");
    assert!(line.contains("route=/v1/models"), "{line}");
    std::thread::sleep(Duration::from_millis(300));
    let quiet_lines = quiet.lines();
    assert!(
        quiet_lines.iter().all(|l| !l.contains("/v1/models")),
        "RUST_LOG=error keeps access lines out: {quiet_lines:#?}"
    );
}
