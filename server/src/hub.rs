//! [`SessionHub`]: the session half of the server — one session list per
//! user (with its cache), this process's claims on sessions, and how a
//! session's agent is built. The runs and every endpoint reach sessions
//! through it.
//!
//! ```text
//!  list(user)  the user's list of the server's ListConfig (opened once, cached)
//!  claim(id)   one run (or rename, delete) per session in this process (else 409)
//!  load(user, id) / open(...)   load + agent_for(user, net).attach(net): Blueprint::resolve,
//!              the AgentSpec stored in the session wins, else the server's; the server's
//!              workspace (per user with tokens) always applies; `main` is the server's
//!              model, every other model the blueprint names is its own (opened once)
//!  new_session, copy_of, name_from   new sessions, `store: false` copies, the first-message title
//!  save_running()   at shutdown: every claimed session saved as it stands
//! ```
//!
//! Across processes the session lists' revisions keep runs apart: a save
//! from a copy loaded before another process saved fails with a conflict
//! (409), never overwriting.

use std::collections::HashMap;
use std::sync::Arc;

use lc_agent::{Attachments, ListError, Lists, NetworkList, RunnableNetwork, Saving};
use lc_agent_deepagent::{AgentContext, Blueprint, DeepAgentBuilder, Overrides, Workspace};
use parking_lot::Mutex;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::config::ServerConfig;
use crate::error::ApiError;

/// The name of a session created without one; its first message names it.
pub(crate) const DEFAULT_NAME: &str = "New session";

/// The sessions of a server (see the [module docs](self)).
pub(crate) struct SessionHub {
    config: Arc<ServerConfig>,
    lists: Lists,
    running: Mutex<HashMap<Uuid, Running>>,
    /// The blueprints' own models (not `main`), by their entry, opened once.
    models: Mutex<HashMap<String, Arc<dyn lc_agent::ChatModel>>>,
    /// The server's model's context window, learned once (see
    /// [`SessionHub::window`]).
    window: tokio::sync::OnceCell<Option<usize>>,
    /// The lean prompt was logged (once per process).
    lean_said: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for SessionHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionHub")
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
    hub: Arc<SessionHub>,
    id: Uuid,
}

impl Claim {
    /// Records the network being run, for [`SessionHub::save_running`].
    pub(crate) fn track(&self, network: &RunnableNetwork) {
        if let Some(r) = self.hub.running.lock().get_mut(&self.id) {
            r.network = Some(network.clone());
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.hub.running.lock().remove(&self.id);
    }
}

impl SessionHub {
    /// The sessions of a server with this configuration (opens the Redis
    /// client when sessions live in Redis).
    pub(crate) fn new(config: Arc<ServerConfig>) -> Result<Self, ListError> {
        let lists = config.lists()?;
        Ok(Self {
            config,
            lists,
            running: Mutex::new(HashMap::new()),
            models: Mutex::new(HashMap::new()),
            window: tokio::sync::OnceCell::new(),
            lean_said: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The session lists (every user's).
    pub(crate) fn lists(&self) -> &Lists {
        &self.lists
    }

    /// The session list of `user`.
    pub(crate) fn list(&self, user: &str) -> Result<Arc<dyn NetworkList>, ApiError> {
        Ok(self.lists.user(user)?)
    }

    /// How many sessions are claimed in this process.
    pub(crate) fn running_count(&self) -> usize {
        self.running.lock().len()
    }

    /// Claims session `id` in this process: 409 while another run (or
    /// rename, delete) of it goes on here.
    pub(crate) fn claim(
        self: &Arc<Self>,
        id: Uuid,
        list: &Arc<dyn NetworkList>,
    ) -> Result<Claim, ApiError> {
        let mut running = self.running.lock();
        if running.contains_key(&id) {
            return Err(ApiError::Conflict(format!(
                "a run of session {id} is in progress; try again when it ends"
            )));
        }
        running.insert(
            id,
            Running {
                network: None,
                list: list.clone(),
            },
        );
        Ok(Claim {
            hub: self.clone(),
            id,
        })
    }

    /// Claims session `id` of `list` (see [`claim`](Self::claim)) after
    /// checking that the list holds it: another user's session is 404
    /// before its state (a run in progress) is looked at.
    pub(crate) async fn claim_owned(
        self: &Arc<Self>,
        id: Uuid,
        list: &Arc<dyn NetworkList>,
    ) -> Result<Claim, ApiError> {
        self.owned(list, id).await?;
        self.claim(id, list)
    }

    /// [`claim`](Self::claim), waiting up to `patience` (polled every
    /// 50 ms) while another run, rename or delete of it holds it here.
    pub(crate) async fn claim_within(
        self: &Arc<Self>,
        id: Uuid,
        list: &Arc<dyn NetworkList>,
        patience: std::time::Duration,
    ) -> Result<Claim, ApiError> {
        let started = std::time::Instant::now();
        loop {
            match self.claim(id, list) {
                Err(_) if started.elapsed() < patience => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                claimed => return claimed,
            }
        }
    }

    /// Loads session `id` of `list` (a user's list: another user's
    /// session is not found there, 404).
    pub(crate) async fn load(
        &self,
        list: &Arc<dyn NetworkList>,
        id: Uuid,
    ) -> Result<RunnableNetwork, ApiError> {
        Ok(list.load(id).await?)
    }

    /// 404 unless `list` holds session `id` (one that cannot be read says
    /// why). Checked before anything else of a session is looked at, so
    /// another user's is not found whatever its state.
    pub(crate) async fn owned(
        &self,
        list: &Arc<dyn NetworkList>,
        id: Uuid,
    ) -> Result<(), ApiError> {
        match list.stored_revision(id).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => self.load(list, id).await.map(|_| ()),
            Err(e) => Err(e.into()),
        }
    }

    /// The workspace of `user`'s sessions: the server's, in the user's
    /// own directory when there are tokens (created on first use).
    fn workspace_of(&self, user: &str) -> Result<Workspace, ApiError> {
        let workspace = if self.config.tokens.is_empty() {
            self.config.workspace.clone()
        } else {
            self.config.workspace.for_user(user)
        };
        if let Some(dir) = workspace.root() {
            std::fs::create_dir_all(dir)
                .map_err(|e| ApiError::internal(format!("cannot open {}", dir.display()), e))?;
        }
        Ok(workspace)
    }

    /// Whether the file tools work in a directory (not the sessions' files).
    pub(crate) fn has_directory(&self) -> bool {
        self.config.workspace.root().is_some()
    }

    /// The server's model's context window: what the model (or its
    /// server) says, else the table of known models; learned on first use
    /// and kept. `None` when unknown.
    pub(crate) async fn window(&self) -> Option<usize> {
        *self
            .window
            .get_or_init(|| async {
                self.config.model.context_window().await.or_else(|| {
                    lc_agent_deepagent::ContextWindows::known_window(&self.config.model_name)
                })
            })
            .await
    }

    /// The lean notice of the server's model's window, when it is small;
    /// marked said, so the first session does not log it again.
    pub(crate) async fn lean_notice(&self) -> Option<String> {
        let notice = DeepAgentBuilder::default()
            .context_window(self.window().await)
            .lean_notice();
        if notice.is_some() {
            self.lean_said
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        notice
    }

    /// The agent of `user`'s sessions ([`Blueprint::resolve`]: the
    /// blueprint stored in `session` when it has one, else the server's),
    /// always with the server's workspace and shared modifiers; lean when
    /// the model's window is small ([`DeepAgentBuilder::context_window`],
    /// logged once).
    pub(crate) async fn agent_for(
        &self,
        user: &str,
        session: Option<&RunnableNetwork>,
    ) -> Result<(DeepAgentBuilder, Blueprint), ApiError> {
        let internal = |e| ApiError::internal("the session's agent cannot be built", e);
        let overrides = Overrides {
            workspace: Some(self.workspace_of(user)?),
            summaries: Some(self.config.summaries),
            project_memory: (!self.config.project_memory).then_some(false),
            max_read_bytes: self.config.file_limits.0,
            max_write_bytes: self.config.file_limits.1,
            ..Overrides::default()
        };
        let mut blueprint = Blueprint::resolve(session, self.config.spec.as_ref(), &overrides)
            .map_err(internal)?
            .main_model_or(|| self.config.model_name.clone());
        // The server's path rules come first, whatever the session says.
        blueprint.spec.permissions = self.config.permissions.then(&blueprint.spec.permissions);
        // A session's own files are capped per file at every door (a run's
        // tool calls and /v1/tools/execute): the write limit the file tools
        // keep to is at most the cap.
        if !self.has_directory() {
            let limit = blueprint
                .spec
                .files
                .write_limit()
                .min(self.config.max_file_bytes);
            blueprint.spec.files = blueprint.spec.files.max_write_bytes(limit);
        }
        let context = AgentContext::new(self.config.sessions.clone(), user);
        // `main` is the server's model; every other model the blueprint
        // names is its own, opened once per entry and kept.
        let own = blueprint.with_main(self.config.model.clone());
        let window = match blueprint.main_model().and_then(|m| m.context_window) {
            Some(tokens) => Some(tokens),
            None => self.window().await,
        };
        let mut builder = blueprint
            .builder(
                |name, spec| {
                    let key = serde_json::to_string(spec).unwrap_or_default();
                    if let Some(model) = self.models.lock().get(&key) {
                        return Ok(model.clone());
                    }
                    let model = own(name, spec)?;
                    if name != lc_agent_deepagent::MAIN_MODEL {
                        self.models.lock().insert(key, model.clone());
                    }
                    Ok(model)
                },
                &context,
            )
            .map_err(internal)?
            .context_window(window);
        if let Some(notice) = builder.lean_notice()
            && !self
                .lean_said
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::warn!("{notice}");
        }
        for modifier in &self.config.modifiers {
            builder = builder.modifier_shared(modifier.clone());
        }
        builder = builder.modifier_shared(std::sync::Arc::new(crate::caps::SessionCaps::new(
            self.config.max_file_bytes,
            self.config.max_session_files_bytes,
        )));
        Ok((builder, blueprint))
    }

    /// A new session of `user` (not saved yet).
    pub(crate) async fn new_session(
        &self,
        user: &str,
        name: &str,
    ) -> Result<RunnableNetwork, ApiError> {
        let (builder, _) = self.agent_for(user, None).await?;
        let net = builder
            .build()
            .map_err(|e| ApiError::internal("a new session cannot be built", e))?;
        // The server's own blueprint, as given: its workspace (a path on
        // this server) always comes from the server's configuration.
        if let Some(spec) = &self.config.spec {
            spec.store_in(&net)
                .map_err(|e| ApiError::internal("the blueprint cannot be stored", e))?;
        }
        // The server's mode of new sessions, unless the blueprint gave one.
        if let (Some(mode), None) = (
            self.config.default_mode,
            net.metadata_value(lc_agent_deepagent::MODE_KEY),
        ) {
            lc_agent_deepagent::set_permission_mode(&net, mode);
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
        let net = self.load(list, id).await?;
        let (builder, _) = self.agent_for(user, Some(&net)).await?;
        builder
            .attach(&net)
            .map_err(|e| ApiError::internal("the session's agent cannot be attached", e))?;
        // The runs' traces name the user.
        net.set_user_id(user);
        Ok((net, builder))
    }

    /// Saves every session a run holds in this process, as it stands (a
    /// shutdown calls this once the grace period is over).
    pub(crate) async fn save_running(&self) -> usize {
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
}

/// A copy of `saved` under a new id, for a `store: false` run.
pub(crate) fn copy_of(saved: &RunnableNetwork) -> Result<RunnableNetwork, ApiError> {
    let internal = |e| ApiError::internal("the session could not be copied", e);
    let mut value = saved.to_value().map_err(internal)?;
    value["id"] = json!(Uuid::new_v4());
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove(lc_agent::REVISION_KEY);
    }
    RunnableNetwork::from_value(value).map_err(internal)
}

/// Names a session that has no name yet from its first message (the one
/// title rule, [`title_of`](lc_agent_deepagent::title_of)).
pub(crate) fn name_from(net: &RunnableNetwork, text: &str) {
    if net.name() == DEFAULT_NAME {
        net.set_name(lc_agent_deepagent::title_of(text));
    }
}
