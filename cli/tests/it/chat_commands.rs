//! The chat's slash commands, piped (one line of stdin per turn or
//! command, their output on stdout) with a scripted model: `/todos`,
//! `/files`, `/model`, `/approve`, `/undo`, `/rewind`, `/sessions`,
//! `/resume`, `/new`. A command that reached the model would use up a scripted turn.

use std::path::Path;
use std::process::Output;

use serde_json::json;

use crate::common;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `lc-agent chat --script <script> --sessions <dir>/sessions <extra>`
/// with this stdin.
fn chat(dir: &Path, script: serde_json::Value, extra: &[&str], stdin: &str) -> Output {
    common::lc_agent(dir, &["chat"], &script.to_string(), extra, stdin)
}

/// `lc-agent sessions <args>` of `dir`'s sessions.
fn sessions(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(common::built())
        .arg("sessions")
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// The one session id `stderr` announced (`session <id> ...`).
fn announced(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("session "))
        .map(|rest| rest.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

/// The todo and file a first turn writes, then its answer.
fn writing_script() -> serde_json::Value {
    json!([
        {"tool_calls": [
            {"id": "c1", "name": "write_todos", "arguments": {"todos": [
                {"content": "Write the note", "status": "in_progress"},
                {"content": "Read it again", "status": "pending"}]}},
            {"id": "c2", "name": "write_file", "arguments": {"file_path": "/note.md", "content": "hello\nthere\n"}}
        ]},
        {"content": "Done."},
        {"content": "Second answer."}
    ])
}

#[test]
fn todos_files_model_and_approve_say_what_the_session_holds() {
    let dir = tempfile::tempdir().unwrap();
    let out = chat(
        dir.path(),
        writing_script(),
        &[],
        "/todos\n/files\nWrite a note\n/todos\n/files\n/model\n/model gpt-4o\n\
         /approve write_file\n/approve\n/approve all\n/approve ask\n/exit\n",
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let expected = [
        "no todos",
        "the session has no files of its own",
        "Done.",
        "[~] Write the note",
        "[ ] Read it again",
        "/note.md  (2 lines)",
        "model: scripted",
        "a scripted model (--script) has no other models",
        "approvals: approved without asking: write_file; other calls are asked",
        "approvals: approved without asking: write_file; other calls are asked",
        "approvals: every call is approved without asking",
        "approvals: every call that needs approval is asked",
    ];
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.is_empty()).collect();
    for want in expected {
        assert!(lines.contains(&want), "`{want}` missing:\n{stdout}");
    }
    // In order: the commands before the turn saw nothing yet.
    let at = |want: &str| lines.iter().position(|l| *l == want).unwrap();
    assert!(at("no todos") < at("Done.") && at("Done.") < at("[~] Write the note"));
}

#[test]
fn undo_sends_the_next_message_where_the_last_one_was() {
    let dir = tempfile::tempdir().unwrap();
    let out = chat(
        dir.path(),
        writing_script(),
        &[],
        "Write a note\n/undo\nSomething else\n/exit\n",
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("undone: Write a note"), "{stdout}");
    // The note it wrote is taken back with it, and the chat says so.
    assert!(stdout.contains("files restored: /note.md"), "{stdout}");
    // The conversation the session goes on with: only the new turn.
    let id = &announced(&stderr)[0];
    let shown = sessions(dir.path(), &["show", id]);
    let convo: Vec<&str> = shown
        .lines()
        .filter(|l| l.starts_with("[human]") || l.starts_with("[ai]"))
        .collect();
    assert_eq!(
        convo,
        ["[human] Something else", "[ai] Second answer."],
        "{shown}"
    );
    // The undone turn stays in the graph; the session's files no longer
    // hold its note.
    let saved = sessions(dir.path(), &["export", id]);
    assert!(saved.contains("Write a note") && saved.contains("Done."));
    let files = serde_json::from_str::<serde_json::Value>(&saved).unwrap()["files"].clone();
    assert!(files.get("/note.md").is_none(), "{files}");
    let nothing = chat(dir.path(), writing_script(), &[], "/undo\n/exit\n");
    assert!(text(&nothing.stdout).contains("nothing to undo"));
}

#[test]
fn sessions_resume_and_new_switch_between_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let answer = json!([{"content": "Answer from the script."}]);
    let first = chat(dir.path(), answer.clone(), &[], "Hello there\n");
    assert!(first.status.success(), "{}", text(&first.stderr));
    let a = announced(&text(&first.stderr))[0].clone();

    let out = chat(
        dir.path(),
        answer,
        &[],
        &format!("/sessions\n/resume\n/resume {}\nMore please\n/new\nSomething fresh\n/sessions\n/resume nosuch\n/exit\n", &a[..8]),
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The chat's own new session, /resume's and /new's.
    let ids = announced(&stderr);
    assert_eq!(ids.len(), 3, "{stderr}");
    assert_eq!(ids[1], a, "{stderr}");
    let b = &ids[2];
    assert!(
        stderr.contains("no session saved: the model never answered"),
        "{stderr}"
    );
    let listings: Vec<&str> = stdout.split("(/resume ID continues one)").collect();
    assert_eq!(listings.len(), 3, "two listings: {stdout}");
    assert!(
        listings[0].contains(&format!("  {}  ", &a[..8])),
        "{stdout}"
    );
    assert!(listings[0].contains("Hello there"), "{stdout}");
    assert!(stdout.contains("give the session: /resume ID"), "{stdout}");
    // The second listing marks the current session.
    assert!(
        listings[1].contains(&format!("* {}  ", &b[..8])),
        "{stdout}"
    );
    assert!(
        listings[1].contains(&format!("  {}  ", &a[..8])),
        "{stdout}"
    );
    assert!(
        stderr.contains("no session of user `default` matches `nosuch`"),
        "{stderr}"
    );
    // /resume continued the first session; /new made a second one.
    let shown = sessions(dir.path(), &["show", &a]);
    assert!(
        shown.contains("[human] Hello there") && shown.contains("[human] More please"),
        "{shown}"
    );
    let shown = sessions(dir.path(), &["show", b]);
    assert!(
        shown.contains("[human] Something fresh") && !shown.contains("Hello there"),
        "{shown}"
    );
    assert!(sessions(dir.path(), &["list"]).contains("1-2 of 2"));
}

#[test]
fn approve_refuses_a_tool_the_agent_does_not_have() {
    let dir = tempfile::tempdir().unwrap();
    let out = chat(
        dir.path(),
        writing_script(),
        &[],
        "/approve nosuchtool\n/approve\n/approve write_file\n/exit\n",
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("error: /approve: the agent has no tool `nosuchtool`"),
        "{stderr}"
    );
    assert!(stderr.contains("write_file"), "names the tools: {stderr}");
    let said: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        said,
        [
            "approvals: every call that needs approval is asked",
            "approvals: approved without asking: write_file; other calls are asked"
        ],
        "{stdout}"
    );
}

#[test]
fn files_under_a_root_lists_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("README.md"), "# Project\n").unwrap();
    let out = chat(
        dir.path(),
        writing_script(),
        &["--root", root.to_str().unwrap()],
        "/files\n/exit\n",
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!stdout.contains("no files"), "{stdout}");
    assert!(stdout.contains("the workspace "), "{stdout}");
    let entries: Vec<&str> = stdout.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(entries, ["  src/", "  README.md"], "{stdout}");
}

/// Three turns on a directory: write a, b; edit a, write c; rewrite b.
fn workspace_script() -> serde_json::Value {
    let write = |id: &str, path: &str, content: &str| json!({"id": id, "name": "write_file", "arguments": {"file_path": path, "content": content, "overwrite": true}});
    json!([
        {"tool_calls": [write("1", "/a.txt", "a1\n"), write("2", "/b.txt", "b1\n")]},
        {"content": "First done."},
        {"tool_calls": [
            {"id": "3", "name": "edit_file", "arguments": {"file_path": "/a.txt", "old_string": "a1", "new_string": "a2"}},
            write("4", "/c.txt", "c2\n")]},
        {"content": "Second done."},
        {"tool_calls": [write("5", "/b.txt", "b3\n")]},
        {"content": "Third done."},
        {"content": "After the rewind."}
    ])
}

#[test]
fn rewind_asks_which_message_and_what_then_restores_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let root_arg = root.to_str().unwrap();
    let out = chat(
        dir.path(),
        workspace_script(),
        &["--root", root_arg, "--yes"],
        // /rewind asks two questions (read from the next lines): to before
        // message 2, the files only; then a user edit of b, and to before
        // message 1 with both.
        "one\ntwo\nthree\n/rewind\n2\nf\n/rewind 1 both\nagain\n/exit\n",
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("  1. one  (changed /a.txt, /b.txt)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  2. two  (changed /a.txt, /c.txt)"),
        "{stdout}"
    );
    assert!(stdout.contains("  3. three  (changed /b.txt)"), "{stdout}");
    assert!(
        stderr.contains("rewind to before which message? (1-3"),
        "{stderr}"
    );
    assert!(
        stdout.contains("files restored: /a.txt, /b.txt, /c.txt"),
        "{stdout}"
    );
    // Files only: the conversation went on after turn three, so `/rewind
    // 1` lists three turns still and the last answer follows "again".
    assert!(
        stdout.contains("conversation: back to before “one”"),
        "{stdout}"
    );
    assert!(stdout.contains("After the rewind."), "{stdout}");
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names.is_empty(),
        "the workspace before message 1: {names:?}"
    );
    // The session goes on from the start: the new message is a root.
    let id = &announced(&stderr)[0];
    let shown = sessions(dir.path(), &["show", id]);
    let convo: Vec<&str> = shown
        .lines()
        .filter(|l| l.starts_with("[human]") || l.starts_with("[ai]"))
        .collect();
    assert_eq!(
        convo,
        ["[human] again", "[ai] After the rewind."],
        "{shown}"
    );
}

#[test]
fn rewind_reports_a_file_changed_outside_the_agent_and_leaves_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let root_arg = root.to_str().unwrap();
    // Two turns; then the user edits b.txt; a new chat resumes the
    // session and rewinds to before message 1.
    let first = chat(
        dir.path(),
        workspace_script(),
        &["--root", root_arg, "--yes"],
        "one\ntwo\n/exit\n",
    );
    assert!(first.status.success(), "{}", text(&first.stderr));
    let id = announced(&text(&first.stderr))[0].clone();
    std::fs::write(root.join("b.txt"), "the user's b\n").unwrap();
    // Resumed where the workspace is (a session's directory is used only
    // inside the current one).
    let out = common::lc_agent_in(
        dir.path(),
        dir.path(),
        &["chat"],
        &workspace_script().to_string(),
        &["--session", &id],
        "/rewind 1 files\n/exit\n",
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("files restored: /a.txt, /c.txt"),
        "{stdout}"
    );
    assert!(
        stdout.contains("files changed outside the agent since, left as they are: /b.txt"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("b.txt")).unwrap(),
        "the user's b\n"
    );
    assert!(!root.join("a.txt").exists() && !root.join("c.txt").exists());
}
