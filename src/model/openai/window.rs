//! How many tokens the served model reads: asked of the server once, and
//! learned from its errors.
//!
//! Servers say it in different places; [`probe`] asks each in turn and
//! takes the first answer:
//!
//! | server | where |
//! |---|---|
//! | llama.cpp (`llama-server`) | `GET /props` → `default_generation_settings.n_ctx` |
//! | vLLM | `GET /v1/models` → `data[].max_model_len` |
//! | llama.cpp, LM Studio, OpenRouter | `GET /v1/models` → `data[].meta.n_ctx`, `context_length`, `max_context_length` |
//! | Ollama | `POST /api/show` → `parameters` `num_ctx`, else `model_info.*.context_length` |
//!
//! A server that says nothing (llama-cpp-python, OpenAI) still says it
//! when a prompt does not fit: [`overflow_in`] reads the window (and the
//! prompt's size) from the error texts of llama-cpp-python, llama.cpp,
//! vLLM, OpenAI and Anthropic.

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

/// The probe waits at most this long for each answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Asks the server at `base_url` (the API root, e.g.
/// `http://host:8000/v1`) for the window of `model`; `None` when no
/// endpoint says.
pub(super) async fn probe(
    client: &reqwest::Client,
    base_url: &str,
    api_key: Option<&str>,
    model: &str,
) -> Option<usize> {
    let root = base_url.strip_suffix("/v1").unwrap_or(base_url);
    let get = |url: String| {
        let mut request = client.get(url).timeout(PROBE_TIMEOUT);
        if let Some(key) = api_key {
            request = request.bearer_auth(key);
        }
        request
    };
    if let Some(props) = json_of(get(format!("{root}/props"))).await {
        if let Some(n) = props
            .pointer("/default_generation_settings/n_ctx")
            .or_else(|| props.get("n_ctx"))
            .and_then(Value::as_u64)
        {
            return usize::try_from(n).ok();
        }
    }
    if let Some(models) = json_of(get(format!("{base_url}/models"))).await {
        if let Some(n) = window_in_models(&models, model) {
            return Some(n);
        }
    }
    let mut show = client
        .post(format!("{root}/api/show"))
        .timeout(PROBE_TIMEOUT)
        .json(&serde_json::json!({ "model": model }));
    if let Some(key) = api_key {
        show = show.bearer_auth(key);
    }
    window_in_ollama_show(&json_of(show).await?)
}

/// The JSON body of a successful answer to `request`.
async fn json_of(request: reqwest::RequestBuilder) -> Option<Value> {
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json().await.ok()
}

/// The window of `model` in a `/v1/models` list (the entry with its id,
/// else the only entry).
fn window_in_models(models: &Value, model: &str) -> Option<usize> {
    let entries = models.get("data")?.as_array()?;
    let entry = entries
        .iter()
        .find(|e| e.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (entries.len() == 1).then(|| &entries[0]))?;
    [
        "/max_model_len",
        "/meta/n_ctx",
        "/context_length",
        "/max_context_length",
        "/context_window",
        "/meta/n_ctx_train",
    ]
    .iter()
    .find_map(|path| entry.pointer(path)?.as_u64())
    .and_then(|n| usize::try_from(n).ok())
}

/// The window in an Ollama `/api/show` answer: the `num_ctx` it runs
/// with, else the model's trained length.
fn window_in_ollama_show(show: &Value) -> Option<usize> {
    let num_ctx = show
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|params| {
            params.lines().find_map(|line| {
                let mut words = line.split_whitespace();
                (words.next()? == "num_ctx").then(|| words.next()?.parse::<usize>().ok())?
            })
        });
    num_ctx.or_else(|| {
        show.get("model_info")?
            .as_object()?
            .iter()
            .find(|(key, _)| key.ends_with(".context_length"))
            .and_then(|(_, n)| usize::try_from(n.as_u64()?).ok())
    })
}

/// What an error said about a prompt that does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Overflow {
    /// The prompt's (or the whole request's) size, when said.
    pub(super) tokens: Option<usize>,
    /// The window, when said.
    pub(super) window: Option<usize>,
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
pub(super) fn overflow_in(body: &str) -> Option<Overflow> {
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
pub(super) fn rough_tokens(body_bytes: usize) -> usize {
    body_bytes.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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

    #[test]
    fn windows_in_model_lists_and_ollama() {
        let vllm = json!({"data": [{"id": "m", "max_model_len": 4096}]});
        assert_eq!(window_in_models(&vllm, "m"), Some(4096));
        let llama_cpp = json!({"data": [{"id": "x.gguf", "meta": {"n_ctx_train": 8192}}]});
        assert_eq!(
            window_in_models(&llama_cpp, "other"),
            Some(8192),
            "the only entry"
        );
        let two = json!({"data": [{"id": "a", "context_length": 1}, {"id": "b"}]});
        assert_eq!(window_in_models(&two, "b"), None);
        let ollama = json!({"parameters": "stop \"<|eot|>\"\nnum_ctx 8192", "model_info": {"llama.context_length": 131072}});
        assert_eq!(window_in_ollama_show(&ollama), Some(8192));
        let ollama = json!({"model_info": {"qwen2.context_length": 32768}});
        assert_eq!(window_in_ollama_show(&ollama), Some(32768));
    }
}
