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
//! flags of the `run` that made it is the same agent.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use lc_agent::{CheckpointModifier, CheckpointPolicy, NetworkList};
use lc_agent::{HumanNode, RunnableNetwork};
use lc_agent_deepagent::compose::{AgentContext, Blueprint, Overrides, Setting};
use lc_agent_deepagent::mcp::{McpConfig, McpTools};
use lc_agent_deepagent::memory::{MemoryModifier, USER_KEY};
use lc_agent_deepagent::spec::AgentSpec;
use lc_agent_filesystem::TOOL_NAMES;
use serde_json::Value;

use crate::args::{find_session, ModelArgs, StoreArgs, WorkspaceArgs};
use crate::console::{ask, Lines};
use crate::error::{CliError, CliResult, Kind};
use crate::interrupt::Interrupt;
use lc_agent::error_chain;

/// What `run` and `chat` share: the agent, its model, the session store.
#[derive(Debug, Args)]
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
}

impl AgentArgs {
    /// The settings the flags give, on top of any blueprint (directories
    /// made absolute, so a session resumed elsewhere finds them).
    fn overrides(&self) -> CliResult<Overrides> {
        let mut overrides = Overrides::none()
            .memory(self.memory)
            .summaries(self.model.summaries())
            .context_window(self.model.context_window());
        if let Some(workspace) = self.workspace.workspace() {
            let workspace = workspace
                .absolute()
                .map_err(|e| CliError::usage(e.to_string()))?;
            overrides = overrides.workspace(workspace);
        }
        if let Some(dir) = &self.skills {
            let dir = std::fs::canonicalize(dir)
                .ok()
                .filter(|d| d.is_dir())
                .ok_or_else(|| {
                    CliError::usage(format!("--skills {}: not a directory", dir.display()))
                })?;
            overrides = overrides.skills_dir(dir);
        }
        if let Some(path) = &self.mcp {
            let config = McpConfig::from_file(path)
                .map_err(|e| CliError::usage(format!("--mcp: {}", error_chain(&e))))?;
            overrides = overrides.mcp(config);
        }
        Ok(overrides)
    }

    /// The blueprint of `--agent`, if given.
    fn caller_spec(&self) -> CliResult<Option<AgentSpec>> {
        self.agent
            .as_ref()
            .map(|path| AgentSpec::from_file(path).map_err(|e| CliError::usage(e.to_string())))
            .transpose()
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
            _ => "a flag",
        }
    }
}

/// A session with its agent attached (see the [module docs](self)).
pub(crate) struct Agent {
    pub(crate) net: RunnableNetwork,
    list: Arc<dyn NetworkList>,
    mcp: Option<McpTools>,
    memory: Option<MemoryModifier>,
    yes: bool,
}

impl Agent {
    /// A new session (named `name`), or the saved session `resume` (an id
    /// or a unique prefix of one), with its agent attached and saved after
    /// every node.
    pub(crate) async fn open(
        args: &AgentArgs,
        resume: Option<&str>,
        name: &str,
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
        // `--agent` given on resume replaces the stored blueprint as a whole.
        let caller = args.caller_spec()?;
        let replaced = loaded.is_some() && caller.is_some();
        if let (true, Some(path)) = (replaced, &args.agent) {
            eprintln!(
                "note: --agent: the session's blueprint is replaced by {}",
                path.display()
            );
        }
        let stored = if replaced { None } else { loaded.as_ref() };
        let mut blueprint = Blueprint::resolve(stored, caller.as_ref(), &args.overrides()?)
            .map_err(|e| CliError::failed(e.to_string()))?
            .main_model_or(|| args.model.name());
        for change in &blueprint.overridden {
            eprintln!("note: {}: {change}", args.flag_of(change.setting));
        }
        let provider = args.model.record_provider(&mut blueprint.spec);
        let main = args.model.open_with(
            false,
            blueprint.main_model().and_then(|m| m.context_window),
            provider,
        )?;
        let context = AgentContext::new(args.store.config(), args.user.clone());
        let builder = blueprint
            .builder(move |_, _| Ok(main.clone()), &context)
            .map_err(|e| CliError::usage(e.to_string()))?;
        let net = match loaded {
            Some(net) => {
                builder
                    .attach(&net)
                    .map_err(|e| CliError::failed(e.to_string()))?;
                net
            }
            None => {
                let net = builder
                    .build()
                    .map_err(|e| CliError::usage(e.to_string()))?;
                if net.name().is_empty() {
                    net.set_name(name);
                }
                net
            }
        };
        blueprint
            .store_in(&net)
            .map_err(|e| CliError::failed(e.to_string()))?;
        if net.metadata_value(USER_KEY).is_none() {
            net.set_metadata(USER_KEY, Value::String(args.user.clone()));
        }
        let mcp = connect_mcp(&blueprint.spec).await?;
        if let Some(tools) = &mcp {
            net.add_modifier(tools.clone())
                .map_err(|e| CliError::failed(e.to_string()))?;
        }
        // Saved after every node while it runs, so a killed process loses
        // at most the node in flight.
        net.add_modifier(CheckpointModifier::new(list.clone()).policy(CheckpointPolicy::EachNode))
            .map_err(|e| CliError::failed(e.to_string()))?;
        Ok(Self {
            net,
            list,
            mcp,
            memory: builder.memory_modifier().cloned(),
            yes: args.yes,
        })
    }

    /// One turn: the person's text, the run, the approvals it asks for.
    pub(crate) async fn turn(
        &self,
        text: &str,
        lines: &mut Lines<'_>,
        interrupt: &Interrupt,
    ) -> CliResult<String> {
        {
            let _scope = self.net.enter();
            HumanNode::new(text);
        }
        self.finish(lines, interrupt).await
    }

    /// Runs what the network has not run yet (a new turn, or a run that
    /// was interrupted or killed), asking for the approvals it needs, until
    /// it answers, fails, or Ctrl-C stops it.
    pub(crate) async fn finish(
        &self,
        lines: &mut Lines<'_>,
        interrupt: &Interrupt,
    ) -> CliResult<String> {
        loop {
            let invoked = tokio::select! {
                invoked = self.net.invoke() => invoked,
                () = interrupt.interrupted() => {
                    break Err(CliError::new(
                        Kind::Interrupted,
                        "interrupted; the session keeps what ran",
                    ));
                }
            };
            match invoked {
                Err(e) => break Err(CliError::failed(e.to_string())),
                Ok(reply) if self.net.held().is_empty() => break Ok(reply.text().to_string()),
                Ok(_) => match ask(&self.net, self.yes, lines) {
                    Ok(true) => continue,
                    Ok(false) => {
                        break Err(CliError::new(
                            Kind::AwaitingApproval,
                            "a call waits for approval and stdin ended; the session keeps it",
                        ))
                    }
                    Err(e) => break Err(e),
                },
            }
        }
    }

    /// Saves the session (a failure is said on stderr).
    pub(crate) async fn save(&self) -> CliResult {
        self.list
            .save(&self.net)
            .await
            .map(|_| ())
            .map_err(|e| CliError::failed(format!("the session could not be saved: {e}")))
    }

    /// Ends the session: MCP servers disconnected, memory summaries
    /// written, the session saved.
    pub(crate) async fn close(mut self) -> CliResult {
        if let Some(mcp) = self.mcp.take() {
            mcp.disconnect().await;
        }
        if let Some(memory) = &self.memory {
            memory.flush().await;
        }
        self.save().await?;
        eprintln!("session {} saved", self.net.id());
        Ok(())
    }
}

/// The MCP servers of a blueprint, connected (an unreachable one is a
/// warning); `None` when there are none. Their tools are named
/// `<server>_<tool>` where they clash with the agent's own.
pub(crate) async fn connect_mcp(spec: &AgentSpec) -> CliResult<Option<McpTools>> {
    let config = spec
        .mcp_config()
        .map_err(|e| CliError::usage(e.to_string()))?;
    connect(config).await
}

/// The MCP servers of `config`, connected (see [`connect_mcp`]).
pub(crate) async fn connect(config: McpConfig) -> CliResult<Option<McpTools>> {
    if config.is_empty() {
        return Ok(None);
    }
    let tools = McpTools::new(config)
        .reserve_names(TOOL_NAMES.iter().copied().chain(["task", "write_todos"]));
    for failure in tools.connect().await {
        eprintln!("warning: {}", error_chain(&failure));
    }
    Ok(Some(tools))
}
