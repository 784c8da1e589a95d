//! The helper a bubblewrap sandbox with a domain allow-list runs first:
//! this program again (`PROGRAM __lc-agent-sandbox-helper FD COMMAND…`),
//! inside the sandbox's own network namespace (loopback only). It listens
//! on `127.0.0.1:3128` there, runs the command as its child, and passes
//! each connection it accepts, as a descriptor, over the socket pair `FD`
//! to the proxy outside ([`Proxy::channel`](super::Proxy::channel)); the
//! command's exit status is its own.
//!
//! Why this way: with its own network namespace, the command cannot
//! connect anywhere but its loopback, by construction (no port rule to
//! get right, UDP and raw sockets included); the helper needs no socket
//! of the host (no Unix socket path bound in, which the filter would have
//! to allow), only an inherited descriptor. A program that uses the
//! bubblewrap mechanism with an allow-list calls [`run_helper_if_asked`]
//! first thing in `main` (the `lc-agent` binary does); without it that
//! mechanism says so and the Landlock one (a TCP port rule) still works.

use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use super::super::fd_passing;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// The first argument that makes this program the helper.
pub(crate) const HELPER_ARGUMENT: &str = "__lc-agent-sandbox-helper";

/// The port the helper listens on inside the sandbox.
pub(crate) const HELPER_PORT: u16 = 3128;

/// Whether this program runs the helper when asked (see [`run_helper_if_asked`]).
static READY: AtomicBool = AtomicBool::new(false);

/// This program, when it serves as the helper ([`run_helper_if_asked`]
/// was called): the program a bubblewrap sandbox with a domain
/// allow-list starts.
pub(crate) fn helper_program() -> Option<PathBuf> {
    if !READY.load(Ordering::Relaxed) {
        return None;
    }
    std::env::current_exe().ok()
}

/// From now on this program serves as the helper when a sandbox needs one
/// (called by [`run_helper_if_asked`](crate::run_helper_if_asked) when it
/// returns).
pub(crate) fn mark_ready() {
    READY.store(true, Ordering::Relaxed);
}

/// The helper's `main`: its arguments after [`HELPER_ARGUMENT`]; the
/// command's exit code.
pub(crate) fn helper_main(args: Vec<OsString>) -> i32 {
    match helper(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lc-agent sandbox helper: {e}");
            125
        }
    }
}

/// The helper's arguments: `FD COMMAND ARGS…`.
fn helper(args: Vec<OsString>) -> Result<i32, String> {
    let [fd, program, rest @ ..] = args.as_slice() else {
        return Err("usage: __lc-agent-sandbox-helper FD COMMAND…".to_string());
    };
    let fd: RawFd = fd
        .to_str()
        .and_then(|s| s.parse().ok())
        .filter(|fd| *fd > 2)
        .ok_or("the descriptor is not a number")?;
    // SAFETY: fcntl on a descriptor number; a bad one fails with EBADF.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
        return Err(format!(
            "descriptor {fd}: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the descriptor is open (fcntl succeeded) and was passed for
    // this process alone.
    let channel = unsafe { OwnedFd::from_raw_fd(fd) };
    serve_connections(channel)?;
    let status = std::process::Command::new(program)
        .args(rest)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", program.to_string_lossy()))?;
    use std::os::unix::process::ExitStatusExt;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

/// Listens on the sandbox's `127.0.0.1:3128` and, on a thread of its own,
/// passes every connection accepted over `channel` to the proxy outside
/// (the helper's work, also done by a kept sandbox's spawner).
pub(crate) fn serve_connections(channel: OwnedFd) -> Result<(), String> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", HELPER_PORT))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{HELPER_PORT}: {e}"))?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            if send_fd(&channel, stream.as_fd()).is_err() {
                break;
            }
        }
    });
    Ok(())
}

/// A pair of connected `SOCK_SEQPACKET` Unix sockets (close on exec).
pub(crate) fn socket_pair() -> Result<(OwnedFd, OwnedFd), String> {
    fd_passing::socket_pair(rustix::net::SocketType::SEQPACKET)
        .map_err(|e| format!("the sandbox's proxy: no socket pair: {e}"))
}

/// Sends `fd` (and one byte) over `channel`.
fn send_fd(channel: &OwnedFd, fd: BorrowedFd<'_>) -> std::io::Result<()> {
    fd_passing::send(channel, &[0], &[fd]).map(|_| ())
}

/// The next descriptor passed over `channel` (close on exec); `None` when
/// every sender has closed it.
pub(crate) fn receive_fd(channel: &OwnedFd) -> Option<OwnedFd> {
    loop {
        let mut byte = [0u8; 1];
        let mut fds = Vec::new();
        match fd_passing::receive(channel, &mut byte, &mut fds) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {
                if let Some(fd) = fds.into_iter().next() {
                    return Some(fd);
                }
            }
        }
    }
}
