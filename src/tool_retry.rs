//! Tool retry: a call of a tool marked idempotent that fails is made
//! again, after a backoff, a bounded number of times.
//!
//! ```text
//!  metadata["tool_retry"] = {"fetch_url": {"attempts": 3, "backoff_ms": 200}}
//! ```
//!
//! Only a tool the network marks (it is safe to run twice: a read, a GET,
//! a lookup) is retried, and only when the call itself failed: it gave an
//! error result, raised an error, or timed out. Arguments the tool refused
//! (not JSON, the wrong shape) and unknown tools are the model's mistake
//! and are answered at once. The waits double from `backoff_ms` (200, 400,
//! ...). The tool node records the failed attempts' errors
//! (`metadata["tool_retries"]`); the model reads the last attempt's result
//! only.

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::error::ToolError;
use crate::message::ToolStatus;
use crate::network::RunnableNetwork;

/// The network metadata key holding the tools retried.
pub(crate) const TOOL_RETRY_KEY: &str = "tool_retry";

/// The tool node metadata key listing the failed attempts.
pub(crate) const TOOL_RETRIES_KEY: &str = "tool_retries";

/// Tool retries on a network: idempotent tools called again after a failure.
pub trait ToolRetryExt {
    /// Marks the tool `tool` idempotent: a failed call is made again, at
    /// most `attempts` calls in all, waiting `backoff` then twice as long
    /// each time (see the module docs of `tool_retry.rs`). `attempts` of 1
    /// or less removes the mark.
    ///
    /// ```
    /// use std::time::Duration;
    /// use lc_agent::{RunnableNetwork, ToolRetryExt};
    ///
    /// let net = RunnableNetwork::new();
    /// net.set_tool_retry("fetch_url", 3, Duration::from_millis(200));
    /// assert_eq!(
    ///     net.metadata_value("tool_retry").unwrap()["fetch_url"]["attempts"],
    ///     3
    /// );
    /// ```
    fn set_tool_retry(&self, tool: impl Into<String>, attempts: u32, backoff: Duration);
}

impl ToolRetryExt for RunnableNetwork {
    fn set_tool_retry(&self, tool: impl Into<String>, attempts: u32, backoff: Duration) {
        let mut tools = match self.metadata_value(TOOL_RETRY_KEY) {
            Some(Value::Object(tools)) => tools,
            _ => Map::new(),
        };
        let tool = tool.into();
        if attempts <= 1 {
            tools.shift_remove(&tool);
        } else {
            let backoff_ms = u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX);
            tools.insert(
                tool,
                json!({"attempts": attempts, "backoff_ms": backoff_ms}),
            );
        }
        self.set_metadata(TOOL_RETRY_KEY, Value::Object(tools));
    }
}

/// How `tool` is retried: the calls made at most, the first wait.
pub(crate) fn tool_retry(net: &RunnableNetwork, tool: &str) -> Option<(u32, Duration)> {
    let policy = net.metadata_value(TOOL_RETRY_KEY)?.get(tool)?.clone();
    let attempts = u32::try_from(policy.get("attempts")?.as_u64()?).ok()?;
    let backoff = Duration::from_millis(policy.get("backoff_ms")?.as_u64().unwrap_or(200));
    (attempts > 1).then_some((attempts, backoff))
}

/// Whether the result of one call may be cured by calling again.
pub(crate) fn worth_again(result: Result<ToolStatus, &ToolError>) -> bool {
    match result {
        Ok(status) => status == ToolStatus::Error,
        Err(
            ToolError::InvalidArguments { .. }
            | ToolError::InvalidJson { .. }
            | ToolError::UnknownTool { .. },
        ) => false,
        Err(_) => true,
    }
}

/// The wait before attempt `next` (2, 3, ...): `backoff`, doubled each
/// time.
pub(crate) fn wait_before(next: u32, backoff: Duration) -> Duration {
    backoff.saturating_mul(1 << next.saturating_sub(2).min(10))
}
