//! `lc-agent tool`: output, exit codes, --root, --shell, --state.

use std::process::Command;

fn lc_agent(args: &[&str]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code().unwrap(),
    )
}

#[test]
fn root_success_tool_error_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (out, _, code) = lc_agent(&[
        "tool",
        "write_file",
        r#"{"file_path": "/a/b.txt", "content": "hi\nthere\n"}"#,
        "--root",
        root,
    ]);
    assert_eq!(
        (out.as_str(), code),
        ("Successfully wrote to /a/b.txt\n", 0)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a/b.txt")).unwrap(),
        "hi\nthere\n"
    );
    let (out, _, code) = lc_agent(&[
        "tool",
        "read_file",
        r#"{"file_path": "a/b.txt", "offset": 1}"#,
        "--root",
        root,
    ]);
    assert_eq!((out.as_str(), code), ("     2\tthere\n", 0));
    let (out, _, code) = lc_agent(&[
        "tool",
        "read_file",
        r#"{"file_path": "/nope"}"#,
        "--root",
        root,
    ]);
    assert_eq!((out.as_str(), code), ("Error: File not found: /nope\n", 1));
    let (out, _, code) = lc_agent(&["tool", "ls", r#"{"path": "/../"}"#, "--root", root]);
    assert_eq!(
        (out.as_str(), code),
        ("Error: Path traversal not allowed: /../\n", 1)
    );
    let (out, _, code) = lc_agent(&["tool", "read_file", r#"{"file_path": 3}"#, "--root", root]);
    assert_eq!(
        (out.as_str(), code),
        (
            "Error: Invalid arguments for read_file: `file_path` must be a string, got 3\n",
            1
        )
    );
    let (out, _, code) = lc_agent(&[
        "tool",
        "execute",
        r#"{"command": "echo hi"}"#,
        "--root",
        root,
    ]);
    assert_eq!(
        (out.as_str(), code),
        (
            "Error: execute is not available: the backend cannot run commands\n",
            1
        )
    );

    // Usage errors: exit 2, nothing on stdout.
    for args in [
        vec!["tool", "rm_rf", "{}", "--root", root],
        vec!["tool", "ls", "[1, 2]", "--root", root],
        vec!["tool", "ls", "{not json", "--root", root],
        vec!["tool", "ls", "{}", "--bogus"],
        vec!["tool", "ls", "{}", "--root", root, "--state", "x.json"],
        vec!["tool", "ls", "{}", "--root", "/definitely/not/here"],
        vec!["tool", "ls", "{}", "--state", "/definitely/not/here.json"],
        // Neither --root nor --state: no backend was named.
        vec!["tool", "ls", "{}"],
        vec!["tool", "ls"],
        vec!["tool", "execute", r#"{"command": "true"}"#, "--shell"],
        vec!["tool"],
    ] {
        let (out, err, code) = lc_agent(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(out, "", "{args:?}");
        assert!(!err.is_empty());
    }
}

#[test]
fn shell_runs_commands_in_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    std::fs::write(dir.path().join("x.txt"), "x").unwrap();
    let (out, _, code) = lc_agent(&[
        "tool",
        "execute",
        r#"{"command": "ls; exit 4"}"#,
        "--root",
        root,
        "--shell",
    ]);
    assert_eq!((out.as_str(), code), ("x.txt\nExit code: 4\n", 0));
}

#[test]
fn state_file_is_read_and_written_back() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("session.json");
    let net = lc_agent::RunnableNetwork::new();
    net.with_files_mut(|f| {
        f.insert("/notes.md".into(), lc_agent::FileData::new("alpha\nbeta\n"));
    });
    std::fs::write(&state, net.to_json().unwrap()).unwrap();
    let s = state.to_str().unwrap();
    let (out, _, code) = lc_agent(&[
        "tool",
        "grep",
        r#"{"pattern": "be.a", "output_mode": "content"}"#,
        "--state",
        s,
    ]);
    assert_eq!((out.as_str(), code), ("/notes.md:2:beta\n", 0));
    let (out, _, code) = lc_agent(&[
        "tool",
        "edit_file",
        r#"{"file_path": "/notes.md", "old_string": "beta", "new_string": "gamma"}"#,
        "--state",
        s,
    ]);
    assert_eq!(
        (out.as_str(), code),
        ("Successfully replaced 1 occurrence(s) in /notes.md\n", 0)
    );
    let loaded =
        lc_agent::RunnableNetwork::from_json(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(loaded.files()["/notes.md"].content, ["alpha", "gamma", ""]);
    let (out, _, code) = lc_agent(&[
        "tool",
        "write_file",
        r#"{"file_path": "/notes.md", "content": "x"}"#,
        "--state",
        s,
    ]);
    assert_eq!(code, 1);
    assert!(out.starts_with("Error: Cannot write to /notes.md because it already exists."));
}

#[test]
fn list_prints_the_agents_tools_as_openai_definitions() {
    let (out, err, code) = lc_agent(&["tool", "--list"]);
    assert_eq!(code, 0, "{err}");
    let defs: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = defs
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            assert_eq!(d["type"], "function");
            d["function"]["name"].as_str().unwrap()
        })
        .collect();
    for name in [
        "ls",
        "read_file",
        "write_file",
        "edit_file",
        "glob",
        "grep",
        "delete",
        "write_todos",
        "task",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert!(
        !names.contains(&"execute"),
        "no shell, no execute: {names:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let (out, _, code) = lc_agent(&[
        "tool",
        "--list",
        "--root",
        dir.path().to_str().unwrap(),
        "--shell",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("\"execute\""));
    let (_, err, code) = lc_agent(&["tool"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_closed_pipe_ends_the_tool_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let lines: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("long.txt"), lines).unwrap();
    // `lc-agent tool --list | head`
    let out = crate::common::into_closed_pipe(
        Command::new(env!("CARGO_BIN_EXE_lc-agent")).args(["tool", "--list"]),
    );
    crate::common::assert_quiet_success("tool --list", &out);
    // `lc-agent tool read_file ... | head -1`
    let out = crate::common::into_closed_pipe(Command::new(env!("CARGO_BIN_EXE_lc-agent")).args([
        "tool",
        "read_file",
        r#"{"file_path": "/long.txt"}"#,
        "--root",
        root,
    ]));
    crate::common::assert_quiet_success("tool read_file", &out);
}

/// `lc-agent tool execute --root DIR --shell`: the sandbox by default
/// (`workspace-write`), `--sandbox read-only`, and `--sandbox full` (loud).
#[lc_agent_test_support::needs(bwrap)]
#[test]
fn execute_runs_in_the_sandbox_unless_full_is_asked_for() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("root");
    let outside = base.path().join("outside");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(outside.join("secret"), "s3cr3t").unwrap();
    let r = root.to_str().unwrap();
    let o = outside.display();
    let command = format!(
        "echo pwned > {o}/escaped; echo evil >> .git/config; cat {o}/secret; echo in > in.txt"
    );
    let args = serde_json::json!({ "command": command }).to_string();
    let run = |extra: &[&str]| {
        let mut all = vec!["tool", "execute", args.as_str(), "--root", r, "--shell"];
        all.extend_from_slice(extra);
        lc_agent(&all)
    };

    let (out, err, code) = run(&[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("s3cr3t"), "{out}");
    assert!(!outside.join("escaped").exists());
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("in.txt")).unwrap(),
        "in\n"
    );

    std::fs::remove_file(root.join("in.txt")).unwrap();
    let (out, _, _) = run(&["--sandbox", "read-only"]);
    assert!(out.contains("Read-only file system"), "{out}");
    assert!(!root.join("in.txt").exists());

    let (out, err, code) = run(&["--sandbox", "full"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("[sandbox: full mode - this command and the next ones run unconfined"),
        "{out}"
    );
    assert!(
        err.contains("--sandbox full: commands run unconfined"),
        "{err}"
    );
    assert!(out.contains("s3cr3t"), "{out}");
    assert!(outside.join("escaped").exists());

    let (_, err, code) = run(&["--sandbox", "none"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("read-only, workspace-write or full"), "{err}");
}

/// Issue 49 item 5: the line tools run from the shell like the others,
/// and `--list --line-tools` offers them as the agent does.
#[test]
fn the_line_tools_run_and_are_listed_with_line_tools() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\nthree\n").unwrap();
    let (out, err, code) = lc_agent(&[
        "tool",
        "insert_lines",
        r#"{"file_path": "/a.txt", "line": 2, "content": "two"}"#,
        "--root",
        root,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    let (out, err, code) = lc_agent(&[
        "tool",
        "delete_lines",
        r#"{"file_path": "/a.txt", "start_line": 1, "end_line": 1}"#,
        "--root",
        root,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "two\nthree\n"
    );

    let names = |args: &[&str]| {
        let (out, err, code) = lc_agent(args);
        assert_eq!(code, 0, "{err}");
        let defs: serde_json::Value = serde_json::from_str(&out).unwrap();
        defs.as_array()
            .unwrap()
            .iter()
            .map(|d| d["function"]["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let plain = names(&["tool", "--list"]);
    assert!(!plain.iter().any(|n| n == "insert_lines"), "{plain:?}");
    let with = names(&["tool", "--list", "--line-tools"]);
    for tool in ["insert_lines", "replace_lines", "delete_lines"] {
        assert!(with.iter().any(|n| n == tool), "{tool} missing: {with:?}");
    }
    let (_, err, code) = lc_agent(&["tool", "nope", "{}", "--root", root]);
    assert_eq!(code, 2);
    assert!(err.contains("insert_lines"), "the line tools named: {err}");
}
