//! The permission mode on the command line: `--mode MODE` on `run`, `chat`
//! (and `serve`, the default of its new sessions), `/mode [MODE]` in the
//! chat, and the warning on stderr each time a session runs in `bypass`.
//!
//! ```text
//!  --mode MODE ─▶ the session's mode (a resumed session keeps its own unless --mode is given;
//!                 a `note:` says when it changes)
//!  /mode       ─▶ shows the mode and the others;  /mode MODE ─▶ sets it, saves the session
//!  each turn in bypass ─▶ "warning: bypass mode: ..." on stderr
//! ```
//!
//! The mode lives in the session (`lc_agent_deepagent::PermissionMode`), so
//! every process that resumes it follows the same one.

use clap::Args;
use lc_agent::RunnableNetwork;
use lc_agent_deepagent::{permission_mode, set_permission_mode, PermissionMode, BYPASS_WARNING};

use crate::console::out;

/// The permission mode flag.
#[derive(Debug, Clone, Args)]
pub(crate) struct ModeArgs {
    /// The permission mode: `plan` (read-only tools; writes and commands
    /// are refused until you approve the agent's plan), `default` (calls
    /// ask as configured), `accept-edits` (file edits run without asking;
    /// commands still ask) or `bypass` (nothing asks; path deny rules still
    /// apply). A resumed session keeps its own unless this is given.
    #[arg(long, value_name = "MODE", env = "LC_AGENT_MODE")]
    pub(crate) mode: Option<PermissionMode>,
}

impl ModeArgs {
    /// Puts the flag's mode on the session (a `note:` when it replaces a
    /// resumed session's other mode).
    pub(crate) fn apply(&self, net: &RunnableNetwork, resumed: bool) {
        let Some(mode) = self.mode else {
            return;
        };
        let was = permission_mode(net);
        if resumed && was != mode {
            eprintln!("note: --mode: the session was in `{was}` mode, now `{mode}`");
        }
        set_permission_mode(net, mode);
    }
}

/// Says on stderr that the session runs in bypass mode (every time it
/// runs in it).
pub(crate) fn warn_if_bypass(net: &RunnableNetwork) {
    if permission_mode(net) == PermissionMode::Bypass {
        eprintln!("warning: {BYPASS_WARNING}");
    }
}

/// `/mode` (shows the mode and the others) and `/mode MODE` (sets it):
/// whether the mode changed (the session is then saved).
pub(crate) fn command(net: &RunnableNetwork, rest: &str) -> bool {
    let now = permission_mode(net);
    if rest.is_empty() {
        let mut text = format!("mode: {now} — {}\n", now.describe());
        for mode in PermissionMode::ALL.into_iter().filter(|m| *m != now) {
            text.push_str(&format!(
                "  /mode {:<13} {}\n",
                mode.name(),
                mode.describe()
            ));
        }
        out(&text);
        return false;
    }
    match rest.parse::<PermissionMode>() {
        Ok(mode) => {
            set_permission_mode(net, mode);
            out(&format!("mode: {mode} — {}\n", mode.describe()));
            if mode == PermissionMode::Bypass {
                eprintln!("warning: {BYPASS_WARNING}");
            }
            true
        }
        Err(e) => {
            eprintln!("error: {e}");
            false
        }
    }
}
