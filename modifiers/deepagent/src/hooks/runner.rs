//! Running one hook command: `sh -c <command>` in its own process group,
//! in the agent's working directory, the event as JSON on stdin; stdout
//! and stderr kept (each up to [`OUTPUT_CAP`] bytes); at its timeout the
//! whole group is killed (children of the shell too), as it is when the
//! run that waits for it is dropped (Ctrl-C, a cancelled run).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// One hook command.
#[derive(Debug, Clone)]
pub(crate) struct HookCommand {
    /// The shell line, run by `sh -c`.
    pub(crate) command: String,
    /// How long it may run before its process group is killed.
    pub(crate) timeout: Duration,
}

/// Bytes kept of a hook's stdout and of its stderr.
const OUTPUT_CAP: usize = 64 * 1024;

/// How long the output pipes may stay open after the shell exited (a
/// child that left the group and kept them).
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// How a hook's process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
    /// It ran past its timeout and was killed.
    TimedOut(Duration),
    /// It could not be started.
    Spawn(String),
}

/// A hook's run: how it ended, what it wrote.
#[derive(Debug, Clone)]
pub(crate) struct HookRun {
    pub(crate) exit: Exit,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Kills a process group when dropped.
struct Group(i32);

impl Drop for Group {
    fn drop(&mut self) {
        if self.0 > 0 {
            // SAFETY: killpg has no memory effects; a group that is gone gives ESRCH.
            unsafe {
                libc::killpg(self.0, libc::SIGKILL);
            }
        }
    }
}

async fn read_capped(mut pipe: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    kept
}

/// Runs `hook` with `input` on stdin, in `cwd`; `project` is given to it
/// as `LC_AGENT_PROJECT_DIR` (and `CLAUDE_PROJECT_DIR`, so scripts
/// written for Claude Code find it).
pub(crate) async fn run(hook: &HookCommand, input: &str, cwd: &Path) -> HookRun {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(&hook.command)
        .current_dir(cwd)
        .env("LC_AGENT_PROJECT_DIR", cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            return HookRun {
                exit: Exit::Spawn(e.to_string()),
                stdout: String::new(),
                stderr: String::new(),
            }
        }
    };
    let group = Group(
        child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .unwrap_or(0),
    );
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.as_bytes().to_vec();
        // A hook that never reads its stdin must not block us.
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        });
    }
    let stdout = child.stdout.take().map(|p| tokio::spawn(read_capped(p)));
    let stderr = child.stderr.take().map(|p| tokio::spawn(read_capped(p)));
    let exit = match tokio::time::timeout(hook.timeout, child.wait()).await {
        Ok(Ok(status)) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(code), _) => Exit::Code(code),
                (None, Some(sig)) => Exit::Signal(sig),
                (None, None) => Exit::Code(-1),
            }
        }
        Ok(Err(e)) => Exit::Spawn(e.to_string()),
        Err(_) => Exit::TimedOut(hook.timeout),
    };
    // Whatever is left of the group (background children too) goes.
    drop(group);
    if matches!(exit, Exit::TimedOut(_)) {
        let _ = child.wait().await;
    }
    let collect = |task: Option<tokio::task::JoinHandle<Vec<u8>>>| async move {
        match task {
            Some(task) => match tokio::time::timeout(DRAIN_GRACE, task).await {
                Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
                _ => String::new(),
            },
            None => String::new(),
        }
    };
    HookRun {
        exit,
        stdout: collect(stdout).await,
        stderr: collect(stderr).await,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn hook(command: &str, secs: f64) -> HookCommand {
        HookCommand {
            command: command.into(),
            timeout: Duration::from_secs_f64(secs),
        }
    }

    #[tokio::test]
    async fn reads_stdin_and_reports_code_and_streams() {
        let dir = tempfile::tempdir().unwrap();
        let r = run(
            &hook("cat; echo oops >&2; exit 3", 10.0),
            "{\"a\":1}",
            dir.path(),
        )
        .await;
        assert_eq!(
            (r.exit, r.stdout.as_str(), r.stderr.as_str()),
            (Exit::Code(3), "{\"a\":1}", "oops\n")
        );
    }

    #[tokio::test]
    async fn a_hanging_hook_is_killed_with_its_children_at_its_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("child-alive");
        let line = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let clock = Instant::now();
        let r = run(&hook(&line, 0.3), "", dir.path()).await;
        assert_eq!(r.exit, Exit::TimedOut(Duration::from_secs_f64(0.3)));
        assert!(
            clock.elapsed() < Duration::from_secs(2),
            "{:?}",
            clock.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert!(!marker.exists(), "the hook's child outlived the timeout");
    }
}
