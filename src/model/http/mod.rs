//! What every HTTP model provider shares (the OpenAI-compatible client and
//! the Anthropic one): sending with retries and timeouts
//! ([`transport::Transport`]), error text without the API key
//! ([`redact`]), a prompt that does not fit as servers say it
//! ([`overflow`]), and the small helpers of configuration and decoding
//! below. What is particular to a provider (its JSON, its stream events,
//! its servers' quirks) stays in its own folder.

pub(crate) mod overflow;
pub(crate) mod redact;
pub(crate) mod transport;

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

use crate::error::ModelError;
use redact::{excerpt, ApiKey, MAX_EXCERPT_CHARS};

/// `value` trimmed, or `None` when nothing is left: for settings, and for
/// names and ids a server may send blank.
pub(crate) fn non_empty(value: Option<String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The environment variable `name`, when it is set to something.
pub(crate) fn env_var(name: &str) -> Option<String> {
    non_empty(std::env::var(name).ok())
}

/// `{base_url}/{path}` as an http(s) URL; a [`ModelError::Config`] naming
/// the base URL otherwise.
pub(crate) fn endpoint(base_url: &str, path: &str) -> Result<reqwest::Url, ModelError> {
    let invalid = |why: &dyn fmt::Display| format!("invalid base URL `{base_url}`: {why}");
    let endpoint =
        reqwest::Url::parse(&format!("{base_url}/{path}")).map_err(|e| ModelError::Config {
            message: invalid(&e),
            source: Some(Arc::new(e)),
        })?;
    match endpoint.scheme() {
        "http" | "https" => Ok(endpoint),
        other => Err(config_error(invalid(&format_args!(
            "scheme `{other}` is not http or https"
        )))),
    }
}

/// A configuration error with no underlying error.
pub(crate) fn config_error(message: String) -> ModelError {
    ModelError::Config {
        message,
        source: None,
    }
}

/// Parses `text` as JSON; a [`ModelError::InvalidResponse`] that quotes
/// the start of `text` (and keeps the parser's error as its source)
/// otherwise.
pub(crate) fn decode<T: DeserializeOwned>(
    text: &str,
    key: Option<&ApiKey>,
) -> Result<T, ModelError> {
    serde_json::from_str(text).map_err(|error| ModelError::InvalidResponse {
        message: format!("{error} in `{}`", excerpt(key, text, MAX_EXCERPT_CHARS)),
        source: Some(Arc::new(error)),
    })
}

/// Reads `null` as the type's default (serde's `default` covers only a
/// missing field).
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}
