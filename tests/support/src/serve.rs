//! `lc-agent serve` as a process: started on a free loopback port, its
//! address read from the first line it prints on stderr (`listening on
//! URL`), the rest of its stderr kept for the test to read, killed when
//! dropped.
//!
//! The binary is the caller's (`env!("CARGO_BIN_EXE_lc-agent")` of the CLI
//! crate's tests): this crate is built before it and cannot name it.
//!
//! A test builds the command with [`serve_command`], adds its flags
//! (`--script`, `--sessions`, `--redis`...) and environment, and hands it
//! to [`Served::start`].

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The variables of the caller's environment that would change what a
/// served agent talks to or who may call it; [`serve_command`] removes
/// them so a test starts from nothing.
pub const CALLER_VARIABLES: &[&str] = &[
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_MODEL",
    "LC_AGENT_TOKEN",
    "RUST_LOG",
];

/// `<bin> serve --addr 127.0.0.1:0` with none of [`CALLER_VARIABLES`]:
/// add the test's own arguments and environment, then [`Served::start`] it.
pub fn serve_command(bin: &Path) -> Command {
    let mut command = Command::new(bin);
    command.args(["serve", "--addr", "127.0.0.1:0"]);
    for name in CALLER_VARIABLES {
        command.env_remove(name);
    }
    command
}

/// A running `lc-agent serve`; killed (SIGKILL) and reaped on drop.
pub struct Served {
    child: Child,
    url: String,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Served {
    /// Spawns `command` (from [`serve_command`]) with stderr piped and
    /// stdout discarded, and waits for its first stderr line, which must
    /// be `listening on URL`. The rest of stderr is read on a thread (so
    /// the server never blocks on it) and kept for [`Served::lines`].
    ///
    /// Panics, showing the line, when the server says anything else
    /// first or ends before saying it.
    pub fn start(mut command: Command) -> Self {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("`lc-agent serve` does not start: {e}"));
        let stderr = child.stderr.take().expect("stderr is piped");
        let mut lines = BufReader::new(stderr).lines();
        let first = match lines.next() {
            Some(Ok(line)) => line,
            other => {
                let status = child.wait();
                panic!("`lc-agent serve` ended before it listened ({other:?}, {status:?})")
            }
        };
        let url = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line of `lc-agent serve`: {first}"))
            .to_string();
        let kept = Arc::new(Mutex::new(Vec::new()));
        let sink = kept.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(line);
            }
        });
        Self {
            child,
            url,
            lines: kept,
        }
    }

    /// The server's base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The process, to signal or wait for it.
    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The stderr lines after the first, so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The stderr lines so far, once one of them contains `needle` or
    /// `timeout` has passed (then the test's assertion says what is
    /// missing).
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let lines = self.lines();
            if lines.iter().any(|l| l.contains(needle)) || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
