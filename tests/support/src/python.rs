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

/// The MCP server on the official Python SDK that the MCP client tests
/// talk to (`modifiers/deepagent/tests/mcp/sdk_server.py`: `interrupted`,
/// `book_table` asking for input), over streamable HTTP on a free loopback
/// port, ready; `log`: where it appends each `book_table` answer as a JSON
/// line. The child dies with its handle. Returns it and the `/mcp` URL.
pub fn mcp_sdk_server(log: Option<&Path>) -> (crate::process::KillOnDrop, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../modifiers/deepagent/tests/mcp/sdk_server.py");
    let port = crate::free_port();
    let mut command = Command::new("python3");
    command.arg(&script).arg(port.to_string());
    if let Some(log) = log {
        command.arg(log);
    }
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("python3 does not start: {e}"));
    let child = crate::process::KillOnDrop(child);
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed().as_secs() < 30,
            "the MCP SDK server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (child, format!("http://127.0.0.1:{port}/mcp"))
}
