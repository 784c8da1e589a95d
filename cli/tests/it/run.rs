//! `lc-agent run` as users run it: the real binary, a scripted model
//! (`--script`, offline), a directory, approvals answered on stdin or with
//! `--yes`, the session saved where `lc-agent sessions` finds it.

use crate::common;

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
    common::lc_agent(dir, command, &script.to_string(), extra, stdin)
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
        .args(["sessions", "--sessions"])
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

    // Edit is not offered for write_file here: asked again, then approved.
    let out = run(
        dir.path(),
        script(),
        &["--agent", agent],
        "e\n{\"file_path\": \"/edited.txt\"}\ny\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("[y/n]"), "{stderr}");
    assert_eq!(stderr.matches("approve write_file").count(), 2, "{stderr}");

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
        5
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
    // The old spelling of --sessions still works, and says so.
    let shown = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["sessions", "--root"])
        .arg(dir.path().join("sessions"))
        .args(["show", &id])
        .output()
        .unwrap();
    let warned = String::from_utf8_lossy(&shown.stderr);
    assert!(warned.contains("is now `--sessions`"), "{warned}");
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("[human] Note: buy milk"), "{shown}");
    assert!(shown.contains("[ai] It says: buy milk."), "{shown}");
}

/// Every saved session's document under `dir/sessions`, joined.
fn saved_sessions(dir: &std::path::Path) -> String {
    common::saved_documents(&dir.join("sessions"))
        .into_iter()
        .map(|(_, text)| text)
        .collect()
}

#[test]
fn skills_are_mounted_and_read_with_read_file() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills/greeting");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(
        skills.join("SKILL.md"),
        "---\nname: greeting\ndescription: How to greet people\n---\nSay SKILL-BODY-HELLO.\n",
    )
    .unwrap();
    let script = serde_json::json!([
        {"tool_calls": [{"id": "c1", "name": "read_file",
            "arguments": {"file_path": "/skills/greeting/SKILL.md"}}]},
        {"content": "Read the greeting skill."}
    ]);
    let skills_dir = dir.path().join("skills");
    let out = run(
        dir.path(),
        script,
        &["--skills", skills_dir.to_str().unwrap()],
        "",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("read_file ok"), "{stderr}");
    assert!(saved_sessions(dir.path()).contains("Say SKILL-BODY-HELLO."));

    let missing = run(dir.path(), script_none(), &["--skills", "/no/such/dir"], "");
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("--skills /no/such/dir: not a directory")
    );
}

fn script_none() -> serde_json::Value {
    serde_json::json!([{"content": "unused"}])
}

/// The saved session file of the one session under `dir/sessions`, once
/// it exists and `ready` holds for its text.
fn saved_session(dir: &std::path::Path, ready: impl Fn(&str) -> bool) -> (String, String) {
    let sessions = dir.join("sessions");
    for _ in 0..600 {
        if let Some(found) = common::saved_documents(&sessions)
            .into_iter()
            .find(|(_, text)| ready(text))
        {
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("no saved session under {}", sessions.display());
}

/// Starts `lc-agent run` in the background (stdin closed).
fn spawn_run(dir: &std::path::Path, script: serde_json::Value) -> std::process::Child {
    let script_path = dir.join("run-script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["run", "Write the greeting file.", "--script"])
        .arg(&script_path)
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The nodes of a saved network and of every sub-network in it, by id.
fn nodes_by_id(saved: &serde_json::Value, into: &mut Vec<(String, serde_json::Value)>) {
    for node in saved["nodes"].as_array().into_iter().flatten() {
        if let Some(id) = node["id"].as_str() {
            into.push((id.to_string(), node.clone()));
        }
        if let Some(inner) = node.get("network") {
            nodes_by_id(inner, into);
        }
    }
}

#[test]
fn ctrl_c_stops_the_run_saves_the_session_and_chat_finishes_it() {
    let dir = tempfile::tempdir().unwrap();
    // The model takes a minute to answer: Ctrl-C comes first.
    let child = spawn_run(
        dir.path(),
        serde_json::json!([{"content": "Too late.", "delay_ms": 60000}]),
    );
    // The first checkpoint (the question) is there once the run started.
    let (id, _) = saved_session(dir.path(), |text| text.contains("Write the greeting file."));
    let (out, stderr) = ctrl_c(child);
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(stderr.contains(&format!("session {id} saved")), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Too late."));

    // The chat node that was stopped had not run; `chat` runs it first.
    let resumed = chat(
        dir.path(),
        serde_json::json!([{"content": "Here it is after all."}]),
        &["--session", &id],
        "/exit\n",
    );
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    assert!(stderr.contains("finishing the interrupted run"), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&resumed.stdout).lines().last(),
        Some("Here it is after all.")
    );
}

#[test]
fn a_run_killed_inside_a_subagent_resumes_without_recomputing_what_ran() {
    let dir = tempfile::tempdir().unwrap();
    // One scripted model serves the main agent and its sub-agent, in turn.
    let mut child = spawn_run(
        dir.path(),
        serde_json::json!([
            {"tool_calls": [{"id": "t1", "name": "task", "arguments":
                {"description": "Write /a.txt", "subagent_type": "general-purpose"}}]},
            {"tool_calls": [{"id": "w1", "name": "write_file", "arguments":
                {"file_path": "/a.txt", "content": "from the sub-agent\n"}}]},
            {"content": "Wrote /a.txt.", "delay_ms": 60000}
        ]),
    );
    // Killed (SIGKILL) while the sub-agent's model thinks, after its
    // write_file was checkpointed.
    let (id, before) = saved_session(dir.path(), |text| {
        text.contains("Successfully wrote to /a.txt")
    });
    child.kill().unwrap();
    child.wait().unwrap();

    let resumed = chat(
        dir.path(),
        serde_json::json!([
            {"content": "Wrote /a.txt."},
            {"content": "The sub-agent wrote /a.txt."}
        ]),
        &["--session", &id],
        "/exit\n",
    );
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    assert!(stderr.contains("finishing the interrupted run"), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&resumed.stdout).lines().last(),
        Some("The sub-agent wrote /a.txt.")
    );

    // Every node that had run before the kill is in the resumed session,
    // unchanged (same id, same output, same timings): nothing ran twice.
    let after = crate::common::saved_document(&dir.path().join("sessions"), &id);
    let (mut old, mut new) = (Vec::new(), Vec::new());
    nodes_by_id(&serde_json::from_str(&before).unwrap(), &mut old);
    nodes_by_id(&serde_json::from_str(&after).unwrap(), &mut new);
    let ran_before: Vec<_> = old
        .iter()
        .filter(|(_, node)| node["invoked"] == serde_json::json!(true))
        .collect();
    assert!(ran_before.len() >= 4, "{before}");
    for (id, node) in ran_before {
        let now = new.iter().find(|(other, _)| other == id);
        assert_eq!(now.map(|(_, n)| n), Some(node), "node {id} changed");
    }
    let writes = new
        .iter()
        .filter(|(_, node)| node["outputs"].to_string().contains("Successfully wrote"))
        .count();
    assert_eq!(writes, 1, "{after}");
    assert!(after.contains("from the sub-agent"), "the file merged back");
}

#[test]
fn an_edited_call_runs_with_the_arguments_typed() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let agent = dir.path().join("agent.toml");
    std::fs::write(
        &agent,
        "[models.main]\nmodel = \"scripted\"\n[interrupt_on]\nwrite_file = [\"approve\", \"edit\", \"reject\", \"respond\"]\n",
    )
    .unwrap();
    let out = run(
        dir.path(),
        script(),
        &[
            "--agent",
            agent.to_str().unwrap(),
            "--root",
            work.to_str().unwrap(),
        ],
        // Not JSON first: asked again.
        "e\nnot json\ne\n{\"file_path\": \"/edited.txt\", \"content\": \"edited\\n\"}\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("[y/e/n/r]"), "{stderr}");
    assert!(stderr.contains("not JSON arguments"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(work.join("edited.txt")).unwrap(),
        "edited\n"
    );
    assert!(!work.join("hello.txt").exists());
}
/// The tool results of the session a run saved (from its `session <id> saved` line).
fn saved_tool_results(dir: &std::path::Path, out: &Output, user: &str) -> Vec<String> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("session ")?.strip_suffix(" saved"))
        .unwrap_or_else(|| panic!("no saved session in {stderr}"));
    let export = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["sessions", "--user", user, "--sessions"])
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

#[test]
fn sessions_list_and_show_tell_tokens_and_cost() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), script(), &[], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sessions = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
            .args(["sessions", "--sessions"])
            .arg(dir.path().join("sessions"))
            .args(args)
            .env("LC_AGENT_HOME", dir.path().join("home"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    // The scripted model reports no usage: an estimate (~), and no price.
    let list = sessions(&["list"]);
    let header = list.lines().next().unwrap();
    assert!(
        header.contains("TOKENS") && header.contains("COST"),
        "{list}"
    );
    let row = list.lines().nth(1).unwrap();
    assert!(row.contains(" ~") && row.contains(" - "), "{list}");
    let id = row.split_whitespace().next().unwrap().to_string();
    let show = sessions(&["show", &id]);
    let usage = show.lines().find(|l| l.starts_with("usage")).expect(&show);
    assert!(
        usage.contains("2 call(s)") && usage.contains("2 estimated"),
        "{show}"
    );
    assert!(usage.contains("no price"), "{show}");

    // A price for it in $LC_AGENT_HOME/prices.toml: a cost.
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    std::fs::write(
        dir.path().join("home").join("prices.toml"),
        "[models.scripted]\ninput = 1000.0\noutput = 1000.0\n",
    )
    .unwrap();
    let list = sessions(&["list"]);
    assert!(list.lines().nth(1).unwrap().contains(" $"), "{list}");
    let show = sessions(&["show", &id]);
    let usage = show.lines().find(|l| l.starts_with("usage")).unwrap();
    assert!(usage.contains('$') && !usage.contains("no price"), "{show}");
}

/// Presses Ctrl-C (SIGINT) in a running `lc-agent run` and waits for it:
/// it exits 130; its output and stderr.
fn ctrl_c(child: std::process::Child) -> (std::process::Output, String) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    (out, stderr)
}

/// Ctrl-C during a shell command ends the command's children too, in the
/// sandbox (the default) and unconfined (`--sandbox full`): no process is
/// left working in the root.
#[lc_agent_test_support::needs(bwrap)]
#[test]
fn ctrl_c_during_a_shell_command_ends_its_children_too() {
    for sandbox in ["workspace-write", "full"] {
        ctrl_c_ends_the_children_of_a_shell_command(sandbox);
    }
}

/// The processes (not zombies) whose working directory is `root`.
fn working_in(root: &std::path::Path) -> Vec<(u32, char)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if std::fs::read_link(entry.path().join("cwd")).ok().as_deref() != Some(root) {
            continue;
        }
        let state = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.chars().next())
            });
        if let Some(state) = state.filter(|s| *s != 'Z') {
            found.push((pid, state));
        }
    }
    found
}

fn ctrl_c_ends_the_children_of_a_shell_command(sandbox: &str) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let script_path = dir.path().join("shell-script.json");
    std::fs::write(
        &script_path,
        serde_json::json!([
            {"tool_calls": [{"id": "c1", "name": "execute",
                "arguments": {"command": "sleep 30 & echo $! > child.pid; wait"}}]},
            {"content": "Slept."}
        ])
        .to_string(),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args([
            "run",
            "Sleep a while.",
            "--shell",
            "--sandbox",
            sandbox,
            "--yes",
            "--root",
        ])
        .arg(&root)
        .arg("--script")
        .arg(&script_path)
        .arg("--sessions")
        .arg(dir.path().join("sessions"))
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The command's child is running once it wrote its pid.
    let pid_file = root.join("child.pid");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if text.trim().parse::<u32>().is_ok() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the command never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!working_in(&root.canonicalize().unwrap()).is_empty());
    let pressed = std::time::Instant::now();
    let (_, stderr) = ctrl_c(child);
    // At once, not when the child's 30 s are over.
    assert!(
        pressed.elapsed() < std::time::Duration::from_secs(10),
        "Ctrl-C took {:?}",
        pressed.elapsed()
    );
    // The `sleep 30` is gone (or a zombie nobody reaped yet), not orphaned:
    // nothing works in the root any more.
    let root = root.canonicalize().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !working_in(&root).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "{sandbox}: the shell command's children still run ({:?}): {stderr}",
            working_in(&root)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_sub_agents_tool_calls_are_shown_and_its_task_lasts_as_long_as_it_ran() {
    let dir = tempfile::tempdir().unwrap();
    // One scripted model serves the main agent and its sub-agent, in turn.
    let out = run(
        dir.path(),
        serde_json::json!([
            {"tool_calls": [{"id": "t1", "name": "task", "arguments":
                {"description": "Write /a.txt", "subagent_type": "general-purpose"}}]},
            {"tool_calls": [{"id": "w1", "name": "write_file", "arguments":
                {"file_path": "/a.txt", "content": "from the sub-agent\n"}}], "delay_ms": 400},
            {"content": "Wrote /a.txt.", "delay_ms": 400},
            {"content": "The sub-agent wrote /a.txt."}
        ]),
        &[],
        "",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("  ↳ write_file ok ("), "{stderr}");
    let task = stderr
        .lines()
        .find(|l| l.trim_start().starts_with("task ok ("))
        .unwrap_or_else(|| panic!("no task line: {stderr}"));
    let ms: f64 = task
        .split_once('(')
        .and_then(|(_, rest)| rest.split_once(" ms"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no duration: {task}"));
    assert!(
        ms >= 800.0,
        "the sub-agent's two model calls took 800 ms: {task}"
    );
}

/// A scripted model reports its own estimate of usage, and a short
/// conversation cannot reach a summary's token trigger even counted a
/// token per byte, so such a run never loads the real tokenizer (most of
/// a scripted run's time before); nor does project memory (`AGENTS.md`)
/// whose bytes fit its token budget. A message whose bytes could reach
/// the trigger is counted for real.
#[test]
fn the_tokenizer_loads_only_when_a_count_can_matter() {
    let dir = tempfile::tempdir().unwrap();
    let short = lc_agent(
        dir.path(),
        &["run", "Say hello."],
        serde_json::json!([{"content": "Hello."}]),
        &["-vv"],
        "",
    );
    let stderr = String::from_utf8_lossy(&short.stderr);
    assert!(short.status.success(), "{stderr}");
    assert!(
        stderr.contains("checkpoint saved"),
        "debug logs on: {stderr}"
    );
    assert!(!stderr.contains("loading the tokenizer"), "{stderr}");

    // Project memory within its budget even counted a token per byte is
    // shown whole without a count.
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("AGENTS.md"),
        "Run `cargo fmt` before you commit.\n",
    )
    .unwrap();
    let with_memory = lc_agent(
        dir.path(),
        &["run", "--root", project.to_str().unwrap(), "Say hello."],
        serde_json::json!([{"content": "Hello."}]),
        &["-vv"],
        "",
    );
    let stderr = String::from_utf8_lossy(&with_memory.stderr);
    assert!(with_memory.status.success(), "{stderr}");
    assert!(
        stderr.contains("project memory file read"),
        "AGENTS.md is read: {stderr}"
    );
    assert!(!stderr.contains("loading the tokenizer"), "{stderr}");

    // 35,000 bytes: over 85% of the default 32,768-token window if every
    // byte were a token.
    let long = "word ".repeat(7_000);
    let out = lc_agent(
        dir.path(),
        &["run", &long],
        serde_json::json!([{"content": "Hello."}]),
        &["-vv"],
        "",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("loading the tokenizer"), "{stderr}");
}
