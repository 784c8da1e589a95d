//! An independent server speaking Anthropic's Messages API for tests:
//! LiteLLM's proxy (`litellm[proxy]`, PyPI) serving `/v1/messages` on a
//! free loopback port, in front of an OpenAI-compatible server (the
//! llama-cpp-python + SmolLM2 server of [`crate::LlamaServer`]). It
//! translates each Messages request into a chat completion and the answer
//! back, streamed or not.
//!
//! The proxy is `LC_AGENT_LITELLM` (the `litellm` executable), else
//! `litellm` on the `PATH`, else the virtual environment `.ci/run` makes
//! (`$XDG_CACHE_HOME/lc-agent/litellm-venv`, default `~/.cache/...`; LiteLLM
//! pins other versions of `openai` and `mcp` than the tests' Python, so it
//! lives apart). A test that uses it carries `#[needs(llama, litellm)]`; a
//! missing proxy fails the start with the reason.
//!
//! The generated configuration maps one model name to `openai/<model>` at
//! the upstream's base URL, sets a master key (the proxy refuses to start
//! without one; [`LiteLlm::key`] is the API key to send), routes
//! `/v1/messages` through chat completions (not OpenAI's Responses API,
//! which llama-cpp-python does not serve) and keeps LiteLLM's model cost
//! map local (no download at start).
//!
//! The proxy stops when its [`LiteLlm`] drops, and also when the test
//! process ends (a watchdog shell kills it).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::process::{free_port, log_tail, wait_until_ok};

/// The `litellm` executable, if one is installed.
pub fn executable() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("LC_AGENT_LITELLM") {
        return Some(PathBuf::from(path));
    }
    let runs = |program: &PathBuf| {
        Command::new(program)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let on_path = PathBuf::from("litellm");
    if runs(&on_path) {
        return Some(on_path);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    let venv = cache.join("lc-agent/litellm-venv/bin/litellm");
    venv.is_file().then_some(venv)
}

/// A running LiteLLM proxy.
pub struct LiteLlm {
    child: Child,
    port: u16,
    key: String,
    log: PathBuf,
    config: PathBuf,
}

impl LiteLlm {
    /// Starts a proxy serving `model` from the OpenAI-compatible server at
    /// `upstream` (its API root, e.g. `http://127.0.0.1:P/v1`) and waits
    /// until it answers (at most three minutes). Panics, saying what to
    /// install, when LiteLLM is missing.
    pub fn start(model: &str, upstream: &str) -> Self {
        let litellm = executable().unwrap_or_else(|| {
            panic!(
                "LiteLLM's proxy is not installed (pip install -r \
                 .ci/requirements-litellm.txt in a virtual environment; .ci/run does)"
            )
        });
        let port = free_port();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let key = format!("sk-lc-agent-test-{port}-{}-{nanos:x}", std::process::id());
        let config = std::env::temp_dir().join(format!("lc-agent-litellm-{port}.yaml"));
        std::fs::write(
            &config,
            format!(
                "model_list:\n\
                 \x20 - model_name: {model}\n\
                 \x20   litellm_params:\n\
                 \x20     model: openai/{model}\n\
                 \x20     api_base: {upstream}\n\
                 \x20     api_key: none\n\
                 litellm_settings:\n\
                 \x20 drop_params: true\n\
                 \x20 use_chat_completions_url_for_anthropic_messages: true\n\
                 \x20 request_timeout: 600\n\
                 general_settings:\n\
                 \x20 master_key: {key}\n"
            ),
        )
        .expect("the proxy's configuration");
        let log = std::env::temp_dir().join(format!("lc-agent-litellm-{port}.log"));
        let log_file = std::fs::File::create(&log).expect("the proxy's log file");
        // The shell starts the proxy, kills it when the test process (its
        // parent) is gone, and when it is told to stop (TERM).
        let script = format!(
            "'{litellm}' --config '{config}' --host 127.0.0.1 --port {port} & \
             server=$!; trap 'kill $server 2>/dev/null; exit 0' TERM INT; parent=$PPID; \
             while kill -0 $parent 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 1; done; \
             kill $server 2>/dev/null",
            litellm = litellm.display(),
            config = config.display(),
        );
        let child = Command::new("sh")
            .args(["-c", &script])
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            .env("LITELLM_LOG", "ERROR")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log"))
            .stderr(log_file)
            .spawn()
            .expect("sh starts");
        let mut proxy = Self {
            child,
            port,
            key,
            log,
            config,
        };
        proxy.wait_ready();
        proxy
    }

    /// The API root, for `ANTHROPIC_BASE_URL` (requests go to
    /// `{base_url}/v1/messages`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The API key the proxy takes (its master key).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The proxy's output so far (for failure messages).
    pub fn log(&self) -> String {
        log_tail(&self.log)
    }

    fn wait_ready(&mut self) {
        let log = self.log.clone();
        let (child, port) = (&mut self.child, self.port);
        wait_until_ok(child, port, "/health/liveliness", "LiteLLM", 180, &log);
    }
}

impl Drop for LiteLlm {
    fn drop(&mut self) {
        // TERM to the shell: its trap kills the proxy.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.config);
    }
}
