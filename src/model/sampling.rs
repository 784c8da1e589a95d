//! [`Sampling`]: how a request asks the model to sample its answer — a
//! client's `temperature`, `max_tokens`, `stop`, `seed`, … passed through
//! to the model call. Set fields override the model's own settings;
//! unset ones leave them.

use serde::{Deserialize, Serialize};

/// Sampling asked of one request. Every field is optional; a provider
/// sends what its protocol has (OpenAI-compatible servers take them all;
/// Anthropic's Messages API has no `seed` or penalties, which it leaves
/// out).
///
/// ```
/// use lc_agent::Sampling;
///
/// let sampling = Sampling { temperature: Some(0.2), max_tokens: Some(64), ..Sampling::default() };
/// assert!(!sampling.is_empty());
/// assert!(Sampling::default().is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sampling {
    /// Sampling temperature (OpenAI: 0 to 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Nucleus sampling mass (0 to 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    /// The most tokens the answer may have.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sequences that end the answer (at most 4 on OpenAI).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// A seed for repeatable sampling, where the server has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Penalty for tokens already present (-2 to 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f32>,
    /// Penalty by how often tokens appeared (-2 to 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f32>,
}

impl Sampling {
    /// Whether nothing is asked.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}
