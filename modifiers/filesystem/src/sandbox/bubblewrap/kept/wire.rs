//! What lc-agent and a kept sandbox's spawner say to each other, over one
//! stream socket pair (lc-agent's end outside, the spawner's inherited).
//!
//! ```text
//!  spawner → lc-agent   READY: b"LCSPAWN1" once, when it serves
//!  lc-agent → spawner   REQUEST: u32 length, then fields (u32 length +
//!                       bytes each): command, working directory,
//!                       RLIMIT_NPROC (decimal, or empty), then name and
//!                       value of each variable; the first bytes carry the
//!                       command's output pipe (SCM_RIGHTS)
//!  spawner → lc-agent   DONE: i32 status (the exit code, 128 + signal),
//!                       u32 flags (bit 0: everything the command left was
//!                       ended and removed)
//! ```
//!
//! One request at a time per spawner; nothing else is ever said. Every
//! length is bounded ([`MAX_REQUEST`]) and a request that does not parse
//! ends the spawner (lc-agent then starts another sandbox).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::net::UnixStream;

use super::super::super::fd_passing;

/// What a spawner says first.
pub(super) const READY: &[u8; 8] = b"LCSPAWN1";

/// The largest request taken (a command of a few MiB is a mistake).
const MAX_REQUEST: usize = 16 << 20;

/// Bit 0 of DONE's flags: the command's leftovers were all ended and removed.
pub(super) const CLEAN: u32 = 1;

/// One command for the spawner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Request {
    pub(super) command: OsString,
    pub(super) cwd: OsString,
    pub(super) rlimit_nproc: Option<u64>,
    pub(super) env: Vec<(OsString, OsString)>,
}

fn field(body: &mut Vec<u8>, bytes: &[u8]) {
    body.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    body.extend_from_slice(bytes);
}

impl Request {
    fn encode(&self) -> Vec<u8> {
        let mut body = vec![0; 4];
        field(&mut body, self.command.as_bytes());
        field(&mut body, self.cwd.as_bytes());
        let rlimit = self.rlimit_nproc.map(|n| n.to_string()).unwrap_or_default();
        field(&mut body, rlimit.as_bytes());
        for (name, value) in &self.env {
            field(&mut body, name.as_bytes());
            field(&mut body, value.as_bytes());
        }
        let len = (body.len() - 4) as u32;
        body[..4].copy_from_slice(&len.to_le_bytes());
        body
    }

    fn decode(mut body: &[u8]) -> Option<Self> {
        let mut fields = Vec::new();
        while !body.is_empty() {
            let len = u32::from_le_bytes(body.get(..4)?.try_into().ok()?) as usize;
            let bytes = body.get(4..4 + len)?;
            fields.push(OsString::from_vec(bytes.to_vec()));
            body = &body[4 + len..];
        }
        let mut fields = fields.into_iter();
        let command = fields.next()?;
        let cwd = fields.next()?;
        let rlimit = fields.next()?;
        let rlimit_nproc = if rlimit.is_empty() {
            None
        } else {
            Some(rlimit.to_str()?.parse().ok()?)
        };
        let rest: Vec<OsString> = fields.collect();
        if !rest.len().is_multiple_of(2) {
            return None;
        }
        let env = rest
            .chunks(2)
            .map(|pair| (pair[0].clone(), pair[1].clone()))
            .collect();
        Some(Self {
            command,
            cwd,
            rlimit_nproc,
            env,
        })
    }

    /// Sends the request with `output` attached.
    pub(super) fn send(&self, socket: &mut UnixStream, output: &OwnedFd) -> std::io::Result<()> {
        let bytes = self.encode();
        let sent = fd_passing::send(socket.as_fd(), &bytes, &[output.as_fd()])?;
        socket.write_all(&bytes[sent..])
    }

    /// The next request and the output pipe it carries; `Ok(None)` when
    /// lc-agent closed its end.
    pub(super) fn receive(socket: &mut UnixStream) -> std::io::Result<Option<(Self, OwnedFd)>> {
        let mut header = [0u8; 4];
        let mut fds = Vec::new();
        let mut got = 0;
        while got < header.len() {
            let n = fd_passing::receive(socket.as_fd(), &mut header[got..], &mut fds)?;
            if n == 0 {
                return if got == 0 {
                    Ok(None)
                } else {
                    Err(std::io::ErrorKind::UnexpectedEof.into())
                };
            }
            got += n;
        }
        let len = u32::from_le_bytes(header) as usize;
        if len > MAX_REQUEST {
            return Err(std::io::Error::other("a request too large"));
        }
        let mut body = vec![0; len];
        socket.read_exact(&mut body)?;
        let request = Self::decode(&body).ok_or_else(|| std::io::Error::other("a bad request"))?;
        let mut fds = fds.into_iter();
        match (fds.next(), fds.next()) {
            (Some(output), None) => Ok(Some((request, output))),
            _ => Err(std::io::Error::other("a request without exactly one pipe")),
        }
    }
}

/// DONE: the status and the flags.
pub(super) fn send_done(socket: &mut UnixStream, status: i32, flags: u32) -> std::io::Result<()> {
    let mut bytes = [0u8; 8];
    bytes[..4].copy_from_slice(&status.to_le_bytes());
    bytes[4..].copy_from_slice(&flags.to_le_bytes());
    socket.write_all(&bytes)
}

/// Reads DONE.
pub(super) fn receive_done(socket: &mut UnixStream) -> std::io::Result<(i32, u32)> {
    let mut bytes = [0u8; 8];
    socket.read_exact(&mut bytes)?;
    let status = i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let flags = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    Ok((status, flags))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_request_crosses_whole_with_its_pipe() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let request = Request {
            command: "echo 'hi'; exit 3".into(),
            cwd: "/r".into(),
            rlimit_nproc: Some(42),
            env: vec![("PATH".into(), "/usr/bin".into()), ("E".into(), "".into())],
        };
        let (_read, write) = rustix::pipe::pipe().unwrap();
        request.send(&mut a, &write).unwrap();
        let (got, _pipe) = Request::receive(&mut b).unwrap().unwrap();
        assert_eq!(got, request);
        send_done(&mut b, 137, CLEAN).unwrap();
        assert_eq!(receive_done(&mut a).unwrap(), (137, CLEAN));
        drop(a);
        assert!(Request::receive(&mut b).unwrap().is_none());
        assert!(Request::decode(&[9, 0, 0, 0, 1]).is_none());
    }
}
