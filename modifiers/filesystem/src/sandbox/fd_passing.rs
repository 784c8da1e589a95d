//! Descriptors passed over Unix sockets (`SCM_RIGHTS`, through `rustix`):
//! the allow-list's network helper hands accepted connections to the
//! proxy (`network/helper.rs`), lc-agent hands a command's output pipe
//! to the spawner of a kept bubblewrap sandbox (`bubblewrap/kept/`).
//!
//! Every descriptor received is close-on-exec (`MSG_CMSG_CLOEXEC`): a
//! program the receiver starts never inherits one it was not given on
//! purpose.

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::net::{
    recvmsg, sendmsg, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

/// The most descriptors one message carries.
pub(crate) const MAX_FDS: usize = 4;

/// A pair of connected Unix sockets of `kind` (close on exec).
pub(crate) fn socket_pair(kind: SocketType) -> std::io::Result<(OwnedFd, OwnedFd)> {
    rustix::net::socketpair(AddressFamily::UNIX, kind, SocketFlags::CLOEXEC, None)
        .map_err(std::io::Error::from)
}

/// Sends `data` (at least one byte) with `fds` attached over `socket`;
/// returns how many bytes went (a stream socket may take fewer).
pub(crate) fn send(
    socket: impl AsFd,
    data: &[u8],
    fds: &[BorrowedFd<'_>],
) -> std::io::Result<usize> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(std::io::Error::other(
            "too many descriptors for one message",
        ));
    }
    loop {
        match sendmsg(
            &socket,
            &[IoSlice::new(data)],
            &mut control,
            SendFlags::NOSIGNAL,
        ) {
            Err(rustix::io::Errno::INTR) => {}
            other => return other.map_err(std::io::Error::from),
        }
    }
}

/// Receives into `buf` over `socket`, the descriptors that came with it
/// appended to `fds` (close on exec); `Ok(0)` when every sender closed it.
pub(crate) fn receive(
    socket: impl AsFd,
    buf: &mut [u8],
    fds: &mut Vec<OwnedFd>,
) -> std::io::Result<usize> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = loop {
        match recvmsg(
            &socket,
            &mut [IoSliceMut::new(buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Err(rustix::io::Errno::INTR) => {}
            other => break other.map_err(std::io::Error::from)?,
        }
    };
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    Ok(received.bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_descriptor_crosses_with_its_bytes() {
        let (a, b) = socket_pair(SocketType::SEQPACKET).unwrap();
        let (read, write) = rustix::pipe::pipe().unwrap();
        assert_eq!(send(&a, b"x", &[write.as_fd()]).unwrap(), 1);
        drop(write);
        let mut buf = [0u8; 4];
        let mut fds = Vec::new();
        assert_eq!(receive(&b, &mut buf, &mut fds).unwrap(), 1);
        assert_eq!(fds.len(), 1);
        rustix::io::write(&fds[0], b"hi").unwrap();
        drop(fds);
        let mut out = [0u8; 4];
        assert_eq!(rustix::io::read(&read, &mut out).unwrap(), 2);
        drop(a);
        assert_eq!(receive(&b, &mut buf, &mut Vec::new()).unwrap(), 0);
    }
}
