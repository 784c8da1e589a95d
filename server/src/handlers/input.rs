//! Answers to MCP servers' requests for input (see `runs/input.rs`).
//!
//! ```text
//!  POST /api/sessions/{id}/input/{input}  {action: accept|decline|cancel, content?}
//!       200 {id, action}: sent to the server, the call goes on (input_answered in the run's events)
//!       202 {id, action, applied: false}: left for the server of the deployment that runs the
//!            call, which had not taken it within 5 s (runs/input.rs)
//!       400: the values do not fit the form (the request stays open); a bad body
//!       404: no such request of this user's session (answered, or its run ended)
//! ```

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::auth::User;
use crate::error::ApiError;
use crate::runs::{read_answer, AnswerRefused, Answered};
use crate::state::AppState;

pub(crate) async fn answer(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path((session, id)): Path<(Uuid, Uuid)>,
    Json(body): Json<Value>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let answer = read_answer(&body).map_err(ApiError::BadRequest)?;
    match state.runs.answer_input(&user, session, id, answer).await {
        Ok(Answered {
            action,
            applied: true,
        }) => Ok((StatusCode::OK, Json(json!({"id": id, "action": action})))),
        // Left for the server that runs the call, which had not taken it yet.
        Ok(Answered { action, .. }) => Ok((
            StatusCode::ACCEPTED,
            Json(json!({"id": id, "action": action, "applied": false})),
        )),
        Err(AnswerRefused::Store(e)) => Err(e.into()),
        Err(AnswerRefused::Invalid(problem)) => Err(ApiError::BadRequest(format!(
            "the values do not fit the form: {problem}; the request is still open"
        ))),
        Err(AnswerRefused::NotFound) => Err(ApiError::NotFound(format!(
            "no request for input {id} waits in session {session}: it was answered, or its run ended"
        ))),
    }
}
