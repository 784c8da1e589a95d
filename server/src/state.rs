//! [`AppState`]: what every request shares — the configuration, the
//! [`SessionHub`] (the sessions) and the [`Runs`] service (the runs).
//!
//! ```text
//!  AppState ─▶ config   ServerConfig
//!           ─▶ hub      SessionHub: lists per user, claims, a session's agent
//!           ─▶ runs     Runs (with the hub): submit, execute, events, cancel
//! ```

use std::sync::Arc;

use lc_agent::ListError;
use lc_agent_deepagent::mcp::Elicitation;
use tokio::sync::mpsc;

use crate::config::ServerConfig;
use crate::hub::SessionHub;
use crate::runs::{open_store, Runs};

/// The state every request shares (see the module's documentation).
pub struct AppState {
    pub(crate) config: Arc<ServerConfig>,
    pub(crate) hub: Arc<SessionHub>,
    /// The runs: records, events, the queue and this server's dispatcher.
    pub runs: Arc<Runs>,
}

// Shared between tasks and threads: a promise the compiler keeps.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<AppState>();
};

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("config", &self.config)
            .field("running", &self.hub.running_count())
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// The state of a server with this configuration (opens the Redis
    /// client when sessions live in Redis; inside a tokio runtime, starts
    /// taking queued runs).
    pub fn new(config: ServerConfig) -> Result<Arc<Self>, ListError> {
        let config = Arc::new(config);
        let hub = Arc::new(SessionHub::new(config.clone())?);
        let store = open_store(&config.sessions, hub.lists(), config.runs.keep)
            .map_err(|e| ListError::Config(lc_agent::error_chain(&e)))?;
        let runs = Arc::new(Runs::new(hub.clone(), store, config.runs.clone()));
        // Runs are taken from the queue as soon as there is a runtime.
        runs.start();
        Ok(Arc::new(Self { config, hub, runs }))
    }

    /// Holds the MCP servers' requests for input (tagged with their
    /// session: `lc_agent_deepagent::mcp::McpSessions`) for the people of
    /// the sessions whose runs asked: `input_requested` in the run's
    /// events, answered with `POST /api/sessions/{id}/input/{input}`
    /// (`runs/input.rs`). Needs a tokio runtime.
    pub fn ask_people(&self, mut requests: mpsc::Receiver<Elicitation>) {
        let runs = self.runs.clone();
        tokio::spawn(async move {
            while let Some(request) = requests.recv().await {
                runs.ask(request).await;
            }
        });
    }

    /// Starts taking queued runs (done by [`AppState::new`] inside a tokio
    /// runtime, and by `serve`; once).
    pub fn start_runs(&self) {
        self.runs.start();
    }

    /// The line to show once when the model's context window is small
    /// and the agents run lean (see `DeepAgentBuilder::lean_notice`);
    /// learns the window now (else the first session does, and logs the
    /// line as a warning). Once said here, it is not logged again.
    pub async fn lean_notice(&self) -> Option<String> {
        self.hub.lean_notice().await
    }

    /// Saves every session a run holds in this process, as it stands (a
    /// shutdown calls this once the grace period is over).
    pub async fn save_running(&self) -> usize {
        self.hub.save_running().await
    }

    /// How many sessions a run (or a rename, a delete) holds in this
    /// process.
    pub fn running(&self) -> usize {
        self.hub.running_count()
    }
}
