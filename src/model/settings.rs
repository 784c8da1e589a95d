//! The settings every HTTP model provider takes: [`HttpSettings`] (model,
//! endpoint, key, timeout, retries, sampling, window), the defaults, and
//! how the environment fills what was not set. A provider's builder holds
//! one and gets its setters from [`http_setters!`]; [`Provider::open_with`]
//! hands one to the provider's constructor.

use std::fmt;
use std::time::Duration;

#[cfg(doc)]
use super::provider::table::Provider;
#[cfg(any(feature = "openai", feature = "anthropic"))]
use super::provider::table::ProviderRow;
#[cfg(any(feature = "openai", feature = "anthropic"))]
use crate::error::ModelError;

/// A request's time limit unless the settings say otherwise.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// How often a failed request is tried again unless the settings say
/// otherwise.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) const DEFAULT_MAX_RETRIES: u32 = 3;
/// The first pause before a retry unless the settings say otherwise.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) const DEFAULT_RETRY_BASE_DELAY: Duration = Duration::from_millis(500);
/// The environment variable read for the timeout, in seconds, when none
/// is set: `LC_AGENT_MODEL_TIMEOUT` (for every provider).
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) const TIMEOUT_ENV: &str = "LC_AGENT_MODEL_TIMEOUT";

/// How an HTTP model is reached and asked, the same for every provider:
/// what [`Provider::open_with`] takes, and what each provider's builder
/// (such as [`OpenAiChatModelBuilder`](crate::OpenAiChatModelBuilder))
/// holds. Whatever is not set comes from the provider's environment
/// variables (its row, [`Provider::row`]), then its defaults.
///
/// ```
/// use std::time::Duration;
/// use lc_agent::{HttpSettings, Provider};
///
/// let settings = HttpSettings::default()
///     .model("llama3.1")
///     .base_url("http://localhost:11434/v1")
///     .timeout(Duration::from_secs(600));
/// let model = Provider::OpenAi.open_with(settings)?;
/// # let _ = model;
/// # Ok::<(), lc_agent::ModelError>(())
/// ```
#[derive(Clone, Default)]
pub struct HttpSettings {
    pub(crate) model: Option<String>,
    pub(crate) base_url: Option<String>,
    pub(crate) api_key: Option<String>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_retries: Option<u32>,
    pub(crate) retry_base_delay: Option<Duration>,
    pub(crate) temperature: Option<f32>,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) context_window: Option<usize>,
    pub(crate) images: Option<bool>,
}

impl fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpSettings")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("retry_base_delay", &self.retry_base_delay)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("context_window", &self.context_window)
            .field("images", &self.images)
            .finish()
    }
}

/// The setters of [`HttpSettings`], written once: used in its own impl
/// (where `$field` is `self`) and in every provider's builder (where it is
/// the builder's `http` field).
macro_rules! http_setters {
    ($($field:ident)?) => {
        /// The model name sent with every request, e.g. `gpt-4o-mini`,
        /// `llama3.1` or `claude-sonnet-4-5`. Defaults to the provider's
        /// model variable (`OPENAI_MODEL`, `ANTHROPIC_MODEL`), then its
        /// default model ([`Provider::row`](crate::Provider::row)).
        pub fn model(mut self, model: impl Into<String>) -> Self {
            self$(.$field)?.model = Some(model.into());
            self
        }

        /// The API root, e.g. `http://localhost:8000/v1`. Defaults to the
        /// provider's base-URL variable (`OPENAI_BASE_URL`,
        /// `ANTHROPIC_BASE_URL`), then its own endpoint.
        pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
            self$(.$field)?.base_url = Some(base_url.into());
            self
        }

        /// The API key, sent only in the provider's key header. Defaults
        /// to the provider's key variable (`OPENAI_API_KEY`,
        /// `ANTHROPIC_API_KEY`); may be left out when a base URL is set (a
        /// local server or gateway usually needs none).
        pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
            self$(.$field)?.api_key = Some(api_key.into());
            self
        }

        /// The request timeout (default: `LC_AGENT_MODEL_TIMEOUT` in
        /// seconds, else 120 s): for a whole request; when streaming, for
        /// the response to start and then between two events, so an
        /// answer still producing tokens lives past it.
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self$(.$field)?.timeout = Some(timeout);
            self
        }

        /// How many times a request that failed with 429, 5xx or a
        /// connection error is tried again (default 3; 0 disables
        /// retries).
        pub fn max_retries(mut self, max_retries: u32) -> Self {
            self$(.$field)?.max_retries = Some(max_retries);
            self
        }

        /// The first retry waits about this long, and each next one twice
        /// as long, with jitter (default 500 ms). A `Retry-After` header
        /// wins.
        pub fn retry_base_delay(mut self, delay: std::time::Duration) -> Self {
            self$(.$field)?.retry_base_delay = Some(delay);
            self
        }

        /// The sampling temperature; the server's default when not set.
        pub fn temperature(mut self, temperature: f32) -> Self {
            self$(.$field)?.temperature = Some(temperature);
            self
        }

        /// The most tokens an answer may have; the provider's default
        /// when not set.
        pub fn max_tokens(mut self, max_tokens: u32) -> Self {
            self$(.$field)?.max_tokens = Some(max_tokens).filter(|n| *n > 0);
            self
        }

        /// How many tokens the model reads at most (prompt and answer),
        /// when you know better than the server: it wins over what the
        /// server says (see
        /// [`ChatModel::context_window`](crate::ChatModel::context_window)).
        pub fn context_window(mut self, tokens: usize) -> Self {
            self$(.$field)?.context_window = Some(tokens).filter(|n| *n > 0);
            self
        }

        /// Whether the model reads images. `false` makes a request that
        /// carries one fail with
        /// [`ModelError::ImagesNotSupported`](crate::ModelError::ImagesNotSupported)
        /// before anything is sent; unset, images are sent and a server
        /// that refuses them gets the same error.
        pub fn images(mut self, images: bool) -> Self {
            self$(.$field)?.images = Some(images);
            self
        }
    };
}
#[cfg_attr(
    not(any(feature = "openai", feature = "anthropic")),
    allow(unused_imports)
)]
pub(crate) use http_setters;

impl HttpSettings {
    http_setters!();
}

/// What [`HttpSettings`] come to for one provider, the environment read.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) struct Resolved {
    /// The model named by the settings or the provider's variable.
    pub(crate) model: Option<String>,
    /// The API root, without a trailing `/`.
    pub(crate) base_url: String,
    /// Whether the base URL was given (settings or variable), not the
    /// provider's own endpoint.
    pub(crate) base_url_given: bool,
    pub(crate) api_key: Option<String>,
    pub(crate) timeout: Duration,
    pub(crate) max_retries: u32,
    pub(crate) retry_base_delay: Duration,
}

#[cfg(any(feature = "openai", feature = "anthropic"))]
impl HttpSettings {
    /// The settings for `row`'s provider, filled from its environment
    /// variables; a [`ModelError::Config`] when there is neither a key
    /// nor a base URL (the provider's own endpoint needs a key), or
    /// `LC_AGENT_MODEL_TIMEOUT` is not a number of seconds.
    pub(crate) fn resolve(&self, row: &ProviderRow) -> Result<Resolved, ModelError> {
        use super::http::{config_error, env_var, non_empty};
        let base_url = non_empty(self.base_url.clone()).or_else(|| env_var(row.base_url_env));
        let model = non_empty(self.model.clone()).or_else(|| env_var(row.model_env));
        let api_key = non_empty(self.api_key.clone()).or_else(|| env_var(row.api_key_env));
        if api_key.is_none() && base_url.is_none() {
            return Err(config_error(format!(
                "no API key for {}: set {} or call `.api_key(..)` \
                 (a local server needs only a base URL: set {} or call `.base_url(..)`)",
                row.default_base_url, row.api_key_env, row.base_url_env
            )));
        }
        let timeout = match self.timeout {
            Some(timeout) => timeout,
            None => match env_var(TIMEOUT_ENV) {
                None => DEFAULT_TIMEOUT,
                Some(text) => text
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .map(Duration::from_secs_f64)
                    .ok_or_else(|| {
                        config_error(format!(
                            "{TIMEOUT_ENV}=`{text}`: expected a number of seconds, such as 300"
                        ))
                    })?,
            },
        };
        Ok(Resolved {
            model,
            base_url_given: base_url.is_some(),
            base_url: base_url
                .as_deref()
                .unwrap_or(row.default_base_url)
                .trim_end_matches('/')
                .to_string(),
            api_key,
            timeout,
            max_retries: self.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
            retry_base_delay: self.retry_base_delay.unwrap_or(DEFAULT_RETRY_BASE_DELAY),
        })
    }
}
