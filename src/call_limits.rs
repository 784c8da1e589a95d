//! Call limits: how many times one `invoke` may call a tool or ask a model.
//!
//! ```text
//!  metadata["call_limits"] = {"tools": {"fetch_url": 3}, "models": {"main": 20}}
//! ```
//!
//! The limits live in the network's metadata (saved with the session);
//! the counts are the current run's (each `invoke` starts from zero, and
//! a sub-agent's network counts its own run). Reaching a limit is never a
//! crash:
//!
//! - **a tool**: the call past the limit is not run; its result, status
//!   error, tells the model the limit and to go on without the tool
//!   (`Error: call limit reached: ...`), so the run continues.
//! - **a model**: the chat node past the limit fails with
//!   [`NetworkError::CallLimit`](crate::NetworkError::CallLimit), the
//!   run's outcome; the graph stays valid, and the next `invoke` (a new
//!   run) may ask again.
//!
//! A model the fallback chain asks (`fallback.rs`) counts as asked.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::network::RunnableNetwork;

/// The network metadata key holding the limits.
pub(crate) const CALL_LIMITS_KEY: &str = "call_limits";

/// What a limit counts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Counted {
    /// Calls of a tool.
    Tool,
    /// Requests to a model.
    Model,
}

/// Counts one call of `name` in `calls` (one kind's counts of the
/// current run, looked up by name: no key is built per call) unless that
/// makes more than `limit`; `Err(limit)` then (the call is not counted).
fn add(calls: &mut HashMap<String, usize>, name: &str, limit: usize) -> Result<(), usize> {
    match calls.get_mut(name) {
        Some(count) => {
            if *count >= limit {
                return Err(limit);
            }
            *count += 1;
        }
        None => {
            if limit == 0 {
                return Err(limit);
            }
            calls.insert(name.to_string(), 1);
        }
    }
    Ok(())
}

impl Counted {
    /// Where the run's counts of this kind are (`NetworkInner::run_calls`).
    fn index(self) -> usize {
        match self {
            Counted::Tool => 0,
            Counted::Model => 1,
        }
    }

    fn key(self) -> &'static str {
        match self {
            Counted::Tool => "tools",
            Counted::Model => "models",
        }
    }
}

/// Call limits on a network: at most so many calls of a tool or a model
/// in one `invoke`.
pub trait CallLimitsExt {
    /// Limits the calls of the tool `tool` in one `invoke` (`None`
    /// removes the limit). The call past it gets an error result the model
    /// reads (see the module docs of `call_limits.rs`).
    ///
    /// ```
    /// use lc_agent::{CallLimitsExt, RunnableNetwork};
    ///
    /// let net = RunnableNetwork::new();
    /// net.set_tool_call_limit("fetch_url", Some(3));
    /// net.set_model_call_limit("main", Some(20));
    /// assert_eq!(net.metadata_value("call_limits").unwrap()["tools"]["fetch_url"], 3);
    /// ```
    fn set_tool_call_limit(&self, tool: impl Into<String>, limit: Option<usize>);

    /// Limits the requests to the model registered as `model` in one
    /// `invoke` (`None` removes the limit). The chat node past it fails
    /// with [`NetworkError::CallLimit`](crate::NetworkError::CallLimit).
    fn set_model_call_limit(&self, model: impl Into<String>, limit: Option<usize>);
}

impl CallLimitsExt for RunnableNetwork {
    fn set_tool_call_limit(&self, tool: impl Into<String>, limit: Option<usize>) {
        set_call_limit(self, Counted::Tool, tool.into(), limit);
    }

    fn set_model_call_limit(&self, model: impl Into<String>, limit: Option<usize>) {
        set_call_limit(self, Counted::Model, model.into(), limit);
    }
}

fn set_call_limit(net: &RunnableNetwork, what: Counted, name: String, limit: Option<usize>) {
    let mut limits = match net.metadata_value(CALL_LIMITS_KEY) {
        Some(Value::Object(limits)) => limits,
        _ => Map::new(),
    };
    let mut own = match limits.remove(what.key()) {
        Some(Value::Object(own)) => own,
        _ => Map::new(),
    };
    match limit {
        Some(limit) => {
            own.insert(name, Value::from(limit));
        }
        None => {
            own.shift_remove(&name);
        }
    }
    if !own.is_empty() {
        limits.insert(what.key().to_string(), Value::Object(own));
    }
    net.set_metadata(CALL_LIMITS_KEY, Value::Object(limits));
}

/// Counts one call of `name` in this run; `Err(limit)` when that call
/// is past the limit (it is not counted then).
pub(crate) fn count_call(net: &RunnableNetwork, what: Counted, name: &str) -> Result<(), usize> {
    // Read in place (no copy of the limits).
    let limit = net.with_metadata_mut(|m| {
        m.get(CALL_LIMITS_KEY)?
            .get(what.key())?
            .get(name)?
            .as_u64()
            .and_then(|limit| usize::try_from(limit).ok())
    });
    // Only limited calls are counted: a limit set while a run goes on
    // counts from then.
    let Some(limit) = limit else {
        return Ok(());
    };
    add(&mut net.0.run_calls.lock()[what.index()], name, limit)
}

/// The result a tool call past its limit gets.
pub(crate) fn tool_limit_result(tool: &str, limit: usize) -> String {
    format!(
        "Error: call limit reached: `{tool}` may be called {limit} times in one run and was; \
         it was not called again. Go on without it: answer with what you have."
    )
}
