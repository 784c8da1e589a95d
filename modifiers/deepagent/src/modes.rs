//! Permission modes: how much a session's agent may do without asking.
//!
//! ```text
//!  mode (session metadata "permission_mode")   a tool call of the model is ...
//!  plan          read tools run; a write, an edit, `execute` or any other tool is refused
//!                (the model reads why and proposes a plan); `exit_plan_mode` asks the user
//!  default       held as the approval rules say (interrupt_on, a shell's `execute`)
//!  accept-edits  file edits (write_file, edit_file, delete) run without asking; the rest as default
//!  bypass        nothing is held (loud: the CLI, the server and the page warn on every run)
//! ```
//!
//! The mode is part of the session: it is kept in the outermost network's
//! metadata ([`MODE_KEY`]), so it is saved and loaded with it, another
//! process sees it, and a sub-agent works under its session's mode. A
//! blueprint's `mode` is a new session's first mode; a resumed session keeps
//! its own unless the caller sets another ([`set_permission_mode`]).
//!
//! The order of the checks of one tool call is the README's (Safety): hooks,
//! then path rules (a `deny` refuses in every mode, bypass included), then
//! the mode, then the approval rules. The mode's decision is written on the
//! tool node (`metadata["permission_mode"] = {"mode", "decision"}`, the
//! decision `refused` or `allowed`) so the graph says why a call ran
//! unasked or not at all.
//!
//! ## Plan mode, step by step (as Claude Code's)
//!
//! 1. The session is in `plan`. The model reads a prompt section saying so;
//!    `ls`, `read_file`, `glob`, `grep`, `write_todos`, `recall` and `task`
//!    (whose sub-agent plans too) run; any other call is refused with an
//!    error result telling the model to propose a plan instead.
//! 2. The model lays its plan out (its todo list, its answer) and calls
//!    `exit_plan_mode {"plan": "..."}`. That call is always held for the
//!    user, as any approval (the CLI's question, `/approve`, the server's
//!    decision endpoint, the page's buttons).
//! 3. Approved, the call switches the session to `default` (or to
//!    `accept-edits` when the user edits its arguments to
//!    `{"mode": "accept-edits"}`) before anything else runs, and the model
//!    carries the plan out. Rejected, the model reads the user's reason and
//!    keeps planning.
//!
//! The user may also leave plan mode directly — `/mode default`, `--mode`,
//! the session API or the page's switcher — which is the same approval.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{
    ChatNode, ChatRequest, Message, NetworkModifier, NodeRef, Result, RunnableNetwork, Tool,
    ToolContext, ToolError, ToolNode, ToolOutput, ToolStatus, TypedTool,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::delegation;

/// The session metadata key holding the permission mode.
pub const MODE_KEY: &str = "permission_mode";

/// The tool node metadata key recording an approval and its decision
/// (`approvals.rs` writes it; `exit_plan_mode` reads whether the user
/// edited its call).
pub(crate) const APPROVAL_KEY: &str = "approval";

/// The tool the model calls in plan mode to ask the user to approve its plan.
pub(crate) const EXIT_PLAN_MODE: &str = "exit_plan_mode";

/// The tools that only read (they run in plan mode).
const READ_TOOLS: &[&str] = &[
    "ls",
    "read_file",
    "glob",
    "grep",
    "write_todos",
    "recall",
    crate::subagents::TASK,
    EXIT_PLAN_MODE,
];

/// The tools that edit files (they run unasked in accept-edits mode).
const EDIT_TOOLS: &[&str] = &[
    "write_file",
    "edit_file",
    "delete",
    "insert_lines",
    "replace_lines",
    "delete_lines",
];

/// What the CLI, the server and the page say whenever a session runs in
/// bypass mode.
pub const BYPASS_WARNING: &str = "bypass mode: no tool call asks for approval (path deny rules \
     still apply); every write and command runs as the model asks";

/// How much a session's agent may do without asking (see the module's
/// documentation).
///
/// ```
/// use lc_agent::RunnableNetwork;
/// use lc_agent_deepagent::{permission_mode, set_permission_mode, PermissionMode};
///
/// let net = RunnableNetwork::new();
/// assert_eq!(permission_mode(&net), PermissionMode::Default);
/// set_permission_mode(&net, "plan".parse().unwrap());
/// assert_eq!(permission_mode(&net), PermissionMode::Plan);
/// assert_eq!(PermissionMode::AcceptEdits.to_string(), "accept-edits");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Read tools only; the agent proposes a plan for the user to approve.
    Plan,
    /// The approval rules decide (today's behaviour).
    #[default]
    Default,
    /// File edits run without asking; `execute` still asks.
    AcceptEdits,
    /// Nothing asks (path deny rules still apply).
    Bypass,
}

impl PermissionMode {
    /// Every mode, from the most careful.
    pub const ALL: [PermissionMode; 4] = [
        PermissionMode::Plan,
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Bypass,
    ];

    /// Its name (`plan`, `default`, `accept-edits`, `bypass`).
    pub fn name(self) -> &'static str {
        match self {
            PermissionMode::Plan => "plan",
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "accept-edits",
            PermissionMode::Bypass => "bypass",
        }
    }

    /// What it lets the agent do, in a line.
    pub fn describe(self) -> &'static str {
        match self {
            PermissionMode::Plan => {
                "read-only tools; writes and commands are refused until you approve a plan"
            }
            PermissionMode::Default => "calls ask for approval as the agent's rules say",
            PermissionMode::AcceptEdits => "file edits run without asking; commands still ask",
            PermissionMode::Bypass => "nothing asks for approval (path deny rules still apply)",
        }
    }
}

impl PermissionMode {
    /// What the mode decides about a call of `tool` on its own:
    /// `Some(false)` refused, `Some(true)` run without asking, `None` the
    /// approval rules decide (for code outside a run that must follow the
    /// same gate, such as a server's tool endpoint).
    pub fn decides(self, tool: &str) -> Option<bool> {
        match verdict(self, tool) {
            Verdict::Refuse => Some(false),
            Verdict::Allow => Some(true),
            Verdict::Rules => None,
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a permission mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown permission mode `{0}` (plan, default, accept-edits or bypass)")]
pub struct UnknownMode(String);

impl FromStr for PermissionMode {
    type Err = UnknownMode;

    /// The names above; Claude Code's (`acceptEdits`, `bypassPermissions`)
    /// are understood too.
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s.trim() {
            "plan" => Ok(PermissionMode::Plan),
            "default" => Ok(PermissionMode::Default),
            "accept-edits" | "accept_edits" | "acceptEdits" => Ok(PermissionMode::AcceptEdits),
            "bypass" | "bypassPermissions" => Ok(PermissionMode::Bypass),
            other => Err(UnknownMode(other.to_string())),
        }
    }
}

/// The permission mode of the session `network` belongs to (its
/// outermost network's; `default` when none is set or it is unreadable).
pub fn permission_mode(network: &RunnableNetwork) -> PermissionMode {
    network
        .session()
        .metadata_value(MODE_KEY)
        .and_then(|v| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_default()
}

/// Sets the permission mode of the session `network` belongs to; the next
/// model turn follows it.
pub fn set_permission_mode(network: &RunnableNetwork, mode: PermissionMode) {
    network
        .session()
        .set_metadata(MODE_KEY, Value::String(mode.name().to_string()));
}

/// Whether the session has a mode of its own (else a blueprint's applies).
pub(crate) fn has_mode(network: &RunnableNetwork) -> bool {
    network.session().metadata_value(MODE_KEY).is_some()
}

/// What the mode decides about one tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Refused: the model reads why.
    Refuse,
    /// Runs without asking.
    Allow,
    /// The approval rules decide.
    Rules,
}

fn verdict(mode: PermissionMode, tool: &str) -> Verdict {
    match mode {
        PermissionMode::Plan if READ_TOOLS.contains(&tool) => Verdict::Rules,
        PermissionMode::Plan => Verdict::Refuse,
        PermissionMode::Default => Verdict::Rules,
        PermissionMode::AcceptEdits if EDIT_TOOLS.contains(&tool) => Verdict::Allow,
        PermissionMode::AcceptEdits => Verdict::Rules,
        PermissionMode::Bypass if tool == EXIT_PLAN_MODE => Verdict::Rules,
        PermissionMode::Bypass => Verdict::Allow,
    }
}

/// Whether the mode let this tool node run without asking (the approval
/// rules skip it).
pub(crate) fn allowed_by_mode(node: &NodeRef) -> bool {
    node.metadata_value(MODE_KEY)
        .is_some_and(|record| record["decision"] == "allowed")
}

/// Whether a tool always waits for the user, whatever the rules: the plan
/// handed over (any decision allowed).
pub(crate) fn always_held(tool: &str) -> bool {
    tool == EXIT_PLAN_MODE
}

fn refusal(tool: &str) -> String {
    format!(
        "Error: `{tool}` was not run: the session is in plan mode, where only tools that read \
         run (ls, read_file, glob, grep, write_todos, task). Do not try to change anything yet: \
         read what you need, then propose your plan (a todo list with write_todos, and the plan \
         itself) with `exit_plan_mode`. The user approves it, which leaves plan mode, and then \
         you carry it out."
    )
}

/// The plan-mode section of the system prompt.
const PLAN_PROMPT: &str = "## Plan mode

The session is in plan mode: you may read (ls, read_file, glob, grep), keep a todo list \
(write_todos) and delegate research (task), but every call that writes a file, runs a command or \
uses any other tool is refused. Explore, then call `exit_plan_mode` with your plan (the steps, the \
files you will change, how you will check the result). The user reviews it; once they approve, \
the mode changes and you carry the plan out. If they reject it, revise the plan.";

/// Applies the session's mode to the calls of each model turn, before the
/// approval rules (priority 9; approvals are 10); offers `exit_plan_mode`
/// and the plan prompt in plan mode. A [`crate::DeepAgent`] always has it.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModeModifier;

#[async_trait]
impl NetworkModifier for ModeModifier {
    fn id(&self) -> &str {
        "permission_mode"
    }

    fn priority(&self) -> i32 {
        9
    }

    /// A sub-agent's calls follow its session's mode.
    fn for_sub_network(&self) -> Option<Arc<dyn NetworkModifier>> {
        Some(Arc::new(self.clone()))
    }

    /// Noted in the log (at info: the CLI and the server say it louder,
    /// in their own words, each time).
    async fn on_begin_invoke(&self, network: &RunnableNetwork) -> Result<()> {
        if network.outer().is_none() && permission_mode(network) == PermissionMode::Bypass {
            tracing::info!(session = %network.id(), "{BYPASS_WARNING}");
        }
        Ok(())
    }

    async fn on_post_invoke(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        if node.downcast::<ChatNode>().is_none() {
            return Ok(());
        }
        let mode = permission_mode(network);
        for call in delegation::turn_calls(network, node) {
            let Some(tool) = call.downcast::<ToolNode>() else {
                continue;
            };
            if call.is_invoked() || call.metadata_value(MODE_KEY).is_some() {
                continue;
            }
            let name = tool.tool_call.name.clone();
            let decision = match verdict(mode, &name) {
                Verdict::Rules => continue,
                Verdict::Allow => "allowed",
                Verdict::Refuse => "refused",
            };
            call.set_metadata(MODE_KEY, json!({"mode": mode.name(), "decision": decision}));
            if decision == "refused" {
                delegation::answer_unrun(
                    network,
                    &call,
                    Message::Tool {
                        content: refusal(&name),
                        tool_call_id: tool.tool_call.id.clone(),
                        name: Some(name),
                        status: ToolStatus::Error,
                        parts: Vec::new(),
                    },
                );
            }
        }
        Ok(())
    }

    async fn on_chat_request(
        &self,
        network: &RunnableNetwork,
        _node: &NodeRef,
        request: &mut ChatRequest,
    ) -> Result<()> {
        if permission_mode(network) == PermissionMode::Plan {
            request.system.push(PLAN_PROMPT.to_string());
        }
        Ok(())
    }

    fn tools(&self, network: &RunnableNetwork) -> Vec<Arc<dyn Tool>> {
        if permission_mode(network) == PermissionMode::Plan {
            vec![Arc::new(ExitPlanMode)]
        } else {
            Vec::new()
        }
    }
}

/// The arguments of `exit_plan_mode`.
#[derive(Deserialize)]
pub(crate) struct ExitPlanArgs {
    /// The plan, for the user to review.
    pub plan: String,
    /// The mode to continue in (the user's choice: `default` unless they
    /// edit the call to say `accept-edits`).
    #[serde(default)]
    pub mode: Option<String>,
}

/// `exit_plan_mode`: hands the plan to the user (always held); approved,
/// it leaves plan mode.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ExitPlanMode;

impl TypedTool for ExitPlanMode {
    const NAME: &'static str = EXIT_PLAN_MODE;
    type Args<'a> = ExitPlanArgs;

    fn description(&self) -> &str {
        "In plan mode, present your plan to the user for approval. Call it once you have read \
         what you need and know what you will do. The user approves (the session leaves plan \
         mode and you carry the plan out) or rejects it with a reason (revise the plan)."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "plan": {"type": "string", "description": "The plan, in Markdown: the steps, the files to change, how to check the result."}
            },
            "required": ["plan"]
        })
    }

    async fn call(
        &self,
        args: Self::Args<'_>,
        ctx: &ToolContext,
    ) -> std::result::Result<ToolOutput, ToolError> {
        // `mode` is the user's choice, made by editing the held call; a
        // `mode` the model wrote itself is not taken.
        let edited = ctx
            .network
            .node(ctx.node_id)
            .and_then(|n| n.metadata_value(APPROVAL_KEY))
            .is_some_and(|r| r["status"] == "edited");
        let asked = if edited { args.mode.as_deref() } else { None };
        let next = match asked {
            None => PermissionMode::Default,
            Some(name) => name
                .parse::<PermissionMode>()
                .ok()
                .filter(|m| matches!(m, PermissionMode::Default | PermissionMode::AcceptEdits))
                .ok_or_else(|| {
                    lc_agent::tool_args::invalid(
                        EXIT_PLAN_MODE,
                        format!("`mode` must be `default` or `accept-edits`, not `{name}`"),
                    )
                })?,
        };
        let now = permission_mode(&ctx.network);
        if now != PermissionMode::Plan {
            return Ok(ToolOutput::ok(format!(
                "The session is not in plan mode (it is in `{now}`); carry the plan out."
            )));
        }
        if args.plan.trim().is_empty() {
            return Err(lc_agent::tool_args::invalid(
                EXIT_PLAN_MODE,
                "`plan` must not be empty: write the plan for the user to approve",
            ));
        }
        set_permission_mode(&ctx.network, next);
        Ok(ToolOutput::ok(format!(
            "The user approved the plan; the session is now in `{next}` mode. Carry the plan out."
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::{verdict, PermissionMode, Verdict};

    #[test]
    fn each_mode_decides_as_documented() {
        use PermissionMode::*;
        assert_eq!(verdict(Plan, "read_file"), Verdict::Rules);
        assert_eq!(verdict(Plan, "write_file"), Verdict::Refuse);
        assert_eq!(verdict(Plan, "execute"), Verdict::Refuse);
        assert_eq!(verdict(Plan, "some_mcp_tool"), Verdict::Refuse);
        assert_eq!(verdict(Default, "write_file"), Verdict::Rules);
        assert_eq!(verdict(AcceptEdits, "edit_file"), Verdict::Allow);
        assert_eq!(verdict(AcceptEdits, "execute"), Verdict::Rules);
        assert_eq!(verdict(Bypass, "execute"), Verdict::Allow);
    }

    #[test]
    fn names_round_trip_and_claude_code_names_parse() {
        for mode in PermissionMode::ALL {
            assert_eq!(mode.name().parse::<PermissionMode>().ok(), Some(mode));
        }
        assert_eq!(
            "bypassPermissions".parse::<PermissionMode>().ok(),
            Some(PermissionMode::Bypass)
        );
        assert!("yolo".parse::<PermissionMode>().is_err());
    }
}
