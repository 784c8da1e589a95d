//! [`ApiError`]: every way a request fails, each with its HTTP status and
//! a JSON body in OpenAI's shape, so OpenAI clients show the message:
//!
//! ```text
//!  {"error": {"message": "...", "type": "invalid_request_error", "param": null, "code": 400}}
//!  {"error": {"message": "...", "type": "invalid_request_error", "param": "temperature",
//!             "code": "invalid_value"}}       a request field that does not fit (OpenAI's own)
//! ```
//!
//! `param` names the request field at fault (`null` when none does);
//! `code` is OpenAI's string for a field's problem (`invalid_value`,
//! `missing_required_parameter`, `unsupported_parameter`,
//! `model_not_found`), else the HTTP status.
//!
//! One shape everywhere: the handlers' errors, the framework's rejections
//! (a body that is not JSON, a path that is not a session id, a method the
//! route does not have) and the limits' answers (408, 413, 414, 431, 503)
//! all come back like this ([`json_errors`] rewrites any error answer that
//! is not JSON yet).
//!
//! The message says what the client can act on. What only the operator
//! can act on — a Redis host and port, a file path, a model URL, a
//! library's hint — goes to the server's log (with the request id, which
//! the answer carries in `x-request-id`), never into the body.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use lc_agent::{error_chain, ListError, ModelError, NetworkError};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A failed request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// No token, or one the server does not know (401).
    #[error("{0}")]
    Unauthorized(String),
    /// A browser page of another origin, or a `Host` this server does not
    /// answer to (403).
    #[error("{0}")]
    Refused(String),
    /// No such session (404).
    #[error("{0}")]
    NotFound(String),
    /// The request is well-formed JSON but says something impossible, or
    /// is not JSON at all (400).
    #[error("{0}")]
    BadRequest(String),
    /// A request field does not fit (400): OpenAI's shape, naming the
    /// field (`param`) and the problem (`code`).
    #[error("{message}")]
    Invalid {
        /// The field at fault (`temperature`, `messages[2].content`).
        param: String,
        /// OpenAI's code for the problem (`invalid_value`, ...).
        code: &'static str,
        /// What is wrong, in the client's terms.
        message: String,
    },
    /// A chat completion names a model this server does not serve (404,
    /// OpenAI's `model_not_found`).
    #[error("the model `{requested}` does not exist here: this server serves `{served}` (GET /v1/models)")]
    ModelNotFound {
        /// The model asked for.
        requested: String,
        /// The model this server serves.
        served: String,
    },
    /// The body is not `application/json` (415).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The body is JSON of the wrong shape (422).
    #[error("{0}")]
    Unprocessable(String),
    /// A run of the session is going on, or it was saved by someone else
    /// since it was loaded (409); nothing was written.
    #[error("{0}")]
    Conflict(String),
    /// The model failed (502): the message says how, in the client's
    /// terms; the full error went to the log.
    #[error("{0}")]
    Model(String),
    /// The session store failed (503 when it cannot be reached, else 500);
    /// the client sees a plain message, the log the cause.
    #[error("session store: {0}")]
    Store(#[source] ListError),
    /// Something inside the server failed (500); the client sees a plain
    /// message, the log the cause (`source`, when there is one).
    #[error("{message}")]
    Internal {
        /// What failed, in the operator's terms.
        message: String,
        /// Why.
        #[source]
        source: Option<BoxError>,
    },
    /// A run failed: the status and message it reported.
    #[error(transparent)]
    Run(RunFailure),
    /// Any other status with a message (timeouts, limits, methods).
    #[error("{1}")]
    Status(StatusCode, String),
}

/// A run's failure as a client sees it: the HTTP status a request would
/// have failed with (502 the model, 409 a conflict, 404 a deleted
/// session, 503 the store, 504 the time limit) and a message in the
/// client's terms (what failed inside goes to the log).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct RunFailure {
    /// What failed.
    pub message: String,
    /// The HTTP status.
    pub status: u16,
}

impl RunFailure {
    /// A failure with this status and message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            status: status.as_u16(),
        }
    }

    /// The HTTP status (500 for a number that is none).
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl From<&ApiError> for RunFailure {
    fn from(e: &ApiError) -> Self {
        RunFailure::new(e.status(), e.public_message())
    }
}

/// Any error, as a source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What a client is told when the session store cannot be reached (503).
pub(crate) const STORE_UNAVAILABLE: &str =
    "the session store cannot be reached right now; try again shortly";

impl ApiError {
    /// A failure inside the server (500): `message` says what failed,
    /// `source` why (both go to the log only).
    pub(crate) fn internal(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        ApiError::Internal {
            message: message.into(),
            source: Some(source.into()),
        }
    }

    /// A failure inside the server with no error to name (500).
    pub(crate) fn internal_msg(message: impl Into<String>) -> Self {
        ApiError::Internal {
            message: message.into(),
            source: None,
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Refused(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) | ApiError::ModelNotFound { .. } => StatusCode::NOT_FOUND,
            ApiError::BadRequest(_) | ApiError::Invalid { .. } => StatusCode::BAD_REQUEST,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Model(_) => StatusCode::BAD_GATEWAY,
            ApiError::Store(ListError::Unavailable { .. }) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Store(_) | ApiError::Internal { .. } if disk_full(self) => {
                StatusCode::INSUFFICIENT_STORAGE
            }
            ApiError::Store(_) | ApiError::Internal { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Status(status, _) => *status,
            ApiError::Run(failure) => failure.status(),
        }
    }

    /// The error's `type` in the JSON body.
    pub fn kind(&self) -> &'static str {
        kind_of(self.status())
    }

    /// What the client is told: everything it can act on, nothing about
    /// the server's insides.
    pub fn public_message(&self) -> String {
        match self {
            ApiError::Store(ListError::Unavailable { .. }) => STORE_UNAVAILABLE.to_string(),
            ApiError::Store(ListError::Corrupt { id: Some(id), .. }) => {
                format!("session {id} is stored in a form that cannot be read; the server's log says why (delete it, or ask the operator)")
            }
            ApiError::Store(_) | ApiError::Internal { .. } if disk_full(self) => {
                "the server's disk is full: nothing of this request was saved; send it again once \
                 the operator has freed space"
                    .to_string()
            }
            ApiError::Store(_) | ApiError::Internal { .. } => {
                "the server failed to answer this request; its log has the details (look for this answer's x-request-id)".to_string()
            }
            other => other.to_string(),
        }
    }

    /// The JSON body.
    pub(crate) fn body(&self) -> serde_json::Value {
        let status = self.status();
        let (param, code) = match self {
            ApiError::Invalid { param, code, .. } => (json!(param), json!(code)),
            ApiError::ModelNotFound { .. } => (json!("model"), json!("model_not_found")),
            _ => (json!(null), json!(status.as_u16())),
        };
        json!({"error": {"message": self.public_message(), "type": self.kind(), "param": param, "code": code}})
    }
}

/// Whether a full disk (or quota) is what failed, anywhere in `error`'s
/// chain of sources.
fn disk_full(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && (io.kind() == std::io::ErrorKind::StorageFull
                || io.kind() == std::io::ErrorKind::QuotaExceeded)
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// The `type` of an error body for a status.
fn kind_of(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 | 405 | 411 | 413 | 414 | 415 | 422 | 431 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        408 | 504 => "timeout_error",
        409 => "conflict_error",
        429 => "rate_limit_error",
        502 => "model_error",
        507 => "insufficient_storage_error",
        503 => "unavailable_error",
        s if s >= 500 => "server_error",
        _ => "invalid_request_error",
    }
}

impl From<ListError> for ApiError {
    fn from(e: ListError) -> Self {
        match e {
            ListError::NotFound { id } => ApiError::NotFound(format!("session {id} not found")),
            ListError::Conflict { id, found, .. } => ApiError::Conflict(format!(
                "session {id} was changed by another request meanwhile (it is now at revision {found}); nothing was written: load it again and retry"
            )),
            e @ ListError::Deleted { .. } => ApiError::NotFound(e.to_string()),
            other => ApiError::Store(other),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(status = status.as_u16(), error = %error_chain(&self), "request failed");
        } else {
            tracing::debug!(status = status.as_u16(), error = %self, "request refused");
        }
        (status, Json(self.body())).into_response()
    }
}

/// A run that failed: the status and message the client gets (the model's
/// failure in its terms; what failed inside goes to the log).
pub(crate) fn run_failed(session: uuid::Uuid, e: &NetworkError) -> RunFailure {
    tracing::error!(%session, error = %error_chain(e), "the run failed");
    let model = find_model_error(e);
    let what = match model {
        Some(ModelError::Connect { .. }) => "the model could not be reached".to_string(),
        Some(ModelError::Http { status, .. }) => {
            format!("the model answered with HTTP {status}")
        }
        Some(ModelError::Timeout(d)) => format!("the model did not answer within {d:?}"),
        Some(ModelError::InvalidResponse { .. }) => {
            "the model's answer could not be read".to_string()
        }
        Some(ModelError::Config { .. }) => {
            "the server's model is not configured correctly".to_string()
        }
        // Said in the user's terms already: what to change is theirs to do
        // (a shorter conversation, a model that reads images).
        Some(other @ ModelError::ContextOverflow { .. })
        | Some(other @ ModelError::ImagesNotSupported { .. })
        | Some(other @ ModelError::ScriptExhausted { .. }) => other.to_string(),
        Some(_) => "the model failed".to_string(),
        None => match e {
            NetworkError::StepLimit { .. } => e.to_string(),
            NetworkError::NodeFailed { kind, .. } => {
                format!("a `{kind}` step failed; the server's log has the details")
            }
            _ => "the agent failed; the server's log has the details".to_string(),
        },
    };
    RunFailure::new(StatusCode::BAD_GATEWAY, format!("the run failed: {what}"))
}

/// The model error in `e`'s causes, if any.
fn find_model_error(e: &NetworkError) -> Option<&ModelError> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        if let Some(m) = err.downcast_ref::<ModelError>() {
            return Some(m);
        }
        if let Some(NetworkError::Model(m)) = err.downcast_ref::<NetworkError>() {
            return Some(m);
        }
        current = err.source();
    }
    None
}

/// The largest error body [`json_errors`] reads to reuse as the message.
const MAX_PLAIN_ERROR: usize = 4096;

/// Middleware: an error answer that is not JSON yet (the framework's
/// rejections are `text/plain`; 405, 408, 413 come with an empty body)
/// becomes the one error shape, its text (if any) as the message.
pub(crate) async fn json_errors(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, MAX_PLAIN_ERROR).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_string(),
        Err(_) => String::new(),
    };
    let message = if !text.is_empty() {
        text
    } else {
        default_message(status, &method)
    };
    let error = ApiError::Status(status, message);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let body = Body::from(error.body().to_string());
    Response::from_parts(parts, body)
}

/// The message of an error answer that came without one.
pub(crate) fn default_message(status: StatusCode, method: &axum::http::Method) -> String {
    match status.as_u16() {
        405 => format!("this endpoint does not take {method} (the `allow` header lists what it takes)"),
        408 => "the request took longer than the server's --timeout; a long run goes on: continue its session later".to_string(),
        413 => "the request body is larger than the server's --body-limit".to_string(),
        414 => "the URL is too long".to_string(),
        431 => "the request headers are too large".to_string(),
        429 => "the server is busy (every connection is serving a request); try again after \
                the time in Retry-After"
            .to_string(),
        503 => "the server is busy (too many connections); try again shortly".to_string(),
        _ => status
            .canonical_reason()
            .unwrap_or("the request failed")
            .to_lowercase(),
    }
}
