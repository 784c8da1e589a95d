//! The blueprint's `[resilience]`: what a run does when models or tools
//! fail, and how far it may go.
//!
//! ```toml
//! [resilience.fallbacks]          # step -> models asked when its model fails for good
//! chat = ["backup"]
//! [resilience.tool_retry]         # tools safe to call twice
//! fetch_url = { attempts = 3, backoff_ms = 200 }
//! [resilience.call_limits.tools]  # calls per run; past it, a result the model reads
//! fetch_url = 5
//! [resilience.call_limits.models] # requests per run; past it, the run fails
//! main = 30
//! [resilience.clear_tool_results] # old results left out of requests
//! keep = 3
//! budget_tokens = 8000
//! ```
//!
//! Each setting goes into the network's metadata, where the core reads it
//! (`FallbackExt::set_model_fallbacks`, `set_tool_retry`,
//! `set_tool_call_limit`, `set_model_call_limit`): a saved session keeps
//! them, and its stored blueprint sets them again when it is resumed.

use lc_agent::{CallLimitsExt, ClearResultsExt, FallbackExt, ToolRetryExt};
use std::collections::BTreeMap;
use std::time::Duration;

use lc_agent::RunnableNetwork;
use serde::{Deserialize, Serialize};

/// The blueprint's `[resilience]` (see the module docs of `resilience.rs`).
///
/// ```
/// use lc_agent_deepagent::AgentSpec;
///
/// let spec = AgentSpec::from_toml(
///     "[models.main]\nmodel = \"m\"\n[models.backup]\nmodel = \"b\"\n\
///      [resilience.fallbacks]\nchat = [\"backup\"]\n\
///      [resilience.tool_retry]\nlookup = { attempts = 3 }\n\
///      [resilience.call_limits.tools]\nlookup = 2\n",
/// )?;
/// let resilience = spec.resilience.unwrap();
/// assert_eq!(resilience.fallbacks["chat"], ["backup"]);
/// assert_eq!(resilience.tool_retry["lookup"].attempts, 3);
/// assert_eq!(resilience.call_limits.tools["lookup"], 2);
/// # Ok::<(), lc_agent_deepagent::SpecError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResilienceSpec {
    /// Step -> the models (names in `[models]`) asked in order when the
    /// step's model fails in a way retrying cannot fix.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fallbacks: BTreeMap<String, Vec<String>>,
    /// Tool -> how it is retried (tools safe to call twice).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_retry: BTreeMap<String, ToolRetrySpec>,
    /// Calls per run.
    #[serde(default, skip_serializing_if = "CallLimitsSpec::is_empty")]
    pub call_limits: CallLimitsSpec,
    /// Old tool results left out of the requests (the graph keeps them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_tool_results: Option<ClearToolResultsSpec>,
}

/// `[resilience.clear_tool_results]`: the newest `keep` tool results stay
/// in a request; older ones are left out once evicted to a file, or once
/// the results pass `budget_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClearToolResultsSpec {
    /// Results always kept whole (3 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep: Option<usize>,
    /// Tokens of results kept before older ones are cleared (absent:
    /// only evicted ones are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<usize>,
}

/// How a tool is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolRetrySpec {
    /// Calls made at most (the first included).
    pub attempts: u32,
    /// The first wait, in milliseconds (doubled each time; 200 when
    /// absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_ms: Option<u64>,
}

/// `[resilience.call_limits]`: calls per run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallLimitsSpec {
    /// Tool -> calls per run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, usize>,
    /// Model (a name in `[models]`) -> requests per run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, usize>,
}

impl CallLimitsSpec {
    fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.models.is_empty()
    }
}

impl ResilienceSpec {
    /// Sets these rules on `net` (its metadata).
    pub(crate) fn apply(&self, net: &RunnableNetwork) {
        for (step, models) in &self.fallbacks {
            net.set_model_fallbacks(step.clone(), models.iter().cloned());
        }
        for (tool, retry) in &self.tool_retry {
            net.set_tool_retry(
                tool.clone(),
                retry.attempts,
                Duration::from_millis(retry.backoff_ms.unwrap_or(200)),
            );
        }
        for (tool, limit) in &self.call_limits.tools {
            net.set_tool_call_limit(tool.clone(), Some(*limit));
        }
        for (model, limit) in &self.call_limits.models {
            net.set_model_call_limit(model.clone(), Some(*limit));
        }
        if let Some(clear) = &self.clear_tool_results {
            net.set_clear_tool_results(clear.keep.unwrap_or(3), clear.budget_tokens);
        }
    }
}
