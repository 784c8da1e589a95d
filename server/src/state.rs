//! [`AppState`]: what every request shares — the configuration, one
//! session list per user, the runs going on in this process, and how a
//! session's agent is built.
//!
//! ```text
//!  request (User) ─▶ list(user)  the user's list of the server's ListConfig (opened once)
//!                 ─▶ claim(id)   one run per session in this process (else 409)
//!                 ─▶ runs        the run store and queue (runs/): records, events, dispatcher
//!                 ─▶ load + agent_for(user, net).attach(net)   Blueprint::resolve: the AgentSpec
//!                    stored in the session wins, else the server's; the server's workspace
//!                    (per user with tokens) always applies
//!  shutdown ─▶ save_running(): every claimed session saved as it stands
//! ```
//!
//! Across processes the session lists' revisions keep runs apart: a save
//! from a copy loaded before another process saved fails with a conflict
//! (409), never overwriting.

use std::collections::HashMap;
use std::sync::Arc;

use lc_agent::{ListError, RunnableNetwork};
use lc_agent::{Lists, NetworkList};
use lc_agent_deepagent::compose::{AgentContext, Blueprint, Overrides};
use lc_agent_deepagent::deep_agent::DeepAgentBuilder;
use lc_agent_deepagent::workspace::Workspace;
use parking_lot::Mutex;
use uuid::Uuid;

use crate::config::ServerConfig;
use crate::error::ApiError;
use crate::runs::Runs;

/// The state every request shares (see the [module docs](self)).
pub struct AppState {
    pub(crate) config: ServerConfig,
    lists: Lists,
    running: Mutex<HashMap<Uuid, Running>>,
    /// The runs: records, events, the queue and this server's dispatcher.
    pub runs: Runs,
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
            .field("running", &self.running.lock().len())
            .finish_non_exhaustive()
    }
}

/// A session being run (or renamed, deleted) here, for a shutdown to save.
#[derive(Clone)]
struct Running {
    network: Option<RunnableNetwork>,
    list: Arc<dyn NetworkList>,
}

/// This process's claim on a session; released on drop.
pub(crate) struct Claim {
    state: Arc<AppState>,
    id: Uuid,
}

impl Claim {
    /// Records the network being run, for [`AppState::save_running`].
    pub(crate) fn track(&self, network: &RunnableNetwork) {
        if let Some(r) = self.state.running.lock().get_mut(&self.id) {
            r.network = Some(network.clone());
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.state.running.lock().remove(&self.id);
    }
}

impl AppState {
    /// The state of a server with this configuration (opens the Redis
    /// client when sessions live in Redis).
    pub fn new(config: ServerConfig) -> Result<Arc<Self>, ListError> {
        let lists = config.lists()?;
        let store = crate::runs::open_store(&config.sessions, &lists, config.runs.keep)
            .map_err(|e| ListError::Config(e.to_string()))?;
        let state = Arc::new(Self {
            runs: Runs::new(store, config.runs.clone()),
            lists,
            config,
            running: Mutex::new(HashMap::new()),
        });
        // Runs are taken from the queue as soon as there is a runtime.
        state.runs.start(&state);
        Ok(state)
    }

    /// Starts taking queued runs (done by [`AppState::new`] inside a tokio
    /// runtime, and by `serve`; once).
    pub fn start_runs(self: &Arc<Self>) {
        self.runs.start(self);
    }

    /// The session list of `user`.
    pub(crate) fn list(&self, user: &str) -> Result<Arc<dyn NetworkList>, ApiError> {
        Ok(self.lists.user(user)?)
    }

    /// Claims a run of session `id` in this process: 409 while another
    /// run of it goes on here.
    /// How many sessions a run of this process has claimed.
    pub(crate) fn running_count(&self) -> usize {
        self.running.lock().len()
    }

    pub(crate) fn claim(
        self: &Arc<Self>,
        user: &str,
        id: Uuid,
        list: &Arc<dyn NetworkList>,
    ) -> Result<Claim, ApiError> {
        let mut running = self.running.lock();
        if running.contains_key(&id) {
            return Err(ApiError::Conflict(format!(
                "a run of session {id} is in progress; try again when it ends"
            )));
        }
        let _ = user;
        running.insert(
            id,
            Running {
                network: None,
                list: list.clone(),
            },
        );
        Ok(Claim {
            state: self.clone(),
            id,
        })
    }

    /// Loads `user`'s session `id`: 404 when nobody has it, 403 when
    /// another user of this server does.
    pub(crate) async fn load(
        &self,
        user: &str,
        list: &Arc<dyn NetworkList>,
        id: Uuid,
    ) -> Result<RunnableNetwork, ApiError> {
        match list.load(id).await {
            Ok(net) => Ok(net),
            Err(ListError::NotFound { .. }) => Err(self.not_yours(user, id).await),
            Err(e) => Err(e.into()),
        }
    }

    /// 403 when another user of this server has session `id`, else 404.
    pub(crate) async fn not_yours(&self, user: &str, id: Uuid) -> ApiError {
        for other in self.config.tokens.users() {
            if other == user {
                continue;
            }
            if let Ok(list) = self.list(&other) {
                if let Ok(Some(_)) = list.stored_revision(id).await {
                    return ApiError::Forbidden(id);
                }
            }
        }
        ApiError::NotFound(format!("session {id} not found"))
    }

    /// The workspace of `user`'s sessions: the server's, in the user's
    /// own directory when there are tokens (created on first use).
    pub(crate) fn workspace_of(&self, user: &str) -> Result<Workspace, ApiError> {
        let workspace = if self.config.tokens.is_empty() {
            self.config.workspace.clone()
        } else {
            self.config.workspace.for_user(user)
        };
        if let Some(dir) = workspace.root() {
            std::fs::create_dir_all(dir)
                .map_err(|e| ApiError::Internal(format!("cannot open {}: {e}", dir.display())))?;
        }
        Ok(workspace)
    }

    /// Whether the file tools work in a directory (not the sessions' files).
    pub(crate) fn has_directory(&self) -> bool {
        self.config.workspace.root().is_some()
    }

    /// The agent of `user`'s sessions ([`Blueprint::resolve`]: the
    /// blueprint stored in `session` when it has one, else the server's),
    /// always with the server's workspace and shared modifiers.
    pub(crate) fn agent_for(
        &self,
        user: &str,
        session: Option<&RunnableNetwork>,
    ) -> Result<(DeepAgentBuilder, Blueprint), ApiError> {
        let internal = |e: lc_agent_deepagent::spec::SpecError| ApiError::Internal(e.to_string());
        let overrides = Overrides::none()
            .workspace(self.workspace_of(user)?)
            .summaries(self.config.summaries);
        let blueprint = Blueprint::resolve(session, self.config.spec.as_ref(), &overrides)
            .map_err(internal)?
            .main_model_or(|| self.config.model_name.clone());
        let model = self.config.model.clone();
        let context = AgentContext::new(self.config.sessions.clone(), user);
        let mut builder = blueprint
            .builder(move |_, _| Ok(model.clone()), &context)
            .map_err(internal)?;
        for modifier in &self.config.modifiers {
            builder = builder.modifier_shared(modifier.clone());
        }
        Ok((builder, blueprint))
    }

    /// A new session of `user` (not saved yet).
    pub(crate) fn new_session(&self, user: &str, name: &str) -> Result<RunnableNetwork, ApiError> {
        let (builder, _) = self.agent_for(user, None)?;
        let net = builder
            .build()
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        // The server's own blueprint, as given: its workspace (a path on
        // this server) always comes from the server's configuration.
        if let Some(spec) = &self.config.spec {
            spec.store_in(&net)
                .map_err(|e| ApiError::Internal(e.to_string()))?;
        }
        net.set_name(name);
        net.set_user_id(user);
        Ok(net)
    }

    /// Loads `user`'s session `id` and attaches its agent.
    pub(crate) async fn open(
        &self,
        user: &str,
        list: &Arc<dyn NetworkList>,
        id: Uuid,
    ) -> Result<(RunnableNetwork, DeepAgentBuilder), ApiError> {
        let net = self.load(user, list, id).await?;
        let (builder, _) = self.agent_for(user, Some(&net))?;
        builder
            .attach(&net)
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        // The runs' traces name the user.
        net.set_user_id(user);
        Ok((net, builder))
    }

    /// Saves every session a run holds in this process, as it stands (a
    /// shutdown calls this once the grace period is over).
    pub async fn save_running(&self) -> usize {
        let running: Vec<Running> = self.running.lock().values().cloned().collect();
        let mut saved = 0;
        for r in running {
            let Some(net) = r.network else { continue };
            match r.list.save(&net).await {
                Ok(_) => saved += 1,
                Err(e) => {
                    tracing::error!(session = %net.id(), error = %e, "could not save a running session at shutdown")
                }
            }
        }
        saved
    }

    /// How many runs are going on in this process.
    pub fn running(&self) -> usize {
        self.running.lock().len()
    }
}
