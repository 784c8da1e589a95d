//! The hooks on `/v1/tools/execute`: the server's own `PreToolUse` and
//! `PostToolUse` hooks (from its settings files and flags, never from a
//! client) run around each call of a batch, first of the checks, as in a
//! session: a hook's `deny` makes the call's result the refusal (the
//! others run), `ask` refuses the batch (403: nobody approves here),
//! `allow` spares the call the approval rules (path rules still apply),
//! and `updatedInput` rewrites the call before the other checks see it.

use lc_agent::{Attachments, RunnableNetwork, ToolCall, ToolExecution, ToolOutput};
use lc_agent_deepagent::{HookDecision, HooksModifier};
use serde_json::{json, Value};

use crate::error::ApiError;

/// A batch after the `PreToolUse` hooks.
pub(crate) struct Gated {
    hooks: Option<HooksModifier>,
    /// Per call of the request: its refusal, or its index in `to_run`.
    slots: Vec<Result<usize, ToolExecution>>,
    /// The calls that go on (as the hooks left them), OpenAI objects.
    pub(crate) to_run: Vec<Value>,
    /// Whether a hook allowed each call of `to_run`.
    pub(crate) allowed: Vec<bool>,
    /// The calls of `to_run` as the hooks read them (`None`: unreadable,
    /// the executor reports it).
    calls: Vec<Option<ToolCall>>,
}

/// The call of an OpenAI tool call object, when it can be read.
fn read(index: usize, value: &Value) -> Option<ToolCall> {
    let name = value.pointer("/function/name")?.as_str()?.to_string();
    let id = value
        .get("id")
        .and_then(Value::as_str)
        .map_or_else(|| format!("call_{index}"), str::to_string);
    let args = match value.pointer("/function/arguments") {
        None | Some(Value::Null) => json!({}),
        Some(Value::String(text)) if text.trim().is_empty() => json!({}),
        Some(Value::String(text)) => serde_json::from_str(text).ok()?,
        Some(object @ Value::Object(_)) => object.clone(),
        Some(_) => return None,
    };
    Some(ToolCall::new(id, name, args))
}

/// Runs the `PreToolUse` hooks of `net` (if it has any) on each call.
pub(crate) async fn before(net: &RunnableNetwork, calls: &[Value]) -> Result<Gated, ApiError> {
    let hooks = net.modifier_as::<HooksModifier>(HooksModifier::ID);
    let mut gated = Gated {
        hooks: hooks.clone(),
        slots: Vec::with_capacity(calls.len()),
        to_run: Vec::with_capacity(calls.len()),
        allowed: Vec::with_capacity(calls.len()),
        calls: Vec::with_capacity(calls.len()),
    };
    for (index, value) in calls.iter().enumerate() {
        let call = read(index, value);
        let (Some(hooks), Some(call)) = (&hooks, call.clone()) else {
            gated.keep(value.clone(), call, false);
            continue;
        };
        match hooks.before_call(net, call.clone()).await {
            HookDecision::Run { call: ran, allowed } => {
                let value = if ran == call {
                    value.clone()
                } else {
                    json!({"id": ran.id, "type": "function",
                           "function": {"name": ran.name, "arguments": ran.arguments}})
                };
                gated.keep(value, Some(ran), allowed);
            }
            HookDecision::Ask { call, reason } => {
                return Err(ApiError::Status(
                    axum::http::StatusCode::FORBIDDEN,
                    format!(
                        "Approval needed: `{}`: {reason}, and /v1/tools/execute has nobody to \
                         approve it: nothing was run. Send the request as a message of a \
                         session, where the call waits for a decision",
                        call.name
                    ),
                ))
            }
            HookDecision::Deny { message } => gated.slots.push(Err(ToolExecution {
                tool_call_id: call.id,
                function_name: call.name,
                success: false,
                result: None,
                error: Some(message),
                execution_time_ms: 0.0,
            })),
            _ => gated.keep(value.clone(), Some(call), false),
        }
    }
    Ok(gated)
}

impl Gated {
    fn keep(&mut self, value: Value, call: Option<ToolCall>, allowed: bool) {
        self.slots.push(Ok(self.to_run.len()));
        self.to_run.push(value);
        self.allowed.push(allowed);
        self.calls.push(call);
    }

    /// The results in the request's order, each call that ran through the
    /// `PostToolUse` hooks.
    pub(crate) async fn after(self, net: &RunnableNetwork, ran: Vec<ToolExecution>) -> Vec<Value> {
        let mut ran: Vec<Option<ToolExecution>> = ran.into_iter().map(Some).collect();
        let mut results = Vec::with_capacity(self.slots.len());
        for slot in self.slots {
            let execution = match slot {
                Err(refused) => refused,
                Ok(i) => {
                    let Some(mut execution) = ran.get_mut(i).and_then(Option::take) else {
                        continue;
                    };
                    if let (Some(hooks), Some(Some(call))) = (&self.hooks, self.calls.get(i)) {
                        let output = match (&execution.result, &execution.error) {
                            (Some(result), _) if execution.success => ToolOutput::ok(result),
                            (_, error) => ToolOutput::error(error.clone().unwrap_or_default()),
                        };
                        let output = hooks.after_call(net, call, output).await;
                        if execution.success {
                            execution.result = Some(output.content);
                        } else {
                            execution.error = Some(output.content);
                        }
                    }
                    execution
                }
            };
            results.push(json!(execution));
        }
        results
    }
}
