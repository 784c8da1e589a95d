//! [`OptionalJson`]: a JSON body that may be left out.
//!
//! ```text
//!  no body (or an empty one)   ─▶ T::default()
//!  JSON of T's shape           ─▶ T
//!  not JSON                    ─▶ 400        JSON of another shape ─▶ 422
//! ```
//!
//! (The content type is checked before: a body needs
//! `Content-Type: application/json`, see `guard.rs`.)

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::de::DeserializeOwned;

/// A JSON body, or `T::default()` when there is none.
#[derive(Debug, Clone, Default)]
pub(crate) struct OptionalJson<T>(pub(crate) T);

#[axum::async_trait]
impl<T, S> FromRequest<S> for OptionalJson<T>
where
    T: DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(T::default()));
        }
        Json::<T>::from_bytes(&bytes)
            .map(|Json(value)| Self(value))
            .map_err(IntoResponse::into_response)
    }
}
