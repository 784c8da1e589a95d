//! `lc-agent runs list|show|cancel` read the runs of a real `lc-agent
//! serve` (JSON sessions directory, scripted model): one run done, one
//! still running; `show --events` into a closed pipe is a quiet success.

use std::process::{Command, Output};
use std::time::Duration;

use lc_agent_test_support::poll;
use lc_agent_test_support::serve::{serve_command, Served};
use serde_json::{json, Value};

use crate::common;

/// `lc-agent runs --sessions <dir>/sessions <args>`.
fn runs(dir: &std::path::Path, args: &[&str]) -> Command {
    let mut command = Command::new(common::built());
    command
        .arg("runs")
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .args(args);
    command
}

fn output(dir: &std::path::Path, args: &[&str]) -> (Output, String, String) {
    let out = runs(dir, args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

/// Waits (30 s at most) until the server says the run is `status`.
async fn wait_status(http: &reqwest::Client, base: &str, run: &str, status: &str) -> Value {
    let tries = poll::tries_in(Duration::from_secs(30));
    poll::run_status(http, base, run, None, status, tries).await
}

/// Starts a run of `text` in the background: its id.
pub(crate) async fn background_run(
    http: &reqwest::Client,
    base: &str,
    session: &str,
    text: &str,
) -> String {
    let r = http
        .post(format!("{base}/api/sessions/{session}/runs"))
        .json(&json!({"content": text, "background": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn runs_list_show_and_cancel_the_runs_of_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        json!([{"content": "Quick."}, {"content": "Slow.", "delay_ms": 60000}]).to_string(),
    )
    .unwrap();
    let mut command = serve_command(common::built());
    command
        .arg("--script")
        .arg(&script)
        .arg("--sessions")
        .arg(dir.path().join("sessions"));
    let served = Served::start(command);
    let base = served.url().to_string();
    let http = reqwest::Client::new();
    let session: Value = http
        .post(format!("{base}/api/sessions"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let session = session["id"].as_str().unwrap().to_string();
    let done = background_run(&http, &base, &session, "First").await;
    wait_status(&http, &base, &done, "done").await;
    let running = background_run(&http, &base, &session, "Second").await;
    wait_status(&http, &base, &running, "running").await;

    // list: newest first, one line each.
    let (out, listed, stderr) = output(dir.path(), &["list"]);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert!(
        lines[0].starts_with(&format!("{running}  running")),
        "{listed}"
    );
    assert!(lines[1].starts_with(&format!("{done}  done")), "{listed}");
    assert!(lines[1].contains(&format!("session {session}")), "{listed}");
    let (_, of_session, _) = output(dir.path(), &["list", "--session", &session, "--limit", "1"]);
    assert_eq!(of_session.lines().count(), 1, "{of_session}");
    let (_, nobody, _) = output(dir.path(), &["--user", "bob", "list"]);
    assert_eq!(nobody.trim(), "no runs");

    // show: the record as JSON, then one event per line.
    let (out, shown, stderr) = output(dir.path(), &["show", &done, "--events"]);
    assert!(out.status.success(), "{stderr}");
    let end = shown.find("\n}\n").expect(&shown) + 3;
    let record: Value = serde_json::from_str(&shown[..end]).unwrap();
    assert_eq!(record["status"], "done", "{record}");
    assert_eq!(record["id"], done.as_str());
    let events: Vec<Value> = shown[end..]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(events.len() >= 2, "{shown}");
    assert!(shown[end..].contains("Quick."), "{shown}");
    // `runs show --events | head`: a quiet success.
    let piped = common::into_closed_pipe(&mut runs(dir.path(), &["show", &done, "--events"]));
    common::assert_quiet_success("runs show --events", &piped);
    let (out, _, stderr) = output(dir.path(), &["show", "nonsense"]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`nonsense` is not a run id"), "{stderr}");

    // cancel: a finished run is refused; a running one stops.
    let (out, _, stderr) = output(dir.path(), &["cancel", &done]);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is over (done)"), "{stderr}");
    let (out, said, stderr) = output(dir.path(), &["cancel", &running]);
    assert!(out.status.success(), "{stderr}");
    assert!(said.contains("cancel requested"), "{said}");
    wait_status(&http, &base, &running, "cancelled").await;
    let (_, listed, _) = output(dir.path(), &["list"]);
    assert!(
        listed.starts_with(&format!("{running}  cancelled")),
        "{listed}"
    );
    drop(served);
}
