//! A prompt that does not fit, as servers say it: [`overflow_in`] reads
//! the window (and the prompt's size) from the error texts of
//! llama-cpp-python, llama.cpp, vLLM, OpenAI and Anthropic, and
//! [`LearnedWindow`] keeps what an error said, so the next request (and
//! the summaries) know the window.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::LazyLock;

use regex::Regex;

use crate::error::ModelError;

/// What an error said about a prompt that does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Overflow {
    /// The prompt's (or the whole request's) size, when said.
    pub(crate) tokens: Option<usize>,
    /// The window, when said.
    pub(crate) window: Option<usize>,
}

/// Error texts of servers refusing a prompt that does not fit, each with
/// the groups `tokens` and `window` where the text has them.
static OVERFLOW_PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // llama-cpp-python
        r"Requested tokens \((?<tokens>\d+)\) exceed context window of (?<window>\d+)",
        // OpenAI, vLLM
        r"maximum context length is (?<window>\d+) tokens(?:[^0-9]*(?:requested|has) (?<tokens>\d+))?",
        // Anthropic
        r"prompt is too long: (?<tokens>\d+) tokens > (?<window>\d+)",
        // llama.cpp (`n_prompt_tokens` and `n_ctx` follow in the JSON)
        r"exceeds? the available context size",
        r"context_length_exceeded",
    ]
    .iter()
    .filter_map(|pattern| Regex::new(pattern).ok())
    .collect()
});

/// Reads an error body for a prompt that does not fit; `None` when the
/// error is about something else.
pub(crate) fn overflow_in(body: &str) -> Option<Overflow> {
    let number = |caps: &regex::Captures<'_>, name: &str| {
        caps.name(name)
            .and_then(|m| m.as_str().parse::<usize>().ok())
    };
    let caps = OVERFLOW_PATTERNS
        .iter()
        .find_map(|pattern| pattern.captures(body))?;
    let json_number = |key: &str| {
        let pattern = Regex::new(&format!(r#""{key}"\s*:\s*(\d+)"#)).ok()?;
        pattern
            .captures(body)?
            .get(1)?
            .as_str()
            .parse::<usize>()
            .ok()
    };
    Some(Overflow {
        tokens: number(&caps, "tokens").or_else(|| json_number("n_prompt_tokens")),
        window: number(&caps, "window").or_else(|| json_number("n_ctx")),
    })
}

/// A rough size of a request body in tokens (about four bytes per token
/// for English text and JSON), for messages that need an order of
/// magnitude, never for a decision.
#[cfg_attr(not(feature = "openai"), allow(dead_code))]
pub(crate) fn rough_tokens(body_bytes: usize) -> usize {
    body_bytes.div_ceil(4)
}

/// The window an error gave (shared by a model's clones).
#[derive(Debug, Default)]
pub(crate) struct LearnedWindow(AtomicUsize);

impl LearnedWindow {
    /// The window an error gave, if one did.
    pub(crate) fn get(&self) -> Option<usize> {
        let learned = self.0.load(Ordering::Relaxed);
        (learned > 0).then_some(learned)
    }

    /// `error`, read for a prompt that does not fit: such an error becomes
    /// [`ModelError::ContextOverflow`] (with `known` as the window when the
    /// error gives none), and the window it gives is kept.
    pub(crate) fn overflow_or(&self, error: ModelError, known: Option<usize>) -> ModelError {
        let overflow = match &error {
            ModelError::Http { body, .. } => overflow_in(body),
            ModelError::ContextOverflow { tokens, window } => Some(Overflow {
                tokens: *tokens,
                window: *window,
            }),
            _ => None,
        };
        let Some(overflow) = overflow else {
            return error;
        };
        if let Some(window) = overflow.window {
            self.0.store(window, Ordering::Relaxed);
        }
        ModelError::ContextOverflow {
            tokens: overflow.tokens,
            window: overflow.window.or(known),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_texts_of_known_servers() {
        let llama_cpp_python = r#"{"error":{"message":"Requested tokens (2620) exceed context window of 2048","type":"internal_server_error"}}"#;
        assert_eq!(
            overflow_in(llama_cpp_python),
            Some(Overflow {
                tokens: Some(2620),
                window: Some(2048)
            })
        );
        let openai = "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the completion).";
        assert_eq!(
            overflow_in(openai),
            Some(Overflow {
                tokens: Some(9000),
                window: Some(8192)
            })
        );
        let vllm = "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens.";
        assert_eq!(
            overflow_in(vllm),
            Some(Overflow {
                tokens: Some(5000),
                window: Some(4096)
            })
        );
        let llama_cpp = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":3000,"n_ctx":2048}}"#;
        assert_eq!(
            overflow_in(llama_cpp),
            Some(Overflow {
                tokens: Some(3000),
                window: Some(2048)
            })
        );
        let anthropic = "prompt is too long: 210000 tokens > 200000 maximum";
        assert_eq!(
            overflow_in(anthropic),
            Some(Overflow {
                tokens: Some(210_000),
                window: Some(200_000)
            })
        );
        assert_eq!(overflow_in("Internal Server Error"), None);
    }
}
