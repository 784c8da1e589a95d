//! Which HTTP model client: [`Provider`], chosen by name (a flag, a
//! blueprint) or by the environment, and the model it opens. Every fact
//! about a provider is one row of the table (`table.rs`): its name, its
//! environment variables and its defaults; its constructor is one arm of
//! `opener` here. A new provider is a folder under `model/` (a
//! `ChatModel`, a builder holding [`HttpSettings`] and an `open`
//! function), a variant and a row in `table.rs`, and that arm. The table
//! sits below the providers' folders (each reads its own row); this file
//! sits above them (it opens them), so no module imports one that imports
//! it back.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::settings::HttpSettings;
use super::ChatModel;
use crate::error::ModelError;

pub(super) mod table;

use table::PROVIDERS;
pub use table::{Provider, ProviderRow};

/// A provider's constructor.
type Opener = fn(HttpSettings) -> Result<Arc<dyn ChatModel>, ModelError>;

/// The provider's constructor; `None` when this build lacks its cargo
/// feature.
fn opener(provider: Provider) -> Option<Opener> {
    match provider {
        #[cfg(feature = "openai")]
        Provider::OpenAi => Some(super::openai::open),
        #[cfg(feature = "anthropic")]
        Provider::Anthropic => Some(super::anthropic::open),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

impl Provider {
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
    pub(crate) fn as_str(self) -> &'static str {
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
        match opener(self) {
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
