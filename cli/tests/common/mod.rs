//! What the CLI tests share: the real binary, run offline.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

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
    let mut child = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(args)
        .arg("--script")
        .arg(&script_path)
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .args(extra)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        // `--memory` keeps its store under the home directory.
        .env("LC_AGENT_HOME", dir.join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}
