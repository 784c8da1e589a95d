//! The agent of `run` and `chat`: flags -> blueprint -> a session with its
//! agent attached, and the loop that runs a turn.
//!
//! ```text
//!  AgentArgs (--agent FILE, --root/--shell, --skills, --mcp, --memory, model, store, user)
//!     │ Blueprint::resolve(session?, --agent, flags)   the stored blueprint wins; a flag
//!     │                                                given on resume replaces its setting,
//!     ▼                                                `--agent` the whole blueprint (a `note:`
//!                                                      line on stderr says so)
//!  Agent { net, list, mcp, memory }   blueprint stored in the session, checkpoint per node
//!     │ turn(text) / finish(): invoke, ask the approvals it needs, until an answer
//!     ▼ close(): disconnect MCP, wait for memory summaries, save
//! ```
//!
//! The blueprint stored in every session carries the workspace, skills, MCP
//! servers and memory setting, so `lc-agent chat --session ID` without the
//! flags of the `run` that made it is the same agent — but for what its
//! workspace may reach, which only this invocation gives (a stored shell
//! is off, a directory outside the current one is not used; a `warning:`
//! says so, see `Blueprint::narrowed`). A new session uses a trusted
//! project's `.lc-agent/agent.toml` and `.mcp.json` (`trust.rs`).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Args;
use lc_agent::{Attachments, ChatNode, ContentPart, HumanNode, RunnableNetwork};
use lc_agent::{CheckpointModifier, CheckpointPolicy, NetworkList};
use lc_agent_deepagent::mcp::{Elicitation, McpConfig, McpSandbox, McpTools};
use lc_agent_deepagent::memory::{MemoryModifier, USER_KEY};
use lc_agent_deepagent::{
    summarizer_of, write_title, AgentContext, AgentSpec, Blueprint, CompactError, Compaction,
    Overrides, Setting, Workspace,
};
use lc_agent_filesystem::{Backend, BackendSource, TOOL_NAMES};
use serde_json::Value;
use std::sync::Mutex;
use tokio::sync::mpsc;

use crate::approve::{ask, Policy};
use crate::args::{find_session, ModelArgs, StoreArgs, WorkspaceArgs};
use crate::console::{show_progress_with, Look, Screen};
use crate::error::{in_user_terms, CliError, CliResult, Kind};
use crate::input::Input;
use crate::interrupt::Interrupt;
use lc_agent::error_chain;

/// What `run` and `chat` share: the agent, its model, the session store.
#[derive(Debug, Clone, Args)]
pub(crate) struct AgentArgs {
    /// Where the file tools work.
    #[command(flatten)]
    pub(crate) workspace: WorkspaceArgs,
    /// The chat model.
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// An agent blueprint (TOML, or JSON by its extension).
    #[arg(long, value_name = "FILE")]
    pub(crate) agent: Option<PathBuf>,
    /// MCP servers whose tools the agent gets (an `mcpServers` JSON file;
    /// saved in the session's blueprint, so secrets must be `${VAR}`).
    #[arg(long, value_name = "FILE.json")]
    pub(crate) mcp: Option<PathBuf>,
    /// Skills: folders with a SKILL.md in this directory (mounted at /skills).
    #[arg(long, value_name = "DIR")]
    pub(crate) skills: Option<PathBuf>,
    /// Approve every call that asks.
    #[arg(long)]
    pub(crate) yes: bool,
    /// Where sessions live.
    #[command(flatten)]
    pub(crate) store: StoreArgs,
    /// The user (namespace) of the session, and whose memories `--memory` uses.
    #[arg(long, default_value = "default")]
    pub(crate) user: String,
    /// Long-term memory across sessions (in Redis with --redis).
    #[arg(long)]
    pub(crate) memory: bool,
    /// Also offer the line tools (insert_lines, replace_lines, delete_lines;
    /// they cost prompt tokens).
    #[arg(long)]
    pub(crate) line_tools: bool,
    /// The file tools' size limits (--max-read-bytes, --max-write-bytes).
    #[command(flatten)]
    pub(crate) file_limits: crate::args::FileLimitArgs,
    /// Gives the agent the `fetch_url` tool for this host (repeatable;
    /// `*.domain` for its subdomains, `*` for any public host; a private or
    /// loopback address only when named exactly).
    #[arg(long = "fetch-url", value_name = "HOST")]
    pub(crate) fetch_url: Vec<String>,
    /// The permission mode (`--mode`).
    #[command(flatten)]
    pub(crate) mode: crate::mode::ModeArgs,
    /// The hooks to run (`--settings FILE`, `--no-hooks`).
    #[command(flatten)]
    pub(crate) hooks: crate::hooks::HookArgs,
}

impl AgentArgs {
    /// The settings the flags give, on top of any blueprint (directories
    /// made absolute, so a session resumed elsewhere finds them).
    /// `project`: a trusted project whose `.mcp.json` servers join (before
    /// `--mcp`'s, which win on a name).
    fn overrides(&self, resumed: bool, project: Option<&std::path::Path>) -> CliResult<Overrides> {
        let mut overrides = Overrides {
            memory: self.memory,
            line_tools: self.line_tools,
            max_read_bytes: self.file_limits.max_read_bytes,
            max_write_bytes: self.file_limits.max_write_bytes,
            summaries: self.model.summaries(resumed),
            context_window: self.model.context_window(),
            project_memory: self.model.no_project_memory.then_some(false),
            fetch_url: self.fetch_url.clone(),
            // A resumed session's directory is used only inside the one
            // this runs in (`Blueprint::resolve`).
            within: std::env::current_dir().ok(),
            ..Overrides::default()
        };
        if let Some(workspace) = self.workspace.workspace()? {
            let workspace = workspace
                .absolute()
                .map_err(|e| CliError::usage(e.to_string()))?;
            overrides.workspace = Some(workspace);
        }
        if let Some(dir) = &self.skills {
            let dir = std::fs::canonicalize(dir)
                .ok()
                .filter(|d| d.is_dir())
                .ok_or_else(|| {
                    CliError::usage(format!("--skills {}: not a directory", dir.display()))
                })?;
            overrides.skills_dir = Some(dir);
        }
        if let Some(path) = project
            .map(|dir| dir.join(".mcp.json"))
            .filter(|p| p.is_file())
        {
            let config = McpConfig::from_file(&path)
                .map_err(|e| CliError::usage(format!("{}: {}", path.display(), error_chain(&e))))?;
            overrides.mcp.merge(config);
        }
        if let Some(path) = &self.mcp {
            let config = McpConfig::from_file(path).map_err(|e| {
                let cause = match &e {
                    // The error names the file already.
                    lc_agent_deepagent::mcp::ConfigError::Read { source, .. } => {
                        format!("cannot read it: {source}")
                    }
                    other => error_chain(other),
                };
                CliError::usage(format!("--mcp {}: {cause}", path.display()))
            })?;
            overrides.mcp.merge(config);
        }
        Ok(overrides)
    }

    /// The blueprint of `--agent`, if given; else a trusted `project`'s
    /// `.lc-agent/agent.toml` (or `agent.json`), if it has one.
    fn caller_spec(&self, project: Option<&std::path::Path>) -> CliResult<Option<AgentSpec>> {
        let own = project.and_then(|dir| {
            ["agent.toml", "agent.json"]
                .into_iter()
                .map(|name| dir.join(".lc-agent").join(name))
                .find(|p| p.is_file())
        });
        self.agent
            .as_ref()
            .or(own.as_ref())
            .map(|path| AgentSpec::from_file(path).map_err(|e| CliError::usage(e.to_string())))
            .transpose()
    }

    /// The project a new session starts in: `--root`, else the current
    /// directory.
    fn project(&self) -> CliResult<PathBuf> {
        match &self.workspace.root {
            Some(root) => Ok(root.clone()),
            None => std::env::current_dir()
                .map_err(|e| CliError::usage(format!("the current directory: {e}"))),
        }
    }

    /// The flag that sets `setting`.
    fn flag_of(&self, setting: Setting) -> &'static str {
        match setting {
            Setting::Workspace => "--root",
            Setting::Skills => "--skills",
            Setting::McpServers => "--mcp",
            Setting::Memory => "--memory",
            Setting::Summaries if self.model.no_summaries => "--no-summaries",
            Setting::Summaries => "summaries (on unless --no-summaries)",
            Setting::ContextWindow => "--context-window",
            Setting::ProjectMemory => "--no-project-memory",
            Setting::FetchUrl => "--fetch-url",
            _ => "a flag",
        }
    }
}

/// Routes a directory workspace's file operations elsewhere: the
/// workspace's own backend and root in, the backend the tools use out.
pub(crate) type FilesThrough =
    dyn Fn(BackendSource, &std::path::Path) -> BackendSource + Send + Sync;

/// A session with its agent attached (see the [module docs](self)).
pub(crate) struct Agent {
    pub(crate) net: RunnableNetwork,
    pub(crate) list: Arc<dyn NetworkList>,
    /// What the terminal shows of it.
    pub(crate) screen: Screen,
    /// The main model's name, as the blueprint records it.
    pub(crate) model_name: String,
    mcp: Option<McpTools>,
    /// The MCP servers' requests for input, when a person answers them
    /// (see [`Agent::open`]).
    elicitations: Option<tokio::sync::Mutex<mpsc::Receiver<Elicitation>>>,
    memory: Option<MemoryModifier>,
    /// Which calls are approved without asking.
    pub(crate) policy: Mutex<Policy>,
    /// Made by this process (not resumed): not kept when the model never
    /// answered (unless its id was given out: [`Agent::keep_always`]).
    fresh: bool,
    /// Its id was given out: kept however its turn ends.
    given_out: bool,
    /// The session's workspace, as its file tools see it (what `/rewind`
    /// restores files in).
    pub(crate) backend: Arc<dyn Backend>,
    /// The workspace's directory (`None`: the session's own files).
    pub(crate) backend_root: Option<PathBuf>,
    /// The directory workspace's turn records (what `/rewind` and `/redo`
    /// restore the shell's changes from).
    pub(crate) history: Option<lc_agent_filesystem::WorkspaceHistory>,
    /// The first turn was answered: a model may title the session.
    title_due: AtomicBool,
}

impl Agent {
    /// A new session, or the saved session `resume` (an id or a unique
    /// prefix of one), with its agent attached and saved after every node.
    /// A new session is titled by its first human message.
    ///
    /// With a person at the terminal (stdin and stderr terminals), the MCP
    /// servers' requests for input are declared to them and asked where
    /// the approvals are (`elicit.rs`); without one they are not declared,
    /// and a server that asks anyway is declined with a warning line.
    pub(crate) async fn open(args: &AgentArgs, resume: Option<&str>) -> CliResult<Self> {
        let person = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        Self::open_asking(args, resume, None, None, person).await
    }

    /// [`Agent::open`], the screen shown with this look (default: what the
    /// terminal can show).
    pub(crate) async fn open_with(
        args: &AgentArgs,
        resume: Option<&str>,
        look: Option<Look>,
    ) -> CliResult<Self> {
        Self::open_in(args, resume, look, None).await
    }

    /// [`Agent::open_with`], with a directory workspace's files reached
    /// through `files` (an editor's open buffers, say): it gets the
    /// workspace's own backend and root and returns the backend the file
    /// tools use (path rules still wrap it).
    pub(crate) async fn open_in(
        args: &AgentArgs,
        resume: Option<&str>,
        look: Option<Look>,
        files: Option<&FilesThrough>,
    ) -> CliResult<Self> {
        Self::open_asking(args, resume, look, files, false).await
    }

    /// [`Agent::open_in`]; `asks`: a person answers the MCP servers'
    /// requests for input (declared to them), else they are declined.
    async fn open_asking(
        args: &AgentArgs,
        resume: Option<&str>,
        look: Option<Look>,
        files: Option<&FilesThrough>,
        asks: bool,
    ) -> CliResult<Self> {
        let list = args.store.open(&args.user)?;
        let loaded = match resume {
            Some(prefix) => {
                let id = find_session(list.as_ref(), prefix).await?;
                Some(
                    list.load(id)
                        .await
                        .map_err(|e| CliError::failed(e.to_string()))?,
                )
            }
            None => None,
        };
        let fresh = loaded.is_none();
        // A new session uses a trusted project's blueprint and MCP servers
        // (a resumed one has its own, stored).
        let project = match fresh {
            true => Some(args.project()?).filter(|dir| args.hooks.trusted(dir)),
            false => None,
        };
        // `--agent` given on resume replaces the stored blueprint as a whole.
        let caller = args.caller_spec(project.as_deref())?;
        let replaced = loaded.is_some() && caller.is_some();
        if let (true, Some(path)) = (replaced, &args.agent) {
            eprintln!(
                "note: --agent: the session's blueprint is replaced by {}",
                path.display()
            );
        }
        let stored = if replaced { None } else { loaded.as_ref() };
        let resolved = Blueprint::resolve(
            stored,
            caller.as_ref(),
            &args.overrides(stored.is_some(), project.as_deref())?,
        )
        .map_err(|e| CliError::failed(e.to_string()))?;
        // A blueprint's own `[models.main]` names the model (and where it
        // is) unless a flag does; else the flags and the environment.
        let declared = resolved.main_model().cloned();
        let mut blueprint = resolved.main_model_or(|| args.model.name());
        // The command line's path rules first, then the blueprint's.
        blueprint.spec.permissions = args
            .workspace
            .permissions
            .rules()?
            .then(&blueprint.spec.permissions);
        for change in &blueprint.overridden {
            eprintln!("note: {}: {change}", args.flag_of(change.setting));
        }
        // A session never widens what this invocation allows.
        for narrowed in &blueprint.narrowed {
            crate::trust::warn(narrowed.clone());
        }
        let provider = args.model.record_provider(&mut blueprint.spec);
        let main = args.model.open_main(
            false,
            blueprint.main_model().and_then(|m| m.context_window),
            provider,
            declared.as_ref(),
        )?;
        let window = match blueprint.main_model().and_then(|m| m.context_window) {
            Some(tokens) => Some(tokens),
            None => {
                // A server may take seconds to say: the screen says why it waits.
                let _status = crate::console::Status::show(
                    "asking the model's server for its context window",
                );
                main.context_window().await.or_else(|| {
                    lc_agent_deepagent::ContextWindows::known_window(
                        &blueprint
                            .main_model()
                            .map_or_else(|| args.model.name(), |m| m.model.clone()),
                    )
                })
            }
        };
        let context = AgentContext::new(args.store.config(), args.user.clone());
        let builder = blueprint
            .builder(blueprint.with_main(main), &context)
            .map_err(|e| CliError::usage(e.to_string()))?
            .context_window(window);
        if let Some(notice) = builder.lean_notice()
            && !LEAN_SAID.swap(true, Ordering::Relaxed)
        {
            eprintln!("note: {notice}");
        }
        let builder = match (files, blueprint.spec.backend.root()) {
            (Some(through), Some(root)) => {
                let own = blueprint
                    .spec
                    .backend
                    .open()
                    .map_err(|e| CliError::usage(e.to_string()))?;
                builder.backend(through(own, root))
            }
            _ => builder,
        };
        let net = match loaded {
            Some(net) => {
                builder
                    .attach(&net)
                    .map_err(|e| CliError::failed(e.to_string()))?;
                net
            }
            None => builder
                .build()
                .map_err(|e| CliError::usage(e.to_string()))?,
        };
        blueprint
            .spec
            .store_in(&net)
            .map_err(|e| CliError::failed(e.to_string()))?;
        args.mode.apply(&net, !fresh);
        if net.metadata_value(USER_KEY).is_none() {
            net.set_metadata(USER_KEY, Value::String(args.user.clone()));
        }
        let (mcp, elicitations) = connect_mcp(&blueprint.spec, asks).await?;
        if let Some(tools) = &mcp {
            net.add_modifier(tools.clone())
                .map_err(|e| CliError::failed(e.to_string()))?;
        }
        // The user's hooks, run in the workspace (else here).
        if let Some(hooks) = args.hooks.modifier(blueprint.spec.backend.root())? {
            net.add_modifier(hooks)
                .map_err(|e| CliError::failed(e.to_string()))?;
        }
        // Saved after every node while it runs, so a killed process loses
        // at most the node in flight.
        net.add_modifier(CheckpointModifier::new(list.clone()).policy(CheckpointPolicy::EachNode))
            .map_err(|e| CliError::failed(e.to_string()))?;
        let model_name = blueprint
            .main_model()
            .map_or_else(|| args.model.name(), |m| m.model.clone());
        let backend = builder.backend_for(&net);
        let screen = show_progress_with(&net, look.unwrap_or_else(Look::detect));
        screen.set_context_window(window);
        Ok(Self {
            net,
            list,
            screen,
            model_name,
            mcp,
            elicitations: elicitations.map(tokio::sync::Mutex::new),
            memory: builder.memory_modifier().cloned(),
            policy: Mutex::new(Policy {
                all: args.yes,
                ..Policy::default()
            }),
            fresh,
            given_out: false,
            backend,
            backend_root: blueprint.spec.backend.root().map(|r| r.to_path_buf()),
            history: builder.workspace_history().cloned(),
            title_due: AtomicBool::new(false),
        })
    }

    /// One turn: the person's text, the run, the approvals it asks for.
    pub(crate) async fn turn(
        &self,
        text: &str,
        input: &mut dyn Input,
        interrupt: &Interrupt,
    ) -> CliResult<String> {
        let parts = self.attachments(text).await?;
        let first = self.begin_turn(text, parts)?;
        let answer = self.finish(input, interrupt).await?;
        self.answered(first);
        Ok(answer)
    }

    /// The images `text` names with `@path.png` (see `attach.rs`), read
    /// from the workspace's directory, else the current one.
    pub(crate) async fn attachments(&self, text: &str) -> CliResult<Vec<ContentPart>> {
        crate::attach::attachments(text, self.backend_root.as_deref()).await
    }

    /// The person's text (and the images attached to it) joins the
    /// session (titling a new one); whether it is the session's first
    /// turn (pass it to [`Agent::answered`]).
    pub(crate) fn begin_turn(&self, text: &str, parts: Vec<ContentPart>) -> CliResult<bool> {
        let first = !self.titled();
        if first {
            let title = lc_agent_deepagent::title_of(text);
            if !title.is_empty() {
                self.net.set_name(&title);
                self.net.set_metadata(TITLE_KEY, Value::String(title));
            }
        }
        {
            // Below the current leaf (or where `/rewind` went back to).
            let _scope = self.net.enter();
            if parts.is_empty() {
                HumanNode::new(text);
            } else {
                HumanNode::with_parts(text, parts);
            }
        }
        Ok(first)
    }

    /// The turn [`Agent::begin_turn`] began was answered: the first one
    /// makes a model-written title due.
    pub(crate) fn answered(&self, first: bool) {
        if first {
            self.title_due.store(true, Ordering::Relaxed);
        }
    }

    /// After the first answer (once it is shown): a model-written title,
    /// when the blueprint routes the `title` step (`[routes] title =
    /// "small"`); a failure keeps the first message as the title, with a
    /// warning.
    pub(crate) async fn write_title_if_due(&self) {
        if !self.title_due.swap(false, Ordering::Relaxed) {
            return;
        }
        match write_title(&self.net).await {
            Ok(Some(_)) => {
                if let Err(e) = self.save().await {
                    eprintln!("error: {}", e.message);
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(
                "no title from the model ({}); the first message stays the title",
                crate::error::in_cli_terms(&error_chain(&e))
            ),
        }
    }

    /// Whether the session has a title (else its first message gives it one).
    fn titled(&self) -> bool {
        self.net.metadata_value(TITLE_KEY).is_some() || (!self.fresh && !self.net.is_empty())
    }

    /// Runs what the network has not run yet (a new turn, or a run that
    /// was interrupted or killed), asking for the approvals it needs, until
    /// it answers, fails, or Ctrl-C stops it.
    pub(crate) async fn finish(
        &self,
        input: &mut dyn Input,
        interrupt: &Interrupt,
    ) -> CliResult<String> {
        crate::mode::warn_if_bypass(&self.net);
        self.screen.begin_turn();
        let answer =
            loop {
                let invoked = {
                    let invoke = self.net.invoke();
                    tokio::pin!(invoke);
                    loop {
                        tokio::select! {
                            invoked = &mut invoke => break Some(invoked),
                            Some(request) = next_elicitation(self.elicitations.as_ref()) => {
                                // The call that asked waits for the answer.
                                self.screen.pause();
                                crate::elicit::ask(request, input, self.screen.look());
                            }
                            () = interrupt.interrupted() => break None,
                        }
                    }
                };
                let Some(invoked) = invoked else {
                    break Err(CliError::new(
                        Kind::Interrupted,
                        "interrupted; the session keeps what ran",
                    ));
                };
                match invoked {
                    Err(e) => {
                        let mut failure = CliError::failed(in_user_terms(&e)).caused_by(e);
                        if let Some((tokens, window)) = failure.overflow_sizes()
                            && self.first_request()
                        {
                            failure.message = first_request_too_big(tokens, window);
                        }
                        break Err(failure);
                    }
                    Ok(reply) if self.net.held().is_empty() => break Ok(reply.text().to_string()),
                    Ok(_) => {
                        self.screen.pause();
                        match ask(&self.net, &self.policy, input, self.screen.look()) {
                            Ok(true) => continue,
                            Ok(false) => break Err(CliError::new(
                                Kind::AwaitingApproval,
                                "a call waits for approval and stdin ended; the session keeps it",
                            )),
                            Err(e) => break Err(e),
                        }
                    }
                }
            };
        self.screen.end_turn();
        answer
    }

    /// Whether no model call of the session was answered yet.
    fn first_request(&self) -> bool {
        !self
            .net
            .nodes()
            .iter()
            .any(|n| n.kind() == ChatNode::KIND && n.is_invoked())
    }

    /// Whether the newest answer was empty (no text, no tool call).
    pub(crate) fn answered_empty(&self) -> bool {
        self.net
            .current_leaf()
            .is_some_and(|leaf| leaf.metadata_value("empty_answer") == Some(Value::Bool(true)))
    }

    /// After Ctrl-C stopped a turn: the nodes that had not run are taken
    /// out (the question stays; the next turn follows it), and the
    /// session is saved.
    pub(crate) async fn cancel_turn(&self) {
        for node in self.net.pending() {
            if node.held().is_none() {
                let _ = self.net.remove_node(node.id());
            }
        }
        if let Err(e) = self.save().await {
            eprintln!("error: {}", e.message);
        }
    }

    /// Takes out a turn that failed and waits to be sent again (a
    /// message too long for the model: its chat node did not run and
    /// says why), so a rewind or a summary does not send it again.
    pub(crate) async fn drop_failed_turn(&self) {
        let failed = self
            .net
            .pending()
            .iter()
            .any(|n| n.held().is_none() && n.metadata_value("error").is_some());
        if failed {
            self.cancel_turn().await;
        }
    }

    /// `/compact`: summarizes the conversation now (the one the next turn
    /// continues, also after `/rewind`: the summary joins below the
    /// current leaf and becomes it), keeping no message verbatim, and
    /// saves the session.
    pub(crate) async fn compact(&self) -> Result<Compaction, CompactError> {
        let after = self.net.current_leaf().ok_or(CompactError::Nothing)?;
        let done = summarizer_of(&self.net)
            .compact_after(&self.net, &after, 0)
            .await?;
        if let Err(e) = self.save().await {
            eprintln!("error: {}", e.message);
        }
        Ok(done)
    }

    /// Saves the session (a failure is said on stderr).
    pub(crate) async fn save(&self) -> CliResult {
        if !self.worth_keeping() {
            return Ok(());
        }
        self.list
            .save(&self.net)
            .await
            .map(|_| ())
            .map_err(|e| CliError::failed(format!("the session could not be saved: {e}")))
    }

    /// The session is kept however its turn ends: its id was given out
    /// (exec's `thread.started`), so `exec resume ID` must find it.
    pub(crate) fn keep_always(&mut self) {
        self.given_out = true;
    }

    /// Whether the session is kept: resumed, the model answered in it, or
    /// a run was stopped on its way (Ctrl-C, a call waiting for approval:
    /// pending nodes that did not fail), which `chat --session` finishes.
    fn worth_keeping(&self) -> bool {
        let nodes = self.net.nodes();
        !self.fresh
            || self.given_out
            || nodes
                .iter()
                .any(|n| n.kind() == ChatNode::KIND && n.is_invoked())
            // Answers the output schema refused: the model did answer.
            || nodes
                .iter()
                .any(|n| n.metadata_value("schema_rejected").is_some())
            || nodes.iter().any(|n| {
                !n.is_invoked()
                    && n.metadata_value("error").is_none()
                    && matches!(n.kind(), ChatNode::KIND | "tool" | "network")
            })
    }

    /// Ends the session: MCP servers disconnected, memory summaries
    /// written, the session saved — or, new and never answered by the
    /// model, not kept (a checkpoint of it is removed). Whether it is kept.
    pub(crate) async fn close(mut self) -> CliResult<bool> {
        if let Some(mcp) = self.mcp.take() {
            mcp.disconnect().await;
        }
        if let Some(memory) = &self.memory {
            memory.flush().await;
        }
        if !self.worth_keeping() {
            let _ = self.list.delete(self.net.id()).await;
            eprintln!("no session saved: the model never answered");
            return Ok(false);
        }
        self.save().await?;
        eprintln!("session {} saved", self.net.id());
        Ok(true)
    }
}

/// The failure of a first request that does not fit the model's window:
/// what it holds, and exactly what to change.
fn first_request_too_big(tokens: Option<usize>, window: Option<usize>) -> String {
    let size = match (tokens, window) {
        (Some(tokens), Some(window)) => format!(" ({tokens} tokens; {window} fit)"),
        (None, Some(window)) => format!(" ({window} tokens)"),
        (Some(tokens), None) => format!(" ({tokens} tokens)"),
        (None, None) => String::new(),
    };
    // A window that holds the request and room to answer and go on.
    let wanted = tokens
        .map_or(lc_agent_deepagent::LEAN_BELOW, |t| {
            (t + t / 2).next_power_of_two()
        })
        .max(lc_agent_deepagent::LEAN_BELOW);
    format!(
        "the first request does not fit the model's context window{size}: the agent's \
         instructions, its tools and your message. Give the model a window of {wanted} tokens \
         (llama-cpp-python: --n_ctx {wanted}; llama.cpp: -c {wanted}; Ollama: num_ctx {wanted}) \
         and, if its server does not report it, pass --context-window {wanted}; or send a \
         shorter message (a file's path instead of its text)"
    )
}

/// The lean prompt was announced (once per process: `/new` and
/// `/resume` open the agent again).
static LEAN_SAID: AtomicBool = AtomicBool::new(false);

/// Where a session's title is kept in its metadata (also its name, which
/// `sessions list` and the web page show).
pub(crate) const TITLE_KEY: &str = lc_agent_deepagent::TITLE_KEY;

/// The MCP servers of a blueprint, connected (an unreachable one is a
/// warning); `None` when there are none. Their tools are named
/// `<server>_<tool>` where they clash with the agent's own. `asks`: their
/// requests for input come out of the returned channel (the capability
/// is declared to them).
pub(crate) async fn connect_mcp(spec: &AgentSpec, asks: bool) -> CliResult<McpConnected> {
    let config = spec
        .mcp_config()
        .map_err(|e| CliError::usage(e.to_string()))?;
    connect(config, &spec.backend, asks).await
}

/// Connected MCP servers, and their requests for input when a person
/// answers them.
pub(crate) type McpConnected = (Option<McpTools>, Option<mpsc::Receiver<Elicitation>>);

/// The MCP servers of `config`, connected (see [`connect_mcp`]); their
/// stdio programs run in `workspace`'s sandbox profile (the shell's),
/// unless an entry says `"sandbox": "full"`.
pub(crate) async fn connect(
    config: McpConfig,
    workspace: &Workspace,
    asks: bool,
) -> CliResult<McpConnected> {
    if config.is_empty() {
        return Ok((None, None));
    }
    let mut tools = McpTools::new(config)
        .reserve_names(TOOL_NAMES.iter().copied().chain(["task", "write_todos"]));
    let here = std::env::current_dir().map_err(|e| CliError::failed(e.to_string()))?;
    match workspace.process_sandbox(&here) {
        Ok((sandbox, root)) => tools = tools.sandboxed(McpSandbox::new(sandbox, root)),
        // Only an entry marked `"sandbox": "full"` can start: the others
        // say why they cannot.
        Err(e) => {
            tracing::debug!("no sandbox for MCP servers: {e}");
            tools = tools.sandboxed(McpSandbox::unavailable(e.to_string()));
        }
    }
    let mut elicitations = None;
    if asks {
        let (with, receiver) = tools.with_elicitation();
        tools = with;
        elicitations = Some(receiver);
    }
    for failure in tools.connect().await {
        eprintln!("warning: {}", error_chain(&failure));
    }
    Ok((Some(tools), elicitations))
}

/// The next request for input, if there is a channel (else never).
async fn next_elicitation(
    channel: Option<&tokio::sync::Mutex<mpsc::Receiver<Elicitation>>>,
) -> Option<Elicitation> {
    match channel {
        Some(channel) => channel.lock().await.recv().await,
        None => std::future::pending().await,
    }
}
