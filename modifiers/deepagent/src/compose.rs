//! Composition: *which agent* a session runs with, decided once for the
//! CLI, the server and library callers.
//!
//! ```text
//!  session (stored AgentSpec?) ─┐
//!  caller's AgentSpec (--agent) ─┼─ Blueprint::resolve ─▶ Blueprint { spec, stored, overridden }
//!  caller's Overrides (flags)  ──┘   stored wins, else the caller's,        │
//!                                    then the overrides (noted when they     │ builder(resolve, &AgentContext)
//!                                    change a stored blueprint)              ▼
//!                                                                  DeepAgentBuilder ─▶ build | attach
//!                                                                  store_in(&net): saved with the session
//! ```
//!
//! The blueprint carries everything that makes the agent *the same agent*
//! when a session resumes: the workspace, skills, MCP servers and the
//! memory setting (never secrets: MCP entries keep `${VAR}` references, and
//! the models are names). So `lc-agent run ... --root DIR --skills S --mcp
//! M.json --memory` followed by `lc-agent chat --session ID` without the
//! flags offers the same tools, writes into DIR (run from a directory
//! holding it; a shell needs `--root DIR --shell` again, below) and lists
//! the same skills;
//! a flag given on resume replaces the stored setting, and the caller says
//! so ([`Blueprint::overridden`]).
//!
//! **Nothing widens the sandbox but the caller.** A session is data (it
//! may have been imported, or edited): what its workspace may reach comes
//! from the caller's own invocation, never from the stored blueprint. When
//! the caller names no workspace, the stored one is narrowed
//! ([`Blueprint::narrowed`] says how, in the caller's terms): its shell is
//! off (with its `full` sandbox and its unasked commands), and a directory
//! outside [`Overrides::within`] (the CLI's current directory) becomes the
//! session's own files. A caller that wants a shell names the workspace
//! again (`--root DIR --shell`). Likewise a stored path rule that allows
//! writes, a stored MCP server that starts a program and stored
//! `fetch_url` hosts are used only when the caller gives them again.
//!
//! [`AgentContext`] says where the agent runs: the session store (memory
//! without its own `dir` lives beside the sessions: in Redis when they are
//! in Redis, else under `$LC_AGENT_HOME/memory`) and the user.

use std::path::PathBuf;
use std::sync::Arc;

use lc_agent::{ChatModel, RunnableNetwork};

use crate::context::AgentContext;
use crate::deep_agent::DeepAgentBuilder;
use crate::mcp::McpConfig;
use crate::spec::{AgentSpec, MemorySpec, ModelSpec, SpecError};
use crate::summarization::SummarizationConfig;
use crate::workspace::Workspace;

/// What a caller sets on top of (or instead of) a blueprint: the CLI's
/// flags, a server's deployment settings. `None`/empty leaves a setting
/// as the blueprint has it (a stored blueprint is still narrowed to what
/// the caller gives, see the module docs), so `Overrides::default()`
/// overrides nothing:
///
/// ```
/// use lc_agent_deepagent::{Overrides, Workspace};
///
/// let overrides = Overrides {
///     workspace: Some(Workspace::directory("/work").shell(true)),
///     summaries: Some(true),
///     ..Overrides::default()
/// };
/// # assert!(!overrides.memory);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// Where the file tools work.
    pub workspace: Option<Workspace>,
    /// A skills directory on disk (mounted at `/skills`).
    pub skills_dir: Option<PathBuf>,
    /// MCP servers added to the blueprint's (same name: replaced).
    pub mcp: McpConfig,
    /// Turns long-term memory on (with the blueprint's settings, if any).
    pub memory: bool,
    /// Turns summaries of long conversations on (`Some(true)`: with the
    /// blueprint's settings, else the defaults) or off (`Some(false)`).
    pub summaries: Option<bool>,
    /// How many tokens the main model reads at most (recorded on the
    /// blueprint's `main` model).
    pub context_window: Option<usize>,
    /// Turns project memory files on (`Some(true)`) or off (`Some(false)`).
    pub project_memory: Option<bool>,
    /// Turns the line tools on (`insert_lines`, `replace_lines`,
    /// `delete_lines`).
    pub line_tools: bool,
    /// Hosts `fetch_url` may fetch, added to the blueprint's allow-list
    /// (any: the tool is on).
    pub fetch_url: Vec<String>,
    /// The most bytes one `read_file` returns (the blueprint's
    /// `[files] max_read_bytes`).
    pub max_read_bytes: Option<u64>,
    /// The largest file the writing file tools may leave (the blueprint's
    /// `[files] max_write_bytes`).
    pub max_write_bytes: Option<u64>,
    /// The directory the caller runs in (the CLI's current directory):
    /// without [`Overrides::workspace`], a session's stored directory
    /// outside it is not used (see the module docs of `compose.rs`);
    /// `None` checks no directory (the shell is narrowed all the same).
    pub within: Option<PathBuf>,
}

/// A setting of a blueprint that an override can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Setting {
    /// [`Overrides::workspace`].
    Workspace,
    /// [`Overrides::skills_dir`].
    Skills,
    /// [`Overrides::mcp`].
    McpServers,
    /// [`Overrides::memory`].
    Memory,
    /// [`Overrides::summaries`].
    Summaries,
    /// [`Overrides::context_window`].
    ContextWindow,
    /// [`Overrides::project_memory`].
    ProjectMemory,
    /// [`Overrides::line_tools`].
    LineTools,
    /// [`Overrides::fetch_url`].
    FetchUrl,
    /// [`Overrides::max_read_bytes`], [`Overrides::max_write_bytes`].
    FileLimits,
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Setting::Workspace => "workspace",
            Setting::Skills => "skills",
            Setting::McpServers => "MCP servers",
            Setting::Memory => "memory",
            Setting::Summaries => "summaries",
            Setting::ContextWindow => "context window",
            Setting::ProjectMemory => "project memory",
            Setting::LineTools => "line tools",
            Setting::FetchUrl => "fetch_url hosts",
            Setting::FileLimits => "file size limits",
        })
    }
}

/// A stored setting that an override replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    /// Which setting.
    pub setting: Setting,
    /// What the session had.
    pub was: String,
    /// What it has now.
    pub now: String,
}

impl std::fmt::Display for Override {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the session's {} ({}) is now {}",
            self.setting, self.was, self.now
        )
    }
}

/// The blueprint a session runs with (see the module docs of `compose.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct Blueprint {
    /// The blueprint, overrides applied.
    pub spec: AgentSpec,
    /// Whether it came from the session.
    pub stored: bool,
    /// The stored settings the overrides replaced (empty unless `stored`).
    pub overridden: Vec<Override>,
    /// What of a stored blueprint was not used because the caller did not
    /// give it (a shell, a `full` sandbox, a directory outside
    /// [`Overrides::within`], an `allow` rule for writes, an MCP server
    /// that starts a program, `fetch_url` hosts), each said in a sentence
    /// for a warning. The session keeps what it ran with.
    pub narrowed: Vec<String>,
    /// The context window to put on the main model
    /// ([`Blueprint::main_model_or`]).
    context_window: Option<usize>,
}

/// A stored blueprint's `allow` rules that let writes, edits or deletes
/// through are dropped (they could open a protected path such as
/// `.git/**`; the caller's own rules come before the blueprint's and
/// may allow again); what was dropped, said.
fn narrow_allow_rules(spec: &mut AgentSpec) -> Vec<String> {
    use lc_agent_filesystem::{Operation, RuleMode};
    let widens = |rule: &lc_agent_filesystem::PermissionRule| {
        rule.mode == RuleMode::Allow
            && rule
                .operations
                .iter()
                .any(|op| matches!(op, Operation::Write | Operation::Edit | Operation::Delete))
    };
    if !spec.permissions.rules().any(widens) {
        return Vec::new();
    }
    let (dropped, kept): (Vec<_>, Vec<_>) = spec.permissions.rules().cloned().partition(widens);
    match lc_agent_filesystem::Permissions::new(kept) {
        Ok(rules) => spec.permissions = rules,
        // The kept rules compiled before; should they not, none is kept
        // (the protected paths still ask).
        Err(_) => spec.permissions = lc_agent_filesystem::Permissions::default(),
    }
    let ops = |rule: &lc_agent_filesystem::PermissionRule| {
        rule.operations
            .iter()
            .filter_map(|op| serde_json::to_value(op).ok())
            .filter_map(|v| v.as_str().map(String::from))
            .collect::<Vec<_>>()
            .join(",")
    };
    dropped
        .iter()
        .map(|rule| {
            let (ops, paths) = (ops(rule), rule.paths.join(","));
            format!(
                "the session's path rule allowing {ops} on {paths} is not used: a session \
                 cannot allow writes by itself; pass --allow '{ops}:{paths}' to allow them"
            )
        })
        .collect()
}

impl Blueprint {
    /// The blueprint of `session`: the one stored in it wins, else
    /// `caller`'s, else the default; then `overrides` (noted when they
    /// change a stored blueprint). A stored blueprint that cannot be read is
    /// an error, never silently replaced.
    pub fn resolve(
        session: Option<&RunnableNetwork>,
        caller: Option<&AgentSpec>,
        overrides: &Overrides,
    ) -> Result<Self, SpecError> {
        let stored = match session.and_then(AgentSpec::from_network) {
            Some(spec) => Some(spec?),
            None => None,
        };
        let from_session = stored.is_some();
        let mut spec = stored.or_else(|| caller.cloned()).unwrap_or_default();
        let mut overridden = Vec::new();
        let mut note = |setting, was: String, now: String| {
            if from_session && was != now {
                overridden.push(Override { setting, was, now });
            }
        };
        let mut narrowed = Vec::new();
        if let Some(workspace) = &overrides.workspace {
            note(
                Setting::Workspace,
                spec.backend.describe(),
                workspace.describe(),
            );
            spec.backend = workspace.clone();
        } else if from_session {
            let (backend, said) = spec.backend.narrowed(overrides.within.as_deref());
            spec.backend = backend;
            narrowed = said;
        }
        if from_session {
            narrowed.extend(narrow_allow_rules(&mut spec));
        }
        if let Some(dir) = &overrides.skills_dir {
            let skills = spec.skills.get_or_insert_with(Default::default);
            let was = skills
                .dir
                .as_ref()
                .map_or_else(|| "none".to_string(), |d| d.display().to_string());
            note(Setting::Skills, was, dir.display().to_string());
            skills.dir = Some(dir.clone());
        }
        let names = |servers: &indexmap::IndexMap<String, _>| {
            let names: Vec<&str> = servers.keys().map(String::as_str).collect();
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        };
        let was = names(&spec.mcp_servers);
        if from_session {
            // A stored server that starts a program runs only when the
            // caller names it again.
            spec.mcp_servers.retain(|name, server| {
                let Some(command) = &server.command else {
                    return true;
                };
                if overrides.mcp.mcp_servers.contains_key(name) {
                    return true;
                }
                narrowed.push(format!(
                    "the session's MCP server `{name}` (command `{command}`) is not started: a \
                     session cannot start programs by itself; pass --mcp FILE naming it to \
                     start it"
                ));
                false
            });
        }
        if !overrides.mcp.is_empty() {
            for (name, server) in &overrides.mcp.mcp_servers {
                spec.mcp_servers.insert(name.clone(), server.clone());
            }
            note(Setting::McpServers, was, names(&spec.mcp_servers));
        }
        if overrides.memory && spec.memory.is_none() {
            note(Setting::Memory, "off".into(), "on".into());
            spec.memory = Some(MemorySpec::default());
        }
        let on_off = |on: bool| if on { "on" } else { "off" }.to_string();
        if overrides.line_tools && !spec.line_tools {
            note(Setting::LineTools, on_off(false), on_off(true));
            spec.line_tools = true;
        }
        match overrides.summaries {
            Some(true) if spec.summarization.is_none() => {
                note(Setting::Summaries, on_off(false), on_off(true));
                spec.summarization = Some(SummarizationConfig::default());
            }
            Some(false) if spec.summarization.is_some() => {
                note(Setting::Summaries, on_off(true), on_off(false));
                spec.summarization = None;
            }
            _ => {}
        }
        if let Some(on) = overrides.project_memory
            && on != spec.project_memory.enabled
        {
            note(
                Setting::ProjectMemory,
                on_off(spec.project_memory.enabled),
                on_off(on),
            );
            spec.project_memory.enabled = on;
        }
        let hosts = |spec: &AgentSpec| {
            spec.fetch_url
                .as_ref()
                .map_or_else(|| "off".to_string(), |f| f.allow.join(", "))
        };
        let was = hosts(&spec);
        if from_session && let Some(fetch) = &mut spec.fetch_url {
            // The network is the caller's to open: a stored host is used
            // only when the caller names it again.
            let (kept, dropped): (Vec<String>, Vec<String>) = std::mem::take(&mut fetch.allow)
                .into_iter()
                .partition(|host| overrides.fetch_url.contains(host));
            fetch.allow = kept;
            if !dropped.is_empty() {
                narrowed.push(format!(
                    "the session's fetch_url hosts ({}) are not used: a session cannot open \
                     the network by itself; pass --fetch-url HOST for each",
                    dropped.join(", ")
                ));
            }
            if fetch.allow.is_empty() {
                spec.fetch_url = None;
            }
        }
        if !overrides.fetch_url.is_empty() {
            let fetch = spec.fetch_url.get_or_insert_with(Default::default);
            for host in &overrides.fetch_url {
                if !fetch.allow.contains(host) {
                    fetch.allow.push(host.clone());
                }
            }
            note(Setting::FetchUrl, was, hosts(&spec));
        }
        if overrides.max_read_bytes.is_some() || overrides.max_write_bytes.is_some() {
            let describe = |l: &lc_agent_filesystem::FileLimits| {
                format!(
                    "read {} bytes, write {} bytes",
                    l.read_limit(),
                    l.write_limit()
                )
            };
            let was = describe(&spec.files);
            if let Some(bytes) = overrides.max_read_bytes {
                spec.files = spec.files.max_read_bytes(bytes);
            }
            if let Some(bytes) = overrides.max_write_bytes {
                spec.files = spec.files.max_write_bytes(bytes);
            }
            note(Setting::FileLimits, was, describe(&spec.files));
        }
        Ok(Self {
            spec,
            stored: from_session,
            overridden,
            narrowed,
            context_window: overrides.context_window,
        })
    }

    /// Makes sure the blueprint names a main model (`model` when it has
    /// none), so it can be stored and built; the context window of the
    /// overrides goes on it.
    #[must_use]
    pub fn main_model_or(mut self, model: impl FnOnce() -> String) -> Self {
        let main = self
            .spec
            .models
            .entry(crate::deep_agent::MAIN_MODEL.to_string())
            .or_insert_with(|| ModelSpec {
                model: model(),
                ..ModelSpec::default()
            });
        if let Some(tokens) = self.context_window {
            if self.stored && main.context_window != Some(tokens) {
                self.overridden.push(Override {
                    setting: Setting::ContextWindow,
                    was: main
                        .context_window
                        .map_or_else(|| "unset".to_string(), |n| format!("{n} tokens")),
                    now: format!("{tokens} tokens"),
                });
            }
            main.context_window = Some(tokens);
        }
        self
    }

    /// The resolver of a caller that brings its own main model (the
    /// CLI's, a server's): `main` is answered by `main`, and so is every
    /// entry that names the same model as the main entry; every other
    /// entry is a model of its own ([`ModelSpec::open`]: its own
    /// `base_url`, `provider` and key), so a `[routes] title = "small"`
    /// step is asked of the small model's server.
    pub fn with_main(
        &self,
        main: Arc<dyn ChatModel>,
    ) -> impl Fn(&str, &ModelSpec) -> Result<Arc<dyn ChatModel>, SpecError> + use<> {
        let main_spec = self.main_model().cloned();
        move |name, spec| {
            let same = main_spec.as_ref().is_some_and(|m| {
                m.model == spec.model
                    && m.base_url == spec.base_url
                    && m.provider.unwrap_or_default() == spec.provider.unwrap_or_default()
                    && m.api_key_env == spec.api_key_env
            });
            if name == crate::deep_agent::MAIN_MODEL || same {
                Ok(main.clone())
            } else {
                spec.open()
            }
        }
    }

    /// The main model's spec (after [`Blueprint::main_model_or`]).
    pub fn main_model(&self) -> Option<&ModelSpec> {
        self.spec.models.get(crate::deep_agent::MAIN_MODEL)
    }

    /// The agent, with models made by `resolve`, in `context`.
    pub fn builder(
        &self,
        resolve: impl Fn(&str, &ModelSpec) -> Result<Arc<dyn ChatModel>, SpecError>,
        context: &AgentContext,
    ) -> Result<DeepAgentBuilder, SpecError> {
        self.spec.builder_in(resolve, context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::McpServerConfig;

    fn spec(name: &str, workspace: Workspace) -> AgentSpec {
        AgentSpec {
            name: name.to_string(),
            backend: workspace,
            ..AgentSpec::default()
        }
    }

    fn session_with(stored: &AgentSpec) -> RunnableNetwork {
        let net = RunnableNetwork::builder().build();
        stored.store_in(&net).unwrap();
        net
    }

    #[test]
    fn the_stored_blueprint_wins_else_the_callers_else_the_default() {
        let caller = spec("caller", Workspace::directory("/caller"));
        let stored = spec("stored", Workspace::directory("/stored"));
        let session = session_with(&stored);
        let none = Overrides::default();

        let resumed = Blueprint::resolve(Some(&session), Some(&caller), &none).unwrap();
        assert_eq!(
            (resumed.spec.name.as_str(), resumed.stored),
            ("stored", true)
        );
        let plain = RunnableNetwork::builder().build();
        let fresh = Blueprint::resolve(Some(&plain), Some(&caller), &none).unwrap();
        assert_eq!((fresh.spec.name.as_str(), fresh.stored), ("caller", false));
        let default = Blueprint::resolve(None, None, &none).unwrap();
        assert_eq!(default.spec, AgentSpec::default());
    }

    #[test]
    fn overrides_replace_stored_settings_and_say_which() {
        let stored = spec("stored", Workspace::directory("/stored"));
        let session = session_with(&stored);
        let overrides = Overrides {
            workspace: Some(Workspace::directory("/new").shell(true)),
            skills_dir: Some("/skills".into()),
            mcp: McpConfig {
                mcp_servers: [("time".to_string(), McpServerConfig::http("http://x/mcp"))]
                    .into_iter()
                    .collect(),
            },
            memory: true,
            ..Overrides::default()
        };
        let resumed = Blueprint::resolve(Some(&session), None, &overrides).unwrap();
        assert_eq!(
            resumed.spec.backend,
            Workspace::directory("/new").shell(true)
        );
        assert!(resumed.spec.memory.is_some());
        let said: Vec<String> = resumed.overridden.iter().map(|o| o.to_string()).collect();
        assert_eq!(
            said,
            [
                "the session's workspace (/stored) is now /new (with a shell)",
                "the session's skills (none) is now /skills",
                "the session's MCP servers (none) is now time",
                "the session's memory (off) is now on",
            ]
        );
        // The same values again: nothing to say.
        let again = session_with(&resumed.spec);
        let same = Blueprint::resolve(Some(&again), None, &overrides).unwrap();
        assert!(same.overridden.is_empty(), "{:?}", same.overridden);
        // A new session has nothing stored to replace.
        let fresh = Blueprint::resolve(None, None, &overrides).unwrap();
        assert!(fresh.overridden.is_empty());
    }

    #[test]
    fn a_stored_workspace_never_widens_what_the_caller_gives() {
        use lc_agent_filesystem::{PermissionRule, Permissions, RuleMode, SandboxMode};
        let wide = Workspace::directory("/elsewhere")
            .shell(true)
            .sandbox(SandboxMode::Full)
            .execute_approval(false);
        let mut stored = spec("stored", wide.clone());
        stored.permissions = Permissions::new([
            PermissionRule::parse(RuleMode::Allow, "write:.git/**").unwrap(),
            PermissionRule::parse(RuleMode::Allow, "read:secrets/public.txt").unwrap(),
            PermissionRule::parse(RuleMode::Deny, "secrets/**").unwrap(),
        ])
        .unwrap();
        stored.fetch_url = Some(crate::FetchUrlSpec {
            allow: vec!["example.com".into()],
            ..Default::default()
        });
        let session = session_with(&stored);
        let outside = Overrides {
            within: Some("/home/me".into()),
            ..Overrides::default()
        };
        let resumed = Blueprint::resolve(Some(&session), None, &outside).unwrap();
        assert_eq!(resumed.spec.backend, Workspace::Session);
        assert_eq!(resumed.narrowed.len(), 4, "{:?}", resumed.narrowed);
        assert!(resumed.narrowed[3].contains("fetch_url hosts (example.com)"));
        assert!(resumed.spec.fetch_url.is_none());
        assert!(resumed.narrowed[0].contains("/elsewhere is outside the current directory"));
        assert!(resumed.narrowed[1].contains("shell (sandbox full) is off"));
        assert!(resumed.narrowed[2].contains("--allow 'write:.git/**'"));
        // Only the rule that allowed writes is gone.
        assert_eq!(resumed.spec.permissions.rules().count(), 2);
        let inside = Overrides {
            within: Some("/".into()),
            ..Overrides::default()
        };
        let resumed = Blueprint::resolve(Some(&session), None, &inside).unwrap();
        assert_eq!(resumed.spec.backend, Workspace::directory("/elsewhere"));
        // The caller's own workspace is used as given; a new session is
        // the caller's too.
        let named = Overrides {
            workspace: Some(wide.clone()),
            ..outside.clone()
        };
        let resumed = Blueprint::resolve(Some(&session), None, &named).unwrap();
        assert_eq!(resumed.spec.backend, wide);
        let fresh = Blueprint::resolve(None, Some(&stored), &outside).unwrap();
        assert_eq!((fresh.spec.backend, fresh.narrowed.len()), (wide, 0));
    }

    #[test]
    fn a_stored_blueprint_that_cannot_be_read_is_an_error() {
        let session = RunnableNetwork::builder().build();
        session.set_metadata(crate::spec::AGENT_SPEC_KEY, serde_json::json!({"modle": 1}));
        let caller = spec("caller", Workspace::Session);
        assert!(Blueprint::resolve(Some(&session), Some(&caller), &Overrides::default()).is_err());
    }
}
