//! The path rules on `/v1/tools/execute`: a call an `ask` rule covers is
//! refused (403) before anything runs, because the endpoint has nobody to
//! approve it; `deny` rules are the backend's (the call's result is the
//! error naming the rule).

use lc_agent::{Attachments, RunnableNetwork};
use lc_agent_deepagent::PathRulesModifier;
use lc_agent_filesystem::Verdict;
use serde_json::Value;

use crate::error::ApiError;

/// Refuses a batch holding a call that an `ask` path rule covers.
pub(crate) async fn refuse_asks(net: &RunnableNetwork, calls: &[Value]) -> Result<(), ApiError> {
    let Some(rules) = net.modifier_as::<PathRulesModifier>("path_rules") else {
        return Ok(());
    };
    for call in calls {
        let name = call
            .pointer("/function/name")
            .or_else(|| call.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let args = call
            .pointer("/function/arguments")
            .or_else(|| call.get("arguments"))
            .cloned()
            .unwrap_or_default();
        // OpenAI sends the arguments as JSON text.
        let args = match args {
            Value::String(text) => serde_json::from_str(&text).unwrap_or_default(),
            other => other,
        };
        if let Verdict::Ask(rule) = rules.check(net, name, &args).await {
            return Err(ApiError::Status(
                axum::http::StatusCode::FORBIDDEN,
                format!(
                    "Approval needed: `{name}` is covered by {rule}, which asks a person, and \
                     /v1/tools/execute has nobody to approve it: nothing was run. Send the \
                     request as a message of a session, where the call waits for a decision"
                ),
            ));
        }
    }
    Ok(())
}
