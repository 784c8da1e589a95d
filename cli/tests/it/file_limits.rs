//! The file tools' size limits from the command line: `--max-read-bytes`
//! and `--max-write-bytes` on `lc-agent tool` and `lc-agent run`, and the
//! blueprint's `[files]` table, through the real binary.

use std::process::{Command, Output};

use crate::common;

fn tool(root: &std::path::Path, args: &[&str]) -> (String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .arg("tool")
        .args(args)
        .arg("--root")
        .arg(root)
        .arg("--no-hooks")
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn tool_keeps_to_the_limits_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = r#"{"file_path": "/a.txt", "content": "hello\n"}"#;
    let (out, code) = tool(root, &["write_file", write, "--max-write-bytes", "5"]);
    assert_eq!(
        (out.as_str(), code),
        (
            "Error: Cannot write to /a.txt: the content is 6 bytes, over the write limit of 5 \
             bytes. Nothing was written; write less, or split the content across several files.\n",
            1
        )
    );
    assert!(!root.join("a.txt").exists());
    // The default is large.
    let (out, code) = tool(root, &["write_file", write]);
    assert_eq!((out.as_str(), code), ("Successfully wrote to /a.txt\n", 0));
    let edit = r#"{"file_path": "/a.txt", "old_string": "hello", "new_string": "hello, world"}"#;
    let (out, code) = tool(root, &["edit_file", edit, "--max-write-bytes", "10"]);
    assert_eq!(
        (out.as_str(), code),
        (
            "Error: Cannot edit /a.txt: the edited file would be 13 bytes, over the write limit \
             of 10 bytes. The file was not changed; make a smaller change, or split the file into several.\n",
            1
        )
    );
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "hello\n"
    );
    // read_file stops at a whole line before the read limit.
    let long: String = (0..1000).map(|i| format!("{i:099}\n")).collect();
    std::fs::write(root.join("long.txt"), long).unwrap();
    let (out, code) = tool(
        root,
        &[
            "read_file",
            r#"{"file_path": "/long.txt"}"#,
            "--max-read-bytes",
            "10000",
        ],
    );
    assert_eq!(code, 0);
    // Each line prints as 6 + 1 + 99 bytes, and a newline between two.
    let shown = (10_000 + 1) / 107;
    assert!(
        out.ends_with(&format!(
            "\n[Output truncated at the read limit of 10000 bytes. Showing lines 1-{shown} of \
             1000. Use offset={shown} to read more.]\n"
        )),
        "{out}"
    );
    assert_eq!(out.lines().count(), shown + 1);
    // A bad number is a usage error.
    let (_, code) = tool(root, &["ls", "{}", "--max-read-bytes", "many"]);
    assert_eq!(code, 2);
}

/// The tool results of the session a run saved (from its `session <id>
/// saved` line).
fn tool_results(dir: &std::path::Path, out: &Output) -> Vec<String> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("session ")?.strip_suffix(" saved"))
        .unwrap_or_else(|| panic!("no saved session in {stderr}"));
    let export = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["sessions", "--sessions"])
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
fn run_takes_the_limits_from_its_flags_or_the_blueprint() {
    let script = serde_json::json!([
        {"tool_calls": [{"id": "c1", "name": "write_file",
            "arguments": {"file_path": "/hello.txt", "content": "hello\n"}}]},
        {"content": "Tried."}
    ])
    .to_string();
    let refused = "Error: Cannot write to /hello.txt: the content is 6 bytes, over the write \
                   limit of 4 bytes. Nothing was written; write less, or split the content \
                   across several files.";
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let root = work.to_str().unwrap();
    let out = common::lc_agent(
        dir.path(),
        &["run", "Write the greeting."],
        &script,
        &["--root", root, "--max-write-bytes", "4"],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(tool_results(dir.path(), &out), [refused]);
    assert!(!work.join("hello.txt").exists());
    // The same from the blueprint's [files] table.
    let agent = dir.path().join("agent.toml");
    std::fs::write(
        &agent,
        "[models.main]\nmodel = \"scripted\"\n[files]\nmax_write_bytes = 4\n",
    )
    .unwrap();
    let out = common::lc_agent(
        dir.path(),
        &["run", "Write the greeting."],
        &script,
        &["--root", root, "--agent", agent.to_str().unwrap()],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(tool_results(dir.path(), &out), [refused]);
    assert!(!work.join("hello.txt").exists());
}
