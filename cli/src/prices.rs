//! What a turn costs: a small built-in table of prices per million
//! tokens, which the user extends or overrides in
//! `$LC_AGENT_HOME/prices.toml` (else `~/.lc-agent/prices.toml`):
//!
//! ```toml
//! # USD per million tokens; a name matches a model name or its prefix
//! # (the longest match wins).
//! [models."my-finetune"]
//! input = 1.0
//! output = 4.0
//! ```
//!
//! A model nothing names has no price: the footer shows its tokens only.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// One model's price, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub(crate) struct Price {
    /// Per million prompt tokens.
    pub(crate) input: f64,
    /// Per million generated tokens.
    pub(crate) output: f64,
}

/// Built-in prices (USD per million tokens, as the providers list them).
const BUILT_IN: &[(&str, f64, f64)] = &[
    ("gpt-4o-mini", 0.15, 0.60),
    ("gpt-4o", 2.50, 10.00),
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1", 2.00, 8.00),
    ("gpt-5-nano", 0.05, 0.40),
    ("gpt-5-mini", 0.25, 2.00),
    ("gpt-5", 1.25, 10.00),
    ("o4-mini", 1.10, 4.40),
    ("o3", 2.00, 8.00),
    ("claude-3-5-haiku", 0.80, 4.00),
    ("claude-haiku-4", 1.00, 5.00),
    ("claude-sonnet-4", 3.00, 15.00),
    ("claude-opus-4", 15.00, 75.00),
];

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    models: BTreeMap<String, Price>,
}

/// Model name (or prefix) -> price.
#[derive(Debug, Clone)]
pub(crate) struct Prices {
    table: BTreeMap<String, Price>,
}

impl Prices {
    /// The built-in table.
    pub(crate) fn built_in() -> Self {
        Self {
            table: BUILT_IN
                .iter()
                .map(|(name, input, output)| {
                    (
                        (*name).to_string(),
                        Price {
                            input: *input,
                            output: *output,
                        },
                    )
                })
                .collect(),
        }
    }

    /// The built-in table with the user's file on top (a file that cannot
    /// be read is a warning naming it).
    pub(crate) fn load() -> Self {
        let mut prices = Self::built_in();
        if let Some(path) = user_file() {
            if let Ok(text) = std::fs::read_to_string(&path) {
                match prices.extend_toml(&text) {
                    Ok(()) => {}
                    Err(e) => {
                        tracing::warn!(file = %path.display(), error = %e, "ignoring the price table")
                    }
                }
            }
        }
        prices
    }

    /// Adds the models of a `prices.toml` text.
    pub(crate) fn extend_toml(&mut self, text: &str) -> Result<(), toml::de::Error> {
        let file: File = toml::from_str(text)?;
        self.table.extend(file.models);
        Ok(())
    }

    /// The price of `model`: the longest name that is the model's name or
    /// a prefix of it (after any `provider/` part).
    pub(crate) fn of(&self, model: &str) -> Option<Price> {
        let bare = model.rsplit('/').next().unwrap_or(model);
        self.table
            .iter()
            .filter(|(name, _)| model.starts_with(name.as_str()) || bare.starts_with(name.as_str()))
            .max_by_key(|(name, _)| name.len())
            .map(|(_, price)| *price)
    }

    /// What `input` and `output` tokens of `model` cost, when it has a price.
    pub(crate) fn cost(&self, model: &str, input: u64, output: u64) -> Option<f64> {
        self.of(model)
            .map(|p| (input as f64 * p.input + output as f64 * p.output) / 1_000_000.0)
    }
}

/// `$LC_AGENT_HOME/prices.toml`, else `~/.lc-agent/prices.toml`.
fn user_file() -> Option<PathBuf> {
    let home = std::env::var_os("LC_AGENT_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".lc-agent")))?;
    Some(home.join("prices.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins_and_a_file_extends_the_table() {
        let mut prices = Prices::built_in();
        assert_eq!(prices.of("gpt-4o-mini-2024-07-18").unwrap().input, 0.15);
        assert_eq!(prices.of("gpt-4o-2024-08-06").unwrap().input, 2.5);
        assert_eq!(prices.of("openai/gpt-4o").unwrap().output, 10.0);
        assert!(prices.of("SmolLM2-135M").is_none());
        prices
            .extend_toml("[models.\"SmolLM2\"]\ninput = 0.0\noutput = 0.0\n")
            .unwrap();
        assert_eq!(prices.cost("SmolLM2-135M", 1000, 10), Some(0.0));
        let cost = prices.cost("gpt-4o", 1_000_000, 100_000).unwrap();
        assert!((cost - 3.5).abs() < 1e-9, "{cost}");
    }
}
