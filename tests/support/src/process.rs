//! What every external server of the tests needs: a free loopback port,
//! a wait until it answers, and its log's tail for failure messages.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Whether an executable file `program` is in a directory of the `PATH`.
pub fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| {
        dir.join(program)
            .metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// Panics, saying what to install, unless every program is on the `PATH`.
/// The servers' start functions call it, so a test that runs without its
/// program (under `CI=true`, or with `--ignored`) fails with the reason
/// instead of an opaque spawn error.
pub fn require_programs(programs: &[&str], install: &str) {
    let missing: Vec<&str> = programs.iter().copied().filter(|p| !on_path(p)).collect();
    assert!(
        missing.is_empty(),
        "{} not installed ({install})",
        missing.join(" and ")
    );
}

/// The last 4,000 bytes of a server's log file (for failure messages).
pub fn log_tail(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_string(&mut text);
    }
    let start = text.len().saturating_sub(4000);
    let start = (start..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    text[start..].to_string()
}

/// Waits until `GET path` on the loopback `port` answers 200, for at most
/// `seconds`; panics (with the log) when `child` exits or time runs out.
/// `what` names the server in the messages.
pub fn wait_until_ok(
    child: &mut Child,
    port: u16,
    path: &str,
    what: &str,
    seconds: u64,
    log: &Path,
) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(seconds) {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited ({status}):\n{}", log_tail(log));
        }
        let ready = TcpStream::connect(("127.0.0.1", port)).is_ok_and(|mut s| {
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            s.write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes())
                .is_ok()
                && {
                    let mut head = [0u8; 12];
                    s.read_exact(&mut head).is_ok() && head.ends_with(b" 200")
                }
        });
        if ready {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{what} did not start in {seconds} s:\n{}", log_tail(log));
}

/// A child process killed (and reaped) when the handle is dropped.
#[derive(Debug)]
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
