//! [`ApiError`]: every way a request fails, each with its HTTP status and
//! a JSON body in OpenAI's shape (`{"error": {"message", "type", "code"}}`),
//! so OpenAI clients show the message.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use lc_agent::ListError;
use serde_json::json;

/// A failed request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// No token, or one the server does not know (401).
    #[error("{0}")]
    Unauthorized(String),
    /// The session belongs to another user (403).
    #[error("session {0} belongs to another user")]
    Forbidden(uuid::Uuid),
    /// No such session (404).
    #[error("{0}")]
    NotFound(String),
    /// The request is well-formed JSON but says something impossible (400).
    #[error("{0}")]
    BadRequest(String),
    /// A run of the session is going on, or it was saved by someone else
    /// since it was loaded (409); nothing was written.
    #[error("{0}")]
    Conflict(String),
    /// The session store failed (503).
    #[error("session store: {0}")]
    Store(#[source] ListError),
    /// Something inside the server failed (500).
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The error's `type` in the JSON body.
    pub fn kind(&self) -> &'static str {
        match self {
            ApiError::Unauthorized(_) => "authentication_error",
            ApiError::Forbidden(_) => "permission_error",
            ApiError::NotFound(_) => "not_found_error",
            ApiError::BadRequest(_) => "invalid_request_error",
            ApiError::Conflict(_) => "conflict_error",
            ApiError::Store(_) => "store_error",
            ApiError::Internal(_) => "server_error",
        }
    }
}

impl From<ListError> for ApiError {
    fn from(e: ListError) -> Self {
        match e {
            ListError::NotFound { id } => ApiError::NotFound(format!("session {id} not found")),
            e @ ListError::Conflict { .. } => ApiError::Conflict(e.to_string()),
            e @ ListError::Deleted { .. } => ApiError::NotFound(e.to_string()),
            other => ApiError::Store(other),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(error = %self, "request failed");
        }
        let body = json!({"error": {"message": self.to_string(), "type": self.kind(), "code": status.as_u16()}});
        (status, Json(body)).into_response()
    }
}
