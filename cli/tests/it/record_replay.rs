//! `--record FILE` / `--replay FILE` on `run`, `chat` and `serve`, offline:
//! a scripted model recorded, then the cassette replayed with no model at
//! all — the same output and the same saved session (ids and times
//! masked: see `lc_agent_test_support::masked`) — and the errors that name the
//! flag and the file. The same with the real model server is in
//! `tests/record_replay.rs` of the core crate.

use std::path::{Path, PathBuf};
use std::process::Output;

use lc_agent_test_support::serve::{serve_command, Served};
use serde_json::{json, Value};

use lc_agent_test_support::masked;

use crate::common;

/// Runs `lc-agent <args> --sessions <sessions>` offline (no `OPENAI_*`)
/// with this stdin.
fn lc_agent(dir: &Path, sessions: &str, args: &[&str], stdin: &str) -> Output {
    let mut command = common::offline();
    command
        .args(args)
        .arg("--sessions")
        .arg(dir.join(sessions))
        .current_dir(dir)
        .env("LC_AGENT_HOME", dir.join("home"));
    common::with_stdin(&mut command, stdin)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn script(dir: &Path) -> PathBuf {
    let path = dir.join("script.json");
    let turns = json!([
        {"tool_calls": [{"id": "c1", "name": "write_file",
            "arguments": {"file_path": "/hello.txt", "content": "hello\n"}}]},
        {"content": "Wrote /hello.txt."},
        {"content": "It says hello."}
    ]);
    std::fs::write(&path, turns.to_string()).unwrap();
    path
}

/// The one session saved under `dir/sessions`, as saved.
fn saved_session(dir: &Path, sessions: &str) -> String {
    let mut all = common::saved_documents(&dir.join(sessions));
    assert_eq!(all.len(), 1, "{all:?}");
    all.remove(0).1
}

fn cassette_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_recorded_run_replays_offline_with_the_same_output_and_session() {
    let dir = tempfile::tempdir().unwrap();
    let script = script(dir.path());
    let task = "Write the greeting file.";
    let recorded = lc_agent(
        dir.path(),
        "recorded",
        &[
            "run",
            task,
            "--script",
            script.to_str().unwrap(),
            "--record",
            "run.jsonl",
        ],
        "",
    );
    assert!(recorded.status.success(), "{}", text(&recorded.stderr));
    let lines = cassette_lines(&dir.path().join("run.jsonl"));
    assert_eq!(lines.len(), 2, "a tool call, then the answer");
    assert!(lines.iter().all(|l| l["format"] == "lc-agent-cassette/1"));
    assert_eq!(lines[0]["model_name"], "scripted");
    assert_eq!(lines[0]["mode"], "stream");
    assert_eq!(lines[0]["response"]["tool_calls"][0]["id"], "c1");
    assert_eq!(
        lines[1]["deltas"],
        json!([{"text": "Wrote "}, {"text": "/hello.txt."}])
    );

    // No script, no server, no key: the cassette answers.
    let replayed = lc_agent(
        dir.path(),
        "replayed",
        &["run", task, "--replay", "run.jsonl"],
        "",
    );
    assert!(replayed.status.success(), "{}", text(&replayed.stderr));
    assert_eq!(text(&replayed.stdout), text(&recorded.stdout));
    assert_eq!(text(&replayed.stdout).trim_end(), "Wrote /hello.txt.");
    let (a, b) = (
        saved_session(dir.path(), "recorded"),
        saved_session(dir.path(), "replayed"),
    );
    assert_ne!(a, b, "ids and times differ from run to run");
    assert_eq!(masked(&b), masked(&a));
    assert!(
        b.contains(r#""model":"scripted""#),
        "the recorded model's name: {b}"
    );
}

#[test]
fn a_recorded_chat_replays_and_a_turn_more_exhausts_the_cassette() {
    let dir = tempfile::tempdir().unwrap();
    let script = script(dir.path());
    let turns = "Write the greeting file.\nWhat does it say?\n";
    let recorded = lc_agent(
        dir.path(),
        "recorded",
        &[
            "chat",
            "--script",
            script.to_str().unwrap(),
            "--record",
            "chat.jsonl",
        ],
        turns,
    );
    assert!(recorded.status.success(), "{}", text(&recorded.stderr));
    assert_eq!(cassette_lines(&dir.path().join("chat.jsonl")).len(), 3);

    let replayed = lc_agent(
        dir.path(),
        "replayed",
        &["chat", "--replay", "chat.jsonl"],
        turns,
    );
    assert!(replayed.status.success(), "{}", text(&replayed.stderr));
    assert_eq!(text(&replayed.stdout), text(&recorded.stdout));
    assert_eq!(
        masked(&saved_session(dir.path(), "replayed")),
        masked(&saved_session(dir.path(), "recorded"))
    );

    let more = lc_agent(
        dir.path(),
        "more",
        &["chat", "--replay", "chat.jsonl"],
        &format!("{turns}And then?\n"),
    );
    let stderr = text(&more.stderr);
    assert!(
        stderr.contains("the cassette chat.jsonl has no more recorded answers (it recorded 3)"),
        "{stderr}"
    );
}

#[test]
fn a_request_that_differs_fails_naming_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    let script = script(dir.path());
    let recorded = lc_agent(
        dir.path(),
        "recorded",
        &[
            "run",
            "Write the greeting file.",
            "--script",
            script.to_str().unwrap(),
            "--record",
            "run.jsonl",
        ],
        "",
    );
    assert!(recorded.status.success(), "{}", text(&recorded.stderr));

    let other = lc_agent(
        dir.path(),
        "other",
        &["run", "Write the farewell file.", "--replay", "run.jsonl"],
        "",
    );
    assert_eq!(other.status.code(), Some(1));
    let stderr = text(&other.stderr);
    assert!(
        stderr.contains("the request differs from the one recorded in the cassette run.jsonl (answer 1 of 2; compared: messages, tools, tool_choice)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"(human).content: recorded "Write the greeting file.", now "Write the farewell file.""#),
        "{stderr}"
    );

    // Compared on less, the same cassette answers the other task.
    let loose = lc_agent(
        dir.path(),
        "loose",
        &[
            "run",
            "Write the farewell file.",
            "--replay",
            "run.jsonl",
            "--replay-match",
            "tools,tool_choice",
        ],
        "",
    );
    assert!(loose.status.success(), "{}", text(&loose.stderr));
    assert_eq!(text(&loose.stdout).trim_end(), "Wrote /hello.txt.");
}

#[test]
fn a_missing_file_or_not_a_cassette_is_a_usage_error_naming_the_flag_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = lc_agent(
        dir.path(),
        "s",
        &["run", "x", "--replay", "missing.jsonl"],
        "",
    );
    assert_eq!(missing.status.code(), Some(2));
    let stderr = text(&missing.stderr);
    assert!(
        stderr.contains("--replay: cannot read the cassette missing.jsonl"),
        "{stderr}"
    );

    std::fs::write(dir.path().join("script.json"), "[]").unwrap();
    let wrong = lc_agent(
        dir.path(),
        "s",
        &["run", "x", "--replay", "script.json"],
        "",
    );
    assert_eq!(wrong.status.code(), Some(2));
    let stderr = text(&wrong.stderr);
    assert!(
        stderr.contains("--replay: script.json is not a cassette (line 1: no \"format\": \"lc-agent-cassette/1\")"),
        "{stderr}"
    );

    let unwritable = lc_agent(
        dir.path(),
        "s",
        &[
            "run",
            "x",
            "--script",
            "script.json",
            "--record",
            "no/such/dir/c.jsonl",
        ],
        "",
    );
    assert_eq!(unwritable.status.code(), Some(2));
    let stderr = text(&unwritable.stderr);
    assert!(
        stderr.contains("--record: cannot write the cassette no/such/dir/c.jsonl"),
        "{stderr}"
    );
}

fn serve(dir: &Path, sessions: &str, model: &[&str]) -> Served {
    let mut command = serve_command(common::built());
    command
        .arg("--sessions")
        .arg(dir.join(sessions))
        .args(model)
        .current_dir(dir);
    Served::start(command)
}

async fn ask(server: &Served, text: &str) -> Value {
    let http = reqwest::Client::new();
    let models: Value = http
        .get(format!("{}/v1/models", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let response = http
        .post(format!("{}/v1/chat/completions", server.url()))
        .json(&json!({"model": models["data"][0]["id"],
                      "messages": [{"role": "user", "content": text}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

#[tokio::test]
async fn serve_records_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let script = script(dir.path());
    let recorded = {
        let server = serve(
            dir.path(),
            "recorded",
            &[
                "--script",
                script.to_str().unwrap(),
                "--record",
                "serve.jsonl",
            ],
        );
        ask(&server, "Write the greeting file.").await
    };
    assert_eq!(cassette_lines(&dir.path().join("serve.jsonl")).len(), 2);

    let server = serve(dir.path(), "replayed", &["--replay", "serve.jsonl"]);
    let replayed = ask(&server, "Write the greeting file.").await;
    let answer = |v: &Value| v["choices"][0]["message"]["content"].clone();
    assert_eq!(answer(&replayed), answer(&recorded));
    assert_eq!(answer(&replayed), "Wrote /hello.txt.");
}
