//! The hook events, what a hook reads on stdin for each, and what its
//! answer means (exit code, stderr, a JSON object on stdout), as Claude
//! Code defines them:
//!
//! | exit | meaning |
//! |------|---------|
//! | 0    | go on; a JSON object on stdout may decide (below); plain stdout of `UserPromptSubmit` and `SessionStart` is context for the model |
//! | 2    | block: stderr is the reason (`PreToolUse`: the call is refused and the model reads why; `UserPromptSubmit`: the prompt is refused; `PostToolUse`: the model reads it; `Stop`: the agent goes on with it as its next instruction; others: shown to the user) |
//! | else | a failure, reported; nothing is blocked |
//!
//! The JSON answer: `continue: false` (+ `stopReason`) stops the run;
//! `decision: "block"` + `reason` blocks as exit 2 does (`"approve"` is
//! the old spelling of allow for `PreToolUse`);
//! `hookSpecificOutput.permissionDecision` (`allow` | `deny` | `ask`) +
//! `permissionDecisionReason` decide a `PreToolUse` call;
//! `hookSpecificOutput.updatedInput` (a JSON object) replaces a
//! `PreToolUse` call's arguments (of several hooks, the last one's wins);
//! `hookSpecificOutput.additionalContext` is context for the model;
//! `systemMessage` is shown to the user. Of several hooks of one event,
//! deny wins over ask, ask over allow.

use serde_json::{Map, Value};

use super::runner::{Exit, HookRun};

/// An event a hook can listen to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum HookEvent {
    /// The first run of a session in this process.
    SessionStart,
    /// A person's prompt, before the model sees it.
    UserPromptSubmit,
    /// A tool call, before it runs (or is held for approval).
    PreToolUse,
    /// A tool call's result, before the model reads it.
    PostToolUse,
    /// The agent's final answer of a run.
    Stop,
    /// A sub-agent's final answer.
    SubagentStop,
    /// Before a summary replaces older messages.
    PreCompact,
}

impl HookEvent {
    /// Every event.
    pub(crate) const ALL: [HookEvent; 7] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::Stop,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
    ];

    /// The name settings files use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
        }
    }

    /// The event of a settings name.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Whether its matchers match tool names.
    pub(crate) fn has_tool(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }
}

/// What a `PreToolUse` hook decided about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Permission {
    /// Run it without asking (other rules still apply).
    Allow,
    /// Hold it for a person's decision.
    Ask,
    /// Refuse it; the model reads why.
    Deny,
}

impl Permission {
    /// Its name in settings and records (`allow`, `ask`, `deny`).
    pub(crate) fn word(self) -> &'static str {
        match self {
            Permission::Allow => "allow",
            Permission::Ask => "ask",
            Permission::Deny => "deny",
        }
    }
}

/// What one hook's run means.
#[derive(Debug, Clone, Default)]
pub(crate) struct Verdict {
    /// `PreToolUse`'s decision, with its reason.
    pub(crate) permission: Option<(Permission, String)>,
    /// Blocked (exit 2, `decision: "block"`), with the reason.
    pub(crate) block: Option<String>,
    /// Context for the model.
    pub(crate) context: Option<String>,
    /// `continue: false`: the run stops, with this reason.
    pub(crate) stop: Option<String>,
    /// For the user's eyes (`systemMessage`).
    pub(crate) notice: Option<String>,
    /// The hook failed (exit code, timeout, an answer that is not JSON).
    pub(crate) failure: Option<String>,
    /// It was killed at its timeout.
    pub(crate) timed_out: bool,
    /// `PreToolUse`'s `hookSpecificOutput.updatedInput`: the call's new
    /// arguments (a JSON object).
    pub(crate) updated_input: Option<Value>,
}

impl Verdict {
    /// The outcome word and message of the report of this run.
    pub(crate) fn report(&self) -> (&'static str, String) {
        if self.timed_out {
            return ("timed_out", self.failure.clone().unwrap_or_default());
        }
        if let Some(failure) = &self.failure {
            return ("failed", failure.clone());
        }
        if let Some(reason) = &self.stop {
            return ("blocked", format!("stopped the run: {reason}"));
        }
        if let Some((p, reason)) = &self.permission {
            let word = match p {
                Permission::Allow => "allow",
                Permission::Ask => "ask",
                Permission::Deny => return ("blocked", reason.clone()),
            };
            return ("ok", format!("{word}{}", with(reason)));
        }
        if let Some(reason) = &self.block {
            return ("blocked", reason.clone());
        }
        ("ok", self.notice.clone().unwrap_or_default())
    }
}

fn with(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    }
}

/// What a hook's run means for `event`.
pub(crate) fn verdict(event: HookEvent, run: &HookRun) -> Verdict {
    let mut v = Verdict::default();
    let stderr = run.stderr.trim().to_string();
    match run.exit {
        Exit::TimedOut(after) => {
            v.timed_out = true;
            v.failure = Some(format!("no answer after {}s; killed", after.as_secs_f64()));
        }
        Exit::Spawn(ref e) => v.failure = Some(format!("could not start: {e}")),
        Exit::Code(2) => {
            let reason = if stderr.is_empty() {
                "blocked by a hook (it said nothing on stderr)".to_string()
            } else {
                stderr
            };
            if event == HookEvent::PreToolUse {
                v.permission = Some((Permission::Deny, reason));
            } else {
                v.block = Some(reason);
            }
        }
        Exit::Code(0) => read_answer(event, run.stdout.trim(), &mut v),
        Exit::Code(code) => {
            v.failure = Some(format!(
                "exit code {code}{}",
                if stderr.is_empty() {
                    String::new()
                } else {
                    format!(": {stderr}")
                }
            ));
        }
        Exit::Signal(sig) => v.failure = Some(format!("killed by signal {sig}")),
    }
    v
}

fn read_answer(event: HookEvent, stdout: &str, v: &mut Verdict) {
    if !stdout.starts_with('{') {
        if !stdout.is_empty()
            && matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
        {
            v.context = Some(stdout.to_string());
        }
        return;
    }
    let answer: Map<String, Value> = match serde_json::from_str(stdout) {
        Ok(a) => a,
        Err(e) => {
            v.failure = Some(format!("its answer on stdout is not a JSON object: {e}"));
            return;
        }
    };
    let text = |m: &Map<String, Value>, key: &str| {
        m.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_default()
    };
    if answer.get("continue") == Some(&Value::Bool(false)) {
        let reason = text(&answer, "stopReason");
        v.stop = Some(if reason.is_empty() {
            "a hook said not to continue".into()
        } else {
            reason
        });
    }
    if let Some(message) = answer.get("systemMessage").and_then(Value::as_str) {
        v.notice = Some(message.to_string());
    }
    let reason = text(&answer, "reason");
    match answer.get("decision").and_then(Value::as_str) {
        Some("block") if event == HookEvent::PreToolUse => {
            v.permission = Some((Permission::Deny, reason.clone()));
        }
        Some("approve") if event == HookEvent::PreToolUse => {
            v.permission = Some((Permission::Allow, reason.clone()));
        }
        Some("block") => v.block = Some(reason.clone()),
        _ => {}
    }
    if let Some(specific) = answer.get("hookSpecificOutput").and_then(Value::as_object) {
        let reason = text(specific, "permissionDecisionReason");
        let decided = match specific.get("permissionDecision").and_then(Value::as_str) {
            Some("allow") => Some(Permission::Allow),
            Some("ask") => Some(Permission::Ask),
            Some("deny") => Some(Permission::Deny),
            Some(other) => {
                v.failure = Some(format!(
                    "permissionDecision `{other}` is not allow, deny or ask"
                ));
                None
            }
            None => None,
        };
        if let (Some(p), HookEvent::PreToolUse) = (decided, event) {
            v.permission = Some((p, reason));
        }
        match specific.get("updatedInput") {
            Some(input @ Value::Object(_)) if event == HookEvent::PreToolUse => {
                v.updated_input = Some(input.clone());
            }
            Some(other) if event == HookEvent::PreToolUse => {
                v.failure = Some(format!("updatedInput must be a JSON object, got `{other}`"));
            }
            _ => {}
        }
        if let Some(context) = specific.get("additionalContext").and_then(Value::as_str)
            && !context.trim().is_empty()
        {
            v.context = Some(context.to_string());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn run(code: i32, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            exit: Exit::Code(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn exit_codes_and_answers_decide_as_claude_code_does() {
        let v = verdict(HookEvent::PreToolUse, &run(2, "", "no rm -rf\n"));
        assert_eq!(v.permission, Some((Permission::Deny, "no rm -rf".into())));
        let v = verdict(
            HookEvent::PreToolUse,
            &run(
                0,
                r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "check"}}"#,
                "",
            ),
        );
        assert_eq!(v.permission, Some((Permission::Ask, "check".into())));
        let v = verdict(HookEvent::PreToolUse, &run(1, "", "oops"));
        assert_eq!(
            (v.permission.clone(), v.report()),
            (None, ("failed", "exit code 1: oops".into()))
        );
        let v = verdict(
            HookEvent::Stop,
            &run(0, r#"{"decision": "block", "reason": "run the tests"}"#, ""),
        );
        assert_eq!(v.block.as_deref(), Some("run the tests"));
        let v = verdict(HookEvent::UserPromptSubmit, &run(0, "today is Friday", ""));
        assert_eq!(v.context.as_deref(), Some("today is Friday"));
        let v = verdict(HookEvent::PostToolUse, &run(0, "{not json", ""));
        assert_eq!(v.report().0, "failed");
        let v = verdict(
            HookEvent::Stop,
            &run(0, r#"{"continue": false, "stopReason": "enough"}"#, ""),
        );
        assert_eq!(v.stop.as_deref(), Some("enough"));
        let v = verdict(
            HookEvent::PreToolUse,
            &run(
                0,
                r#"{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls"}}}"#,
                "",
            ),
        );
        assert_eq!(v.updated_input, Some(serde_json::json!({"command": "ls"})));
        let v = verdict(
            HookEvent::PreToolUse,
            &run(0, r#"{"hookSpecificOutput": {"updatedInput": "ls"}}"#, ""),
        );
        assert_eq!(
            (v.updated_input.clone(), v.report()),
            (
                None,
                (
                    "failed",
                    "updatedInput must be a JSON object, got `\"ls\"`".into()
                )
            )
        );
        let timed = HookRun {
            exit: Exit::TimedOut(Duration::from_secs(2)),
            stdout: String::new(),
            stderr: String::new(),
        };
        assert_eq!(
            verdict(HookEvent::PreToolUse, &timed).report(),
            ("timed_out", "no answer after 2s; killed".into())
        );
    }
}
