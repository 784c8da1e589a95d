//! [`ProcessLimit`]: a pids cgroup per command, bounding a fork bomb.
//!
//! `RLIMIT_NPROC` is not enforced for root (and counts every process of
//! the user, not the command's), so the limit is a cgroup: a directory
//! `lc-agent-<pid>-<n>` under the cgroup v1 pids hierarchy with `pids.max`
//! set, which the command's process joins before it runs `bwrap`. Where the
//! hierarchy is not writable (no cgroup v1 pids controller, or not
//! allowed), there is no count limit: the PID namespace and the timeout
//! still end every process of the command.

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The cgroup v1 pids hierarchy.
const PIDS_ROOT: &str = "/sys/fs/cgroup/pids";

/// Commands limited so far (names their cgroups).
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A pids cgroup made for one command; removed (its processes killed)
/// when dropped.
#[derive(Debug)]
pub(crate) struct ProcessLimit {
    dir: PathBuf,
    procs: File,
}

impl ProcessLimit {
    /// A cgroup allowing `max` processes, or `None` where none can be made.
    pub(crate) fn new(max: u32) -> Option<Self> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = PathBuf::from(PIDS_ROOT).join(format!("lc-agent-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let made = std::fs::write(dir.join("pids.max"), max.to_string())
            .and_then(|()| File::options().write(true).open(dir.join("cgroup.procs")));
        match made {
            Ok(procs) => Some(Self { dir, procs }),
            Err(_) => {
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// The descriptor of `cgroup.procs`: writing `0` there moves the
    /// writer into the cgroup (done in the child before it runs `bwrap`).
    pub(crate) fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// Kills what is left in the cgroup and removes it (waits up to 2 s
    /// for the processes to be gone).
    pub(crate) fn remove(&self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            if let Ok(pids) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
                for pid in pids.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    // SAFETY: kill has no memory effects; a gone pid gives ESRCH.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                    }
                }
            }
            if std::fs::remove_dir(&self.dir).is_ok() || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is `fd`.
/// Only calls `write(2)`: safe between fork and exec.
pub(crate) fn join(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: writes one byte from a static buffer to a descriptor we own.
    if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } == 1 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
