//! `lc-agent run` as users run it: the real binary, a scripted model
//! (`--script`, offline), a directory, approvals answered on stdin or with
//! `--yes`, the session saved where `lc-agent sessions` finds it.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `lc-agent <command> --script <script> --sessions <dir>/sessions
/// <extra>` with this stdin, offline.
fn lc_agent(
    dir: &std::path::Path,
    command: &[&str],
    script: serde_json::Value,
    extra: &[&str],
    stdin: &str,
) -> Output {
    let script_path = dir.join(format!("{}-script.json", command[0]));
    std::fs::write(&script_path, script.to_string()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(command)
        .arg("--script")
        .arg(&script_path)
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .args(extra)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        // `--memory` keeps its store under the home directory.
        .env("LC_AGENT_HOME", dir.join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn run(dir: &std::path::Path, script: serde_json::Value, extra: &[&str], stdin: &str) -> Output {
    lc_agent(
        dir,
        &["run", "Write the greeting file."],
        script,
        extra,
        stdin,
    )
}

fn script() -> serde_json::Value {
    serde_json::json!([
        {"tool_calls": [{"id": "c1", "name": "write_file",
            "arguments": {"file_path": "/hello.txt", "content": "hello\n"}}]},
        {"content": "Wrote /hello.txt."}
    ])
}

fn sessions_list(dir: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["sessions", "--root"])
        .arg(dir.join("sessions"))
        .arg("list")
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_task_runs_in_a_directory_and_the_answer_is_the_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = run(
        dir.path(),
        script(),
        &["--root", work.to_str().unwrap()],
        "",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.lines().last(), Some("Wrote /hello.txt."));
    assert_eq!(
        stdout.matches("Wrote /hello.txt.").count(),
        1,
        "streamed once: {stdout}"
    );
    assert!(stderr.contains("write_file ok ("), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(work.join("hello.txt")).unwrap(),
        "hello\n"
    );
    assert!(sessions_list(dir.path()).contains("Write the greeting file."));
}

#[test]
fn approvals_are_asked_on_stdin_and_a_closed_stdin_keeps_the_call_pending() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent.toml");
    std::fs::write(
        &agent,
        "[models.main]\nmodel = \"scripted\"\n[interrupt_on]\nwrite_file = [\"approve\", \"reject\"]\n",
    )
    .unwrap();
    let agent = agent.to_str().unwrap();

    // Approved on stdin.
    let out = run(dir.path(), script(), &["--agent", agent], "y\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("approve write_file"), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().last(),
        Some("Wrote /hello.txt.")
    );

    // Rejected: the model reads the rejection and answers.
    let rejected = serde_json::json!([
        script()[0].clone(),
        {"content": "Understood, I did not write it."}
    ]);
    let out = run(dir.path(), rejected, &["--agent", agent], "n\n");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().last(),
        Some("Understood, I did not write it.")
    );

    // No answer at all: exit 3, the session saved with the pending call.
    let out = run(dir.path(), script(), &["--agent", agent], "");
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("waits for approval"), "{stderr}");
    assert!(stderr.contains("saved"), "{stderr}");

    // --yes approves without asking.
    let out = run(dir.path(), script(), &["--agent", agent, "--yes"], "");
    assert!(out.status.success());
    assert_eq!(
        sessions_list(dir.path())
            .matches("Write the greeting file.")
            .count(),
        4
    );
}

#[test]
fn bad_usage_exits_2_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), serde_json::json!({"not": "a list"}), &[], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a script"));
}

fn chat(dir: &std::path::Path, script: serde_json::Value, extra: &[&str], stdin: &str) -> Output {
    lc_agent(dir, &["chat"], script, extra, stdin)
}

#[test]
fn chat_answers_each_line_and_resumes_a_saved_session() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent.json");
    std::fs::write(
        &agent,
        r#"{"name": "notes", "models": {"main": {"model": "scripted"}}}"#,
    )
    .unwrap();
    let first = chat(
        dir.path(),
        serde_json::json!([
            {"tool_calls": [{"id": "c1", "name": "write_file",
                "arguments": {"file_path": "/todo.md", "content": "buy milk"}}]},
            {"content": "Noted."},
            {"content": "You have one note."}
        ]),
        &["--agent", agent.to_str().unwrap()],
        "Note: buy milk\nHow many notes?\n/exit\n",
    );
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&first.stdout)
            .lines()
            .collect::<Vec<_>>(),
        ["Noted.", "You have one note."]
    );
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("session "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_string();

    // Resume: the stored blueprint rebuilds the agent; the files and the
    // conversation are there.
    let second = chat(
        dir.path(),
        serde_json::json!([
            {"tool_calls": [{"id": "c2", "name": "read_file", "arguments": {"file_path": "/todo.md"}}]},
            {"content": "It says: buy milk."}
        ]),
        &["--session", &id],
        "What does the note say?\n",
    );
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert!(stderr.contains("read_file ok"), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&second.stdout).lines().last(),
        Some("It says: buy milk.")
    );
    let shown = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["sessions", "--root"])
        .arg(dir.path().join("sessions"))
        .args(["show", &id])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("[human] Note: buy milk"), "{shown}");
    assert!(shown.contains("[ai] It says: buy milk."), "{shown}");
}

/// The tool results of the session a run saved (from its `session <id> saved` line).
fn saved_tool_results(dir: &std::path::Path, out: &Output, user: &str) -> Vec<String> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("session ")?.strip_suffix(" saved"))
        .unwrap_or_else(|| panic!("no saved session in {stderr}"));
    let export = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["sessions", "--user", user, "--root"])
        .arg(dir.join("sessions"))
        .args(["export", id])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&export.stdout).unwrap();
    json["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["outputs"]["role"] == "tool")
        .map(|n| n["outputs"]["content"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn memory_follows_the_user_across_runs_and_never_another_user() {
    let dir = tempfile::tempdir().unwrap();
    let remember = serde_json::json!([
        {"tool_calls": [{"id": "m1", "name": "remember",
            "arguments": {"text": "The user's favourite colour is teal"}}]},
        {"content": "Noted."}
    ]);
    let out = run(dir.path(), remember, &["--memory", "--user", "alice"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored = std::fs::read_to_string(dir.path().join("home/memory/entries.jsonl")).unwrap();
    assert!(
        stored.contains(
            r#""user":"alice","kind":"fact","text":"The user's favourite colour is teal""#
        ),
        "{stored}"
    );
    assert!(
        stored.contains(
            r#""kind":"turn","text":"User: Write the greeting file.\nAssistant: Noted.""#
        ),
        "{stored}"
    );

    let recall = serde_json::json!([
        {"tool_calls": [{"id": "r1", "name": "recall", "arguments": {"query": "favourite colour"}}]},
        {"content": "Teal."}
    ]);
    // Another run of alice recalls it; bob's run does not.
    let out = run(
        dir.path(),
        recall.clone(),
        &["--memory", "--user", "alice"],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = saved_tool_results(dir.path(), &out, "alice");
    assert!(
        results[0].contains("The user's favourite colour is teal"),
        "{results:?}"
    );
    let out = run(dir.path(), recall, &["--memory", "--user", "bob"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        saved_tool_results(dir.path(), &out, "bob"),
        ["No memories match."]
    );
}
