//! Kept bubblewrap sandboxes: one `bwrap` per sandbox policy, kept across
//! the commands of a long process (the agent, the server, `mcp --shell`),
//! with a **spawner** inside that starts each command, so a command pays
//! for a `fork` and an `exec` instead of a whole new sandbox.
//!
//! ```text
//!  lc-agent ── STREAM socket pair ──▶ bwrap (same mounts, namespaces, user,
//!    │  REQUEST + output pipe         no capabilities, no_new_privs; seccomp:
//!    │  (SCM_RIGHTS, wire.rs)         the commands' filter but setpgid)
//!    │                                  └─ spawner (spawner.rs; this program,
//!    │                                     non-dumpable, child subreaper)
//!    │  ◀── DONE status, clean              └─ sh -c COMMAND: own process group,
//!    │                                         cwd, env, rlimit; + the whole
//!    ▼                                         command filter before exec
//!  KeptSandboxes (this file): idle sandboxes of the newest policy; one
//!  command at a time per sandbox (parallel calls get sandboxes of their own)
//! ```
//!
//! **When.** [`KeptSandboxes`] belong to one [`Sandbox`](crate::Sandbox)
//! (and its clones), made when its mechanism is bubblewrap and a spawner
//! program is known: this program, when it calls
//! [`run_helper_if_asked`](crate::run_helper_if_asked) first in `main`
//! (the `lc-agent` binary), or the one given to [`Bubblewrap::keeping`]
//! (crate::Bubblewrap::keeping). With this program, a sandbox's *first*
//! command runs as before (its own `bwrap`, nothing more: a one-shot
//! `lc-agent tool execute` costs what it did) and the second starts the
//! kept sandbox. `LC_AGENT_SANDBOX_KEEP=0` turns keeping off,
//! `LC_AGENT_SANDBOX_KEEP=1` keeps from the first command. The sandboxes
//! end with the `Sandbox` (and with lc-agent: `--die-with-parent`).
//!
//! **A new sandbox** is started when the policy differs from the kept
//! one's (mode, network, domains, extra directories, variables, process
//! limit, and the running call's deny rules: [`SandboxPolicy`] equality),
//! when the root differs, when a path the sandbox's mounts were made from
//! is now another file (its device and inode: a `.git` removed and made
//! again on the host would no longer be under its read-only mount), when
//! the spawner is gone (a command killed it; the next command starts a
//! new sandbox and loses nothing: no state is kept between commands but
//! the root's files), after a timeout or a cancelled command (the whole
//! sandbox is killed), and when the spawner could not clean up after a
//! command. Idle sandboxes of an older policy are ended when a newer one
//! starts; at most four are kept idle.
//!
//! # Security review
//!
//! *Same confinement.* The kept `bwrap` is built by the same code
//! (`Bubblewrap::frame`) as a one-shot one: the same binds, protected
//! paths, deny rules, namespaces (user, PID, network unless allowed, IPC,
//! UTS, cgroup; no nested user namespaces), `nobody` inside when started
//! by root, `--cap-drop ALL`, `no_new_privs`, `--die-with-parent`,
//! `--new-session`, and `/`, `/dev` read-only. The spawner runs under the
//! commands' seccomp filter but `setpgid`; each command installs the full
//! filter on top (filters stack: the stricter wins) after `setpgid` and
//! before `exec`, so a command runs under exactly the one-shot filter.
//! The pids cgroup holds the whole sandbox, its limit raised by what the
//! sandbox itself runs (`bwrap`, the spawner), so a command still gets
//! `max_processes`; `RLIMIT_NPROC` (where there is no cgroup) is set per
//! command, as before.
//!
//! *What the spawner can do.* It is a process inside the sandbox, with
//! the same user, namespaces, filter (less `setpgid`) and no capability:
//! nothing a command cannot do. Its one extra is the socket to lc-agent,
//! over which lc-agent only ever sends a command, its working directory,
//! variables and output pipe, and reads back a status. A spawner that
//! misbehaves (killed, stopped, hijacked, lying) can only make commands
//! fail or report wrong output: lc-agent never runs a command any other
//! way because of what a spawner says; without a working kept sandbox it
//! falls back to a one-shot `bwrap` (also confined), never to no sandbox.
//! A command cannot take the spawner over: it is not dumpable (its
//! `/proc/PID/mem`, `fd`, `environ` are refused to the same user), and
//! `ptrace`/`process_vm_*` are refused by the filter. It can kill it
//! (same user): that ends the sandbox (bubblewrap's init exits with it,
//! and the PID namespace with that), and the command in flight reports
//! exit code 137 with a note.
//!
//! *What one command leaves for the next*, decided item by item:
//! - processes: none. After the command's `sh` exits, the spawner kills
//!   every other process of the PID namespace (`kill(-1, SIGKILL)`: a
//!   background job, a `setpgid` or double-forked daemon alike; `setsid`
//!   is refused) and reaps them as their subreaper before it answers, so
//!   nothing of one command runs while the next does, and nothing ever
//!   holds the next command's output (each command's pipe is passed fresh,
//!   to it alone).
//! - `/tmp` and `/dev/shm`: emptied after every command (a tmpfs of the
//!   sandbox; never crossing a mount, so a root under `/tmp` is left
//!   alone); each command starts with them empty, as with a one-shot
//!   `bwrap`. `TMPDIR` is `/tmp`.
//! - `/`, `/dev` and the directories `bwrap` made for its mounts:
//!   read-only (a command cannot leave a `/bin/sh` of its own).
//! - System V IPC (shared memory, queues, semaphores): removed after every
//!   command; POSIX message queues: `mq_open` is refused by the filter.
//! - working directory, environment, limits, umask: per process, set anew
//!   for each command (the root, the variables sent, the limit).
//! - descriptors: the spawner's own are close-on-exec, and every
//!   descriptor but 0-2 is marked close-on-exec in the command before it
//!   runs (`close_range`): a command sees only its stdin (`/dev/null`),
//!   stdout and stderr.
//! - the root's files, the network (a connection is a process's; the
//!   allow-list proxy is outside): as with separate sandboxes.
//! - parallel commands run in separate kept sandboxes (separate PID,
//!   network and IPC namespaces, `/tmp`s), never in one.
//!
//! What is not the same: a missing protected path's empty mount point
//! (`.git`, `.lc-agent`) shows on the host for as long as the sandbox is
//! kept, not only while a command runs; a command cannot write `/` or
//! `/dev` itself (one-shot sandboxes have the same rule now).

mod sandbox;
pub(crate) mod spawner;
mod wire;

use std::ffi::OsString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::super::network::{proxy_env, HELPER_PORT};
use super::super::{ProcessLimit, SandboxNetwork, SandboxPolicy};
use sandbox::Kept;
pub(crate) use spawner::{main as spawner_main, SPAWNER_ARGUMENT};
use wire::{receive_done, Request, CLEAN};

/// Idle sandboxes kept at most (per [`Sandbox`](crate::Sandbox)).
const MAX_IDLE: usize = 4;

/// The environment variable that turns keeping off (`0`) or on from the
/// first command (`1`).
const KEEP_VARIABLE: &str = "LC_AGENT_SANDBOX_KEEP";

/// How long a command's output may go on after its spawner said it is done.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// The kept bubblewrap sandboxes of one [`Sandbox`](crate::Sandbox): see
/// the module docs of `sandbox::kept`. Made by
/// [`SandboxMechanism::kept_sandboxes`](crate::SandboxMechanism::kept_sandboxes).
pub struct KeptSandboxes {
    spawner: PathBuf,
    /// Commands before the first that uses a kept sandbox.
    from: usize,
    commands: AtomicUsize,
    idle: Mutex<Vec<Arc<Kept>>>,
    /// Set when a sandbox could not be started: commands then run as before.
    broken: Mutex<Option<String>>,
}

impl std::fmt::Debug for KeptSandboxes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptSandboxes")
            .field("spawner", &self.spawner)
            .field("idle", &self.idle.lock().len())
            .finish_non_exhaustive()
    }
}

/// What a command in a kept sandbox gave.
pub(crate) struct KeptRun {
    pub(crate) output: Vec<u8>,
    pub(crate) total: u64,
    pub(crate) exit_code: Option<i32>,
    pub(crate) timed_out: bool,
    pub(crate) note: Option<String>,
}

/// Ends a command's sandbox unless the command finished cleanly (a
/// timeout, a cancelled call, a spawner that failed).
struct Lease {
    kept: Arc<Kept>,
    finished: bool,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.finished {
            self.kept.kill();
        }
    }
}

impl KeptSandboxes {
    /// Sandboxes started with `spawner` (a program that calls
    /// [`run_helper_if_asked`](crate::run_helper_if_asked) first), used
    /// from the first command when `from_first`, else from the second.
    /// `LC_AGENT_SANDBOX_KEEP=0` makes none, `=1` uses them from the first.
    pub(crate) fn new(spawner: PathBuf, from_first: bool) -> Option<Self> {
        let setting = std::env::var(KEEP_VARIABLE).unwrap_or_default();
        if setting == "0" {
            return None;
        }
        Some(Self {
            spawner,
            from: usize::from(!(from_first || setting == "1")),
            commands: AtomicUsize::new(0),
            idle: Mutex::new(Vec::new()),
            broken: Mutex::new(None),
        })
    }

    /// An idle sandbox for `policy` in `root`, or a new one; `None` when
    /// none can be started (said once in the log).
    async fn take(&self, policy: &SandboxPolicy, root: &Path) -> Option<Arc<Kept>> {
        let stale: Vec<Arc<Kept>> = {
            let mut idle = self.idle.lock();
            let (fit, stale): (Vec<_>, Vec<_>) = idle
                .drain(..)
                .partition(|k| k.policy == *policy && k.root == root);
            *idle = fit;
            stale
        };
        drop(stale);
        loop {
            let candidate = self.idle.lock().pop();
            match candidate {
                Some(kept) if kept.fits(policy, root) => return Some(kept),
                Some(gone) => drop(gone),
                None => break,
            }
        }
        if self.broken.lock().is_some() {
            return None;
        }
        let (policy, root, spawner) = (policy.clone(), root.to_path_buf(), self.spawner.clone());
        let started =
            tokio::task::spawn_blocking(move || Kept::start(&policy, &root, &spawner)).await;
        match started {
            Ok(Ok(kept)) => Some(Arc::new(kept)),
            Ok(Err(e)) => {
                tracing::warn!("no kept sandbox ({e}); each command gets a sandbox of its own");
                *self.broken.lock() = Some(e);
                None
            }
            Err(_) => None,
        }
    }

    /// Runs `command` in a kept sandbox for `policy` (deny rules applied)
    /// in `root` with the variables `env`; `None` when this command is not
    /// for a kept sandbox (the first one, or none can be started): the
    /// caller runs it as before. Nothing has run when it returns `None`.
    pub(crate) async fn run(
        &self,
        policy: &SandboxPolicy,
        root: &Path,
        env: &[(OsString, OsString)],
        command: &str,
        timeout: Duration,
    ) -> Option<std::io::Result<KeptRun>> {
        if self.commands.fetch_add(1, Ordering::Relaxed) < self.from {
            return None;
        }
        let kept = self.take(policy, root).await?;
        let mut env = env.to_vec();
        if policy.network == SandboxNetwork::Allow {
            for (name, value) in proxy_env(HELPER_PORT) {
                env.retain(|(n, _)| n.as_os_str() != name.as_str());
                env.push((name.into(), value.into()));
            }
        }
        env.retain(|(n, _)| n != "TMPDIR");
        env.push(("TMPDIR".into(), "/tmp".into()));
        let request = Request {
            command: command.into(),
            cwd: root.into(),
            rlimit_nproc: (!kept.limit.is_cgroup())
                .then(|| ProcessLimit::rlimit_now(policy.max_processes)),
            env,
        };
        Some(self.run_in(kept, request, timeout).await)
    }

    async fn run_in(
        &self,
        kept: Arc<Kept>,
        request: Request,
        timeout: Duration,
    ) -> std::io::Result<KeptRun> {
        let mut lease = Lease {
            kept: kept.clone(),
            finished: false,
        };
        let refused_before = kept.limit.refused();
        let (reader, writer) = pipe()?;
        let reading = tokio::task::spawn_blocking(move || super::super::drain::drain(reader));
        let talking = {
            let kept = kept.clone();
            tokio::task::spawn_blocking(move || {
                let mut socket = kept.socket.lock();
                request.send(&mut socket, &writer)?;
                drop(writer);
                receive_done(&mut socket)
            })
        };
        let (exit_code, timed_out, clean, note) = match tokio::time::timeout(timeout, talking).await
        {
            Ok(Ok(Ok((status, flags)))) => (Some(status), false, flags & CLEAN != 0, None),
            Ok(Ok(Err(_)) | Err(_)) => {
                // The spawner is gone (a command killed it) or broke
                // the protocol: the sandbox ends with what ran in it.
                kept.kill();
                (
                    Some(128 + libc::SIGKILL),
                    false,
                    false,
                    Some(
                        "[sandbox: the sandbox this command ran in ended during it (its \
                             spawner was killed); the next command starts a new one]"
                            .to_string(),
                    ),
                )
            }
            Err(_) => {
                kept.kill();
                (None, true, false, None)
            }
        };
        let mut reading = reading;
        let read = match tokio::time::timeout(OUTPUT_GRACE, &mut reading).await {
            Ok(read) => read,
            Err(_) => {
                // Something still holds the pipe: the sandbox goes, and
                // with it the last holder.
                kept.kill();
                reading.await
            }
        };
        let (output, total) = read.map_err(std::io::Error::other)?;
        let note = note.or_else(|| kept.limit.note_since(refused_before));
        if clean && !timed_out {
            lease.finished = true;
            let mut idle = self.idle.lock();
            if idle.len() < MAX_IDLE {
                idle.push(kept);
            }
        }
        drop(lease);
        Ok(KeptRun {
            output,
            total,
            exit_code,
            timed_out,
            note,
        })
    }
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both fds are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
