//! [`Kept`]: one kept bubblewrap sandbox: its `bwrap`, the spawner
//! inside, lc-agent's end of their socket, and what lives as long as it
//! (the mount points of missing protected paths, the pids cgroup, an
//! allow-list's proxy).

use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;

use parking_lot::Mutex;

use super::super::super::{ProcessLimit, SandboxNetwork, SandboxPolicy};
use super::super::{
    above_standard_streams, bwrap_command, filter_pipe, Bubblewrap, Frame, HELPER_PATH,
};
use super::spawner::SPAWNER_ARGUMENT;
use super::wire::READY;

/// How long a new spawner may take to say it serves.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// What a path of the policy is on the host: its device and inode, or
/// nothing when it does not exist.
type Identity = Vec<(PathBuf, Option<(u64, u64)>)>;

/// One kept sandbox. Dropping it ends it: `bwrap` killed (its PID
/// namespace, and every process in it, with it), the cgroup removed,
/// then the mount points.
pub(super) struct Kept {
    /// The policy (deny rules applied) and root it was made for.
    pub(super) policy: SandboxPolicy,
    pub(super) root: PathBuf,
    identity: Identity,
    /// `bwrap` (outside the sandbox), until reaped.
    child: Mutex<Option<Child>>,
    pid: i32,
    dead: AtomicBool,
    pub(super) socket: Mutex<UnixStream>,
    pub(super) limit: ProcessLimit,
    _frame_keep: (
        super::super::super::mount_points::MountPoints,
        Option<Box<dyn Send + Sync>>,
    ),
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept")
            .field("root", &self.root)
            .field("pid", &self.pid)
            .field("dead", &self.dead)
            .finish_non_exhaustive()
    }
}

/// The device and inode of every path the sandbox's mounts were made
/// from: the root, its protected and hidden paths, the extra directories.
/// Another identity later means the host replaced one (a removed and
/// re-made `.git` would no longer be covered by its read-only mount):
/// the sandbox is not used again.
fn identity(policy: &SandboxPolicy, root: &Path) -> Identity {
    let protected = policy.read_only.iter().map(|p| root.join(p));
    std::iter::once(root.to_path_buf())
        .chain(protected)
        .chain(policy.hidden.iter().cloned())
        .chain(policy.readable.iter().cloned())
        .chain(policy.writable.iter().cloned())
        .map(|path| {
            let id = path.symlink_metadata().ok().map(|m| (m.dev(), m.ino()));
            (path, id)
        })
        .collect()
}

/// A job for the launcher thread: a command to spawn, and where its
/// result goes.
type Job = (Command, mpsc::Sender<std::io::Result<Child>>);

/// Spawns `cmd` from one thread that lives as long as the process:
/// `bwrap --die-with-parent` dies with the *thread* that started it, and
/// a runtime's blocking threads come and go.
fn launch(cmd: Command) -> std::io::Result<Child> {
    static LAUNCHER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let launcher = LAUNCHER.get_or_init(|| {
        let (send, receive) = mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("lc-agent-sandbox-launcher".to_string())
            .spawn(move || {
                for (mut cmd, reply) in receive {
                    let _ = reply.send(cmd.spawn());
                }
            });
        if spawned.is_err() {
            tracing::warn!("no thread to start kept sandboxes from");
        }
        Mutex::new(send)
    });
    let (reply, result) = mpsc::channel();
    launcher
        .lock()
        .send((cmd, reply))
        .map_err(|_| std::io::Error::other("the sandbox launcher is gone"))?;
    result
        .recv()
        .map_err(|_| std::io::Error::other("the sandbox launcher is gone"))?
}

impl Kept {
    /// Starts a sandbox for `policy` in `root` with `spawner` (this
    /// program, or the helper binary) as its program, and waits until
    /// the spawner serves.
    pub(super) fn start(
        policy: &SandboxPolicy,
        root: &Path,
        spawner: &Path,
    ) -> Result<Self, String> {
        let features = Bubblewrap::features()?;
        let Frame {
            mut args,
            mount_points,
            helper,
        } = Bubblewrap::frame(features, policy, root, &[], Some(spawner))?;
        let network = policy.network != SandboxNetwork::Off;
        let spawner_filter = filter_pipe(network, true)?;
        let command_filter = filter_pipe(network, false)?;
        let (ours, first) =
            super::super::super::fd_passing::socket_pair(rustix::net::SocketType::STREAM)
                .map_err(|e| format!("no socket pair: {e}"))?;
        // The spawner's end, numbered above the standard streams; the
        // first copy closed now (EOF must come when the spawner's is gone).
        let theirs = above_standard_streams(&first).map_err(|e| e.to_string())?;
        drop(first);
        let mut inherit = vec![
            spawner_filter.as_raw_fd(),
            theirs.as_raw_fd(),
            command_filter.as_raw_fd(),
        ];
        arg(&mut args, "--seccomp");
        arg(&mut args, spawner_filter.as_raw_fd().to_string());
        arg(&mut args, "--chdir");
        arg(&mut args, root);
        arg(&mut args, HELPER_PATH);
        arg(&mut args, SPAWNER_ARGUMENT);
        arg(&mut args, theirs.as_raw_fd().to_string());
        arg(&mut args, command_filter.as_raw_fd().to_string());
        let channel: Option<&OwnedFd> = helper.as_ref().map(|(_, channel)| channel);
        if let Some(channel) = channel {
            arg(&mut args, channel.as_raw_fd().to_string());
            inherit.push(channel.as_raw_fd());
        }
        let mut cmd = bwrap_command(&args, inherit);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let limit = ProcessLimit::new(policy.max_processes);
        if limit.is_cgroup() {
            // SAFETY: the closure only calls write(2) on a descriptor
            // opened before the fork: async-signal-safe.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut cmd, limit.applier());
            }
        }
        let child = launch(cmd).map_err(|e| format!("`bwrap` could not be started ({e})"))?;
        drop((theirs, spawner_filter, command_filter));
        let pid = i32::try_from(child.id()).unwrap_or(0);
        let mut kept = Self {
            policy: policy.clone(),
            root: root.to_path_buf(),
            identity: Vec::new(),
            child: Mutex::new(Some(child)),
            pid,
            dead: AtomicBool::new(false),
            socket: Mutex::new(UnixStream::from(ours)),
            limit,
            _frame_keep: (
                mount_points,
                helper.map(|h| Box::new(h) as Box<dyn Send + Sync>),
            ),
        };
        kept.wait_ready()?;
        kept.limit
            .above_current()
            .map_err(|e| format!("the sandbox's process limit: {e}"))?;
        // After the mount points were made: they are part of what it was made from.
        kept.identity = identity(policy, root);
        Ok(kept)
    }

    fn wait_ready(&self) -> Result<(), String> {
        let mut socket = self.socket.lock();
        let mut ready = [0u8; 8];
        socket
            .set_read_timeout(Some(START_TIMEOUT))
            .and_then(|()| std::io::Read::read_exact(&mut *socket, &mut ready))
            .and_then(|()| socket.set_read_timeout(None))
            .map_err(|e| format!("the sandbox's spawner did not start ({e})"))?;
        if &ready != READY {
            return Err("the sandbox's spawner said something else than ready".to_string());
        }
        Ok(())
    }

    /// Whether it can take the next command of `policy` in `root`: made
    /// for them, alive, idle with nothing unread, and made from the same
    /// paths as now.
    pub(super) fn fits(&self, policy: &SandboxPolicy, root: &Path) -> bool {
        if self.dead.load(Ordering::Relaxed) || &self.policy != policy || self.root != root {
            return false;
        }
        let socket = self.socket.lock();
        let mut poll = libc::pollfd {
            fd: socket.as_fd().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll reads and writes the one struct it is given.
        // An idle spawner says nothing: anything readable is its end.
        if unsafe { libc::poll(&mut poll, 1, 0) } != 0 {
            return false;
        }
        drop(socket);
        identity(policy, root) == self.identity
    }

    /// Ends it now (a timeout, a cancelled command, a spawner that
    /// misbehaved): `bwrap` killed, so every process in it.
    pub(super) fn kill(&self) {
        if !self.dead.swap(true, Ordering::Relaxed) && self.pid > 0 {
            // SAFETY: kill has no memory effects; `bwrap` is our child,
            // not yet reaped (its pid cannot have been reused).
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        self.kill();
        if let Some(mut child) = self.child.lock().take() {
            let _ = child.wait();
        }
        self.limit.remove();
    }
}

fn arg(args: &mut Vec<OsString>, value: impl AsRef<std::ffi::OsStr>) {
    args.push(value.as_ref().to_os_string());
}
