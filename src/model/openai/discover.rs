//! The model a server serves when nobody named one: a server whose
//! `GET {base_url}/models` lists exactly one model (llama.cpp's server,
//! llama-cpp-python, a one-model vLLM) is asked for that one, and a
//! warning says so. Asked once per base URL in a process.
//!
//! Building a model is not async, so the question is asked on a thread
//! of its own (with its own small runtime), which works whether or not
//! the caller runs inside tokio; it waits at most [`ASK_TIMEOUT`].

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

/// The longest the server's list of models is waited for.
const ASK_TIMEOUT: Duration = Duration::from_secs(10);

/// The models found per base URL (in this process).
fn found() -> &'static Mutex<HashMap<String, String>> {
    static FOUND: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    FOUND.get_or_init(Mutex::default)
}

/// The only model the server at `base_url` lists; otherwise why not, in
/// words (no answer, no models, several), for an error to quote.
pub(super) fn only_model(base_url: &str, api_key: Option<&str>) -> Result<String, String> {
    if let Some(name) = found().lock().ok().and_then(|f| f.get(base_url).cloned()) {
        return Ok(name);
    }
    let url = format!("{base_url}/models");
    let key = api_key.map(str::to_string);
    let ask = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(list_models(&url, key.as_deref()))
    });
    let names = ask
        .join()
        .map_err(|_| "asking it for its models failed".to_string())??;
    match names.as_slice() {
        [name] => {
            tracing::warn!(
                model = %name,
                base_url,
                "no model named: using `{name}`, the only model the server lists"
            );
            if let Ok(mut found) = found().lock() {
                found.insert(base_url.to_string(), name.clone());
            }
            Ok(name.clone())
        }
        [] => Err("it lists no models".to_string()),
        several => Err(format!(
            "it lists {} models ({})",
            several.len(),
            several
                .iter()
                .take(5)
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The ids of `GET {url}`'s `data` (the OpenAI list of models).
async fn list_models(url: &str, api_key: Option<&str>) -> Result<Vec<String>, String> {
    let client = reqwest::Client::builder()
        .timeout(ASK_TIMEOUT)
        .build()
        .map_err(|e| e.to_string())?;
    let mut request = client.get(url);
    if let Some(key) = api_key {
        request = request.bearer_auth(key);
    }
    let response = request
        .send()
        .await
        .map_err(|_| format!("it did not answer `GET {url}`"))?;
    if !response.status().is_success() {
        return Err(format!(
            "it answered `GET {url}` with HTTP {}",
            response.status().as_u16()
        ));
    }
    let list: Value = response
        .json()
        .await
        .map_err(|_| format!("its answer to `GET {url}` is not a list of models"))?;
    Ok(list["data"]
        .as_array()
        .map(|models| {
            models
                .iter()
                .filter_map(|m| m["id"].as_str())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default())
}
