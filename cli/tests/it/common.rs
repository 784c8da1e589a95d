//! What the CLI tests share: the real binary (this checkout's build),
//! run offline.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use lc_agent_test_support::own_binary as bin;

/// The `lc-agent` cargo built for this test run.
pub fn built() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_lc-agent"))
}

/// `lc-agent` (as cargo built it) with none of the caller's model
/// variables.
pub fn offline() -> Command {
    bin::offline(built())
}

/// A hard link in `dir` of this checkout's `lc-agent`, checked (see
/// `lc_agent_test_support::own_binary`).
pub fn own_binary(dir: &Path) -> PathBuf {
    bin::own_binary(built(), env!("CARGO_MANIFEST_DIR"), dir)
}

/// Runs `command` with this stdin; its output.
pub fn with_stdin(command: &mut Command, stdin: &str) -> Output {
    bin::run_with_stdin(command, stdin)
}

/// Runs `lc-agent <args> --script <script> --sessions <dir>/sessions
/// <extra>` offline (no `OPENAI_*`, `LC_AGENT_HOME` under `dir`), with
/// this stdin; the script is written to a new file under `dir`.
pub fn lc_agent<S: AsRef<std::ffi::OsStr>>(
    dir: &Path,
    args: &[&str],
    script: &str,
    extra: &[S],
    stdin: &str,
) -> Output {
    static SCRIPTS: AtomicUsize = AtomicUsize::new(0);
    let script_path = dir.join(format!(
        "script-{}.json",
        SCRIPTS.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::write(&script_path, script).unwrap();
    let mut command = bin::offline(&own_binary(dir));
    command
        .args(args)
        .arg("--script")
        .arg(&script_path)
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .args(extra)
        // `--memory` keeps its store under the home directory.
        .env("LC_AGENT_HOME", dir.join("home"));
    with_stdin(&mut command, stdin)
}

/// Runs `command` with stdout a pipe whose reader is gone (as with
/// `| head -1` once `head` has its line) and stdin closed: how it ended
/// and what it said on stderr.
pub fn into_closed_pipe(command: &mut Command) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    command
        .stdin(std::process::Stdio::null())
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap()
}

/// Asserts that `out` (from [`into_closed_pipe`]) is a quiet success.
pub fn assert_quiet_success(what: &str, out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.is_empty(),
        "{what} into a closed pipe: {:?}, stderr: {stderr}",
        out.status
    );
}
