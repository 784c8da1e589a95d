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
//! | llama-cpp-python | nowhere: a server answering `POST /extras/tokenize/count` is it, and its default `--n_ctx` (2,048) is assumed |
//!
//! A server that says nothing (OpenAI; llama-cpp-python started with
//! another `--n_ctx`) still says it when a prompt does not fit:
//! `http::overflow` reads the window (and the prompt's size) from its
//! error texts, and that window wins over the probe's.

use std::time::Duration;

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
    if let Some(props) = json_of(get(format!("{root}/props"))).await
        && let Some(n) = props
            .pointer("/default_generation_settings/n_ctx")
            .or_else(|| props.get("n_ctx"))
            .and_then(Value::as_u64)
    {
        return usize::try_from(n).ok();
    }
    if let Some(models) = json_of(get(format!("{base_url}/models"))).await
        && let Some(n) = window_in_models(&models, model)
    {
        return Some(n);
    }
    let post = |url: String, body: Value| {
        let mut request = client.post(url).timeout(PROBE_TIMEOUT).json(&body);
        if let Some(key) = api_key {
            request = request.bearer_auth(key);
        }
        request
    };
    let show = post(
        format!("{root}/api/show"),
        serde_json::json!({ "model": model }),
    );
    if let Some(n) = json_of(show).await.and_then(|s| window_in_ollama_show(&s)) {
        return Some(n);
    }
    // llama-cpp-python says its window nowhere; its own `/extras` endpoint
    // says it is the one answering, and then its default applies.
    let count = post(
        format!("{root}/extras/tokenize/count"),
        serde_json::json!({ "input": "" }),
    );
    if json_of(count)
        .await
        .is_some_and(|c| c.get("count").is_some())
    {
        tracing::debug!(
            window = LLAMA_CPP_PYTHON_DEFAULT,
            "llama-cpp-python does not say its window: its default (--n_ctx) is assumed"
        );
        return Some(LLAMA_CPP_PYTHON_DEFAULT);
    }
    None
}

/// llama-cpp-python's default `--n_ctx`, assumed when it is the server
/// (it reports its window nowhere; a bigger one is given with
/// `--context-window`, and an overflow error still says the real one).
const LLAMA_CPP_PYTHON_DEFAULT: usize = 2048;

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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
