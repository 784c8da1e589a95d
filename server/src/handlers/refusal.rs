//! The answer of a refused run: an [`ApiError`](crate::error::ApiError)'s, a 409 naming the
//! session's active run (or the calls that wait for a decision), or a
//! 429 with `Retry-After`.
//!
//! ```text
//!  409 {"error": {"message", "type": "conflict_error", "code": 409[, "run", "status"][, "pending"]}}
//!  429 {"error": {"message", "type": "rate_limit_error", "code": 429}}  Retry-After: 2
//! ```

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::runs::Refused;

/// Seconds a client is told to wait when its queue is full.
const RETRY_AFTER_SECS: u64 = 2;

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        match self {
            Refused::Api(e) => e.into_response(),
            Refused::Busy {
                message,
                run,
                pending,
            } => {
                let mut error = json!({"message": message, "type": "conflict_error", "code": 409});
                if let Some((run, status)) = run {
                    error["run"] = json!(run);
                    error["status"] = json!(status);
                }
                if let Some(pending) = pending {
                    error["pending"] = json!(pending);
                }
                (StatusCode::CONFLICT, Json(json!({ "error": error }))).into_response()
            }
            Refused::TooMany(message) => {
                let mut r = (
                    StatusCode::TOO_MANY_REQUESTS,
                    Json(json!({"error": {"message": message, "type": "rate_limit_error", "code": 429}})),
                )
                    .into_response();
                r.headers_mut()
                    .insert("retry-after", HeaderValue::from(RETRY_AFTER_SECS));
                r
            }
        }
    }
}
