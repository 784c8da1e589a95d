//! The independent Python clients some tests drive the servers with: the
//! official `openai` package (OpenAI's SDK) against `lc-agent serve`'s
//! chat completions, the official `mcp` package against `lc-agent mcp`.
//! A test's script prints one JSON object; the test asserts on it.
//!
//! `.ci/run` installs both (`pip install -r .ci/requirements.txt`).

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// The Python module of OpenAI's SDK.
pub const OPENAI: &str = "openai";
/// The Python module of the MCP SDK.
pub const MCP: &str = "mcp";

/// Whether `python3` can import `module`.
pub fn has_module(module: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `python3 <script> <args>` and parses what it printed as JSON.
/// Panics with the script's stderr when it fails, and with its stdout when
/// that is not JSON. Blocking: an async test calls it through
/// `tokio::task::spawn_blocking` while its server runs.
pub fn run_json<S: AsRef<std::ffi::OsStr>>(script: &Path, args: &[S]) -> Value {
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("python3 does not start: {e}"));
    assert!(
        out.status.success(),
        "{} failed:\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{} printed no JSON ({e}):\n{}",
            script.display(),
            String::from_utf8_lossy(&out.stdout)
        )
    })
}
