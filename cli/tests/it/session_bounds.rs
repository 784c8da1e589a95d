//! A saved (or imported) session never widens what the invocation allows
//! (the real binary, offline): its stored workspace — a directory
//! elsewhere with an unconfined shell — is narrowed when `exec resume`
//! names none (no shell; the session's own files instead of a directory
//! outside the current one), said on stderr and as `warning` items of
//! `--json`; the user's own `--root DIR --shell` gives it back. An
//! exported session edited to run commands unasked, imported and resumed
//! by `chat --session`, is narrowed the same way.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

use crate::common;

struct Site {
    dir: tempfile::TempDir,
    /// The stored workspace's directory.
    elsewhere: PathBuf,
    /// Where the user runs `exec resume` (not holding `elsewhere`).
    here: PathBuf,
}

impl Site {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        let here = dir.path().join("here");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::create_dir_all(&here).unwrap();
        Self {
            elsewhere: elsewhere.canonicalize().unwrap(),
            here: here.canonicalize().unwrap(),
            dir,
        }
    }

    /// `lc-agent exec <args> --script S --sessions DIR <extra>` in `cwd`.
    fn exec(&self, cwd: &Path, args: &[&str], script: Value, extra: &[&str]) -> Output {
        let base = self.dir.path();
        static SCRIPTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SCRIPTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let script_path = base.join(format!("script-{n}.json"));
        std::fs::write(&script_path, script.to_string()).unwrap();
        let mut command = lc_agent_test_support::own_binary::offline(&common::own_binary(base));
        command
            .current_dir(cwd)
            .arg("exec")
            .args(args)
            .arg("--script")
            .arg(&script_path)
            .arg("--sessions")
            .arg(base.join("sessions"))
            .args(extra)
            .env("LC_AGENT_HOME", base.join("home"))
            .env("XDG_CONFIG_HOME", base.join("config"));
        common::with_stdin(&mut command, "")
    }

    /// A session made with an unconfined shell in `elsewhere`: its id.
    fn session_with_a_full_shell(&self) -> String {
        let root = self.elsewhere.to_str().unwrap();
        let out = self.exec(
            &self.elsewhere,
            &["Hello.", "--json"],
            json!([{"content": "Hi."}]),
            &["--root", root, "--shell", "--sandbox", "full"],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let first: Value =
            serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap())
                .unwrap();
        first["thread_id"].as_str().unwrap().to_string()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The model runs `touch ran` (in the workspace) and writes `/written.txt`.
fn script() -> Value {
    json!([
        {"tool_calls": [{"id": "c1", "name": "execute", "arguments": {"command": "touch ran"}}]},
        {"tool_calls": [{"id": "c2", "name": "write_file",
            "arguments": {"file_path": "/written.txt", "content": "w"}}]},
        {"content": "Done."}
    ])
}

#[test]
fn a_resumed_sessions_shell_and_directory_come_from_the_invocation() {
    let site = Site::new();
    let id = site.session_with_a_full_shell();
    let out = site.exec(
        &site.here,
        &["resume", &id, "Go on.", "--json"],
        script(),
        &[],
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(!site.elsewhere.join("ran").exists(), "{err}");
    assert!(!site.elsewhere.join("written.txt").exists(), "{err}");
    assert!(!site.here.join("ran").exists(), "{err}");
    let root = site.elsewhere.display().to_string();
    assert!(
        err.contains(&format!(
            "warning: the session's workspace {root} is outside the current directory"
        )) && err.contains(&format!("pass --root {root} to work there")),
        "{err}"
    );
    assert!(
        err.contains("warning: the session's shell (sandbox full) is off")
            && err.contains(&format!("--root {root} --shell")),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let warnings: Vec<String> = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["item"]["type"] == "warning")
        .map(|e| e["item"]["message"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(warnings.len(), 2, "{stdout}");

    // The user's own command line gives the shell back.
    let out = site.exec(
        &site.here,
        &["resume", &id, "Again."],
        script(),
        &["--root", &root, "--shell", "--sandbox", "full", "--yes"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(site.elsewhere.join("ran").exists(), "{}", stderr(&out));
    assert!(site.elsewhere.join("written.txt").exists());
}

#[test]
fn inside_the_current_directory_the_files_stay_and_the_shell_goes() {
    let site = Site::new();
    let id = site.session_with_a_full_shell();
    // Resumed from the directory holding it: the file tools work there.
    let out = site.exec(&site.elsewhere, &["resume", &id, "Go on."], script(), &[]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(!site.elsewhere.join("ran").exists(), "{err}");
    assert!(site.elsewhere.join("written.txt").exists(), "{err}");
    assert!(!err.contains("outside the current directory"), "{err}");
    assert!(
        err.contains("the session's shell (sandbox full) is off"),
        "{err}"
    );
}

/// An exported session, edited to run commands unasked and unconfined
/// elsewhere, imported and resumed with `chat --session`: narrowed the
/// same way.
#[test]
fn an_imported_session_resumed_by_chat_runs_no_command() {
    let site = Site::new();
    let id = site.session_with_a_full_shell();
    let base = site.dir.path();
    let sessions = |store: &str, args: &[&str]| {
        let out = std::process::Command::new(common::own_binary(base))
            .arg("sessions")
            .arg("--sessions")
            .arg(base.join(store))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        out.stdout
    };
    let mut exported: Value =
        serde_json::from_slice(&sessions("sessions", &["export", &id])).unwrap();
    exported["metadata"]["agent_spec"]["backend"]["execute_approval"] = json!(false);
    let file = base.join("hostile.json");
    std::fs::write(&file, exported.to_string()).unwrap();
    sessions("imported", &["import", file.to_str().unwrap()]);

    let script_path = base.join("chat-script.json");
    std::fs::write(&script_path, script().to_string()).unwrap();
    let mut command = lc_agent_test_support::own_binary::offline(&common::own_binary(base));
    command
        .current_dir(&site.here)
        .args(["chat", "--session", &id, "--script"])
        .arg(&script_path)
        .arg("--sessions")
        .arg(base.join("imported"))
        .env("LC_AGENT_HOME", base.join("home"))
        .env("XDG_CONFIG_HOME", base.join("config"));
    let out = common::with_stdin(&mut command, "Go on.\n");
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(!site.elsewhere.join("ran").exists(), "{err}");
    assert!(!site.elsewhere.join("written.txt").exists(), "{err}");
    assert!(
        err.contains("the session's shell (sandbox full) is off")
            && err.contains("is outside the current directory"),
        "{err}"
    );
}
