//! Which HTTP model client: [`Provider`], chosen by name (a flag, a
//! blueprint) or by the environment, and the model it opens.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ChatModel;
use crate::error::ModelError;

/// A model provider: the protocol a model is asked in.
///
/// Saved (in a blueprint) and parsed as `openai` or `anthropic`.
///
/// ```
/// use lc_agent::Provider;
///
/// assert_eq!("anthropic".parse::<Provider>(), Ok(Provider::Anthropic));
/// assert_eq!(Provider::OpenAi.to_string(), "openai");
/// assert!("gemini".parse::<Provider>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// The OpenAI-compatible chat completions protocol
    /// ([`OpenAiChatModel`](crate::OpenAiChatModel)): OpenAI, vLLM,
    /// Ollama, llama.cpp, LM Studio, ... (`OPENAI_*` variables).
    #[default]
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic's Messages API
    /// ([`AnthropicChatModel`](crate::AnthropicChatModel);
    /// `ANTHROPIC_*` variables).
    Anthropic,
}

impl Provider {
    /// Every provider, in the order [`Provider::from_env`] prefers them.
    pub const ALL: [Provider; 2] = [Provider::OpenAi, Provider::Anthropic];

    /// The provider the environment configures: Anthropic when
    /// `ANTHROPIC_API_KEY` (or `ANTHROPIC_BASE_URL`) is set and neither
    /// `OPENAI_API_KEY` nor `OPENAI_BASE_URL` is, else OpenAI-compatible.
    pub fn from_env() -> Self {
        let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
        let anthropic = set("ANTHROPIC_API_KEY") || set("ANTHROPIC_BASE_URL");
        let openai = set("OPENAI_API_KEY") || set("OPENAI_BASE_URL");
        if anthropic && !openai {
            Provider::Anthropic
        } else {
            Provider::OpenAi
        }
    }

    /// Its name: `openai` or `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The variable naming its model (`OPENAI_MODEL`, `ANTHROPIC_MODEL`).
    pub fn model_env(self) -> &'static str {
        match self {
            Provider::OpenAi => "OPENAI_MODEL",
            Provider::Anthropic => "ANTHROPIC_MODEL",
        }
    }

    /// The model asked when none is named: its variable, else the
    /// provider's default (`gpt-4o-mini`, `claude-sonnet-4-5`).
    pub fn default_model(self) -> String {
        std::env::var(self.model_env())
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| {
                match self {
                    Provider::OpenAi => "gpt-4o-mini",
                    Provider::Anthropic => "claude-sonnet-4-5",
                }
                .to_string()
            })
    }

    /// The model `model` (default: [`Provider::default_model`]) at
    /// `base_url` (default: the provider's variable, else its own
    /// endpoint), with its key from the environment, reading at most
    /// `context_window` tokens when given.
    ///
    /// Fails with [`ModelError::Config`] when the configuration is
    /// incomplete, or this build of lc-agent lacks the provider's cargo
    /// feature.
    pub fn open(
        self,
        model: Option<String>,
        base_url: Option<String>,
        context_window: Option<usize>,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        // The builders share these settings' names, not a trait.
        #[allow(unused_macros)]
        macro_rules! build {
            ($builder:expr) => {{
                let mut builder = $builder;
                if let Some(model) = model {
                    builder = builder.model(model);
                }
                if let Some(url) = base_url {
                    builder = builder.base_url(url);
                }
                if let Some(tokens) = context_window {
                    builder = builder.context_window(tokens);
                }
                Ok(Arc::new(builder.build()?))
            }};
        }
        match self {
            #[cfg(feature = "openai")]
            Provider::OpenAi => build!(crate::OpenAiChatModel::builder()),
            #[cfg(feature = "anthropic")]
            Provider::Anthropic => build!(crate::AnthropicChatModel::builder()),
            #[allow(unreachable_patterns)]
            other => {
                let _ = (model, base_url, context_window);
                Err(ModelError::Config {
                    message: format!(
                        "provider `{other}`: this lc-agent was built without its cargo \
                         feature `{other}`"
                    ),
                    source: None,
                })
            }
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider name that is not `openai` or `anthropic`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider `{0}`: expected `openai` or `anthropic`")]
pub struct ProviderError(String);

impl FromStr for Provider {
    type Err = ProviderError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let name = text.trim().to_ascii_lowercase();
        Provider::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| ProviderError(text.trim().to_string()))
    }
}
