//! [`LocalShellBackend`]: a [`FilesystemBackend`] that also runs commands.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::backend::{Backend, ExecuteResponse};
use super::disk::FilesystemBackend;
use super::error::{FsError, FsResult};
use super::sandbox::drain::{drain, OUTPUT_CAP_BYTES};
use super::sandbox::{ProcessLimit, Sandbox, SandboxMode};
use super::wrap::Wrap;

/// Files on disk (as [`FilesystemBackend`], virtual mode) plus `execute`:
/// `sh -c <command>` with the root as working directory.
///
/// Commands get a clean environment (only `PATH`, `HOME` = the root and
/// `LANG`, plus the variables the sandbox policy passes through by name),
/// stdin closed, stdout and stderr in one pipe (in the order they arrive),
/// and their own process group: at the timeout, and when the shell exits,
/// the whole group is killed, background children included.
///
/// [`LocalShellBackend::sandboxed`] runs every command in a [`Sandbox`]
/// (see the [`sandbox`](crate::Sandbox) docs): in `workspace-write` mode a
/// command writes only the root (not its `.git`) and a private `/tmp`,
/// reads only the root and the system, has no network and a process
/// limit. [`LocalShellBackend::new`] has no sandbox — commands can read
/// and write anything the process may, as with `full` mode — for callers
/// that confine the whole process themselves (a container or VM).
///
/// ```
/// use lc_agent_filesystem::{run_tool, LocalShellBackend};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let shell = LocalShellBackend::new(dir.path()).unwrap();
/// let out = run_tool(&shell, "execute", &json!({"command": "echo hi; exit 3"})).await.unwrap();
/// assert_eq!(out.content, "hi\nExit code: 3");
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct LocalShellBackend {
    fs: FilesystemBackend,
    sandbox: Option<Sandbox>,
    /// Whether the `full`-mode warning is still to be shown.
    warn_unconfined: Arc<AtomicBool>,
}

/// The first line of the first command's output in `full` mode.
const UNCONFINED_WARNING: &str =
    "[sandbox: full mode - this command and the next ones run unconfined, as the user]";

impl LocalShellBackend {
    /// A shell backend on `root_dir` (which must exist), without a sandbox.
    pub fn new(root_dir: impl AsRef<Path>) -> io::Result<Self> {
        Ok(Self::from_backend(FilesystemBackend::new(root_dir)?))
    }

    /// Adds `execute` to a filesystem backend, without a sandbox.
    pub(crate) fn from_backend(fs: FilesystemBackend) -> Self {
        Self {
            fs,
            sandbox: None,
            warn_unconfined: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Adds `execute` to a filesystem backend, every command run in
    /// `sandbox`. In [`SandboxMode::Full`] commands run unconfined and the
    /// first command's output starts with a line saying so.
    pub fn sandboxed(fs: FilesystemBackend, sandbox: Sandbox) -> Self {
        let full = sandbox.policy().mode() == SandboxMode::Full;
        Self {
            fs,
            sandbox: Some(sandbox),
            warn_unconfined: Arc::new(AtomicBool::new(full)),
        }
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both fds are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: killpg has no memory effects; a group that is gone gives ESRCH.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// A command's process group, killed when this is dropped: at the end of
/// the call, and also when the call itself is dropped on its way (Ctrl-C
/// cancelling a turn, a cancelled run), so no child of `sh -c` (a
/// `sleep 30`, a server it started) outlives it.
struct Group(i32);

impl Drop for Group {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

async fn run(
    root: &Path,
    sandbox: Option<&Sandbox>,
    command: &str,
    timeout: Duration,
) -> io::Result<ExecuteResponse> {
    let env = crate::sandbox::env::command_env(root, sandbox);
    if let Some((sandbox, kept)) = sandbox.and_then(|s| s.kept().map(|k| (s, k))) {
        let denied = sandbox.policy().with_denials(root);
        let policy = denied.as_ref().unwrap_or(sandbox.policy());
        if let Some(ran) = kept.run(policy, root, &env, command, timeout).await {
            let ran = ran?;
            return Ok(ExecuteResponse {
                output: String::from_utf8_lossy(&ran.output).into_owned(),
                exit_code: ran.exit_code,
                truncated_bytes: (ran.total > OUTPUT_CAP_BYTES as u64).then_some(ran.total),
                timed_out: ran.timed_out,
                note: ran.note,
            });
        }
    }
    let mut keep = Vec::new();
    let mut cmd = match sandbox.and_then(|s| s.mechanism().map(|m| (s, m))) {
        Some((sandbox, mechanism)) => {
            let denied = sandbox.policy().with_denials(root);
            let policy = denied.as_ref().unwrap_or(sandbox.policy());
            let (cmd, kept) = mechanism
                .prepare(policy, root, &env, command)
                .map_err(io::Error::other)?
                .into_parts();
            keep = kept;
            tokio::process::Command::from(cmd)
        }
        None => {
            let mut cmd = tokio::process::Command::new("sh");
            cmd.arg("-c").arg(command).env_clear().envs(env);
            cmd
        }
    };
    let limit = sandbox
        .filter(|s| s.mechanism().is_some())
        .map(|s| ProcessLimit::new(s.policy().max_processes));
    if let Some(limit) = &limit {
        // SAFETY: the closure only calls write(2) on a descriptor opened
        // before the fork, or setrlimit(2): both async-signal-safe.
        unsafe {
            cmd.pre_exec(limit.applier());
        }
    }
    let mut result = spawn_and_wait(cmd, root, timeout).await;
    drop(keep);
    if let Some(limit) = limit {
        if let Ok(response) = &mut result {
            response.note = limit.note();
        }
        let _ = tokio::task::spawn_blocking(move || limit.remove()).await;
    }
    result
}

async fn spawn_and_wait(
    mut cmd: tokio::process::Command,
    root: &Path,
    timeout: Duration,
) -> io::Result<ExecuteResponse> {
    let (reader, writer) = pipe()?;
    cmd.current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer.try_clone()?))
        .stderr(Stdio::from(writer))
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn()?;
    // Close our copies of the write end, so EOF comes when the group is gone.
    drop(cmd);
    let group = Group(
        child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .unwrap_or(0),
    );
    let reading = tokio::task::spawn_blocking(move || drain(reader));
    let (exit_code, timed_out) = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => {
            let status = status?;
            use std::os::unix::process::ExitStatusExt;
            (
                status.code().or_else(|| status.signal().map(|s| 128 + s)),
                false,
            )
        }
        Err(_) => (None, true),
    };
    // Kill whatever is left of the group (background children too).
    drop(group);
    if timed_out {
        let _ = child.wait().await;
    }
    let (kept, total) = reading.await.map_err(io::Error::other)?;
    Ok(ExecuteResponse {
        output: String::from_utf8_lossy(&kept).into_owned(),
        exit_code,
        truncated_bytes: (total > OUTPUT_CAP_BYTES as u64).then_some(total),
        timed_out,
        note: None,
    })
}

/// Every file call is the directory's ([`FilesystemBackend`]); `execute`
/// is the shell's own.
#[async_trait]
impl Wrap for LocalShellBackend {
    fn inner(&self) -> &dyn Backend {
        &self.fs
    }

    fn supports_execute(&self) -> bool {
        true
    }

    async fn execute(&self, command: &str, timeout_secs: u64) -> FsResult<ExecuteResponse> {
        let mut response = run(
            self.fs.root_dir(),
            self.sandbox.as_ref(),
            command,
            Duration::from_secs(timeout_secs),
        )
        .await
        .map_err(|e| FsError::Io {
            path: "/".to_string(),
            reason: format!("could not run the command: {}", e.kind()),
        })?;
        if self.warn_unconfined.swap(false, Ordering::Relaxed) {
            response.output = format!("{UNCONFINED_WARNING}\n{}", response.output);
        }
        Ok(response)
    }
}
