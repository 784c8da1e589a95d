//! Which HTTP model client: [`Provider`], chosen by name (a flag, a
//! blueprint) or by the environment, and the model it opens. Every fact
//! about a provider is one row of [`PROVIDERS`]: its name, its environment
//! variables, its defaults and its constructor. A new provider is a folder
//! under `model/` (a `ChatModel`, a builder holding [`HttpSettings`] and
//! an `open` function), a variant here and a row in the table.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::settings::HttpSettings;
use super::ChatModel;
use crate::error::ModelError;

/// A model provider: the protocol a model is asked in.
///
/// Saved (in a blueprint) and parsed by its name in the provider table
/// (`openai`, `anthropic`; see [`Provider::row`]).
///
/// ```
/// use lc_agent::Provider;
///
/// assert_eq!("anthropic".parse::<Provider>(), Ok(Provider::Anthropic));
/// assert_eq!(Provider::OpenAi.to_string(), "openai");
/// assert_eq!(Provider::OpenAi.row().model_env, "OPENAI_MODEL");
/// assert!("gemini".parse::<Provider>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Provider {
    /// The OpenAI-compatible chat completions protocol
    /// ([`OpenAiChatModel`](crate::OpenAiChatModel)): OpenAI, vLLM,
    /// Ollama, llama.cpp, LM Studio, ... (`OPENAI_*` variables).
    #[default]
    OpenAi,
    /// Anthropic's Messages API
    /// ([`AnthropicChatModel`](crate::AnthropicChatModel);
    /// `ANTHROPIC_*` variables).
    Anthropic,
}

/// What lc-agent knows of a provider: one row of the provider table,
/// read by [`Provider::from_env`], parsing, [`Provider::as_str`] and
/// [`Provider::open_with`].
#[derive(Debug)]
pub struct ProviderRow {
    /// The provider this row describes.
    pub provider: Provider,
    /// Its name in flags and blueprints.
    pub name: &'static str,
    /// The variable read for the API key.
    pub api_key_env: &'static str,
    /// The variable read for the API root.
    pub base_url_env: &'static str,
    /// The variable read for the model name.
    pub model_env: &'static str,
    /// The API root used when no base URL is set.
    pub default_base_url: &'static str,
    /// The model asked when none is named (at the provider's own
    /// endpoint).
    pub default_model: &'static str,
    /// Opens its model; `None` when this build lacks the provider's cargo
    /// feature.
    open: Option<Opener>,
}

/// A provider's constructor.
type Opener = fn(HttpSettings) -> Result<Arc<dyn ChatModel>, ModelError>;

#[cfg(feature = "openai")]
const OPEN_OPENAI: Option<Opener> = Some(super::openai::open);
#[cfg(not(feature = "openai"))]
const OPEN_OPENAI: Option<Opener> = None;
#[cfg(feature = "anthropic")]
const OPEN_ANTHROPIC: Option<Opener> = Some(super::anthropic::open);
#[cfg(not(feature = "anthropic"))]
const OPEN_ANTHROPIC: Option<Opener> = None;

/// The provider table, in the order of [`Provider`]'s variants, which is
/// the order [`Provider::from_env`] prefers them.
pub(crate) const PROVIDERS: [ProviderRow; 2] = [
    ProviderRow {
        provider: Provider::OpenAi,
        name: "openai",
        api_key_env: "OPENAI_API_KEY",
        base_url_env: "OPENAI_BASE_URL",
        model_env: "OPENAI_MODEL",
        default_base_url: "https://api.openai.com/v1",
        default_model: "gpt-4o-mini",
        open: OPEN_OPENAI,
    },
    ProviderRow {
        provider: Provider::Anthropic,
        name: "anthropic",
        api_key_env: "ANTHROPIC_API_KEY",
        base_url_env: "ANTHROPIC_BASE_URL",
        model_env: "ANTHROPIC_MODEL",
        default_base_url: "https://api.anthropic.com",
        default_model: "claude-sonnet-4-5",
        open: OPEN_ANTHROPIC,
    },
];

impl Provider {
    /// Its row of the provider table: name, variables, defaults.
    pub fn row(self) -> &'static ProviderRow {
        &PROVIDERS[self as usize]
    }

    /// The provider the environment configures: the first of the table
    /// whose key or base-URL variable is set (OpenAI-compatible when
    /// `OPENAI_API_KEY` or `OPENAI_BASE_URL` is, else Anthropic when
    /// `ANTHROPIC_API_KEY` or `ANTHROPIC_BASE_URL` is), else
    /// OpenAI-compatible.
    pub fn from_env() -> Self {
        let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
        PROVIDERS
            .iter()
            .find(|row| set(row.api_key_env) || set(row.base_url_env))
            .map_or_else(Provider::default, |row| row.provider)
    }

    /// Its name: `openai` or `anthropic`.
    pub fn as_str(self) -> &'static str {
        self.row().name
    }

    /// The model asked when none is named: its variable, else the
    /// provider's default (`gpt-4o-mini`, `claude-sonnet-4-5`).
    pub fn default_model(self) -> String {
        let row = self.row();
        std::env::var(row.model_env)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| row.default_model.to_string())
    }

    /// The model `model` (default: [`Provider::default_model`]) at
    /// `base_url` (default: the provider's variable, else its own
    /// endpoint), with its key from the environment, reading at most
    /// `context_window` tokens when given; see [`Provider::open_with`].
    pub fn open(
        self,
        model: Option<String>,
        base_url: Option<String>,
        context_window: Option<usize>,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        self.open_with(HttpSettings {
            model,
            base_url,
            context_window,
            ..HttpSettings::default()
        })
    }

    /// The provider's model with these settings (the environment fills
    /// the rest).
    ///
    /// Fails with [`ModelError::Config`] when the configuration is
    /// incomplete, or this build of lc-agent lacks the provider's cargo
    /// feature.
    pub fn open_with(self, settings: HttpSettings) -> Result<Arc<dyn ChatModel>, ModelError> {
        match self.row().open {
            Some(open) => open(settings),
            None => Err(ModelError::Config {
                message: format!(
                    "provider `{self}`: this lc-agent was built without its cargo \
                     feature `{self}`"
                ),
                source: None,
            }),
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider name that is not in the provider table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider `{0}`: expected {names}", names = names())]
pub struct ProviderError(String);

/// The table's names, as an error lists them: `` `openai` or `anthropic` ``.
fn names() -> String {
    let names: Vec<String> = PROVIDERS.iter().map(|r| format!("`{}`", r.name)).collect();
    names.join(" or ")
}

impl FromStr for Provider {
    type Err = ProviderError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let name = text.trim().to_ascii_lowercase();
        PROVIDERS
            .iter()
            .find(|row| row.name == name)
            .map(|row| row.provider)
            .ok_or_else(|| ProviderError(text.trim().to_string()))
    }
}

impl Serialize for Provider {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Provider {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_order_of_the_variants() {
        for (index, row) in PROVIDERS.iter().enumerate() {
            assert_eq!(row.provider as usize, index, "{}", row.name);
            assert_eq!(row.name.parse::<Provider>(), Ok(row.provider));
        }
    }
}
