//! What the CLI tests share: the real binary (this checkout's build),
//! run offline.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
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
    let mut child = Command::new(own_binary(dir))
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

/// The checkout a binary was built from (it prints it when asked).
fn built_from(bin: &Path) -> String {
    let out = Command::new(bin)
        .env("LC_AGENT_PRINT_BUILT_FROM", "1")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A hard link (else a copy) in `dir` of the `lc-agent` cargo built for
/// this test run, checked to be this checkout's build: a target directory
/// shared by several checkouts may hold another's `lc-agent`, rebuilt
/// while the tests run; the link keeps the checked file whatever happens
/// to the original.
pub fn own_binary(dir: &Path) -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_lc-agent"));
    let bin = dir.join("lc-agent");
    if !bin.exists() && std::fs::hard_link(&built, &bin).is_err() {
        std::fs::copy(&built, &bin).unwrap();
    }
    let here = env!("CARGO_MANIFEST_DIR");
    assert_eq!(
        built_from(&bin),
        here,
        "{} is not this checkout's build (another checkout sharing the target \
         directory rebuilt it); run the tests again",
        built.display()
    );
    bin
}
