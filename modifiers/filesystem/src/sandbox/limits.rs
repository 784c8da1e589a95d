//! [`ProcessLimit`]: a bound on the processes of one command, so a fork
//! bomb stops growing.
//!
//! Three ways, the first this process can use (probed once, see
//! [`LimitKind::here`]):
//!
//! 1. a **cgroup v2** `pids` cgroup: a child `lc-agent-<pid>-<n>` of this
//!    process's own cgroup (where it may create one and the `pids`
//!    controller is enabled for its children), `pids.max` set;
//! 2. a **cgroup v1** `pids` cgroup under `/sys/fs/cgroup/pids`, the same;
//! 3. **`RLIMIT_NPROC`**, set in the command's process before it runs:
//!    the processes the machine runs now plus the limit (the kernel counts
//!    every process of the user, not the command's). The kernel does not
//!    enforce it for root: there a fork bomb is bounded by the timeout
//!    only (the timeout's group kill, and bubblewrap's PID namespace).
//!
//! A cgroup's `pids.events` says whether a fork was refused at the limit:
//! the command's output then ends with a line naming the limit
//! ([`ProcessLimit::note`]), so the person and the model see why forks
//! failed.

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The cgroup v1 pids hierarchy.
const PIDS_V1: &str = "/sys/fs/cgroup/pids";

/// Where cgroup v2 is mounted (a unified system, or the hybrid layout).
const V2_MOUNTS: &[&str] = &["/sys/fs/cgroup", "/sys/fs/cgroup/unified"];

/// The fallback kind.
static RLIMIT: LimitKind = LimitKind::Rlimit;

/// Commands limited so far (names their cgroups).
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// How this process bounds a command's processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LimitKind {
    /// `pids` cgroups made under this directory (v2).
    CgroupV2(PathBuf),
    /// `pids` cgroups made under the v1 hierarchy.
    CgroupV1(PathBuf),
    /// `RLIMIT_NPROC`.
    Rlimit,
}

impl LimitKind {
    /// The first way that works here, probed once per process.
    pub(crate) fn here() -> &'static LimitKind {
        static KIND: OnceLock<LimitKind> = OnceLock::new();
        KIND.get_or_init(|| {
            if let Some(dir) = v2_parent() {
                return LimitKind::CgroupV2(dir);
            }
            if probe(Path::new(PIDS_V1)) {
                return LimitKind::CgroupV1(PIDS_V1.into());
            }
            LimitKind::Rlimit
        })
    }

    /// Its name in messages.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            LimitKind::CgroupV2(_) => "a pids cgroup (v2)",
            LimitKind::CgroupV1(_) => "a pids cgroup (v1)",
            LimitKind::Rlimit => "RLIMIT_NPROC",
        }
    }
}

/// Whether a cgroup can be made (and removed) under `dir`.
fn probe(dir: &Path) -> bool {
    let probe = dir.join(format!("lc-agent-probe-{}", std::process::id()));
    std::fs::create_dir(&probe).is_ok()
        && probe.join("pids.max").exists()
        && std::fs::remove_dir(&probe).is_ok()
}

/// This process's own cgroup v2 directory, when it may make children
/// there with the `pids` controller.
fn v2_parent() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    for mount in V2_MOUNTS {
        let dir = Path::new(mount).join(path.trim_start_matches('/'));
        let Ok(controllers) = std::fs::read_to_string(dir.join("cgroup.controllers")) else {
            continue;
        };
        if !controllers.split_whitespace().any(|c| c == "pids") {
            continue;
        }
        let control = dir.join("cgroup.subtree_control");
        let enabled = std::fs::read_to_string(&control)
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "pids"));
        // Enabling it fails where this cgroup holds processes (not the root).
        if (enabled || std::fs::write(&control, "+pids").is_ok()) && probe(&dir) {
            return Some(dir);
        }
    }
    None
}

/// The bound of one command: a cgroup made for it (removed, its processes
/// killed, when the command is done), or an `RLIMIT_NPROC` value.
#[derive(Debug)]
pub(crate) struct ProcessLimit {
    max: u32,
    kind: &'static LimitKind,
    cgroup: Option<(PathBuf, File)>,
    rlimit: u64,
}

impl ProcessLimit {
    /// A bound of `max` processes, the way [`LimitKind::here`] says; a
    /// cgroup that cannot be made this time falls back to `RLIMIT_NPROC`.
    pub(crate) fn new(max: u32) -> Self {
        let kind = LimitKind::here();
        let cgroup = match kind {
            LimitKind::CgroupV2(parent) => cgroup(parent, max, "cgroup.procs"),
            LimitKind::CgroupV1(parent) => cgroup(parent, max, "tasks"),
            LimitKind::Rlimit => None,
        };
        let rlimit = if cgroup.is_some() {
            0
        } else {
            running_processes() + u64::from(max)
        };
        Self {
            max,
            kind: if cgroup.is_some() { kind } else { &RLIMIT },
            cgroup,
            rlimit,
        }
    }

    /// Applies the bound to the calling process: joins the cgroup, or sets
    /// `RLIMIT_NPROC`. Only system calls: safe between fork and exec.
    pub(crate) fn applier(&self) -> impl Fn() -> std::io::Result<()> + Send + Sync + 'static {
        let procs: Option<RawFd> = self.cgroup.as_ref().map(|(_, f)| f.as_raw_fd());
        let rlimit = self.rlimit;
        move || match procs {
            Some(fd) => join(fd),
            None => set_nproc(rlimit),
        }
    }

    /// The line the command's output ends with when a fork was refused at
    /// the limit (a cgroup counts them); `None` otherwise.
    pub(crate) fn note(&self) -> Option<String> {
        self.note_since(0)
    }

    /// Whether the bound is a cgroup (else `RLIMIT_NPROC`).
    pub(crate) fn is_cgroup(&self) -> bool {
        self.cgroup.is_some()
    }

    /// The forks refused at the limit so far (a cgroup's count; 0 otherwise).
    pub(crate) fn refused(&self) -> u64 {
        let Some((dir, _)) = self.cgroup.as_ref() else {
            return 0;
        };
        std::fs::read_to_string(dir.join("pids.events"))
            .ok()
            .and_then(|events| {
                events
                    .lines()
                    .find_map(|l| l.strip_prefix("max "))
                    .and_then(|n| n.trim().parse().ok())
            })
            .unwrap_or(0)
    }

    /// A kept sandbox's cgroup (`bubblewrap/kept/`): the limit counted over what
    /// already runs in it (bubblewrap and the spawner), so each command
    /// still gets its `max` processes.
    pub(crate) fn above_current(&self) -> std::io::Result<()> {
        let Some((dir, _)) = self.cgroup.as_ref() else {
            return Ok(());
        };
        let current: u64 = std::fs::read_to_string(dir.join("pids.current"))?
            .trim()
            .parse()
            .map_err(std::io::Error::other)?;
        std::fs::write(
            dir.join("pids.max"),
            (current + u64::from(self.max)).to_string(),
        )
    }

    /// The `RLIMIT_NPROC` a command started now gets for `max` processes.
    pub(crate) fn rlimit_now(max: u32) -> u64 {
        running_processes() + u64::from(max)
    }

    /// [`ProcessLimit::note`] counting only the forks refused after `before`.
    pub(crate) fn note_since(&self, before: u64) -> Option<String> {
        let refused = self.refused().saturating_sub(before);
        (refused > 0).then(|| {
            format!(
                "[sandbox: the command reached its limit of {} processes ({}); {refused} \
                 process(es) could not start]",
                self.max,
                self.kind.name()
            )
        })
    }

    /// Kills what is left in the cgroup and removes it (waits up to 2 s
    /// for the processes to be gone).
    pub(crate) fn remove(&self) {
        let Some((dir, _)) = &self.cgroup else {
            return;
        };
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            if let Ok(pids) = std::fs::read_to_string(dir.join("cgroup.procs")) {
                for pid in pids.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    // SAFETY: kill has no memory effects; a gone pid gives ESRCH.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                    }
                }
            }
            if std::fs::remove_dir(dir).is_ok() || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// A cgroup allowing `max` processes under `parent`, with the file a
/// process joins it by open for writing: under v1 `tasks`, under v2
/// `cgroup.procs`.
///
/// Why `tasks` under v1: the command's process joins between fork and
/// exec, when it has one thread, so moving that thread moves the whole
/// process (every process it starts is born in the cgroup). Writing a
/// process to `cgroup.procs` takes the kernel's global threadgroup lock
/// for writing, which waits for an RCU grace period (about 12 ms per
/// command here, most of what a one-shot confined `true` cost); moving
/// the calling thread itself does not take it. Under v2 a domain cgroup
/// takes processes only.
fn cgroup(parent: &Path, max: u32, join_file: &str) -> Option<(PathBuf, File)> {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = parent.join(format!("lc-agent-{}-{n}", std::process::id()));
    std::fs::create_dir(&dir).ok()?;
    let made = std::fs::write(dir.join("pids.max"), max.to_string())
        .and_then(|()| File::options().write(true).open(dir.join(join_file)));
    match made {
        Ok(procs) => Some((dir, procs)),
        Err(_) => {
            let _ = std::fs::remove_dir(&dir);
            None
        }
    }
}

/// The processes the machine runs now.
fn running_processes() -> u64 {
    // SAFETY: sysinfo fills the zeroed struct it is given.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::sysinfo(&mut info) } == 0 {
        u64::from(info.procs)
    } else {
        0
    }
}

/// Moves the calling process (single-threaded: between fork and exec)
/// into the cgroup whose `cgroup.procs` or `tasks` is `fd` (`0` names
/// the caller in both). Only calls `write(2)`: safe between fork and exec.
fn join(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: writes one byte from a static buffer to a descriptor we own.
    if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } == 1 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Sets `RLIMIT_NPROC` of the calling process. Only calls
/// `setrlimit(2)`: safe between fork and exec.
fn set_nproc(max: u64) -> std::io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: max,
        rlim_max: max,
    };
    // SAFETY: setrlimit reads the struct it is given.
    if unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &limit) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn without_a_cgroup_the_bound_is_rlimit_nproc_above_what_runs_now() {
        let limit = ProcessLimit {
            max: 5,
            kind: &RLIMIT,
            cgroup: None,
            rlimit: running_processes() + 5,
        };
        assert!(limit.rlimit > 5);
        assert_eq!(limit.note(), None);
        assert_eq!(LimitKind::Rlimit.name(), "RLIMIT_NPROC");
        // The machine's own choice is one of the three, and stable.
        assert_eq!(LimitKind::here(), LimitKind::here());
    }
}
