//! `lc-agent mcp` checked by an independent client: the official MCP
//! Python SDK (`mcp` on PyPI, installed by `.ci/run`) runs
//! `tests/python/check_server.py` against the real binary over stdio and over
//! streamable HTTP with a bearer token: it lists the tools, calls each one
//! and tries path escapes, which are refused with the spec's errors.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common;
use lc_agent_test_support::needs;
use lc_agent_test_support::python;
use serde_json::{json, Value};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_server.py")
}

/// A root with a link that leads out of it.
fn root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/etc", dir.path().join("out")).unwrap();
    dir
}

fn check(args: &[&str]) -> Value {
    python::run_json(&script(), args)
}

/// What every transport must show.
fn assert_seen(seen: &Value, root: &Path) {
    assert_eq!(
        seen["tools"],
        json!([
            "ls",
            "read_file",
            "write_file",
            "edit_file",
            "glob",
            "grep",
            "delete"
        ])
    );
    let calls: Vec<(bool, &str)> = seen["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["is_error"].as_bool().unwrap(),
                c["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            (false, "Successfully wrote to /notes/todo.md"),
            (false, "     1\tone\n     2\ttwo TODO\n     3\tthree"),
            (
                false,
                "Successfully replaced 1 occurrence(s) in /notes/todo.md"
            ),
            (false, "/notes/todo.md"),
            (false, "/notes/todo.md"),
            (false, "/notes/todo.md:2:TWO TODO"),
            (true, "Error: Path traversal not allowed: /../etc/passwd"),
            (true, "Error: Path traversal not allowed: ~/secret"),
            (
                true,
                "Error: Path traversal not allowed: /a/../../escape.txt"
            ),
            (true, "Error: Path escapes the workspace: /out/hostname"),
            (
                true,
                "Error: Invalid arguments for read_file: missing required argument `file_path`"
            ),
        ]
    );
    assert_eq!(
        seen["execute"],
        "`execute` needs a server started with a shell (--shell)"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("notes/todo.md")).unwrap(),
        "one\nTWO TODO\nthree\n"
    );
    assert!(!root.parent().unwrap().join("escape.txt").exists());
}

#[needs(python_mcp)]
#[test]
fn the_python_sdk_uses_our_tools_over_stdio() {
    let dir = root();
    let seen = check(&[
        "stdio",
        env!("CARGO_BIN_EXE_lc-agent"),
        dir.path().to_str().unwrap(),
    ]);
    assert_seen(&seen, dir.path());
}

#[needs(python_mcp)]
#[test]
fn the_python_sdk_uses_our_tools_over_http_with_a_bearer_token() {
    let dir = root();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args([
            "mcp",
            "--root",
            dir.path().to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
        ])
        .env("LC_AGENT_TOKEN", "test-token")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    // Killed when the test ends, passed or not.
    let _server = lc_agent_test_support::process::KillOnDrop(child);
    let mut line = String::new();
    BufReader::new(stderr).read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("serving MCP on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .to_string();
    let seen = check(&["http", &url, "test-token"]);
    assert_eq!(seen["without_token"], 401);
    assert_seen(&seen, dir.path());
}

#[test]
fn http_off_loopback_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args([
            "mcp",
            "--root",
            dir.path().to_str().unwrap(),
            "--http",
            "0.0.0.0:0",
        ])
        .env_remove("LC_AGENT_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: refusing to serve MCP on 0.0.0.0:0 without a bearer token: set LC_AGENT_TOKEN (required off loopback)\n"
    );
}

/// `lc-agent run --mcp FILE`: the agent gets the tools of the servers in
/// the file; here `lc-agent mcp` itself over stdio on another directory,
/// whose names clash with the agent's own file tools (so they are offered
/// as `files_<name>`; `--shell` adds `execute`). A server that cannot start is a warning and the run
/// goes on.
#[test]
fn run_with_mcp_servers_from_a_desktop_style_file() {
    let dir = tempfile::tempdir().unwrap();
    let served = tempfile::tempdir().unwrap();
    std::fs::write(served.path().join("far.txt"), "from the MCP server\n").unwrap();
    let mcp_json = dir.path().join("mcp.json");
    std::fs::write(
        &mcp_json,
        json!({"mcpServers": {
            // It serves a directory outside the agent's root and runs its
            // own shell there: unconfined, by name.
            "files": {"command": env!("CARGO_BIN_EXE_lc-agent"),
                      "args": ["mcp", "--root", served.path(), "--shell"],
                      "sandbox": "full"},
            "gone": {"command": "/nonexistent/mcp-server"}
        }})
        .to_string(),
    )
    .unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        json!([
            {"tool_calls": [{"id": "c1", "name": "files_read_file", "arguments": {"file_path": "/far.txt"}}]},
            {"tool_calls": [{"id": "c2", "name": "files_ls", "arguments": {"path": "/../"}}]},
            {"tool_calls": [{"id": "c3", "name": "files_execute", "arguments": {"command": "cat far.txt | tr a-z A-Z"}}]},
            {"content": "It says: from the MCP server"}
        ])
        .to_string(),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["run", "Read far.txt over MCP."])
        .arg("--script")
        .arg(&script)
        .arg("--sessions")
        .arg(dir.path().join("sessions"))
        .arg("--mcp")
        .arg(&mcp_json)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout.trim_end().lines().last(),
        Some("It says: from the MCP server")
    );
    assert!(
        stderr.contains("warning: MCP server `gone`: cannot start `/nonexistent/mcp-server`: "),
        "{stderr}"
    );
    assert!(stderr.contains("  files_read_file ok ("), "{stderr}");
    assert!(stderr.contains("  files_ls error ("), "{stderr}");
    // `--shell` serves `execute`, run in the served directory.
    assert!(stderr.contains("  files_execute ok ("), "{stderr}");
    // The session keeps what the model read.
    let sessions = dir.path().join("sessions");
    let saved: String = common::saved_documents(&sessions)
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    assert!(saved.contains("     1\\tfrom the MCP server"), "{saved}");
    assert!(
        saved.contains("Error: Path traversal not allowed: /../"),
        "{saved}"
    );
}

/// The workspace files as resources, with the official Python SDK over
/// stdio: listed (a file the path rules deny is not), the template, a text
/// and a binary read, refusals for the denied file and a path out of the
/// root, log messages once a level is set, and a subscription told about
/// a change made on disk.
#[needs(python_mcp)]
#[test]
fn the_python_sdk_reads_and_watches_our_files_as_resources() {
    let dir = root();
    std::fs::create_dir_all(dir.path().join("notes")).unwrap();
    std::fs::create_dir_all(dir.path().join("bin")).unwrap();
    std::fs::create_dir_all(dir.path().join("secret")).unwrap();
    std::fs::write(dir.path().join("notes/todo.md"), "one\n").unwrap();
    let binary: Vec<u8> = vec![0, 159, 146, 150, 255, 10];
    std::fs::write(dir.path().join("bin/data.bin"), &binary).unwrap();
    std::fs::write(dir.path().join("secret/key.txt"), "hidden\n").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_resources.py");
    let seen = python::run_json(
        &script,
        &[
            env!("CARGO_BIN_EXE_lc-agent"),
            dir.path().to_str().unwrap(),
            "--deny",
            "secret/**",
        ],
    );
    assert_eq!(
        seen["capabilities"],
        json!({"resources": true, "subscribe": true, "logging": true})
    );
    assert_eq!(
        seen["resources"],
        json!([
            ["file:///bin/data.bin", "bin/data.bin", null],
            ["file:///notes/todo.md", "notes/todo.md", "text/markdown"]
        ])
    );
    assert_eq!(seen["templates"], json!(["file:///{+path}"]));
    let reads = &seen["reads"];
    assert_eq!(
        reads["file:///notes/todo.md"],
        json!({"mime": "text/markdown", "text": "one\n"})
    );
    assert_eq!(
        reads["file:///bin/data.bin"],
        json!({"mime": "application/octet-stream", "bytes": binary})
    );
    assert_eq!(
        reads["file:///secret/key.txt"]["error"],
        "Error: cannot read /secret/key.txt: permission_denied"
    );
    assert_eq!(
        reads["file:///../etc/passwd"]["error"],
        "Error: Path traversal not allowed: /../etc/passwd"
    );
    assert_eq!(
        reads["file:///missing.txt"]["error"],
        "Error: cannot read /missing.txt: file_not_found"
    );
    assert_eq!(
        seen["subscribe_denied"],
        "Error: cannot watch /secret/key.txt: permission_denied"
    );
    assert_eq!(seen["updated"], json!(["file:///notes/todo.md"]));
    assert_eq!(
        seen["logs"],
        json!([
            {"level": "info", "logger": "lc-agent", "data": {"tool": "read_file", "status": "ok"}},
            {"level": "warning", "logger": "lc-agent", "data": {"tool": "read_file", "status": "error"}}
        ])
    );
}

/// A remote server (the official Python SDK's, streamable HTTP) that closes
/// a tool call's event stream before answering: `lc-agent run` resumes it
/// and says nothing about it on stderr but the call's progress line.
#[needs(python_mcp)]
#[test]
fn run_resumes_a_closed_event_stream_without_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = lc_agent_test_support::python::mcp_sdk_server(None);
    let mcp_json = dir.path().join("mcp.json");
    std::fs::write(
        &mcp_json,
        json!({"mcpServers": {"sdk": {"url": url}}}).to_string(),
    )
    .unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        json!([
            {"tool_calls": [{"id": "c1", "name": "interrupted", "arguments": {"text": "hi"}}]},
            {"content": "finished"}
        ])
        .to_string(),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["run", "Call the tool."])
        .arg("--script")
        .arg(&script)
        .arg("--sessions")
        .arg(dir.path().join("sessions"))
        .arg("--mcp")
        .arg(&mcp_json)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("  interrupted ok ("), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let saved: String = common::saved_documents(&dir.path().join("sessions"))
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    assert!(saved.contains("resumed: hi (1 reconnections)"), "{saved}");
}

/// `run` and `exec` with no terminal: nobody can answer an MCP server's
/// request for input, so the capability is not declared and the request
/// (which the Python SDK sends anyway) is declined, said on stderr; the
/// exec stream stays JSON lines.
#[needs(python_mcp)]
#[test]
fn without_a_terminal_a_request_for_input_is_declined_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("answers.jsonl");
    let (_server, url) = lc_agent_test_support::python::mcp_sdk_server(Some(&log));
    let mcp_json = dir.path().join("mcp.json");
    std::fs::write(
        &mcp_json,
        json!({"mcpServers": {"sdk": {"url": url}}}).to_string(),
    )
    .unwrap();
    let script = json!([
        {"tool_calls": [{"id": "b1", "name": "book_table", "arguments": {"day": "Friday"}}]},
        {"content": "No booking."}
    ])
    .to_string();
    let extra = ["--mcp".to_string(), mcp_json.display().to_string()];
    let said = "warning: MCP server `sdk` asked for input (\"Book a table for Friday?\") \
                where nobody can answer; declined";
    for command in [
        vec!["run", "Book a table."],
        vec!["exec", "Book a table.", "--json"],
    ] {
        let out = common::lc_agent(dir.path(), &command, &script, &extra, "");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{command:?}: {stdout}\n{stderr}");
        assert!(stderr.contains(said), "{command:?}: {stderr}");
        if command[0] == "exec" {
            for line in stdout.lines() {
                serde_json::from_str::<Value>(line)
                    .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line:?}"));
            }
        }
    }
    let answers = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        answers,
        "{\"action\": \"decline\", \"declared\": false}\n".repeat(2)
    );
}
