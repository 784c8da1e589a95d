//! [`LocalShellBackend`]: a [`FilesystemBackend`] that also runs commands.

use std::io::{self, Read};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;

use super::backend::{
    Backend, ExecuteResponse, FileDownloadResponse, FileMatches, FileUploadResponse, GrepQuery,
    LsEntry, ReadPage,
};
use super::disk::FilesystemBackend;
use super::error::{FsError, FsResult};
use super::glob::GlobPattern;

/// Bytes of command output kept.
pub(crate) const OUTPUT_CAP_BYTES: usize = 100_000;

/// The `PATH` commands get when the process has none.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Files on disk (as [`FilesystemBackend`], virtual mode) plus `execute`:
/// `sh -c <command>` with the root as working directory.
///
/// Commands get a clean environment (only `PATH`, `HOME` = the root and
/// `LANG`), stdin closed, stdout and stderr in one pipe (in the order they
/// arrive), and their own process group: at the timeout, and when the shell
/// exits, the whole group is killed, background children included.
///
/// **A shell is not a sandbox**: commands can read and write anything the
/// process may; confinement applies to the file tools only. Run it inside a
/// container or VM for untrusted agents.
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
}

impl LocalShellBackend {
    /// A shell backend on `root_dir` (which must exist).
    pub fn new(root_dir: impl AsRef<Path>) -> io::Result<Self> {
        Ok(Self::from_backend(FilesystemBackend::new(root_dir)?))
    }

    /// Adds `execute` to a filesystem backend.
    pub fn from_backend(fs: FilesystemBackend) -> Self {
        Self { fs }
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

/// Reads a pipe to its end, keeping the first [`OUTPUT_CAP_BYTES`] bytes;
/// returns them and the total.
fn drain(fd: OwnedFd) -> (Vec<u8>, u64) {
    let mut file = std::fs::File::from(fd);
    let mut kept = Vec::new();
    let mut total = 0u64;
    let mut buf = [0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                total += n as u64;
                let room = OUTPUT_CAP_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    (kept, total)
}

async fn run(root: &Path, command: &str, timeout: Duration) -> io::Result<ExecuteResponse> {
    let (reader, writer) = pipe()?;
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(root)
        .env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into()),
        )
        .env("HOME", root)
        .env("LANG", "C.UTF-8")
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
    })
}

#[async_trait]
impl Backend for LocalShellBackend {
    async fn ls(&self, dir: &str, recursive: bool) -> FsResult<Vec<LsEntry>> {
        self.fs.ls(dir, recursive).await
    }
    async fn read(&self, file: &str, offset: usize, limit: usize) -> FsResult<ReadPage> {
        self.fs.read(file, offset, limit).await
    }
    async fn write(&self, file: &str, content: &str, overwrite: bool) -> FsResult<()> {
        self.fs.write(file, content, overwrite).await
    }
    async fn edit(&self, file: &str, old: &str, new: &str, replace_all: bool) -> FsResult<usize> {
        self.fs.edit(file, old, new, replace_all).await
    }
    async fn glob(&self, pattern: &GlobPattern, dir: &str) -> FsResult<Vec<String>> {
        self.fs.glob(pattern, dir).await
    }
    async fn grep(&self, query: &GrepQuery, target: &str) -> FsResult<Vec<FileMatches>> {
        self.fs.grep(query, target).await
    }
    async fn upload_files(&self, files: Vec<(String, Vec<u8>)>) -> Vec<FileUploadResponse> {
        self.fs.upload_files(files).await
    }
    async fn download_files(&self, paths: Vec<String>) -> Vec<FileDownloadResponse> {
        self.fs.download_files(paths).await
    }
    async fn delete(&self, file: &str) -> FsResult<()> {
        self.fs.delete(file).await
    }

    fn supports_execute(&self) -> bool {
        true
    }

    async fn execute(&self, command: &str, timeout_secs: u64) -> FsResult<ExecuteResponse> {
        run(
            self.fs.root_dir(),
            command,
            Duration::from_secs(timeout_secs),
        )
        .await
        .map_err(|e| FsError::Io {
            path: "/".to_string(),
            reason: format!("could not run the command: {}", e.kind()),
        })
    }
}
