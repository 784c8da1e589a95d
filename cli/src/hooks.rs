//! The hooks `run`, `chat`, `serve`, `tool` and `mcp` run (`--settings FILE`,
//! `--no-hooks`): the user's settings
//! (`$XDG_CONFIG_HOME/lc-agent/settings.json`, else
//! `~/.config/lc-agent/settings.json`), the project's
//! (`<project>/.lc-agent/settings.json`, the project being `--root` or
//! the session's workspace, else the current directory), then
//! `--settings FILE`; their `hooks` merged in that order (see
//! `lc_agent_deepagent::HookSettings`). The server reads only its own
//! files and flags: nothing a client sends adds a hook.

use std::path::{Path, PathBuf};

use clap::Args;
use lc_agent::{Events, NetworkEvent, RunnableNetwork};
use lc_agent_deepagent::{HookSettings, HooksModifier};

use crate::error::{CliError, CliResult};

/// Where hooks come from.
#[derive(Debug, Clone, Args, Default)]
pub(crate) struct HookArgs {
    /// A settings JSON whose `hooks` run too (after the user's and the
    /// project's `.lc-agent/settings.json`).
    #[arg(long, value_name = "FILE.json")]
    pub(crate) settings: Option<PathBuf>,
    /// Run no hooks (no settings file is read).
    #[arg(long, conflicts_with = "settings")]
    pub(crate) no_hooks: bool,
    /// Trust the project (`--root`, else the current directory): its
    /// `.lc-agent/settings.json` hooks, `.mcp.json` servers and
    /// `.lc-agent/agent.toml` blueprint are used (remembered in
    /// $LC_AGENT_HOME until those files change). Without it an untrusted
    /// project's files are not used (a terminal asks y/N).
    #[arg(long)]
    pub(crate) trust_project: bool,
}

impl HookArgs {
    /// The hooks for a project directory (`None` for the current one);
    /// `None` when no file configures any.
    pub(crate) fn modifier(&self, project: Option<&Path>) -> CliResult<Option<HooksModifier>> {
        if self.no_hooks {
            return Ok(None);
        }
        let project = match project {
            Some(dir) => dir.to_path_buf(),
            None => std::env::current_dir()
                .map_err(|e| CliError::usage(format!("the current directory: {e}")))?,
        };
        // The project's own hooks only once the user trusts the project.
        let trusted = self.trusted(&project);
        let settings =
            HookSettings::standard(trusted.then_some(&*project), self.settings.as_deref())
                .map_err(|e| CliError::usage(format!("hooks: {e}")))?;
        if settings.is_empty() {
            return Ok(None);
        }
        Ok(Some(HooksModifier::new(settings, project)))
    }

    /// Whether the project in `dir` is trusted (`crate::trust`): asked on a
    /// terminal, or `--trust-project`, else a warning.
    pub(crate) fn trusted(&self, dir: &Path) -> bool {
        crate::trust::project_trusted(dir, self.trust_project)
    }
}

/// Prints the failing and blocking hook runs of `network` on stderr, as
/// `run` and `chat` do (for the commands without a console: `tool`).
pub(crate) fn report_on_stderr(network: &RunnableNetwork) {
    network.on_event(|event| {
        if let NetworkEvent::HookRan {
            event,
            command,
            outcome,
            message,
            ..
        } = event
            && let Some(line) = crate::console::hook_line(
                crate::console::Look::detect(),
                event,
                command,
                outcome,
                message,
            )
        {
            eprintln!("{line}");
        }
    });
}
