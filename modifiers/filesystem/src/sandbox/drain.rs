//! A command's output read to its end, capped: the shell's one-shot
//! commands (`shell.rs`) and a kept sandbox's (`bubblewrap/kept/`).

use std::io::{self, Read};
use std::os::fd::OwnedFd;

/// Bytes of command output kept.
pub(crate) const OUTPUT_CAP_BYTES: usize = 100_000;

/// Reads a pipe to its end, keeping the first [`OUTPUT_CAP_BYTES`] bytes;
/// returns them and the total.
pub(crate) fn drain(fd: OwnedFd) -> (Vec<u8>, u64) {
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
