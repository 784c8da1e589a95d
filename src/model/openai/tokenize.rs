//! Counting tokens the way the server does, with its own tokenizer, where
//! it has an endpoint for it. Which one answers is found once per model
//! (and its clones), then asked directly; a server with none is not asked
//! again.
//!
//! | server | endpoint |
//! |---|---|
//! | llama-cpp-python | `POST /extras/tokenize/count` `{input}` → `count` |
//! | llama.cpp (`llama-server`) | `POST /tokenize` `{content}` → `tokens` |
//! | vLLM | `POST /tokenize` `{model, prompt}` → `count` (and `tokens`) |
//!
//! Ollama and hosted APIs have none: their counts come with each answer
//! (`usage.prompt_tokens`).

use std::time::Duration;

use serde_json::{json, Value};

/// Each question waits at most this long.
const TIMEOUT: Duration = Duration::from_secs(5);

/// A server's tokenizer endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Endpoint {
    /// llama-cpp-python's `/extras/tokenize/count`.
    LlamaCppPython,
    /// llama.cpp's or vLLM's `/tokenize`.
    Tokenize,
}

impl Endpoint {
    /// Every endpoint, in the order they are tried.
    const ALL: [Endpoint; 2] = [Endpoint::LlamaCppPython, Endpoint::Tokenize];

    /// The URL and body asking for `text`'s tokens of `model`.
    fn request(self, root: &str, model: &str, text: &str) -> (String, Value) {
        match self {
            Endpoint::LlamaCppPython => (
                format!("{root}/extras/tokenize/count"),
                json!({ "input": text }),
            ),
            // llama.cpp reads `content`, vLLM `model` and `prompt`; each
            // leaves the other's fields alone.
            Endpoint::Tokenize => (
                format!("{root}/tokenize"),
                json!({ "content": text, "model": model, "prompt": text, "add_special": false }),
            ),
        }
    }
}

/// The tokens in an endpoint's answer: its `count`, else the length of
/// its `tokens`.
fn count_in(answer: &Value) -> Option<usize> {
    answer
        .get("count")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .or_else(|| answer.get("tokens")?.as_array().map(Vec::len))
}

/// `text`'s tokens by `endpoint` of the server at `base_url`.
pub(super) async fn count(
    client: &reqwest::Client,
    base_url: &str,
    api_key: Option<&str>,
    model: &str,
    endpoint: Endpoint,
    text: &str,
) -> Option<usize> {
    let root = base_url.strip_suffix("/v1").unwrap_or(base_url);
    let (url, body) = endpoint.request(root, model, text);
    let mut request = client.post(url).timeout(TIMEOUT).json(&body);
    if let Some(key) = api_key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    count_in(&response.json().await.ok()?)
}

/// The server's tokenizer endpoint, found by asking each with a short
/// text; `None` when none answers with a count.
pub(super) async fn find(
    client: &reqwest::Client,
    base_url: &str,
    api_key: Option<&str>,
    model: &str,
) -> Option<Endpoint> {
    for endpoint in Endpoint::ALL {
        if count(client, base_url, api_key, model, endpoint, "hello")
            .await
            .is_some()
        {
            return Some(endpoint);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_or_a_list_of_tokens_is_read() {
        assert_eq!(count_in(&json!({"count": 7})), Some(7));
        assert_eq!(count_in(&json!({"tokens": [1, 2, 3]})), Some(3));
        assert_eq!(count_in(&json!({"count": 2, "tokens": [1, 2]})), Some(2));
        assert_eq!(count_in(&json!({"error": "no"})), None);
    }
}
