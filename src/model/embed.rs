//! [`Embedder`]: texts to vectors, for search by meaning (long-term
//! memory's vector search). The OpenAI-compatible client is
//! [`OpenAiEmbedder`](crate::OpenAiEmbedder); tests use a deterministic one
//! of their own.

use async_trait::async_trait;

use crate::error::ModelError;

/// Turns texts into vectors whose closeness says how close their meaning
/// is.
///
/// Vectors of different models are not comparable: whoever stores them
/// keeps [`Embedder::model_name`] beside them.
///
/// ```
/// use async_trait::async_trait;
/// use lc_agent::{Embedder, ModelError};
///
/// /// Two dimensions: how many `a`s and how many `b`s.
/// struct Letters;
///
/// #[async_trait]
/// impl Embedder for Letters {
///     fn model_name(&self) -> &str {
///         "letters"
///     }
///     async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
///         Ok(texts
///             .iter()
///             .map(|t| vec![t.matches('a').count() as f32, t.matches('b').count() as f32])
///             .collect())
///     }
/// }
/// ```
#[async_trait]
pub trait Embedder: Send + Sync + 'static {
    /// The model the vectors come from (stored with them).
    fn model_name(&self) -> &str;

    /// One vector per text, in the order of `texts`, all of one length.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError>;
}
