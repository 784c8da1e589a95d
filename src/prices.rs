//! What tokens cost: a price per million tokens for each model (input,
//! output, cached input, cache writes), built in for well-known models and
//! extended by a TOML file (`$LC_AGENT_HOME/prices.toml`, else
//! `~/.lc-agent/prices.toml`) or a blueprint's `[prices]`:
//!
//! ```toml
//! # USD per million tokens; a name matches a model name or its prefix
//! # (the longest match wins; a `provider/` part is ignored).
//! [models."my-finetune"]
//! input = 1.0
//! output = 4.0
//! cached_input = 0.25   # optional: default `input`
//! cache_write = 1.25    # optional: default `input`
//! ```
//!
//! A model nothing names has no price: its tokens are shown without a cost.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::usage::{TokenCounts, UsageTotals};

/// One model's price, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million prompt tokens (not read from a cache).
    pub input: f64,
    /// Per million generated tokens.
    pub output: f64,
    /// Per million prompt tokens read from the provider's cache (default:
    /// `input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    /// Per million prompt tokens written to the provider's cache (default:
    /// `input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

impl Price {
    /// What these counts cost, USD.
    ///
    /// ```
    /// use lc_agent::{Price, TokenCounts};
    ///
    /// let price = Price { input: 2.0, output: 8.0, cached_input: Some(0.5), cache_write: None };
    /// let counts = TokenCounts {
    ///     prompt_tokens: 1_000_000, cache_read_tokens: 500_000, completion_tokens: 100_000,
    ///     ..TokenCounts::default()
    /// };
    /// // 500k uncached at 2.0, 500k cached at 0.5, 100k out at 8.0
    /// assert!((price.cost(&counts) - 2.05).abs() < 1e-9);
    /// ```
    pub fn cost(&self, counts: &TokenCounts) -> f64 {
        let uncached = counts
            .prompt_tokens
            .saturating_sub(counts.cache_read_tokens)
            .saturating_sub(counts.cache_write_tokens);
        let micros = uncached as f64 * self.input
            + counts.cache_read_tokens as f64 * self.cached_input.unwrap_or(self.input)
            + counts.cache_write_tokens as f64 * self.cache_write.unwrap_or(self.input)
            + counts.completion_tokens as f64 * self.output;
        micros / 1_000_000.0
    }
}

/// Built-in prices (USD per million tokens, as the providers list them):
/// name, input, output, cached input, cache write.
const BUILT_IN: &[(&str, f64, f64, f64, Option<f64>)] = &[
    ("gpt-4o-mini", 0.15, 0.60, 0.075, None),
    ("gpt-4o", 2.50, 10.00, 1.25, None),
    ("gpt-4.1-nano", 0.10, 0.40, 0.025, None),
    ("gpt-4.1-mini", 0.40, 1.60, 0.10, None),
    ("gpt-4.1", 2.00, 8.00, 0.50, None),
    ("gpt-5-nano", 0.05, 0.40, 0.005, None),
    ("gpt-5-mini", 0.25, 2.00, 0.025, None),
    ("gpt-5", 1.25, 10.00, 0.125, None),
    ("o4-mini", 1.10, 4.40, 0.275, None),
    ("o3", 2.00, 8.00, 0.50, None),
    ("claude-3-5-haiku", 0.80, 4.00, 0.08, Some(1.00)),
    ("claude-3-7-sonnet", 3.00, 15.00, 0.30, Some(3.75)),
    ("claude-haiku-4", 1.00, 5.00, 0.10, Some(1.25)),
    ("claude-sonnet-4", 3.00, 15.00, 0.30, Some(3.75)),
    ("claude-opus-4", 15.00, 75.00, 1.50, Some(18.75)),
    ("claude-opus-4-5", 5.00, 25.00, 0.50, Some(6.25)),
];

/// A price table: model name (or prefix) -> [`Price`].
///
/// ```
/// use lc_agent::Prices;
///
/// let mut prices = Prices::built_in();
/// assert_eq!(prices.of("gpt-4o-mini-2024-07-18").map(|p| p.input), Some(0.15));
/// assert!(prices.of("SmolLM2-135M").is_none());
/// prices.extend_toml("[models.\"SmolLM2\"]\ninput = 0.0\noutput = 0.0\n").unwrap();
/// assert!(prices.of("SmolLM2-135M").is_some());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    /// Model name or prefix -> price.
    #[serde(default)]
    pub models: BTreeMap<String, Price>,
}

/// What usage costs: the dollars of the models with a price, and the
/// models without one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cost {
    /// USD, for the models with a price; `None` when none has one.
    pub usd: Option<f64>,
    /// Models whose tokens have no price.
    pub unpriced: Vec<String>,
}

/// A price file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PricesError {
    /// The file could not be read.
    #[error("cannot read the price table {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not a price table.
    #[error("the price table {path} is not valid: {message}")]
    Parse {
        /// The file (or `<text>`).
        path: PathBuf,
        /// What is wrong, where.
        message: String,
    },
}

impl Prices {
    /// The built-in table.
    pub fn built_in() -> Self {
        Self {
            models: BUILT_IN
                .iter()
                .map(|(name, input, output, cached, write)| {
                    (
                        (*name).to_string(),
                        Price {
                            input: *input,
                            output: *output,
                            cached_input: Some(*cached),
                            cache_write: *write,
                        },
                    )
                })
                .collect(),
        }
    }

    /// The built-in table with the user's file
    /// (`$LC_AGENT_HOME/prices.toml`, else `~/.lc-agent/prices.toml`) on top; a file that cannot be used is a
    /// warning naming it (logged), and the built-in table stays.
    pub fn load() -> Self {
        let mut prices = Self::built_in();
        let path = Self::user_file();
        if path.exists()
            && let Err(e) = prices.extend_file(&path)
        {
            tracing::warn!("{e}; using the built-in prices");
        }
        prices
    }

    /// `$LC_AGENT_HOME/prices.toml`, else `~/.lc-agent/prices.toml`.
    pub(crate) fn user_file() -> PathBuf {
        match std::env::var_os("LC_AGENT_HOME") {
            Some(home) if !home.is_empty() => PathBuf::from(home).join("prices.toml"),
            _ => dirs::home_dir()
                .unwrap_or_default()
                .join(".lc-agent")
                .join("prices.toml"),
        }
    }

    /// Adds (or replaces) the models of a `prices.toml` file.
    pub fn extend_file(&mut self, path: &Path) -> Result<(), PricesError> {
        let text = std::fs::read_to_string(path).map_err(|source| PricesError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        self.extend_toml(&text).map_err(|e| match e {
            PricesError::Parse { message, .. } => PricesError::Parse {
                path: path.to_path_buf(),
                message,
            },
            other => other,
        })
    }

    /// Adds (or replaces) the models of a `prices.toml` text.
    pub fn extend_toml(&mut self, text: &str) -> Result<(), PricesError> {
        let file: Prices = toml::from_str(text).map_err(|e| PricesError::Parse {
            path: PathBuf::from("<text>"),
            message: e.to_string(),
        })?;
        self.extend(&file);
        Ok(())
    }

    /// Adds (or replaces) `other`'s models (a blueprint's prices).
    pub fn extend(&mut self, other: &Prices) {
        self.models
            .extend(other.models.iter().map(|(k, v)| (k.clone(), *v)));
    }

    /// The price of `model` (after any `provider/` part): its exact name
    /// first, else the longest name of which it is a dated or sized
    /// version — the name followed by `-`, `_` or `.` and a digit
    /// (`gpt-4o-2024-08-06`, `SmolLM2-135M`), or by `:` or `@` (a tag).
    /// Another model of the family is not a version: `o3-mini` and
    /// `o3-pro` do not get `o3`'s price.
    ///
    /// ```
    /// use lc_agent::Prices;
    ///
    /// let prices = Prices::built_in();
    /// assert_eq!(prices.of("o3").map(|p| p.input), Some(2.0));
    /// assert_eq!(prices.of("o3-2025-04-16").map(|p| p.input), Some(2.0));
    /// assert!(prices.of("o3-mini").is_none());
    /// assert!(prices.of("o3-pro").is_none());
    /// assert_eq!(prices.of("openai/gpt-4o-mini").map(|p| p.input), Some(0.15));
    /// ```
    pub fn of(&self, model: &str) -> Option<Price> {
        let bare = model.rsplit('/').next().unwrap_or(model);
        if let Some(price) = self.models.get(model).or_else(|| self.models.get(bare)) {
            return Some(*price);
        }
        let version_of = |model: &str, name: &str| {
            let Some(rest) = model.strip_prefix(name) else {
                return false;
            };
            let mut chars = rest.chars();
            match chars.next() {
                Some(':' | '@') => true,
                Some('-' | '_' | '.') => chars.next().is_some_and(|c| c.is_ascii_digit()),
                _ => false,
            }
        };
        self.models
            .iter()
            .filter(|(name, _)| version_of(model, name) || version_of(bare, name))
            .max_by_key(|(name, _)| name.len())
            .map(|(_, price)| *price)
    }

    /// What `totals` cost, model by model.
    pub fn cost(&self, totals: &UsageTotals) -> Cost {
        let mut cost = Cost::default();
        for (model, counts) in &totals.by_model {
            match self.of(model) {
                Some(price) => *cost.usd.get_or_insert(0.0) += price.cost(counts),
                None => cost.unpriced.push(model.clone()),
            }
        }
        cost
    }
}

impl UsageTotals {
    /// These totals as JSON with their cost: `cost_usd` in all and by model
    /// (absent for a model without a price, and in all when no model has
    /// one), and `unpriced_models` when some have none.
    pub fn priced(&self, prices: &Prices) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        let cost = prices.cost(self);
        if let Some(map) = value.as_object_mut() {
            if let Some(usd) = cost.usd {
                map.insert("cost_usd".into(), usd.into());
            }
            if !cost.unpriced.is_empty() {
                map.insert("unpriced_models".into(), cost.unpriced.clone().into());
            }
            if let Some(Value::Object(models)) = map.get_mut("by_model") {
                for (model, counts) in models.iter_mut() {
                    if let (Some(c), Some(price)) = (counts.as_object_mut(), prices.of(model))
                        && let Some(n) = self.by_model.get(model)
                    {
                        c.insert("cost_usd".into(), price.cost(n).into());
                    }
                }
            }
        }
        value
    }
}
