//! Hooks: a user's commands run at points of an agent's life, in the
//! format Claude Code users already write (a settings JSON, event →
//! matcher → command; see `hooks/settings.rs` for the file and
//! `hooks/events.rs` for exit codes and JSON answers).
//!
//! ```text
//!  on_begin_invoke   SessionStart (first run of a session in this process)
//!                    UserPromptSubmit (the person's new prompt): block → the prompt is
//!                      taken out and the run fails saying why; context → a note after it
//!  chat node ran     PreToolUse per tool call of the turn (before approvals):
//!                      deny → the call's result is the reason (the model reads it, the
//!                      session goes on); ask → held for approval; allow → not asked
//!                    Stop / SubagentStop (an answer with no tool calls): block → the
//!                      reason becomes the next instruction, and the agent goes on
//!  tool node ran     PostToolUse: block / context → appended to the result the model reads
//!  before a summary  PreCompact (`auto` or `manual`)
//! ```
//!
//! Every command that runs is reported: a [`NetworkEvent::HookRan`] on
//! the network (the CLI shows the failing and blocking ones on stderr,
//! the server streams them as `hook` events) and a `tracing` line (a
//! warning for a failure or a timeout). A failing hook blocks nothing;
//! it is never silent. The commands of one event run one after another,
//! in the settings' order; each is killed (its whole process group) at
//! its timeout. Decisions are recorded on the tool node
//! (`metadata["hook"]`), so a saved session says why a call was refused.
//!
//! Sub-networks (sub-agents, routes) inherit the modifier: their tool
//! calls meet the same `PreToolUse` hooks, and their last answer fires
//! `SubagentStop` instead of `Stop`.
//!
//! A `PreToolUse` answer's `hookSpecificOutput.updatedInput` rewrites the
//! call: its tool node is replaced by one holding the new arguments
//! (recorded: `metadata["hook"]` has `updated_input: true` and the
//! `original_input`), before the path rules, the mode and the approvals
//! look at it; what runs and what is saved is the rewritten call. A call
//! a sub-network already serves (`task`, a route) keeps its arguments,
//! and the hook's run is reported as failed saying so.
//!
//! Calls made outside a model turn (a tool endpoint, `lc-agent tool`, an
//! MCP server) meet the same hooks through [`HooksModifier::before_call`],
//! [`HooksModifier::after_call`] and [`HooksModifier::run_call`].

mod events;
mod runner;
mod settings;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{
    Attachments, ChatNode, Events, HumanNode, Message, NetworkError, NetworkEvent, NetworkModifier,
    NodeId, NodeRef, Result, RunnableNetwork, ToolCall, ToolNode, ToolOutput,
};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use crate::approvals::{self, APPROVAL_KEY, HOOK_KEY};
use crate::delegation;
use events::{verdict, HookEvent, Permission, Verdict};
pub use settings::{HookSettings, HookSettingsError};

/// Runs the hooks of [`HookSettings`] on a network (see the module docs
/// of `hooks/mod.rs`).
///
/// ```
/// use lc_agent::{HumanNode, RunnableNetwork, ScriptedChatModel, Turn};
/// use lc_agent_deepagent::{HookSettings, HooksModifier};
/// use lc_agent_filesystem::{FilesystemModifier, StateBackend};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let settings = HookSettings::parse(r#"{"hooks": {"PreToolUse": [{"matcher": "write_file",
///     "hooks": [{"type": "command", "command": "echo 'not here' >&2; exit 2"}]}]}}"#,
///     "settings.json").unwrap();
/// let model = ScriptedChatModel::new([
///     Turn::call("c1", "write_file", json!({"file_path": "/a.md", "content": "hi"})),
///     Turn::text("I could not write it."),
/// ]);
/// let net = RunnableNetwork::builder().default_node("chat").chat_model("m").model("m", model)
///     .modifier(FilesystemModifier::new(StateBackend::factory()))
///     .modifier(HooksModifier::new(settings, std::env::temp_dir()))
///     .build();
/// { let _s = net.enter(); HumanNode::new("write a.md"); }
/// assert_eq!(net.invoke().await.unwrap().text(), "I could not write it.");
/// assert!(!net.files().contains_key("/a.md"));
/// let refused = net.nodes().into_iter().find_map(|n| n.output().filter(|m| m.text().contains("not here")));
/// assert!(refused.is_some(), "the model read the reason");
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct HooksModifier {
    settings: Arc<HookSettings>,
    cwd: PathBuf,
    /// A copy for a sub-network: `SubagentStop`, no prompt or session events.
    in_sub: bool,
    /// Sessions whose `SessionStart` ran in this process.
    started: Arc<Mutex<HashSet<String>>>,
}

impl HooksModifier {
    /// The modifier id.
    pub const ID: &'static str = "hooks";

    /// Runs `settings`' hooks, each in `cwd` (the workspace root, or the
    /// directory the agent was started in).
    pub fn new(settings: HookSettings, cwd: impl Into<PathBuf>) -> Self {
        Self {
            settings: Arc::new(settings),
            cwd: cwd.into(),
            in_sub: false,
            started: Arc::default(),
        }
    }

    /// Runs the commands of `event`, reports each, and returns what they
    /// decided.
    async fn fire(
        &self,
        network: &RunnableNetwork,
        event: HookEvent,
        tool: Option<&str>,
        node_id: Option<NodeId>,
        fields: Value,
    ) -> Vec<Verdict> {
        let commands = self
            .settings
            .commands(event, tool.filter(|_| event.has_tool()));
        if commands.is_empty() {
            return Vec::new();
        }
        let mut input = Map::new();
        input.insert("session_id".into(), json!(network.id().to_string()));
        input.insert("hook_event_name".into(), json!(event.name()));
        input.insert("cwd".into(), json!(self.cwd.display().to_string()));
        if let Value::Object(fields) = fields {
            input.extend(fields);
        }
        let input = Value::Object(input).to_string();
        let mut verdicts = Vec::with_capacity(commands.len());
        for command in commands {
            let run = runner::run(&command, &input, &self.cwd).await;
            let v = verdict(event, &run);
            let (outcome, message) = v.report();
            match outcome {
                "failed" | "timed_out" => tracing::warn!(
                    event = event.name(),
                    command = %command.command,
                    outcome,
                    "hook failed: {message}"
                ),
                _ => {
                    tracing::info!(event = event.name(), command = %command.command, outcome, "hook ran: {message}")
                }
            }
            network.emit(&NetworkEvent::HookRan {
                node_id,
                event: event.name().to_string(),
                command: command.command.clone(),
                outcome: outcome.to_string(),
                message,
            });
            verdicts.push(v);
        }
        verdicts
    }

    /// The events of a new prompt (and of a session's first run here).
    async fn prompt_events(&self, network: &RunnableNetwork) -> Result<()> {
        let mut context = Vec::new();
        if self.settings.has(HookEvent::SessionStart)
            && self.started.lock().insert(network.id().to_string())
        {
            let resumed = network
                .nodes()
                .iter()
                .any(|n| n.is_invoked() && n.downcast::<ChatNode>().is_some());
            let source = if resumed { "resume" } else { "startup" };
            let verdicts = self
                .fire(
                    network,
                    HookEvent::SessionStart,
                    None,
                    None,
                    json!({"source": source}),
                )
                .await;
            stop_if_asked(HookEvent::SessionStart, &verdicts)?;
            context.extend(verdicts.into_iter().filter_map(|v| v.context));
        }
        let prompt = network
            .pending()
            .into_iter()
            .find(|n| n.downcast::<HumanNode>().is_some() && n.metadata_value(HOOK_KEY).is_none());
        if let (Some(node), true) = (&prompt, self.settings.has(HookEvent::UserPromptSubmit)) {
            let text = node
                .downcast::<HumanNode>()
                .map(|h| h.text.clone())
                .unwrap_or_default();
            let verdicts = self
                .fire(
                    network,
                    HookEvent::UserPromptSubmit,
                    None,
                    None,
                    json!({"prompt": text}),
                )
                .await;
            stop_if_asked(HookEvent::UserPromptSubmit, &verdicts)?;
            let blocked = reasons(verdicts.iter().filter_map(|v| v.block.as_deref()));
            if !blocked.is_empty() {
                // The prompt never reaches the model, now or later.
                for child in network.children(node.id()) {
                    if !child.is_invoked() {
                        network.remove_node(child.id())?;
                    }
                }
                network.remove_node(node.id())?;
                return Err(refusal(format!(
                    "a UserPromptSubmit hook blocked the prompt: {blocked}"
                )));
            }
            context.extend(verdicts.into_iter().filter_map(|v| v.context));
        }
        if context.is_empty() {
            return Ok(());
        }
        let text = format!("Context from the user's hooks:\n{}", context.join("\n"));
        let Some(after) = prompt.or_else(|| network.current_leaf()) else {
            return Ok(());
        };
        let note = network.add(
            HumanNode {
                text,
                parts: Vec::new(),
            },
            &[after.id()],
        )?;
        note.set_metadata(HOOK_KEY, json!({"event": "context"}));
        for child in network.children(after.id()) {
            if child.id() != note.id() && !child.is_invoked() {
                network.set_parents(child.id(), &[note.id()])?;
            }
        }
        Ok(())
    }

    /// What the `PreToolUse` hooks say about `tc` (`node_id`: its tool
    /// node, when it has one); `continue: false` is the error.
    async fn decide(
        &self,
        network: &RunnableNetwork,
        tc: &ToolCall,
        node_id: Option<NodeId>,
    ) -> Result<Decided> {
        let fields = json!({
            "tool_name": tc.name,
            "tool_input": tc.parsed_arguments().unwrap_or_else(|_| json!({})),
            "tool_use_id": tc.id,
        });
        let verdicts = self
            .fire(
                network,
                HookEvent::PreToolUse,
                Some(&tc.name),
                node_id,
                fields,
            )
            .await;
        stop_if_asked(HookEvent::PreToolUse, &verdicts)?;
        let permission = verdicts
            .iter()
            .filter_map(|v| v.permission.as_ref().map(|p| p.0))
            .max();
        let reason = reasons(verdicts.iter().filter_map(|v| match &v.permission {
            Some((p, r)) if Some(*p) == permission => Some(r.as_str()),
            _ => None,
        }));
        // A refused call runs with no arguments at all; else the last
        // rewrite wins.
        let updated = (permission != Some(Permission::Deny))
            .then(|| verdicts.iter().rev().find_map(|v| v.updated_input.clone()))
            .flatten();
        Ok(Decided {
            permission,
            reason,
            updated,
        })
    }

    /// `PreToolUse` for the calls of a model turn.
    async fn pre_tool_use(&self, network: &RunnableNetwork, chat: &NodeRef) -> Result<()> {
        for call in delegation::turn_calls(network, chat) {
            let Some(tool) = call.downcast::<ToolNode>() else {
                continue;
            };
            if call.is_invoked()
                || call.metadata_value(APPROVAL_KEY).is_some()
                || call.metadata_value(HOOK_KEY).is_some()
            {
                continue;
            }
            let tc = tool.tool_call.clone();
            let decided = self.decide(network, &tc, Some(call.id())).await?;
            let mut call = call;
            let mut record = json!({
                "event": "PreToolUse",
                "decision": decided.permission.map(Permission::word),
                "reason": decided.reason,
            });
            if let Some(input) = &decided.updated {
                match rewrite(network, &call, &tc, input)? {
                    Some(rewritten) => {
                        call = rewritten;
                        record["updated_input"] = json!(true);
                        record["original_input"] = tc
                            .parsed_arguments()
                            .unwrap_or_else(|_| json!(tc.arguments));
                    }
                    None => network.emit(&NetworkEvent::HookRan {
                        node_id: Some(call.id()),
                        event: HookEvent::PreToolUse.name().to_string(),
                        command: "updatedInput".to_string(),
                        outcome: "failed".to_string(),
                        message: format!(
                            "not applied: `{}` runs a sub-network built for the call as the \
                             model made it",
                            tc.name
                        ),
                    }),
                }
            }
            let Some(decision) = decided.permission else {
                if decided.updated.is_some() {
                    call.set_metadata(HOOK_KEY, record);
                }
                continue;
            };
            call.set_metadata(HOOK_KEY, record);
            let reason = decided.reason;
            match decision {
                Permission::Allow => {}
                Permission::Ask => approvals::hold_call(
                    network,
                    &call,
                    &crate::decisions::Decisions::approve_or_reject(),
                    Some(format!("a PreToolUse hook asked: {reason}")),
                ),
                Permission::Deny => {
                    // A sub-agent's or a route's work for the call never runs.
                    if let Some(served) = delegation::waiting_delegate(network, &call) {
                        network.set_parents(call.id(), &served.parents())?;
                        network.remove_node(served.id())?;
                    }
                    delegation::answer_unrun(
                        network,
                        &call,
                        Message::Tool {
                            content: denied(&reason),
                            tool_call_id: tc.id.clone(),
                            name: Some(tc.name.clone()),
                            status: lc_agent::ToolStatus::Error,
                            parts: Vec::new(),
                        },
                    );
                }
            }
        }
        Ok(())
    }

    /// What the `PostToolUse` hooks add to a result (empty: nothing).
    async fn feedback(
        &self,
        network: &RunnableNetwork,
        tc: &ToolCall,
        node_id: Option<NodeId>,
        content: &str,
        ok: bool,
    ) -> Result<String> {
        let fields = json!({
            "tool_name": tc.name,
            "tool_input": tc.parsed_arguments().unwrap_or_else(|_| json!({})),
            "tool_use_id": tc.id,
            "tool_response": {"content": content, "status": if ok { "ok" } else { "error" }},
        });
        let verdicts = self
            .fire(
                network,
                HookEvent::PostToolUse,
                Some(&tc.name),
                node_id,
                fields,
            )
            .await;
        stop_if_asked(HookEvent::PostToolUse, &verdicts)?;
        Ok(reasons(
            verdicts
                .iter()
                .flat_map(|v| [v.block.as_deref(), v.context.as_deref()])
                .flatten(),
        ))
    }

    /// `PostToolUse` for a call that ran.
    async fn post_tool_use(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        let (Some(tool), Some(output)) = (node.downcast::<ToolNode>(), node.output()) else {
            return Ok(());
        };
        let Message::Tool {
            content,
            tool_call_id,
            name,
            status,
            parts,
        } = &*output
        else {
            return Ok(());
        };
        let ok = matches!(status, lc_agent::ToolStatus::Ok);
        let feedback = self
            .feedback(network, &tool.tool_call, Some(node.id()), content, ok)
            .await?;
        if !feedback.is_empty() {
            node.set_metadata(
                HOOK_KEY,
                json!({"event": "PostToolUse", "feedback": feedback}),
            );
            node.set_output(Message::Tool {
                content: with_feedback(content, &feedback),
                tool_call_id: tool_call_id.clone(),
                name: name.clone(),
                status: *status,
                parts: parts.clone(),
            });
        }
        Ok(())
    }

    /// Runs the `PreToolUse` hooks for a call made outside a model turn
    /// (a tool endpoint, `lc-agent tool`, an MCP server): what they
    /// decided, with the call as a hook rewrote it (`updatedInput`). The
    /// caller applies the other checks after it (path rules, the mode,
    /// the approval rules), as the agent does.
    pub async fn before_call(&self, network: &RunnableNetwork, call: ToolCall) -> HookDecision {
        let decided = match self.decide(network, &call, None).await {
            Ok(decided) => decided,
            Err(e) => {
                return HookDecision::Deny {
                    message: format!("Error: {e}"),
                }
            }
        };
        let call = match decided.updated {
            Some(input) => ToolCall::new(call.id, call.name, input),
            None => call,
        };
        match decided.permission {
            None => HookDecision::Run {
                call,
                allowed: false,
            },
            Some(Permission::Allow) => HookDecision::Run {
                call,
                allowed: true,
            },
            Some(Permission::Ask) => HookDecision::Ask {
                call,
                reason: format!("a PreToolUse hook asked: {}", decided.reason),
            },
            Some(Permission::Deny) => HookDecision::Deny {
                message: denied(&decided.reason),
            },
        }
    }

    /// Runs the `PostToolUse` hooks for a call made outside a model turn
    /// that ran: the result, with what they said appended.
    pub async fn after_call(
        &self,
        network: &RunnableNetwork,
        call: &ToolCall,
        output: ToolOutput,
    ) -> ToolOutput {
        let ok = output.status == lc_agent::ToolStatus::Ok;
        match self
            .feedback(network, call, None, &output.content, ok)
            .await
        {
            Ok(feedback) if feedback.is_empty() => output,
            Ok(feedback) => ToolOutput {
                content: with_feedback(&output.content, &feedback),
                ..output
            },
            Err(e) => ToolOutput::error(format!("{}\n\nError: {e}", output.content)),
        }
    }

    /// A call made where nobody can approve (`lc-agent tool`, an MCP
    /// server): `PreToolUse` hooks, then `run` with the call as they left
    /// it (an `ask` refuses), then `PostToolUse`.
    pub async fn run_call<F, Fut>(
        &self,
        network: &RunnableNetwork,
        call: ToolCall,
        run: F,
    ) -> ToolOutput
    where
        F: FnOnce(ToolCall) -> Fut,
        Fut: std::future::Future<Output = ToolOutput>,
    {
        match self.before_call(network, call).await {
            HookDecision::Deny { message } => ToolOutput::error(message),
            HookDecision::Ask { reason, .. } => ToolOutput::error(format!(
                "Error: Approval needed: {reason}; nobody can approve a call here, so nothing \
                 was run"
            )),
            HookDecision::Run { call, .. } => {
                let output = run(call.clone()).await;
                self.after_call(network, &call, output).await
            }
        }
    }

    /// `Stop` (or `SubagentStop`) for an answer with no tool calls.
    async fn stop(&self, network: &RunnableNetwork, chat: &NodeRef) -> Result<()> {
        let event = if self.in_sub {
            HookEvent::SubagentStop
        } else {
            HookEvent::Stop
        };
        let Some(output) = chat.output() else {
            return Ok(());
        };
        if !output.tool_calls().is_empty() || !self.settings.has(event) {
            return Ok(());
        }
        // The turn's human message came from a Stop hook: it is active.
        let mut cur = chat.clone();
        let active = loop {
            let Some(parent) = network.parents(cur.id()).into_iter().next() else {
                break false;
            };
            if parent.downcast::<HumanNode>().is_some() {
                break parent
                    .metadata_value(HOOK_KEY)
                    .is_some_and(|h| h["event"] == json!(event.name()));
            }
            cur = parent;
        };
        let fields = json!({"stop_hook_active": active, "last_assistant_message": output.text()});
        let verdicts = self.fire(network, event, None, None, fields).await;
        stop_if_asked(event, &verdicts)?;
        let reason = reasons(verdicts.iter().filter_map(|v| v.block.as_deref()));
        if reason.is_empty() {
            return Ok(());
        }
        let next = network.add(
            HumanNode {
                text: reason,
                parts: Vec::new(),
            },
            &[chat.id()],
        )?;
        next.set_metadata(HOOK_KEY, json!({"event": event.name()}));
        network.add(ChatNode::default(), &[next.id()])?;
        Ok(())
    }
}

/// `PreCompact` before a summary (`trigger`: `auto` or `manual`), when
/// the network has hooks; reported, it decides nothing.
pub(crate) async fn pre_compact(network: &RunnableNetwork, trigger: &str) {
    let Some(hooks) = network.modifier_as::<HooksModifier>(HooksModifier::ID) else {
        return;
    };
    hooks
        .fire(
            network,
            HookEvent::PreCompact,
            None,
            None,
            json!({"trigger": trigger, "custom_instructions": ""}),
        )
        .await;
}

/// What the `PreToolUse` hooks of one call said together.
struct Decided {
    /// The strongest decision (deny over ask over allow), if any.
    permission: Option<Permission>,
    /// The reasons of the hooks that made it.
    reason: String,
    /// The arguments a hook rewrote the call to.
    updated: Option<Value>,
}

/// What the `PreToolUse` hooks decided about a call made outside a model
/// turn ([`HooksModifier::before_call`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HookDecision {
    /// Run `call` (with the arguments a hook rewrote it to, if one did);
    /// `allowed`: a hook allowed it, so the approval rules do not hold it
    /// (path rules still apply).
    Run {
        /// The call to run.
        call: ToolCall,
        /// Whether a hook allowed it.
        allowed: bool,
    },
    /// A hook asks a person about `call`.
    Ask {
        /// The call (as rewritten).
        call: ToolCall,
        /// `a PreToolUse hook asked: <reason>`.
        reason: String,
    },
    /// A hook refused the call; `message` is its result.
    Deny {
        /// `Error: a PreToolUse hook blocked this call: <reason>`.
        message: String,
    },
}

/// The result of a call a hook refused.
fn denied(reason: &str) -> String {
    let why = if reason.is_empty() {
        "no reason given"
    } else {
        reason
    };
    format!("Error: a PreToolUse hook blocked this call: {why}")
}

/// A result with what the `PostToolUse` hooks said appended.
fn with_feedback(content: &str, feedback: &str) -> String {
    format!("{content}\n\nFrom a PostToolUse hook: {feedback}")
}

/// Replaces a call's tool node with one holding `input` as its arguments
/// (its metadata and children kept); `None` when a sub-network already
/// serves the call (a task, a route), which would not see new arguments.
fn rewrite(
    network: &RunnableNetwork,
    call: &NodeRef,
    tc: &ToolCall,
    input: &Value,
) -> Result<Option<NodeRef>> {
    if delegation::waiting_delegate(network, call).is_some() {
        return Ok(None);
    }
    let edited = ToolCall::new(tc.id.clone(), tc.name.clone(), input.clone());
    let replacement = network.add(ToolNode { tool_call: edited }, &call.parents())?;
    let fresh = replacement.metadata();
    for (key, value) in call.metadata() {
        if !fresh.contains_key(&key) {
            replacement.set_metadata(key, value);
        }
    }
    for child in network.children(call.id()) {
        let parents: Vec<NodeId> = child
            .parents()
            .into_iter()
            .map(|p| if p == call.id() { replacement.id() } else { p })
            .collect();
        network.set_parents(child.id(), &parents)?;
    }
    network.remove_node(call.id())?;
    Ok(Some(replacement))
}

fn reasons<'a>(parts: impl Iterator<Item = &'a str>) -> String {
    parts
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// A hook's refusal as the run's error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Refused(String);

fn refusal(message: String) -> NetworkError {
    NetworkError::Modifier {
        modifier: HooksModifier::ID.to_string(),
        message: message.clone(),
        source: Box::new(Refused(message)),
    }
}

/// `continue: false` from any hook stops the run.
fn stop_if_asked(event: HookEvent, verdicts: &[Verdict]) -> Result<()> {
    let why = reasons(verdicts.iter().filter_map(|v| v.stop.as_deref()));
    if why.is_empty() {
        return Ok(());
    }
    Err(refusal(format!(
        "a {} hook stopped the run: {why}",
        event.name()
    )))
}

#[async_trait]
impl NetworkModifier for HooksModifier {
    fn id(&self) -> &str {
        Self::ID
    }

    /// After the tool loop (-100) and the sub-agents (0) wired a turn's
    /// calls, before the approvals (10) hold them: hooks decide first.
    fn priority(&self) -> i32 {
        5
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn for_sub_network(&self) -> Option<Arc<dyn NetworkModifier>> {
        Some(Arc::new(Self {
            in_sub: true,
            ..self.clone()
        }))
    }

    async fn on_begin_invoke(&self, network: &RunnableNetwork) -> Result<()> {
        if self.in_sub {
            return Ok(());
        }
        self.prompt_events(network).await
    }

    async fn on_post_invoke(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        if node.downcast::<ChatNode>().is_some() {
            if self.settings.has(HookEvent::PreToolUse) {
                self.pre_tool_use(network, node).await?;
            }
            return self.stop(network, node).await;
        }
        if node.downcast::<ToolNode>().is_some() && self.settings.has(HookEvent::PostToolUse) {
            return self.post_tool_use(network, node).await;
        }
        Ok(())
    }
}
