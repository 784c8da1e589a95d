//! Hooks through `lc-agent run` (the real binary, a scripted model,
//! offline): a `PreToolUse` hook in the project's `.lc-agent/settings.json`
//! refuses `rm -rf` (the model reads why, the run goes on and its next
//! command runs), one that only logs (the event on its stdin, nothing
//! decided), a hanging one (killed at its timeout, reported, the call
//! runs) and a crashing one (reported, the call runs); a settings file
//! with a mistake stops the command before anything runs. A hook's
//! `updatedInput` rewrites the call that runs and is saved; `lc-agent tool`
//! and `lc-agent mcp` run the same hooks around each call.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common;

/// `lc-agent run TASK --root <dir>/root --shell --yes --trust-project <extra>` offline,
/// the user's settings directory (`XDG_CONFIG_HOME`) empty.
fn run(dir: &Path, script: Value, extra: &[&str]) -> Output {
    let root = dir.join("root");
    let config = dir.join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::create_dir_all(&root).unwrap();
    let script_path = dir.join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let mut command = lc_agent_test_support::own_binary::offline(&common::own_binary(dir));
    command
        // The project's own hooks run once it is trusted (trust.rs).
        .args([
            "run",
            "Clean up.",
            "--shell",
            "--yes",
            "--trust-project",
            "--root",
        ])
        .arg(&root)
        .arg("--script")
        .arg(&script_path)
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .args(extra)
        .env("LC_AGENT_HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", &config);
    common::with_stdin(&mut command, "")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every saved session's document, joined.
fn saved(dir: &Path) -> String {
    common::saved_documents(&dir.join("sessions"))
        .into_iter()
        .map(|(_, text)| text)
        .collect()
}

fn settings(hooks: Value) -> String {
    json!({"hooks": {"PreToolUse": [{"matcher": "execute", "hooks": hooks}]}}).to_string()
}

#[test]
fn a_pre_tool_use_hook_refuses_rm_rf_the_model_reads_why_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("victim")).unwrap();
    std::fs::write(root.join("victim/keep.txt"), "precious\n").unwrap();
    std::fs::create_dir_all(root.join(".lc-agent")).unwrap();
    let hook = dir.path().join("block-rm.sh");
    std::fs::write(
        &hook,
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *'rm -rf'*) echo 'rm -rf is not allowed here; delete files one by one' >&2; exit 2;; esac\nexit 0\n",
    )
    .unwrap();
    std::fs::write(
        root.join(".lc-agent/settings.json"),
        settings(json!([{"type": "command", "command": format!("sh {}", hook.display())}])),
    )
    .unwrap();
    let script = json!([
        {"tool_calls": [{"id": "c1", "name": "execute", "arguments": {"command": "rm -rf victim"}}]},
        {"tool_calls": [{"id": "c2", "name": "execute", "arguments": {"command": "echo tidy > tidy.txt"}}]},
        {"content": "I was not allowed to remove victim; I wrote tidy.txt instead."}
    ]);
    let out = run(dir.path(), script, &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Nothing was removed; the run went on to its next command and answer.
    assert_eq!(
        std::fs::read_to_string(root.join("victim/keep.txt")).unwrap(),
        "precious\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("tidy.txt")).unwrap(),
        "tidy\n"
    );
    assert!(
        stdout.contains("I was not allowed to remove victim"),
        "{stdout}"
    );
    // The person sees the block, once.
    assert_eq!(
        stderr.matches("PreToolUse hook `sh ").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("blocked: rm -rf is not allowed here"),
        "{stderr}"
    );
    // The model read the reason: it is the call's result in the session.
    let session = saved(dir.path());
    assert!(
        session.contains(
            "Error: a PreToolUse hook blocked this call: rm -rf is not allowed here; delete files one by one"
        ),
        "{session}"
    );
}

#[test]
fn a_hook_that_only_logs_sees_the_event_and_decides_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hook-log.jsonl");
    let file = dir.path().join("settings.json");
    std::fs::write(
        &file,
        settings(json!([{"type": "command", "command": format!("cat >> {0}; echo >> {0}", log.display())}])),
    )
    .unwrap();
    let script = json!([
        {"tool_calls": [{"id": "c1", "name": "execute", "arguments": {"command": "echo hi > hi.txt"}}]},
        {"content": "Done."}
    ]);
    let out = run(dir.path(), script, &["--settings", file.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("hook"),
        "a quiet hook says nothing: {stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("root/hi.txt")).unwrap(),
        "hi\n"
    );
    let logged: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(logged.len(), 1, "{logged:?}");
    let event = &logged[0];
    assert_eq!(event["hook_event_name"], "PreToolUse");
    assert_eq!(event["tool_name"], "execute");
    assert_eq!(event["tool_input"], json!({"command": "echo hi > hi.txt"}));
    assert_eq!(event["tool_use_id"], "c1");
    let root = dir.path().join("root");
    assert_eq!(
        event["cwd"],
        json!(root.canonicalize().unwrap_or(root).display().to_string())
    );
    assert!(
        event["session_id"].as_str().is_some_and(|s| s.len() == 36),
        "{event}"
    );
}

#[test]
fn a_hanging_hook_times_out_and_a_crashing_one_is_reported_and_neither_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    std::fs::write(
        &file,
        settings(json!([
            {"type": "command", "command": "sleep 30", "timeout": 1},
            {"type": "command", "command": "echo 'hook script broke' >&2; exit 1"},
        ])),
    )
    .unwrap();
    let script = json!([
        {"tool_calls": [{"id": "c1", "name": "execute", "arguments": {"command": "echo ran > ran.txt"}}]},
        {"content": "Done."}
    ]);
    let clock = Instant::now();
    let out = run(dir.path(), script, &["--settings", file.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        clock.elapsed() < Duration::from_secs(20),
        "{:?}",
        clock.elapsed()
    );
    assert!(
        stderr
            .contains("warning: PreToolUse hook `sleep 30` timed out: no answer after 1s; killed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("warning: PreToolUse hook `echo 'hook script broke' >&2; exit 1` failed: exit code 1: hook script broke"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("root/ran.txt")).unwrap(),
        "ran\n"
    );
}

#[test]
fn a_settings_file_with_a_mistake_stops_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    std::fs::write(
        &file,
        r#"{"hooks": {"PreToolUse": [{"matcher": "execute", "hooks": [{"type": "command"}]}]}}"#,
    )
    .unwrap();
    let script = json!([{"tool_calls": [{"id": "c1", "name": "execute", "arguments": {"command": "echo ran > ran.txt"}}]}, {"content": "Done."}]);
    let out = run(dir.path(), script, &["--settings", file.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("hooks.PreToolUse[0].hooks[0]: `command` is missing"),
        "{stderr}"
    );
    assert!(!dir.path().join("root/ran.txt").exists());
}

#[test]
fn a_hook_rewrites_a_call_and_the_session_records_what_ran() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join(".lc-agent")).unwrap();
    let answer = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"command": "echo safe > safe.txt"}}});
    std::fs::write(
        root.join(".lc-agent/settings.json"),
        settings(
            json!([{"type": "command", "command": format!("cat > /dev/null; echo '{answer}'")}]),
        ),
    )
    .unwrap();
    let script = json!([
        {"tool_calls": [{"id": "c1", "name": "execute", "arguments": {"command": "echo bad > bad.txt"}}]},
        {"content": "Done."}
    ]);
    let out = run(dir.path(), script, &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The rewritten call is what ran.
    assert_eq!(
        std::fs::read_to_string(root.join("safe.txt")).unwrap(),
        "safe\n"
    );
    assert!(!root.join("bad.txt").exists());
    // The tool node holds the rewritten call, with a note naming the original.
    let nodes: Vec<Value> = common::saved_documents(&dir.path().join("sessions"))
        .into_iter()
        .filter_map(|(_, text)| serde_json::from_str::<Value>(&text).ok())
        .flat_map(|s| s["nodes"].as_array().cloned().unwrap_or_default())
        .collect();
    let tool = nodes
        .iter()
        .find(|n| n["tool_call"]["id"] == "c1")
        .unwrap_or_else(|| panic!("{nodes:#?}"));
    let args: Value =
        serde_json::from_str(tool["tool_call"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"command": "echo safe > safe.txt"}));
    let hook = &tool["metadata"]["hook"];
    assert_eq!(
        (
            &hook["decision"],
            &hook["updated_input"],
            &hook["original_input"]
        ),
        (
            &json!("allow"),
            &json!(true),
            &json!({"command": "echo bad > bad.txt"})
        ),
        "{tool}"
    );
}

/// `lc-agent tool write_file ARGS --root <dir>/root --settings <dir>/settings.json`.
fn tool_call(dir: &Path, args: Value, extra: &[&str]) -> (String, String, i32) {
    let settings = dir.join("settings.json");
    std::fs::write(
        &settings,
        lc_agent_test_support::trust::gate_hooks().to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("root")).unwrap();
    std::fs::create_dir_all(dir.join("config")).unwrap();
    let out = std::process::Command::new(common::own_binary(dir))
        .arg("tool")
        .arg("write_file")
        .arg(args.to_string())
        .arg("--root")
        .arg(dir.join("root"))
        .arg("--settings")
        .arg(&settings)
        .args(extra)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .output()
        .unwrap();
    (
        text(&out.stdout),
        text(&out.stderr),
        out.status.code().unwrap(),
    )
}

#[test]
fn lc_agent_tool_runs_the_hooks_refusing_rewriting_asking_and_adding_to_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (out, err, code) = tool_call(
        dir.path(),
        json!({"file_path": "/secrets/key.md", "content": "k"}),
        &[],
    );
    assert_eq!(
        (out.as_str(), code),
        (
            "Error: a PreToolUse hook blocked this call: secrets stay untouched\n",
            1
        ),
        "{err}"
    );
    assert!(
        err.contains("PreToolUse hook `input=$(cat)") && err.contains("blocked"),
        "{err}"
    );
    assert!(!root.join("secrets/key.md").exists());
    let (out, err, code) = tool_call(
        dir.path(),
        json!({"file_path": "/draft.md", "content": "draft"}),
        &[],
    );
    assert_eq!(
        (out.as_str(), code),
        (
            "Successfully wrote to /final.md\n\nFrom a PostToolUse hook: checked by the post hook\n",
            0
        ),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("final.md")).unwrap(),
        "rewritten"
    );
    assert!(!root.join("draft.md").exists());
    let (out, _, code) = tool_call(
        dir.path(),
        json!({"file_path": "/ask.md", "content": "a"}),
        &[],
    );
    assert_eq!(
        (out.as_str(), code),
        (
            "Error: Approval needed: a PreToolUse hook asked: a person reads ask.md first; \
             nobody can approve a call here, so nothing was run\n",
            1
        )
    );
    assert!(!root.join("ask.md").exists());
}

/// One JSON-RPC answer of `lc-agent mcp` over stdio to `requests` (the last
/// one's), the handshake first.
fn mcp_call(dir: &Path, call: Value) -> Value {
    use std::io::{BufRead, BufReader, Write};
    let settings = dir.join("settings.json");
    std::fs::write(
        &settings,
        lc_agent_test_support::trust::gate_hooks().to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("root")).unwrap();
    std::fs::create_dir_all(dir.join("config")).unwrap();
    let mut child = std::process::Command::new(common::own_binary(dir))
        .arg("mcp")
        .arg("--root")
        .arg(dir.join("root"))
        .arg("--settings")
        .arg(&settings)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}),
    ];
    for request in requests {
        writeln!(stdin, "{request}").unwrap();
    }
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let answer = loop {
        let line = lines.next().unwrap().unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["id"] == 2 {
            break value;
        }
    };
    drop(stdin);
    let _ = child.wait();
    answer
}

#[test]
fn lc_agent_mcp_runs_the_hooks_on_every_call() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let refused = mcp_call(
        dir.path(),
        json!({"name": "write_file", "arguments": {"file_path": "/secrets/key.md", "content": "k"}}),
    );
    assert_eq!(
        (
            &refused["result"]["isError"],
            &refused["result"]["content"][0]["text"]
        ),
        (
            &json!(true),
            &json!("Error: a PreToolUse hook blocked this call: secrets stay untouched")
        ),
        "{refused}"
    );
    assert!(!root.join("secrets/key.md").exists());
    let rewritten = mcp_call(
        dir.path(),
        json!({"name": "write_file", "arguments": {"file_path": "/draft.md", "content": "draft"}}),
    );
    assert_eq!(
        rewritten["result"]["content"][0]["text"],
        "Successfully wrote to /final.md\n\nFrom a PostToolUse hook: checked by the post hook",
        "{rewritten}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("final.md")).unwrap(),
        "rewritten"
    );
    assert!(!root.join("draft.md").exists());
}

/// Issue 49 item 5: in `exec --json`, a hook that blocked a call names it:
/// the hook item's `call_id` is the call's, and the call's own item
/// (`command_execution`) carries the same `call_id`.
#[test]
fn a_hook_blocked_call_is_named_by_its_call_id_in_exec_json() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let config = dir.path().join("config");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&config).unwrap();
    let file = dir.path().join("settings.json");
    std::fs::write(
        &file,
        settings(json!([{"type": "command", "command": "echo no >&2; exit 2"}])),
    )
    .unwrap();
    let script_path = dir.path().join("script.json");
    std::fs::write(
        &script_path,
        json!([
            {"tool_calls": [{"id": "c1", "name": "execute", "arguments": {"command": "echo hi"}}]},
            {"content": "Blocked."}
        ])
        .to_string(),
    )
    .unwrap();
    let mut command = lc_agent_test_support::own_binary::offline(&common::own_binary(dir.path()));
    command
        .args(["exec", "--json", "Say hi.", "--shell", "--yes", "--root"])
        .arg(&root)
        .arg("--script")
        .arg(&script_path)
        .arg("--sessions")
        .arg(dir.path().join("sessions"))
        .arg("--settings")
        .arg(&file)
        .env("LC_AGENT_HOME", dir.path().join("home"))
        .env("XDG_CONFIG_HOME", &config);
    let out = common::with_stdin(&mut command, "");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let items: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "item.completed")
        .map(|e| e["item"].clone())
        .collect();
    let hook = items
        .iter()
        .find(|i| i["type"] == "hook" && i["outcome"] == "blocked")
        .unwrap_or_else(|| panic!("no blocked hook item: {stdout}"));
    assert_eq!(hook["call_id"], "c1", "{hook}");
    let call = items
        .iter()
        .find(|i| i["type"] == "command_execution")
        .unwrap_or_else(|| panic!("no command item: {stdout}"));
    assert_eq!(call["call_id"], "c1", "{call}");
    assert_eq!(call["status"], "failed", "{call}");
}
