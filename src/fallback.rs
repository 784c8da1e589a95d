//! Model fallback: when a step's model fails in a way retrying cannot fix,
//! the next model of the step's chain answers.
//!
//! ```text
//!  metadata["model_fallbacks"] = {"chat": ["backup", "last-resort"]}
//!  chat node (step "chat") ─▶ its model (routed as usual) ── fails ─▶ "backup" ── fails ─▶ ...
//! ```
//!
//! The chain lives in the network's metadata (saved with the session, so
//! a loaded session falls back the same way; sub-agents inherit an outer
//! network's chain for their steps). The next model is asked only after
//! an error that asking the same model again would not fix — a refused
//! or dropped connection, a timeout, HTTP 5xx once the model's own
//! retries are spent, any 4xx but 429 (a prompt too long for the window
//! included), an answer that cannot be read. A 429, a missing model, a
//! configuration mistake or a scripted model that ran out are the
//! caller's to see, not hidden behind another model.
//!
//! The answering node records which model answered (`chat_model_name`, as
//! always) and, when any before it failed, `model_fallback`:
//! `{"answered_by": "backup", "failed": [{"model": "main", "error": "..."}]}`.
//! When every model of the chain fails, the node fails with the last
//! model's error and `model_fallback` lists them all.

use serde_json::{json, Map, Value};

use crate::error::ModelError;
use crate::network::RunnableNetwork;

/// The network metadata key holding the step → fallback models map.
pub(crate) const MODEL_FALLBACKS_KEY: &str = "model_fallbacks";

/// The node metadata key recording the models that failed before the one
/// that answered.
pub(crate) const MODEL_FALLBACK_KEY: &str = "model_fallback";

/// Model fallbacks on a network: the models a step asks when its own
/// fails for good.
pub trait FallbackExt {
    /// Sets the fallback chain of `step`: the models asked, in order, when
    /// the step's model fails in a way retrying cannot fix (see the
    /// module docs of `fallback.rs`). An empty chain removes it.
    ///
    /// ```
    /// use lc_agent::{FallbackExt, RunnableNetwork};
    ///
    /// let net = RunnableNetwork::new();
    /// net.set_model_fallbacks("chat", ["backup"]);
    /// assert_eq!(net.model_fallbacks_for_step("chat"), ["backup"]);
    /// assert!(net.model_fallbacks_for_step("summary").is_empty());
    /// ```
    fn set_model_fallbacks(
        &self,
        step: impl Into<String>,
        models: impl IntoIterator<Item = impl Into<String>>,
    );

    /// The fallback chain of `step`: this network's, else an outer one's.
    fn model_fallbacks_for_step(&self, step: &str) -> Vec<String>;
}

impl FallbackExt for RunnableNetwork {
    fn set_model_fallbacks(
        &self,
        step: impl Into<String>,
        models: impl IntoIterator<Item = impl Into<String>>,
    ) {
        let mut chains = match self.metadata_value(MODEL_FALLBACKS_KEY) {
            Some(Value::Object(chains)) => chains,
            _ => Map::new(),
        };
        let models: Vec<Value> = models
            .into_iter()
            .map(|m| Value::String(m.into()))
            .collect();
        let step = step.into();
        if models.is_empty() {
            chains.shift_remove(&step);
        } else {
            chains.insert(step, Value::Array(models));
        }
        self.set_metadata(MODEL_FALLBACKS_KEY, Value::Object(chains));
    }

    fn model_fallbacks_for_step(&self, step: &str) -> Vec<String> {
        let own = self
            .metadata_value(MODEL_FALLBACKS_KEY)
            .and_then(|chains| chains.get(step).cloned())
            .and_then(|chain| serde_json::from_value::<Vec<String>>(chain).ok());
        match own {
            Some(chain) => chain,
            None => self
                .outer()
                .map(|outer| outer.model_fallbacks_for_step(step))
                .unwrap_or_default(),
        }
    }
}

/// Whether the next model of a chain is asked after `error`: asking the
/// same model again would not fix it (its own retries are spent).
pub(crate) fn falls_back(error: &ModelError) -> bool {
    match error {
        ModelError::Connect { .. }
        | ModelError::Timeout(_)
        | ModelError::InvalidResponse { .. }
        | ModelError::ContextOverflow { .. } => true,
        ModelError::Http { status, .. } => *status != 429 && *status >= 400,
        _ => false,
    }
}

/// The models that failed before `answered_by` (or all of them, with
/// `None`), as the node records them.
pub(crate) fn record(answered_by: Option<&str>, failed: &[(String, String)]) -> Value {
    json!({
        "answered_by": answered_by,
        "failed": failed
            .iter()
            .map(|(model, error)| json!({"model": model, "error": error}))
            .collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_falls_back() {
        let http = |status| ModelError::Http {
            status,
            body: String::new(),
        };
        assert!(falls_back(&http(500)));
        assert!(falls_back(&http(503)));
        assert!(falls_back(&http(400)));
        assert!(falls_back(&http(404)));
        assert!(!falls_back(&http(429)));
        assert!(falls_back(&ModelError::Timeout(
            std::time::Duration::from_secs(1)
        )));
        assert!(!falls_back(&ModelError::Other("x".into())));
    }
}
