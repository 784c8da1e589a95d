//! A real OpenTelemetry trace receiver for tests: Arize Phoenix
//! (`arize-phoenix`, PyPI; `phoenix serve`) on free loopback ports, its
//! data in a temporary directory. It takes OTLP over HTTP
//! (`http://127.0.0.1:{port}/v1/traces`) and gRPC (`{grpc_port}`), and
//! gives the spans back through its REST API
//! (`/v1/projects/default/spans`).
//!
//! Phoenix is `LC_AGENT_PHOENIX` (the `phoenix` executable), else
//! `phoenix` on the `PATH`, else the virtual environment `.ci/run` makes
//! (`$XDG_CACHE_HOME/lc-agent/phoenix-venv`, default `~/.cache/...`;
//! pinned in `.ci/requirements-phoenix.txt`). A test that needs it
//! carries `#[needs(phoenix)]`; [`Phoenix::start`] returns `None` (with a
//! message) when it is missing outside CI, and fails under `CI=true`. It stops when the test process ends (a watchdog shell kills
//! it).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::process::free_port;

/// The `phoenix` executable, if one is installed.
pub fn executable() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("LC_AGENT_PHOENIX") {
        return Some(PathBuf::from(path));
    }
    let on_path = Command::new("phoenix")
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if on_path {
        return Some(PathBuf::from("phoenix"));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    let venv = cache.join("lc-agent/phoenix-venv/bin/phoenix");
    venv.is_file().then_some(venv)
}

/// A running Phoenix.
pub struct Phoenix {
    child: Mutex<Child>,
    /// Its HTTP port (UI, REST API, OTLP over HTTP).
    pub port: u16,
    /// Its OTLP over gRPC port.
    pub grpc_port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Phoenix {
    /// Starts Phoenix, or `None` (with a message) when it is missing and
    /// this is not CI. Under `CI=true` a missing Phoenix panics.
    pub fn start(test: &str) -> Option<Self> {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        let Some(phoenix) = executable() else {
            let message = format!(
                "{test}: Arize Phoenix is not installed (pip install -r \
                 .ci/requirements-phoenix.txt in a virtual environment; .ci/run does)"
            );
            assert!(!ci, "{message}");
            eprintln!("skipping {message}");
            return None;
        };
        let dir = tempfile::tempdir().expect("Phoenix's working directory");
        let (port, grpc_port) = (free_port(), free_port());
        let log = dir.path().join("phoenix.log");
        let log_file = std::fs::File::create(&log).expect("Phoenix's log file");
        // The shell starts Phoenix, kills it when the test process (its
        // parent) is gone, and when it is told to stop (TERM).
        let script = format!(
            "'{phoenix}' serve & server=$!; \
             trap 'kill $server 2>/dev/null; exit 0' TERM INT; parent=$PPID; \
             while kill -0 $parent 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 1; done; \
             kill $server 2>/dev/null",
            phoenix = phoenix.display(),
        );
        let child = Command::new("sh")
            .args(["-c", &script])
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc_port.to_string())
            .env("PHOENIX_WORKING_DIR", dir.path())
            // No usage reports from a test.
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log"))
            .stderr(log_file)
            .spawn()
            .expect("sh starts");
        let phoenix = Phoenix {
            child: Mutex::new(child),
            port,
            grpc_port,
            log,
            _dir: dir,
        };
        phoenix.wait_ready();
        Some(phoenix)
    }

    /// Where OTLP over HTTP goes (`OTEL_EXPORTER_OTLP_ENDPOINT`; the
    /// exporter adds `/v1/traces`).
    pub fn http_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Where OTLP over gRPC goes.
    pub fn grpc_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.grpc_port)
    }

    /// Phoenix's output so far (for failure messages).
    pub fn log(&self) -> String {
        crate::process::log_tail(&self.log)
    }

    fn wait_ready(&self) {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(180) {
            if let Ok(Some(status)) = self
                .child
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .try_wait()
            {
                panic!("Phoenix exited ({status}):\n{}", self.log());
            }
            if self
                .get("/healthz")
                .is_some_and(|(status, _)| status == 200)
                && std::net::TcpStream::connect(("127.0.0.1", self.grpc_port)).is_ok()
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        panic!("Phoenix did not start in 180 s:\n{}", self.log());
    }

    /// `GET path` on Phoenix: the status and the body.
    pub fn get(&self, path: &str) -> Option<(u16, String)> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
        s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
            .ok()?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).ok()?;
        let text = String::from_utf8_lossy(&raw).to_string();
        let (head, body) = text.split_once("\r\n\r\n")?;
        let status = head.split_whitespace().nth(1)?.parse().ok()?;
        Some((status, body.to_string()))
    }

    /// Every span of the default project (newest first).
    pub fn spans(&self) -> Vec<Value> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let path = match &cursor {
                Some(c) => format!("/v1/projects/default/spans?limit=1000&cursor={c}"),
                None => "/v1/projects/default/spans?limit=1000".to_string(),
            };
            let Some((200, body)) = self.get(&path) else {
                return out;
            };
            let page: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            if let Some(data) = page["data"].as_array() {
                out.extend(data.iter().cloned());
            }
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => return out,
            }
        }
    }

    /// The spans of the trace whose root `invoke_agent` span has
    /// `session.id` = `session`, once `count` of them arrived (Phoenix
    /// stores what it receives a moment later); panics after 60 s.
    pub fn trace_of_session(&self, session: &str, count: usize) -> Vec<Value> {
        let started = Instant::now();
        let mut seen = Vec::new();
        while started.elapsed() < Duration::from_secs(60) {
            let spans = self.spans();
            let root = spans.iter().find(|s| {
                s["parent_id"].is_null() && s["attributes"]["session.id"].as_str() == Some(session)
            });
            if let Some(root) = root {
                let trace = root["context"]["trace_id"].clone();
                seen = spans
                    .into_iter()
                    .filter(|s| s["context"]["trace_id"] == trace)
                    .collect();
                if seen.len() >= count {
                    return seen;
                }
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!(
            "Phoenix has {} span(s) of session {session}, not {count}:\n{seen:#?}\n{}",
            seen.len(),
            self.log()
        );
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        if let Ok(mut child) = self.child.lock() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let _ = child.wait();
        }
    }
}
