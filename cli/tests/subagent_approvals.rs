//! `lc-agent run` without `--yes`: a sub-agent's `execute` in a shell
//! workspace (`--root DIR --shell`) waits for the same question on stderr
//! as the agent's own would; `n` rejects it (nothing runs, the sub-agent
//! reads the rejection), `y` runs it. One scripted model (offline) serves
//! the agent and its sub-agent in turn.
#![allow(clippy::unwrap_used, unreachable_pub)]

mod common;

use std::process::Output;

/// Runs `lc-agent run TASK --script <script> --sessions <dir>/sessions
/// --root <work> --shell` with this stdin.
fn run(dir: &std::path::Path, work: &std::path::Path, script: &str, stdin: &str) -> Output {
    let extra = [
        std::ffi::OsStr::new("--root"),
        work.as_os_str(),
        "--shell".as_ref(),
    ];
    common::lc_agent(
        dir,
        &["run", "Make the file with a sub-agent."],
        script,
        &extra,
        stdin,
    )
}

/// The agent starts a task; the sub-agent runs `execute`, then answers
/// `sub_answer`; the agent answers `answer`.
fn script(sub_answer: &str, answer: &str) -> String {
    serde_json::json!([
        {"tool_calls": [{"id": "t1", "name": "task", "arguments":
            {"description": "Create made.txt with `echo`.", "subagent_type": "general-purpose"}}]},
        {"tool_calls": [{"id": "x1", "name": "execute", "arguments":
            {"command": "echo made > made.txt"}}]},
        {"content": sub_answer},
        {"content": answer}
    ])
    .to_string()
}

#[test]
fn a_sub_agents_execute_is_asked_on_stdin_and_n_rejects_it() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = run(
        dir.path(),
        &work,
        &script("I was not allowed to run it.", "The sub-agent could not."),
        "n\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(r#"approve execute {"command":"echo made > made.txt"}?"#),
        "{stderr}"
    );
    assert!(!work.join("made.txt").exists(), "the command never ran");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().last(),
        Some("The sub-agent could not.")
    );
}

#[test]
fn a_sub_agents_execute_runs_after_y() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = run(
        dir.path(),
        &work,
        &script("Made made.txt.", "The sub-agent made it."),
        "y\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr.matches("approve execute").count(),
        1,
        "asked once: {stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("made.txt")).unwrap(),
        "made\n"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().last(),
        Some("The sub-agent made it.")
    );
}

#[test]
fn a_sub_agents_execute_waits_when_stdin_ends() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = run(dir.path(), &work, &script("Made.", "Made."), "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("waits for approval"), "{stderr}");
    assert!(!work.join("made.txt").exists(), "the command never ran");
}
