//! [`OpenAiEmbedder`]: `POST {base_url}/embeddings`, the embeddings half
//! of the OpenAI-compatible protocol, over the chat client's transport
//! (the same settings, retries, timeouts and key handling).
//!
//! ```text
//!  embed(texts) ─▶ batches of ≤ 64 ─▶ {"model", "input": [..]} ─▶ data[i].embedding
//!                                     500 on a batch ─▶ one text a request from then on
//!  embedding: [f32; d]            as OpenAI, vLLM, Ollama send it
//!             [[f32; d]; tokens]  llama-cpp-python with a model without pooling
//!                                 (a chat model): averaged into one vector
//! ```

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::super::embed::Embedder;
use super::super::http::transport::{Outgoing, Transport};
use super::super::http::{config_error, decode, endpoint};
use super::super::provider::table::Provider;
use super::super::settings::HttpSettings;
use super::discover;
use crate::error::ModelError;

/// The embedding model of OpenAI's own endpoint when none is named.
const DEFAULT_MODEL: &str = "text-embedding-3-small";

/// The most texts sent in one request.
const MAX_BATCH: usize = 64;

/// Vectors from an OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM,
/// Ollama, llama.cpp and llama-cpp-python with `--embedding`, LM Studio).
///
/// Built from the same [`HttpSettings`] as the chat model (endpoint, key,
/// timeout, retries; sampling settings are ignored). The model name is
/// the settings' (`OPENAI_MODEL` is not read: it names a chat model); without
/// one, OpenAI's own endpoint gets `text-embedding-3-small` and any other
/// server the only model it lists.
///
/// - Texts go in batches of at most 64; a server that fails a batch with
///   HTTP 500 (llama-cpp-python does for more than one text) gets each
///   text alone, and this embedder (and its clones) asks so from then on.
/// - A server that answers with one vector per token (llama-cpp-python
///   serving a model without pooling) gets them averaged (mean pooling).
/// - An answer with a wrong number of vectors, empty or non-finite ones,
///   or vectors of different lengths is a [`ModelError::InvalidResponse`].
///
/// ```
/// use lc_agent::{Embedder, HttpSettings, OpenAiEmbedder};
///
/// let embedder = OpenAiEmbedder::new(
///     HttpSettings::default()
///         .base_url("http://127.0.0.1:8000/v1")
///         .model("nomic-embed-text"),
/// )?;
/// assert_eq!(embedder.model_name(), "nomic-embed-text");
/// # Ok::<(), lc_agent::ModelError>(())
/// ```
#[derive(Clone)]
pub struct OpenAiEmbedder {
    transport: Transport,
    model: String,
    /// The server fails batches of several texts: one text a request.
    one_at_a_time: Arc<AtomicBool>,
}

impl fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("model", &self.model)
            .field("endpoint", &self.transport.endpoint.as_str())
            .field("api_key", &self.transport.api_key)
            .field("timeout", &self.transport.timeout)
            .finish_non_exhaustive()
    }
}

/// The request body.
#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    input: &'a [String],
}

impl Outgoing for WireRequest<'_> {
    fn model(&self) -> &str {
        self.model
    }
    fn stream(&self) -> bool {
        false
    }
    fn counts(&self) -> (usize, usize) {
        (self.input.len(), 0)
    }
}

#[derive(Deserialize)]
struct WireResponse {
    data: Vec<WireEmbedding>,
}

#[derive(Deserialize)]
struct WireEmbedding {
    #[serde(default)]
    index: Option<usize>,
    embedding: WireVector,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum WireVector {
    One(Vec<f32>),
    PerToken(Vec<Vec<f32>>),
}

impl OpenAiEmbedder {
    /// The embedder these settings describe (the environment fills the
    /// endpoint and key as for the chat model: `OPENAI_BASE_URL`,
    /// `OPENAI_API_KEY`). A [`ModelError::Config`] when there is neither a
    /// key nor a base URL, the URL is invalid, or a server other than
    /// OpenAI's names no model and does not list exactly one.
    pub fn new(settings: HttpSettings) -> Result<Self, ModelError> {
        let row = Provider::OpenAi.row();
        let model = super::super::http::non_empty(settings.model.clone());
        let resolved = settings.resolve(row)?;
        let model = match (model, resolved.base_url_given) {
            (Some(model), _) => model,
            (None, false) => DEFAULT_MODEL.to_string(),
            (None, true) => discover::only_model(&resolved.base_url, resolved.api_key.as_deref())
                .map_err(|why| {
                config_error(format!(
                    "no embedding model name for {} ({why}): name the model that server \
                     serves for embeddings",
                    resolved.base_url
                ))
            })?,
        };
        let transport = Transport::new(endpoint(&resolved.base_url, "embeddings")?, &resolved)?;
        Ok(Self {
            transport,
            model,
            one_at_a_time: Arc::default(),
        })
    }

    /// One request: a vector per text of `batch`.
    async fn request(&self, batch: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        let body = WireRequest {
            model: &self.model,
            input: batch,
        };
        let response = self.transport.post(&body).await?;
        let text = self.transport.text(response, false).await?;
        let wire: WireResponse = decode(&text, self.transport.api_key.as_ref())?;
        vectors(wire, batch.len())
    }
}

/// The answer's vectors in input order, per-token ones averaged, checked.
fn vectors(wire: WireResponse, expected: usize) -> Result<Vec<Vec<f32>>, ModelError> {
    let invalid = |message: String| ModelError::InvalidResponse {
        message,
        source: None,
    };
    if wire.data.len() != expected {
        return Err(invalid(format!(
            "{} embeddings for {expected} texts",
            wire.data.len()
        )));
    }
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (at, item) in wire.data.into_iter().enumerate() {
        let i = item.index.unwrap_or(at);
        let slot = slots
            .get_mut(i)
            .ok_or_else(|| invalid(format!("embedding index {i} for {expected} texts")))?;
        let vector = match item.embedding {
            WireVector::One(v) => v,
            WireVector::PerToken(tokens) => mean(&tokens).ok_or_else(|| {
                invalid(format!("embedding {i}: token vectors of different lengths"))
            })?,
        };
        if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) {
            return Err(invalid(format!("embedding {i} is empty or not finite")));
        }
        *slot = Some(vector);
    }
    let out: Vec<Vec<f32>> = slots
        .into_iter()
        .enumerate()
        .map(|(i, v)| v.ok_or_else(|| invalid(format!("no embedding for text {i}"))))
        .collect::<Result<_, _>>()?;
    if let Some(first) = out.first()
        && let Some(other) = out.iter().find(|v| v.len() != first.len())
    {
        return Err(invalid(format!(
            "embeddings of {} and {} dimensions in one answer",
            first.len(),
            other.len()
        )));
    }
    Ok(out)
}

/// The average of per-token vectors (`None` when empty or ragged).
fn mean(tokens: &[Vec<f32>]) -> Option<Vec<f32>> {
    let dims = tokens.first()?.len();
    let mut sum = vec![0f32; dims];
    for token in tokens {
        if token.len() != dims {
            return None;
        }
        for (s, x) in sum.iter_mut().zip(token) {
            *s += x;
        }
    }
    let n = tokens.len() as f32;
    Some(sum.into_iter().map(|s| s / n).collect())
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn model_name(&self) -> &str {
        &self.model
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(MAX_BATCH) {
            if batch.len() > 1 && !self.one_at_a_time.load(Ordering::Relaxed) {
                match self.request(batch).await {
                    Ok(vectors) => {
                        out.extend(vectors);
                        continue;
                    }
                    Err(ModelError::Http { status: 500, body }) => {
                        tracing::debug!(model = %self.model, %body, "the embeddings server failed a batch; asking one text at a time");
                        self.one_at_a_time.store(true, Ordering::Relaxed);
                    }
                    Err(e) => return Err(e),
                }
            }
            for text in batch {
                out.extend(self.request(std::slice::from_ref(text)).await?);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_token_vectors_are_averaged_and_answers_are_checked() {
        let wire: WireResponse = serde_json::from_str(
            r#"{"data":[{"index":1,"embedding":[1.0,2.0]},{"index":0,"embedding":[[1.0,0.0],[3.0,2.0]]}]}"#,
        )
        .expect("wire");
        assert_eq!(
            vectors(wire, 2).expect("vectors"),
            vec![vec![2.0, 1.0], vec![1.0, 2.0]]
        );
        let short: WireResponse =
            serde_json::from_str(r#"{"data":[{"embedding":[1.0]}]}"#).expect("wire");
        let e = vectors(short, 2).expect_err("one for two");
        assert!(e.to_string().contains("1 embeddings for 2 texts"), "{e}");
        let ragged: WireResponse =
            serde_json::from_str(r#"{"data":[{"embedding":[1.0]},{"embedding":[1.0,2.0]}]}"#)
                .expect("wire");
        let e = vectors(ragged, 2).expect_err("ragged");
        assert!(e.to_string().contains("1 and 2 dimensions"), "{e}");
    }
}
