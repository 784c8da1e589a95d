//! The spawner: the program a kept bubblewrap sandbox runs (this program
//! again, `PROGRAM __lc-agent-sandbox-spawner CONTROL FILTER [CHANNEL]`,
//! bound read-only inside), started by `bwrap` with the sandbox's
//! namespaces, no capabilities, `no_new_privs` and the spawner's seccomp
//! filter (the commands' one but `setpgid`). It serves one command at a
//! time, for as long as lc-agent keeps its end of `CONTROL` open:
//!
//! 1. start `sh -c COMMAND` in a process group of its own, in the working
//!    directory and with exactly the environment lc-agent sent, `/dev/null`
//!    as stdin and the pipe lc-agent sent as stdout and stderr, its
//!    `RLIMIT_NPROC` if one was sent, every other descriptor closed on exec,
//!    and the whole command filter (read from `FILTER` at start) added on
//!    top of the spawner's own just before `exec`;
//! 2. wait for it; then end **every** other process of the sandbox's PID
//!    namespace (`kill(-1, SIGKILL)`, repeated until none is left to
//!    reap: the spawner is their subreaper, so orphans come back to it);
//! 3. empty `/tmp` and `/dev/shm` (never crossing into a mount: the root
//!    may lie under `/tmp`) and remove the System V IPC objects left;
//! 4. report the status, and whether all of step 2 and 3 succeeded.
//!
//! It is not dumpable (`PR_SET_DUMPABLE` 0): a command, running as the
//! same user, cannot read or write its memory or descriptors through
//! `/proc` (ptrace is refused by the filter anyway). A command can still
//! signal it (the same user): killing it ends the sandbox, never widens it.

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::wire::{self, Request, CLEAN, READY};

/// The first argument that makes this program a spawner.
pub(crate) const SPAWNER_ARGUMENT: &str = "__lc-agent-sandbox-spawner";

/// The directories emptied after each command.
const SCRATCH: &[&str] = &["/tmp", "/dev/shm"];

/// The spawner's `main`: its arguments after [`SPAWNER_ARGUMENT`];
/// returns the exit code.
pub(crate) fn main(args: Vec<OsString>) -> i32 {
    match serve(&args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("lc-agent sandbox spawner: {e}");
            125
        }
    }
}

/// Takes the inherited descriptor named by `arg` (close on exec from now on).
fn inherited(arg: Option<&OsString>) -> Result<OwnedFd, String> {
    let fd: RawFd = arg
        .and_then(|a| a.to_str())
        .and_then(|s| s.parse().ok())
        .filter(|fd| *fd > 2)
        .ok_or("usage: __lc-agent-sandbox-spawner CONTROL FILTER [CHANNEL]")?;
    // SAFETY: fcntl on a descriptor number; a bad one fails with EBADF.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
        return Err(format!(
            "descriptor {fd}: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the descriptor is open (fcntl succeeded) and was passed to
    // this process alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The command filter, as the kernel takes it.
fn read_filter(fd: OwnedFd) -> Result<Vec<libc::sock_filter>, String> {
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("the filter: {e}"))?;
    if bytes.is_empty() || bytes.len() % 8 != 0 || bytes.len() / 8 > usize::from(u16::MAX) {
        return Err("the filter is malformed".to_string());
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|b| libc::sock_filter {
            code: u16::from_ne_bytes([b[0], b[1]]),
            jt: b[2],
            jf: b[3],
            k: u32::from_ne_bytes([b[4], b[5], b[6], b[7]]),
        })
        .collect())
}

fn serve(args: &[OsString]) -> Result<(), String> {
    let control = inherited(args.first())?;
    let filter = Arc::new(read_filter(inherited(args.get(1))?)?);
    if let Some(channel) = args.get(2) {
        super::super::super::network::serve_connections(inherited(Some(channel))?)?;
    }
    // SAFETY: prctl with integer arguments.
    unsafe {
        if libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) != 0
            || libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0
        {
            return Err(format!("prctl: {}", std::io::Error::last_os_error()));
        }
    }
    let keep = mounts_below(SCRATCH);
    let mut socket = UnixStream::from(control);
    std::io::Write::write_all(&mut socket, READY).map_err(|e| format!("ready: {e}"))?;
    while let Some((request, output)) =
        Request::receive(&mut socket).map_err(|e| format!("a request: {e}"))?
    {
        let status = run(&request, output, &filter);
        let clean = end_leftovers() & clear_scratch(&keep) & remove_ipc();
        wire::send_done(&mut socket, status, if clean { CLEAN } else { 0 })
            .map_err(|e| format!("done: {e}"))?;
    }
    Ok(())
}

/// Runs one command to its end; its status (the exit code, 128 +
/// signal, 127 when it could not start: the reason then in its output).
fn run(request: &Request, output: OwnedFd, filter: &Arc<Vec<libc::sock_filter>>) -> i32 {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&request.command)
        .env_clear()
        .envs(request.env.iter().map(|(n, v)| (n, v)))
        .current_dir(&request.cwd)
        .stdin(Stdio::null())
        .process_group(0);
    // A copy to say why, should `sh` not start (dropped as soon as it does).
    let for_error = output.try_clone().ok();
    match output.try_clone() {
        Ok(copy) => cmd.stdout(Stdio::from(copy)).stderr(Stdio::from(output)),
        Err(e) => {
            say(&output, &format!("lc-agent sandbox: no output pipe: {e}\n"));
            return 127;
        }
    };
    let filter = filter.clone();
    let rlimit = request.rlimit_nproc;
    let prepare = move || -> std::io::Result<()> { before_exec(rlimit, &filter) };
    // SAFETY: the closure only makes system calls (setrlimit, close_range,
    // prctl), async-signal-safe; the filter was built before the fork.
    unsafe {
        cmd.pre_exec(prepare);
    }
    let spawned = cmd.spawn();
    // The spawner keeps no copy of the pipe: its end comes with the command's.
    drop(cmd);
    match spawned {
        Ok(mut child) => {
            drop(for_error);
            match child.wait() {
                Ok(status) => status
                    .code()
                    .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
                Err(_) => 125,
            }
        }
        Err(e) => {
            if let Some(out) = for_error {
                say(&out, &format!("lc-agent sandbox: cannot run sh: {e}\n"));
            }
            127
        }
    }
}

fn say(fd: &OwnedFd, text: &str) {
    // SAFETY: writes from a live buffer to a descriptor we own.
    unsafe {
        libc::write(fd.as_raw_fd(), text.as_ptr().cast(), text.len());
    }
}

/// In the command's process, between fork and exec: its process limit,
/// every descriptor but 0, 1 and 2 closed on exec, the command filter.
fn before_exec(rlimit: Option<u64>, filter: &[libc::sock_filter]) -> std::io::Result<()> {
    if let Some(max) = rlimit {
        let limit = libc::rlimit {
            rlim_cur: max,
            rlim_max: max,
        };
        // SAFETY: setrlimit reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &limit) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    // SAFETY: close_range with integer arguments (CLOSE_RANGE_CLOEXEC).
    if unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 4u32) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: the program points at the filter, alive for this call;
    // `no_new_privs` is set (bubblewrap's), so no privilege is needed.
    if unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &program as *const libc::sock_fprog,
        )
    } != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Ends every process of the sandbox but the spawner (and bubblewrap's
/// init, which `kill(-1)` spares), and reaps them; false when some were
/// still there after 2 s.
fn end_leftovers() -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        // SAFETY: kill and waitpid with integer arguments.
        unsafe {
            libc::kill(-1, libc::SIGKILL);
        }
        // SAFETY: as above; no status is read.
        let reaped = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) };
        if reaped > 0 {
            continue;
        }
        if reaped < 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::ECHILD) => return true,
                Some(libc::EINTR) => continue,
                _ => return false,
            }
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// The mounts at or below `dirs` and every directory above one of them
/// up to its scratch directory: kept when emptying.
fn mounts_below(dirs: &[&str]) -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut keep = Vec::new();
    for line in info.lines() {
        let Some(point) = line.split(' ').nth(4).map(unescape) else {
            continue;
        };
        let point = PathBuf::from(point);
        for dir in dirs {
            if point.starts_with(dir) && point != Path::new(dir) {
                for ancestor in point.ancestors().take_while(|a| *a != Path::new(dir)) {
                    if !keep.iter().any(|k: &PathBuf| k == ancestor) {
                        keep.push(ancestor.to_path_buf());
                    }
                }
            }
        }
    }
    keep
}

/// A mount point as `mountinfo` writes it (`\040` for a space, …).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = (bytes[i] == b'\\')
            .then(|| bytes.get(i + 1..i + 4))
            .flatten()
            .and_then(|o| std::str::from_utf8(o).ok())
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        if let Some(value) = octal {
            out.push(value);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Empties each scratch directory but the mounts in it (and the
/// directories holding them); false when something could not go.
fn clear_scratch(keep: &[PathBuf]) -> bool {
    let mut clean = true;
    for dir in SCRATCH {
        let dir = Path::new(dir);
        match std::fs::symlink_metadata(dir) {
            Ok(meta) => clean &= clear(dir, std::os::unix::fs::MetadataExt::dev(&meta), keep),
            Err(_) => clean = false,
        }
    }
    clean
}

fn clear(dir: &Path, dev: u64, keep: &[PathBuf]) -> bool {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut clean = true;
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = path.symlink_metadata() else {
            clean = false;
            continue;
        };
        if meta.dev() != dev {
            // A mount (the root, under /tmp): never entered.
            clean &= keep.contains(&path);
            continue;
        }
        if keep.contains(&path) {
            if meta.is_dir() {
                clean &= clear(&path, dev, keep);
            }
            continue;
        }
        if meta.is_dir() {
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700));
            clean &= clear(&path, dev, keep) && std::fs::remove_dir(&path).is_ok();
        } else {
            clean &= std::fs::remove_file(&path).is_ok();
        }
    }
    clean
}

/// Removes the System V shared memory, message queues and semaphores
/// left in the sandbox's IPC namespace; false when one stays.
fn remove_ipc() -> bool {
    let mut clean = true;
    for (file, kind) in [("shm", 0), ("msg", 1), ("sem", 2)] {
        let Ok(table) = std::fs::read_to_string(format!("/proc/sysvipc/{file}")) else {
            continue;
        };
        for id in table
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<i32>().ok())
        {
            // SAFETY: IPC_RMID with a null buffer reads and writes nothing.
            let removed = unsafe {
                match kind {
                    0 => libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()),
                    1 => libc::msgctl(id, libc::IPC_RMID, std::ptr::null_mut()),
                    _ => libc::semctl(id, 0, libc::IPC_RMID),
                }
            };
            clean &= removed == 0;
        }
    }
    clean
}

#[cfg(test)]
mod tests {
    #[test]
    fn mount_points_are_read_as_written() {
        assert_eq!(super::unescape(r"/tmp/a\040b"), "/tmp/a b");
        assert_eq!(super::unescape("/plain"), "/plain");
        assert_eq!(super::unescape(r"/end\"), r"/end\");
    }
}
