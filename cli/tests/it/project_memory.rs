//! Project memory files through the real binary: `lc-agent run --root DIR`
//! sends `DIR/AGENTS.md` and the user's (`$XDG_CONFIG_HOME/lc-agent`) in the
//! system prompt (the recorded request shows it), `--no-project-memory`
//! sends neither and is kept in the session's blueprint.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common;

fn run(dir: &Path, extra: &[&str]) -> Output {
    let script = dir.join("script.json");
    std::fs::write(&script, r#"[{"content": "Done."}]"#).unwrap();
    let mut command = common::offline();
    command
        .arg("run")
        .arg("Tidy the parser.")
        .arg("--script")
        .arg(&script)
        .arg("--root")
        .arg(dir.join("repo"))
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .args(extra)
        .env("LC_AGENT_HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", dir.join("config"));
    common::with_stdin(&mut command, "")
}

/// The system text of the first request of a cassette.
fn recorded_system(cassette: &Path) -> String {
    let line = std::fs::read_to_string(cassette).unwrap();
    let first: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    first["request"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn project(dir: &Path) {
    std::fs::create_dir_all(dir.join("repo/.git")).unwrap();
    std::fs::write(
        dir.join("repo/AGENTS.md"),
        "Keep the parser free of I/O (PROJECT-RULE).\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("config/lc-agent")).unwrap();
    std::fs::write(
        dir.join("config/lc-agent/AGENTS.md"),
        "Answer in British English (USER-RULE).\n",
    )
    .unwrap();
}

#[test]
fn run_sends_the_project_and_user_memory_files_in_the_system_prompt() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let cassette = dir.path().join("on.jsonl");
    let out = run(dir.path(), &["--record", cassette.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let system = recorded_system(&cassette);
    assert!(system.contains("## Project memory"), "{system}");
    assert!(system.contains("### `/AGENTS.md`"), "{system}");
    assert!(system.contains("PROJECT-RULE"), "{system}");
    assert!(system.contains("USER-RULE"), "{system}");
    // Nearest first: the project's before the user's.
    assert!(
        system.find("PROJECT-RULE") < system.find("USER-RULE"),
        "{system}"
    );
}

#[test]
fn no_project_memory_sends_none_and_the_session_keeps_it_off() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let cassette = dir.path().join("off.jsonl");
    let out = run(
        dir.path(),
        &[
            "--no-project-memory",
            "--record",
            cassette.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let system = recorded_system(&cassette);
    assert!(!system.contains("Project memory"), "{system}");
    assert!(!system.contains("PROJECT-RULE") && !system.contains("USER-RULE"));

    // The saved blueprint says so, for a resumed session.
    let saved = common::saved_documents(&dir.path().join("sessions"));
    let session: Value = serde_json::from_str(&saved[0].1).unwrap();
    assert_eq!(
        session["metadata"]["agent_spec"]["project_memory"]["enabled"], false,
        "{}",
        session["metadata"]["agent_spec"]
    );
}
