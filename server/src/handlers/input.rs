//! Answers to MCP servers' requests for input (see `runs/input.rs`).
//!
//! ```text
//!  POST /api/sessions/{id}/input/{input}  {action: accept|decline|cancel, content?}
//!       200 {id, action}: sent to the server, the call goes on (input_answered in the run's events)
//!       400: the values do not fit the form (the request stays open); a bad body
//!       404: no such request of this user's session here (answered, its run ended,
//!            or held by another server of the deployment)
//! ```

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::Json;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::auth::User;
use crate::error::ApiError;
use crate::runs::{read_answer, AnswerRefused};
use crate::state::AppState;

pub(crate) async fn answer(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Path((session, id)): Path<(Uuid, Uuid)>,
    Json(body): Json<Value>,
) -> Result<Json<Value>, ApiError> {
    let answer = read_answer(&body).map_err(ApiError::BadRequest)?;
    match state.runs.answer_input(&user, session, id, answer) {
        Ok(action) => Ok(Json(json!({"id": id, "action": action}))),
        Err(AnswerRefused::Invalid(problem)) => Err(ApiError::BadRequest(format!(
            "the values do not fit the form: {problem}; the request is still open"
        ))),
        Err(AnswerRefused::NotFound) => Err(ApiError::NotFound(format!(
            "no request for input {id} waits in session {session} on this server: it was answered, \
             its run ended, or another server of the deployment runs the call"
        ))),
    }
}
