//! The provider table's facts: [`Provider`], one [`ProviderRow`] per
//! provider (its name, environment variables and defaults). Below every
//! provider's folder, so each reads its own row; `provider/mod.rs` adds
//! what needs the providers themselves (opening a model, parsing).

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
/// read by [`Provider::from_env`], parsing, the provider's name and
/// `Provider::open_with`.
#[derive(Debug)]
pub struct ProviderRow {
    /// The provider this row describes.
    pub(crate) provider: Provider,
    /// Its name in flags and blueprints.
    pub(crate) name: &'static str,
    /// The variable read for the API key.
    pub(crate) api_key_env: &'static str,
    /// The variable read for the API root.
    pub base_url_env: &'static str,
    /// The variable read for the model name.
    pub model_env: &'static str,
    /// The API root used when no base URL is set.
    pub default_base_url: &'static str,
    /// The model asked when none is named (at the provider's own
    /// endpoint).
    pub default_model: &'static str,
}

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
    },
    ProviderRow {
        provider: Provider::Anthropic,
        name: "anthropic",
        api_key_env: "ANTHROPIC_API_KEY",
        base_url_env: "ANTHROPIC_BASE_URL",
        model_env: "ANTHROPIC_MODEL",
        default_base_url: "https://api.anthropic.com",
        default_model: "claude-sonnet-4-5",
    },
];

impl Provider {
    /// Its row of the provider table: name, variables, defaults.
    pub fn row(self) -> &'static ProviderRow {
        &PROVIDERS[self as usize]
    }
}
