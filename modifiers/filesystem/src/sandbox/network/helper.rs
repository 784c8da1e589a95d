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
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// The first argument that makes this program the helper.
const HELPER_ARGUMENT: &str = "__lc-agent-sandbox-helper";

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

/// Call first thing in `main` of a program that runs commands in a
/// bubblewrap sandbox with a domain allow-list: when this process was
/// started as the sandbox's network helper, it serves as one and exits
/// with the command's status (never returns); otherwise it returns at
/// once and lets the bubblewrap mechanism start this program as the
/// helper.
pub fn run_helper_if_asked() {
    let mut args = std::env::args_os();
    if args.nth(1).as_deref() != Some(HELPER_ARGUMENT.as_ref()) {
        READY.store(true, Ordering::Relaxed);
        return;
    }
    let code = match helper(args.collect()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lc-agent sandbox helper: {e}");
            125
        }
    };
    std::process::exit(code);
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
    let listener = std::net::TcpListener::bind(("127.0.0.1", HELPER_PORT))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{HELPER_PORT}: {e}"))?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            if send_fd(&channel, stream.as_raw_fd()).is_err() {
                break;
            }
        }
    });
    let status = std::process::Command::new(program)
        .args(rest)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", program.to_string_lossy()))?;
    use std::os::unix::process::ExitStatusExt;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

/// A pair of connected `SOCK_SEQPACKET` Unix sockets (close on exec).
pub(crate) fn socket_pair() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two descriptors into the array.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return Err(format!(
            "the sandbox's proxy: no socket pair: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: socketpair succeeded: both descriptors are open and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Room for one descriptor's control message.
const CONTROL_LEN: usize = 64;

/// Sends `fd` (and one byte) over `channel`.
fn send_fd(channel: &OwnedFd, fd: RawFd) -> std::io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = [0u8; CONTROL_LEN];
    // SAFETY: an all-zero msghdr is valid; the pointers set below live
    // until sendmsg returns.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE computes a size.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as _;
    // SAFETY: the control buffer holds one header and one descriptor
    // (CMSG_SPACE of it is at most CONTROL_LEN).
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&msg);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<RawFd>(), fd);
    }
    loop {
        // SAFETY: msg points at live buffers.
        if unsafe { libc::sendmsg(channel.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) } >= 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The next descriptor passed over `channel` (close on exec); `None` when
/// every sender has closed it.
pub(crate) fn receive_fd(channel: &OwnedFd) -> Option<OwnedFd> {
    loop {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = [0u8; CONTROL_LEN];
        // SAFETY: an all-zero msghdr is valid; the pointers set below
        // live until recvmsg returns.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = CONTROL_LEN as _;
        // SAFETY: msg points at live buffers.
        let n = unsafe { libc::recvmsg(channel.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return None;
        }
        if n == 0 {
            return None;
        }
        // SAFETY: the kernel filled msg's control buffer; the header
        // walk stays within msg_controllen.
        unsafe {
            let header = libc::CMSG_FIRSTHDR(&msg);
            if header.is_null()
                || (*header).cmsg_level != libc::SOL_SOCKET
                || (*header).cmsg_type != libc::SCM_RIGHTS
            {
                continue;
            }
            let fd = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<RawFd>());
            return Some(OwnedFd::from_raw_fd(fd));
        }
    }
}
