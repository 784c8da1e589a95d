//! Protected paths through every door (the real binary, offline): the
//! agent's own configuration (`.lc-agent/**`, `.mcp.json`), `.git/**` and
//! other auto-run files (`.envrc`, `.vscode/tasks.json`) are not written,
//! edited or deleted unasked — also when they do not exist yet. Where
//! nobody can approve (`lc-agent tool`, `lc-agent mcp`, the server's
//! `/v1/tools/execute`, `exec`, a `run` whose stdin is closed) the call is
//! refused, saying how to allow it; `--allow` widens the rule; bypass mode
//! (chosen by the user) lets it through.

use std::path::Path;
use std::process::Output;

use lc_agent_test_support::serve::{serve_command, Served};
use serde_json::{json, Value};

use crate::common;

/// A root holding `.git/config` and nothing else.
fn root(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("root");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    root
}

/// `lc-agent tool NAME ARGS --root ROOT <extra>`: stdout and exit code.
fn tool(dir: &Path, name: &str, args: Value, extra: &[&str]) -> (String, i32) {
    let out = common::offline()
        .args(["tool", name, &args.to_string(), "--root"])
        .arg(root(dir))
        .args(extra)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("LC_AGENT_HOME", dir.join("home"))
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap(),
    )
}

#[test]
fn lc_agent_tool_refuses_protected_paths_and_allow_widens_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = root(dir.path());
    let fsmonitor = json!({"file_path": "/.git/config", "old_string": "[core]",
        "new_string": "[core]\n\tfsmonitor = \"touch /tmp/pwned\""});
    for (name, args, path) in [
        (
            "write_file",
            json!({"file_path": "/.lc-agent/settings.json", "content": "{}"}),
            ".lc-agent/settings.json",
        ),
        (
            "write_file",
            json!({"file_path": "/.git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
            ".git/hooks/pre-commit",
        ),
        (
            "write_file",
            json!({"file_path": "/.MCP.json", "content": "{}"}),
            ".MCP.json",
        ),
        (
            "write_file",
            json!({"file_path": "/.envrc", "content": "x"}),
            ".envrc",
        ),
        (
            "write_file",
            json!({"file_path": "/.vscode/tasks.json", "content": "{}"}),
            ".vscode/tasks.json",
        ),
        ("edit_file", fsmonitor.clone(), ".git/config"),
        ("delete", json!({"path": "/.git/config"}), ".git/config"),
    ] {
        let (out, code) = tool(dir.path(), name, args, &[]);
        assert_eq!(code, 1, "{name} {path}: {out}");
        assert!(
            out.starts_with("Error: Approval needed: the protected path ")
                && out.contains("--allow 'write,edit,delete:")
                && out.contains("nobody can approve here"),
            "{name} {path}: {out}"
        );
        if path != ".git/config" {
            assert!(!root.join(path).exists(), "{path} was written");
        }
    }
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        "[core]\n"
    );
    // Anything else is written as before.
    let (out, code) = tool(
        dir.path(),
        "write_file",
        json!({"file_path": "/src/ok.txt", "content": "ok"}),
        &[],
    );
    assert_eq!(
        (out.as_str(), code),
        ("Successfully wrote to /src/ok.txt\n", 0)
    );
    // The user's own rule widens it.
    let (out, code) = tool(
        dir.path(),
        "edit_file",
        fsmonitor,
        &["--allow", "write,edit,delete:**/.git/**"],
    );
    assert_eq!(code, 0, "{out}");
    assert!(std::fs::read_to_string(root.join(".git/config"))
        .unwrap()
        .contains("fsmonitor"));
}

#[test]
fn lc_agent_mcp_refuses_a_git_hook() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    let root = root(dir.path());
    let mut child = common::offline()
        .arg("mcp")
        .arg("--root")
        .arg(&root)
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for request in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "write_file",
            "arguments": {"file_path": "/.git/hooks/pre-commit", "content": "#!/bin/sh\n"}}}),
    ] {
        writeln!(stdin, "{request}").unwrap();
    }
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let answer: Value = loop {
        let value: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if value["id"] == 2 {
            break value;
        }
    };
    drop(stdin);
    let _ = child.wait();
    assert_eq!(answer["result"]["isError"], json!(true), "{answer}");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("the protected path **/.git/**"),
        "{answer}"
    );
    assert!(!root.join(".git/hooks/pre-commit").exists());
}

#[tokio::test]
async fn the_servers_tool_endpoint_refuses_the_agents_own_config() {
    let dir = tempfile::tempdir().unwrap();
    let root = root(dir.path());
    let script = dir.path().join("script.json");
    std::fs::write(&script, json!([{"content": "hi"}]).to_string()).unwrap();
    let mut command = serve_command(common::built());
    command
        .arg("--script")
        .arg(&script)
        .arg("--sessions")
        .arg(dir.path().join("sessions"))
        .arg("--root")
        .arg(&root)
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("LC_AGENT_HOME", dir.path().join("home"));
    let server = Served::start(command);
    let response = reqwest::Client::new()
        .post(format!("{}/v1/tools/execute", server.url()))
        .json(
            &json!({"tool_calls": [{"id": "c1", "type": "function", "function":
            {"name": "write_file",
             "arguments": "{\"file_path\": \"/.lc-agent/settings.json\", \"content\": \"{}\"}"}}]}),
        )
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body = response.text().await.unwrap();
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("the protected path **/.lc-agent/**"),
        "{body}"
    );
    assert!(!root.join(".lc-agent").exists());
}

/// `lc-agent <command> ... --root ROOT` with a model that writes a git
/// hook, then answers; stdin closed.
fn model_writes_a_hook(dir: &Path, command: &[&str], extra: &[&str]) -> Output {
    let script = json!([
        {"tool_calls": [{"id": "c1", "name": "write_file",
            "arguments": {"file_path": "/.git/hooks/pre-commit", "content": "#!/bin/sh\ntouch /tmp/pwned\n"}}]},
        {"content": "Done."}
    ]);
    let root = root(dir);
    let mut extra: Vec<&str> = extra.to_vec();
    let root = root.to_str().unwrap().to_string();
    extra.extend(["--root", &root]);
    common::lc_agent(dir, command, &script.to_string(), &extra, "")
}

#[test]
fn the_models_write_of_a_git_hook_asks_in_every_mode_but_bypass() {
    for (command, mode) in [
        (&["run", "Set up hooks."][..], "default"),
        (&["run", "Set up hooks."][..], "accept-edits"),
        (&["exec", "Set up hooks."][..], "default"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = model_writes_a_hook(dir.path(), command, &["--mode", mode]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{command:?} {mode}: {err}");
        assert!(
            !dir.path().join("root/.git/hooks/pre-commit").exists(),
            "{command:?} {mode}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let out = model_writes_a_hook(dir.path(), &["run", "Set up hooks."], &["--mode", "bypass"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("root/.git/hooks/pre-commit").exists());
}
