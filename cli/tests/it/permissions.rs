//! Path rules through the real binary: `lc-agent tool`, a `run` turn with
//! the scripted model (deny refused naming the rule, ask held naming it),
//! and `lc-agent mcp` over stdio (an `ask` refuses: nobody can approve).

use crate::common;
use lc_agent::Saving;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

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

/// A workspace with secrets, a public file and a link into the secrets.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("secrets")).unwrap();
    std::fs::write(dir.path().join("secrets/key.pem"), "TOPSECRET\n").unwrap();
    std::fs::write(dir.path().join("secrets/public.txt"), "shareable\n").unwrap();
    std::fs::write(dir.path().join("readme.md"), "hello\n").unwrap();
    std::os::unix::fs::symlink("secrets", dir.path().join("link")).unwrap();
    dir
}

#[test]
fn tool_refuses_denied_paths_and_hides_them_from_listings() {
    let dir = workspace();
    let root = dir.path().to_str().unwrap();
    let tool = |name: &str, args: Value, rules: &[&str]| {
        let args = args.to_string();
        let mut all = vec!["tool", name, args.as_str(), "--root", root];
        all.extend_from_slice(rules);
        lc_agent(&all)
    };
    let deny = ["--deny", "secrets/**"];
    for path in [
        "/secrets/key.pem",
        "//SECRETS//key.pem",
        "/link/key.pem",
        "secrets/./key.pem",
    ] {
        let (out, _, code) = tool("read_file", json!({"file_path": path}), &deny);
        assert_eq!(code, 1, "{path}: {out}");
        assert!(
            out.starts_with(
                "Error: Permission denied by path rule 1 (deny *:secrets/**): cannot read"
            ),
            "{path}: {out}"
        );
        assert!(!out.contains("TOPSECRET"));
    }
    let (out, _, code) = tool("ls", json!({"path": "/", "recursive": true}), &deny);
    assert_eq!(
        (code, out.as_str()),
        (0, "/readme.md\n"),
        "links into secrets hidden too"
    );
    let (out, _, _) = tool(
        "grep",
        json!({"pattern": "TOPSECRET", "output_mode": "content"}),
        &deny,
    );
    assert_eq!(out, "No matches found\n");
    let (out, _, _) = tool("glob", json!({"pattern": "**/*"}), &deny);
    assert_eq!(out, "/readme.md\n");
    let (out, _, code) = tool(
        "write_file",
        json!({"file_path": "/link/new.txt", "content": "PWNED"}),
        &deny,
    );
    assert_eq!(code, 1, "{out}");
    assert!(!dir.path().join("secrets/new.txt").exists());

    // First match wins, in command-line order.
    let exception = ["--allow", "read:secrets/public.txt", "--deny", "secrets/**"];
    let (out, _, code) = tool(
        "read_file",
        json!({"file_path": "/secrets/public.txt"}),
        &exception,
    );
    assert_eq!((code, out.as_str()), (0, "     1\tshareable\n"));
    let reversed = ["--deny", "secrets/**", "--allow", "read:secrets/public.txt"];
    let (out, _, code) = tool(
        "read_file",
        json!({"file_path": "/secrets/public.txt"}),
        &reversed,
    );
    assert_eq!(code, 1, "{out}");

    // `ask` has nobody to ask here: refused, saying so.
    let (out, _, code) = tool(
        "write_file",
        json!({"file_path": "/docs/a.md", "content": "x"}),
        &["--ask", "write:docs/**"],
    );
    assert_eq!(code, 1);
    assert!(
        out.starts_with("Error: Approval needed: path rule 1 (ask write:docs/**) asks a person"),
        "{out}"
    );
    assert!(!dir.path().join("docs").exists());
}

#[test]
fn tool_rules_apply_to_a_state_file_and_bad_flags_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("net.json");
    let net = lc_agent::RunnableNetwork::new();
    net.with_files_mut(|files| {
        files.insert("/secrets/k".into(), lc_agent::FileData::new("TOPSECRET\n"));
    });
    net.save_to_file(&state).unwrap();
    let state = state.to_str().unwrap();
    let (out, _, code) = lc_agent(&[
        "tool",
        "read_file",
        r#"{"file_path": "/Secrets/k"}"#,
        "--state",
        state,
        "--deny",
        "read:secrets",
    ]);
    assert_eq!(code, 1);
    assert!(
        out.starts_with("Error: Permission denied by path rule 1 (deny read:secrets)"),
        "{out}"
    );

    let root = dir.path().to_str().unwrap();
    for (flag, value, says) in [
        (
            "--deny",
            "wrte:x",
            "invalid --deny 'wrte:x': `wrte` is not an operation",
        ),
        (
            "--ask",
            "read:",
            "invalid --ask 'read:': no path glob given",
        ),
        ("--allow", "read:a/[b", "the glob `a/[b` is invalid"),
    ] {
        let (_, err, code) = lc_agent(&["tool", "ls", "{}", "--root", root, flag, value]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(says), "{err}");
        assert!(err.contains("OPS:GLOBS"), "the syntax is named: {err}");
    }
}

#[test]
fn a_run_refuses_a_denied_read_and_holds_an_ask_naming_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let work = workspace();
    let script = json!([
        {"tool_calls": [{"id": "c1", "name": "read_file",
            "arguments": {"file_path": "/link/key.pem"}}]},
        {"tool_calls": [{"id": "c2", "name": "write_file",
            "arguments": {"file_path": "/docs/a.md", "content": "draft\n"}}]},
        {"content": "Done."}
    ]);
    let out = common::lc_agent(
        dir.path(),
        &["run", "Read the key, write the docs."],
        &script.to_string(),
        &[
            "--root",
            work.path().to_str().unwrap(),
            "--deny",
            "secrets/**",
            "--ask",
            "write:docs/**",
        ],
        "y\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("approve write_file")
            && stderr.contains("(asked by path rule 2 (ask write:docs/**))"),
        "{stderr}"
    );
    assert_eq!(stdout.lines().last(), Some("Done."));
    assert_eq!(
        std::fs::read_to_string(work.path().join("docs/a.md")).unwrap(),
        "draft\n"
    );
    // The model read the refusal naming the rule; the secret never left.
    let saved = all_text(&dir.path().join("sessions"));
    assert!(
        saved.contains(
            "Permission denied by path rule 1 (deny *:secrets/**): cannot read /link/key.pem"
        ),
        "{saved}"
    );
    assert!(!saved.contains("TOPSECRET"));
    assert!(
        saved.contains("\"path rule 2 (ask write:docs/**)\""),
        "recorded on the node"
    );
}

/// Every file's text under `dir`, at any depth.
fn all_text(dir: &std::path::Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            text.push_str(&all_text(&path));
        } else if let Ok(file) = std::fs::read_to_string(&path) {
            text.push_str(&file);
        }
    }
    text
}

/// One JSON-RPC exchange with `lc-agent mcp` over stdio.
struct Mcp {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Mcp {
    fn send(&mut self, message: Value) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn answer(&mut self, id: u64) -> Value {
        loop {
            let mut line = String::new();
            assert!(
                self.out.read_line(&mut line).unwrap() > 0,
                "the server left"
            );
            let value: Value = serde_json::from_str(&line).unwrap();
            if value["id"] == id {
                return value;
            }
        }
    }

    fn call(&mut self, id: u64, name: &str, args: Value) -> (bool, String) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": args}}));
        let answer = self.answer(id);
        let result = &answer["result"];
        (
            result["isError"].as_bool().unwrap_or(false),
            result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    }
}

#[test]
fn the_mcp_server_obeys_the_rules_and_refuses_an_ask() {
    let work = workspace();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["mcp", "--root"])
        .arg(work.path())
        .args(["--deny", "secrets/**", "--ask", "write:docs/**"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut mcp = Mcp { child, out };
    mcp.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}),
    );
    mcp.answer(1);
    mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let (error, text) = mcp.call(2, "read_file", json!({"file_path": "/link/key.pem"}));
    assert!(error, "{text}");
    assert_eq!(
        text,
        "Error: Permission denied by path rule 1 (deny *:secrets/**): cannot read /link/key.pem"
    );
    let (_, text) = mcp.call(
        3,
        "grep",
        json!({"pattern": "TOPSECRET", "output_mode": "content"}),
    );
    assert_eq!(text, "No matches found");
    let (_, text) = mcp.call(4, "ls", json!({"path": "/", "recursive": true}));
    assert_eq!(text, "/readme.md");
    let (error, text) = mcp.call(
        5,
        "write_file",
        json!({"file_path": "/docs/a.md", "content": "x"}),
    );
    assert!(
        error && text.starts_with("Error: Approval needed: path rule 2 (ask write:docs/**)"),
        "{text}"
    );
    assert!(!work.path().join("docs").exists());
    let (error, text) = mcp.call(6, "read_file", json!({"file_path": "/readme.md"}));
    assert!(!error && text.contains("hello"), "{text}");
    drop(mcp.child.stdin.take());
    let _ = mcp.child.kill();
    let _ = mcp.child.wait();
}
