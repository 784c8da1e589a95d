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
    lc_agent_in(
        &std::env::current_dir().unwrap(),
        dir,
        args,
        script,
        extra,
        stdin,
    )
}

/// [`lc_agent`] run in the directory `cwd` (a resumed session's directory
/// workspace is used only inside the one `lc-agent` runs in).
pub fn lc_agent_in<S: AsRef<std::ffi::OsStr>>(
    cwd: &Path,
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
        .current_dir(cwd)
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

/// The sessions saved under `sessions` (a JSON session list's folder, every
/// user in it), each as `(id, document)`: the document a full save writes,
/// the snapshot with its journal applied (a snapshot file alone may be
/// older than the session).
pub fn saved_documents(sessions: &Path) -> Vec<(String, String)> {
    use lc_agent::{JsonNetworkList, NetworkList};
    let mut found = Vec::new();
    let mut stack = vec![sessions.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for path in entries.flatten().map(|e| e.path()) {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let Some(id) = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .and_then(|s| uuid::Uuid::parse_str(s).ok())
                else {
                    continue;
                };
                let user = d.file_name().unwrap().to_string_lossy().into_owned();
                let root = d.parent().unwrap().to_path_buf();
                found.push((root, user, id));
            }
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    found
        .into_iter()
        .filter_map(|(root, user, id)| {
            let list = JsonNetworkList::new(root).with_user(user).ok()?;
            // A session being written may not load yet: skipped.
            let text = rt.block_on(list.load_json(id)).ok()?;
            Some((id.to_string(), text))
        })
        .collect()
}

/// The session `id` saved under `sessions` (see [`saved_documents`]).
pub fn saved_document(sessions: &Path, id: &str) -> String {
    saved_documents(sessions)
        .into_iter()
        .find(|(i, _)| i == id)
        .map(|(_, text)| text)
        .unwrap_or_else(|| panic!("no saved session {id} under {}", sessions.display()))
}
