//! Permission modes through the real binary, a scripted model standing in
//! for a real one: `--mode plan` refuses a write (the model reads why)
//! while a read runs, and the resumed session keeps the mode; `--mode
//! accept-edits` writes without asking while `execute` still waits;
//! `--mode bypass` holds nothing and says so on stderr each turn; `/mode`
//! shows and switches the mode of a piped chat.

use std::path::Path;
use std::process::Output;

use serde_json::json;

use crate::common;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run(dir: &Path, script: serde_json::Value, extra: &[&str], stdin: &str) -> Output {
    common::lc_agent(
        dir,
        &["run", "Change the notes."],
        &script.to_string(),
        extra,
        stdin,
    )
}

/// The session id a run or chat announced on stderr.
fn session_of(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("session "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no session announced: {stderr}"))
        .to_string()
}

/// A write and a command in one turn, then an answer.
fn write_and_run() -> serde_json::Value {
    json!([
        {"tool_calls": [
            {"id": "w", "name": "write_file", "arguments": {"file_path": "/a.txt", "content": "a"}},
            {"id": "e", "name": "execute", "arguments": {"command": "echo ran > ran.txt"}}
        ]},
        {"content": "Done."}
    ])
}

/// [`write_and_run`] in a `repo` folder under `dir` (the shell
/// unconfined), in permission mode `mode`; the output and the folder.
fn write_and_run_in_mode(dir: &Path, mode: &str) -> (Output, std::path::PathBuf) {
    let root = dir.join("repo");
    std::fs::create_dir_all(&root).unwrap();
    let out = run(
        dir,
        write_and_run(),
        &[
            "--mode",
            mode,
            "--root",
            root.to_str().unwrap(),
            "--shell",
            "--sandbox",
            "full",
        ],
        "",
    );
    (out, root)
}

#[test]
fn plan_mode_refuses_a_write_runs_a_read_and_the_resumed_session_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("notes.md"), "draft\n").unwrap();
    let root_arg = root.to_str().unwrap();
    let script = json!([
        {"tool_calls": [
            {"id": "r", "name": "read_file", "arguments": {"file_path": "/notes.md"}},
            {"id": "w", "name": "write_file", "arguments": {"file_path": "/out.md", "content": "x"}}
        ]},
        {"content": "I will propose a plan."}
    ]);
    let out = run(
        dir.path(),
        script,
        &["--mode", "plan", "--root", root_arg],
        "",
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(text(&out.stdout).contains("I will propose a plan."));
    assert!(!root.join("out.md").exists(), "plan mode wrote a file");
    let session = session_of(&stderr);
    let shown = std::process::Command::new(common::built())
        .args(["sessions", "--sessions"])
        .arg(dir.path().join("sessions"))
        .args(["export", &session])
        .output()
        .unwrap();
    let saved = text(&shown.stdout);
    let doc: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(doc["metadata"]["permission_mode"], "plan");
    assert!(saved.contains("draft"), "the read ran: {saved}");
    assert!(
        saved.contains("`write_file` was not run: the session is in plan mode"),
        "the model read the refusal: {saved}"
    );

    // Resumed without --mode: still plan; with --mode: changed, and said.
    let chat = |extra: &[&str], stdin: &str| {
        let mut args = vec!["chat", "--session", session.as_str()];
        args.extend_from_slice(extra);
        common::lc_agent(dir.path(), &args, "[]", &[] as &[&str], stdin)
    };
    let out = chat(&[], "/mode\n/exit\n");
    assert!(
        text(&out.stdout).contains("mode: plan"),
        "{}",
        text(&out.stdout)
    );
    let out = chat(&["--mode", "accept-edits"], "/mode\n/exit\n");
    assert!(text(&out.stdout).contains("mode: accept-edits"));
    assert!(
        text(&out.stderr)
            .contains("note: --mode: the session was in `plan` mode, now `accept-edits`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn accept_edits_writes_without_asking_while_execute_still_waits() {
    let dir = tempfile::tempdir().unwrap();
    let (out, root) = write_and_run_in_mode(dir.path(), "accept-edits");
    let stderr = text(&out.stderr);
    // stdin ended while `execute` waited: exit 3; the write ran unasked.
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("waits for approval"), "{stderr}");
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a");
    assert!(!root.join("ran.txt").exists(), "execute ran unasked");
}

#[test]
fn bypass_holds_nothing_and_warns_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let (out, root) = write_and_run_in_mode(dir.path(), "bypass");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: bypass mode: no tool call asks for approval"),
        "{stderr}"
    );
    assert!(root.join("a.txt").exists());
    assert!(root.join("ran.txt").exists());
}

#[test]
fn slash_mode_shows_switches_and_refuses_an_unknown_mode() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::lc_agent(
        dir.path(),
        &["chat"],
        "[]",
        &[] as &[&str],
        "/mode\n/mode accept-edits\n/mode yolo\n/mode bypass\n/exit\n",
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines.iter().any(|l| l.starts_with("mode: default")),
        "{stdout}"
    );
    assert!(lines.iter().any(|l| l.contains("/mode plan")), "{stdout}");
    assert!(
        lines.iter().any(|l| l.starts_with("mode: accept-edits")),
        "{stdout}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("mode: bypass")),
        "{stdout}"
    );
    assert!(
        stderr.contains("error: unknown permission mode `yolo`"),
        "{stderr}"
    );
    assert!(stderr.contains("warning: bypass mode"), "{stderr}");
}

/// Issue 49 item 5: a call refused in plan mode is seen in `exec --json`
/// like any call's result: a `tool_call` item, `failed`, with the
/// refusal the model read.
#[test]
fn a_call_refused_in_plan_mode_is_an_item_of_exec_json() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!([
        {"tool_calls": [
            {"id": "w", "name": "write_file", "arguments": {"file_path": "/out.md", "content": "x"}}
        ]},
        {"content": "I will propose a plan."}
    ]);
    let out = common::lc_agent(
        dir.path(),
        &["exec", "--json", "--mode", "plan", "Write it."],
        &script.to_string(),
        &[] as &[&str],
        "",
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let refused = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "item.completed" && e["item"]["call_id"] == "w")
        .unwrap_or_else(|| panic!("the refused call is not in the stream: {stdout}"));
    let item = &refused["item"];
    assert_eq!(item["type"], "tool_call", "{item}");
    assert_eq!(item["tool"], "write_file", "{item}");
    assert_eq!(item["status"], "failed", "{item}");
    assert!(
        item["result"]
            .as_str()
            .is_some_and(|r| r.contains("the session is in plan mode")),
        "{item}"
    );
}
