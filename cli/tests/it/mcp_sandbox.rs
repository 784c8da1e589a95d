//! MCP stdio servers run in the agent's sandbox profile (the shell's):
//! a real server on the official Python SDK (`tests/python/prying_server.py`)
//! started by `lc-agent run --root ROOT --mcp FILE` tries to read
//! `OPENAI_API_KEY` from its environment and to write outside the root;
//! under each mechanism the key is absent and the write refused, while a
//! write in the root works. Marked `"sandbox": "full"`, the same server
//! does both (the user's choice, by name).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common;
use lc_agent_test_support::needs;
use lc_agent_test_support::trust::{sandbox_site, SandboxSite};
use serde_json::{json, Value};

const API_KEY: &str = "sk-mcp-sandbox-test-do-not-leak";

/// The real Python interpreter (not a pyenv shim, a script that needs the
/// rest of the home directory).
fn python() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `lc-agent run` with the prying server (its entry plus `extra`), a
/// script that reads the key, writes outside the root and in it; the
/// saved session's text and the run's stderr.
fn pry(site: &SandboxSite, extra: Value, mechanism: &str) -> (String, String) {
    let server_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let mut entry = json!({"command": python(), "args": ["prying_server.py"], "cwd": server_dir});
    if let (Some(entry), Value::Object(extra)) = (entry.as_object_mut(), extra) {
        entry.extend(extra);
    }
    let base = site.base();
    let mcp_json = base.join("mcp.json");
    std::fs::write(&mcp_json, json!({"mcpServers": {"pry": entry}}).to_string()).unwrap();
    let script = base.join("script.json");
    let outside = site.outside.join("pried.txt");
    let inside = site.root.join("src/pried.txt");
    std::fs::write(
        &script,
        json!([
            {"tool_calls": [{"id": "c1", "name": "env", "arguments": {"name": "OPENAI_API_KEY"}}]},
            {"tool_calls": [{"id": "c2", "name": "write", "arguments": {"path": outside}}]},
            {"tool_calls": [{"id": "c3", "name": "write", "arguments": {"path": inside}}]},
            {"tool_calls": [{"id": "c4", "name": "limits", "arguments": {}}]},
            {"content": "Done."}
        ])
        .to_string(),
    )
    .unwrap();
    let sessions = base.join(format!("sessions-{mechanism}"));
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["run", "Pry."])
        .arg("--root")
        .arg(&site.root)
        .arg("--script")
        .arg(&script)
        .arg("--sessions")
        .arg(&sessions)
        .arg("--mcp")
        .arg(&mcp_json)
        .env("LC_AGENT_HOME", base.join("home"))
        .env("OPENAI_API_KEY", API_KEY)
        .env_remove("OPENAI_BASE_URL")
        .env("LC_AGENT_SANDBOX_MECHANISM", mechanism)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("  env ok ("), "{stderr}");
    let saved: String = common::saved_documents(&sessions)
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    (saved, stderr)
}

fn site() -> SandboxSite {
    sandbox_site(Path::new(env!("CARGO_TARGET_TMPDIR")), "")
}

fn pried(dir: &Path) -> PathBuf {
    dir.join("pried.txt")
}

#[needs(python_mcp, bwrap)]
#[test]
fn an_mcp_stdio_server_runs_in_the_sandbox_with_a_scrubbed_environment() {
    for mechanism in ["bubblewrap", "landlock"] {
        let site = site();
        let (saved, stderr) = pry(&site, json!({}), mechanism);
        assert!(
            !saved.contains(API_KEY),
            "{mechanism}: the key leaked: {saved}"
        );
        assert!(saved.contains("<absent>"), "{mechanism}: {saved}\n{stderr}");
        assert!(
            !pried(&site.outside).exists(),
            "{mechanism}: the server wrote outside the root"
        );
        assert!(saved.contains("refused: "), "{mechanism}: {saved}");
        // The shell's process limit: a pids cgroup of its own (seen from
        // outside a cgroup namespace: Landlock), else RLIMIT_NPROC.
        if mechanism == "landlock" {
            assert!(
                saved.contains("/lc-agent-") || !saved.contains("nproc=-1"),
                "{mechanism}: the server runs without the process limit: {saved}"
            );
        }
        // The root is the profile's: writable.
        assert_eq!(
            std::fs::read_to_string(pried(&site.root.join("src"))).unwrap_or_default(),
            "pried\n",
            "{mechanism}: {saved}\n{stderr}"
        );
    }
}

#[needs(python_mcp, bwrap)]
#[test]
fn a_server_marked_full_runs_unconfined_with_the_environment() {
    let site = site();
    let (saved, stderr) = pry(&site, json!({"sandbox": "full"}), "bubblewrap");
    assert!(saved.contains(API_KEY), "{saved}\n{stderr}");
    assert_eq!(
        std::fs::read_to_string(pried(&site.outside)).unwrap(),
        "pried\n"
    );
}

/// A variable the entry passes by name reaches the confined server; no
/// other does.
#[needs(python_mcp, bwrap)]
#[test]
fn a_variable_passed_by_name_reaches_the_confined_server() {
    let site = site();
    let (saved, stderr) = pry(&site, json!({"env": ["OPENAI_API_KEY"]}), "bubblewrap");
    assert!(saved.contains(API_KEY), "{saved}\n{stderr}");
    assert!(!pried(&site.outside).exists());
}
