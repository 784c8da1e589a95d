//! Requests for input: an MCP server asks the person for values in the
//! middle of a run's tool call (`elicitation/create`), the way a held call
//! asks for approval, except that the call waits inside the run.
//!
//! ```text
//!  McpSessions (a connection set per session) ── Elicitation {session} ──▶ Runs::ask
//!     the session's run executing here ── input_requested {id, server, message, requested_schema}
//!     (none, or a `store: false` run: declined at once, logged)
//!  POST /api/sessions/{session}/input/{id} {action, content} ─▶ Runs::answer_input
//!     the user's own request ▸ content checked against the form (400, the request stays)
//!     ▸ input_answered {id, action} ▸ the server gets the answer, the call goes on
//!  the run ends (done, failed, cancelled, time limit) ─▶ its requests still open are declined
//! ```
//!
//! A request is held by the server that runs the call: answering it on
//! another server of a Redis deployment is a 404 that says so.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use lc_agent_deepagent::mcp::{Elicitation, ElicitationAnswer};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use super::event::{InputRequest, RunEvent};
use super::service::Runs;

/// Sends an event into a run's event stream.
pub(crate) type EventSender = Arc<dyn Fn(RunEvent) + Send + Sync>;

/// What this server holds: the runs executing here that can ask, and the
/// requests waiting for their person.
#[derive(Default)]
pub(crate) struct InputDesk {
    runs: HashMap<Uuid, RunDesk>,
    held: HashMap<Uuid, Held>,
}

struct RunDesk {
    run: Uuid,
    user: String,
    ephemeral: bool,
    send: EventSender,
}

struct Held {
    run: Uuid,
    session: Uuid,
    user: String,
    asked_at: DateTime<Utc>,
    request: Elicitation,
}

/// A request for input waiting for its person, as `GET /api/sessions/{id}`
/// lists it (`pending_input`).
#[derive(Debug, Clone, Serialize)]
pub struct PendingInput {
    /// The request's fields, as `input_requested` sent them.
    #[serde(flatten)]
    pub request: InputRequest,
    /// The run whose tool call waits.
    pub run: Uuid,
    /// When it was asked.
    pub asked_at: DateTime<Utc>,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AnswerRefused {
    /// No such request of this user's session on this server.
    NotFound,
    /// The values do not fit the form (the request stays open).
    Invalid(String),
}

impl Runs {
    /// Run `run` of `user`'s `session` executes here: requests for input
    /// of the session go into its events through `send`.
    pub(crate) fn open_desk(
        &self,
        session: Uuid,
        run: Uuid,
        user: &str,
        ephemeral: bool,
        send: EventSender,
    ) {
        self.inputs.lock().runs.insert(
            session,
            RunDesk {
                run,
                user: user.to_string(),
                ephemeral,
                send,
            },
        );
    }

    /// Run `run` of `session` is over with its tool calls: its requests
    /// still open are declined (dropped).
    pub(crate) fn close_desk(&self, session: Uuid, run: Uuid) {
        let dropped: Vec<Held> = {
            let mut desk = self.inputs.lock();
            if desk.runs.get(&session).is_some_and(|d| d.run == run) {
                desk.runs.remove(&session);
            }
            let ids: Vec<Uuid> = desk
                .held
                .iter()
                .filter(|(_, h)| h.run == run)
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| desk.held.remove(id)).collect()
        };
        for held in dropped {
            tracing::info!(run = %run, server = held.request.server(), "a request for input was left unanswered when the run ended; declined");
        }
    }

    /// Takes an MCP server's request for input: held for the person of
    /// the session whose run asked, or declined when no run of it
    /// executes here (or the run keeps no session to answer on).
    pub fn ask(&self, request: Elicitation) {
        let session = request.session().and_then(|s| Uuid::parse_str(s).ok());
        let server = request.server().to_string();
        let mut desk = self.inputs.lock();
        let Some((session, at)) = session.and_then(|s| desk.runs.get(&s).map(|d| (s, d))) else {
            drop(desk);
            tracing::warn!(server = %server, "an MCP server asked for input outside a run of this server; declined");
            return;
        };
        if at.ephemeral {
            let run = at.run;
            drop(desk);
            tracing::warn!(run = %run, server = %server, "an MCP server asked for input in a `store: false` run, which keeps no session to answer on; declined");
            return;
        }
        let id = Uuid::new_v4();
        let event = InputRequest {
            id,
            server,
            message: request.message().to_string(),
            requested_schema: request.requested_schema().clone(),
        };
        let (run, user, send) = (at.run, at.user.clone(), at.send.clone());
        desk.held.insert(
            id,
            Held {
                run,
                session,
                user,
                asked_at: Utc::now(),
                request,
            },
        );
        drop(desk);
        tracing::info!(run = %run, input = %id, "an MCP server asks the person for input");
        send(RunEvent::InputRequested(event));
    }

    /// The requests of `user`'s `session` waiting here, oldest first.
    pub fn pending_input(&self, user: &str, session: Uuid) -> Vec<PendingInput> {
        let desk = self.inputs.lock();
        let mut out: Vec<PendingInput> = desk
            .held
            .iter()
            .filter(|(_, h)| h.session == session && h.user == user)
            .map(|(id, h)| PendingInput {
                request: InputRequest {
                    id: *id,
                    server: h.request.server().to_string(),
                    message: h.request.message().to_string(),
                    requested_schema: h.request.requested_schema().clone(),
                },
                run: h.run,
                asked_at: h.asked_at,
            })
            .collect();
        out.sort_by_key(|p| p.asked_at);
        out
    }

    /// Answers request `id` of `user`'s `session`; `content` (an accept's
    /// values) is checked against the form first, and a request whose
    /// values do not fit stays open.
    pub(crate) fn answer_input(
        &self,
        user: &str,
        session: Uuid,
        id: Uuid,
        answer: ElicitationAnswer,
    ) -> Result<&'static str, AnswerRefused> {
        let (held, send) = {
            let mut desk = self.inputs.lock();
            let Some(held) = desk
                .held
                .get(&id)
                .filter(|h| h.session == session && h.user == user)
            else {
                return Err(AnswerRefused::NotFound);
            };
            if let ElicitationAnswer::Accept(content) = &answer {
                held.request
                    .check(content)
                    .map_err(AnswerRefused::Invalid)?;
            }
            let send = desk.runs.get(&session).map(|d| d.send.clone());
            (desk.held.remove(&id), send)
        };
        let action = match &answer {
            ElicitationAnswer::Accept(_) => "accept",
            ElicitationAnswer::Decline => "decline",
            ElicitationAnswer::Cancel => "cancel",
        };
        if let Some(held) = held {
            tracing::info!(run = %held.run, input = %id, action, "a request for input was answered");
            if let Some(send) = send {
                send(RunEvent::InputAnswered {
                    id,
                    action: action.to_string(),
                });
            }
            held.request.answer(answer);
        }
        Ok(action)
    }
}

/// Reads `{"action": "accept" | "decline" | "cancel", "content": {...}}`
/// (the shape of MCP's own answer); the problem, in the client's terms.
pub(crate) fn read_answer(body: &Value) -> Result<ElicitationAnswer, String> {
    let Some(body) = body.as_object() else {
        return Err(
            "the body must be a JSON object: {\"action\": \"accept\", \"content\": {...}}".into(),
        );
    };
    if let Some(unknown) = body.keys().find(|k| *k != "action" && *k != "content") {
        return Err(format!(
            "unknown field `{unknown}` (expected `action`, `content`)"
        ));
    }
    let content = body.get("content");
    match body.get("action").and_then(Value::as_str) {
        Some("accept") => match content {
            Some(Value::Object(values)) => Ok(ElicitationAnswer::Accept(values.clone())),
            None => Ok(ElicitationAnswer::Accept(serde_json::Map::new())),
            Some(_) => Err("`content` must be an object of the form's values".into()),
        },
        Some(action @ ("decline" | "cancel")) => {
            if content.is_some_and(|c| !c.is_null()) {
                return Err(format!("`{action}` sends no `content`"));
            }
            Ok(if action == "decline" {
                ElicitationAnswer::Decline
            } else {
                ElicitationAnswer::Cancel
            })
        }
        Some(other) => Err(format!(
            "unknown action `{other}` (expected `accept`, `decline` or `cancel`)"
        )),
        None => Err("`action` is missing: `accept`, `decline` or `cancel`".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_read_as_mcp_spells_them() {
        assert_eq!(
            read_answer(&json!({"action": "accept", "content": {"name": "Ada"}})),
            Ok(ElicitationAnswer::Accept(
                json!({"name": "Ada"}).as_object().cloned().unwrap()
            ))
        );
        assert_eq!(
            read_answer(&json!({"action": "decline"})),
            Ok(ElicitationAnswer::Decline)
        );
        assert_eq!(
            read_answer(&json!({"action": "cancel", "content": null})),
            Ok(ElicitationAnswer::Cancel)
        );
        assert!(read_answer(&json!({"action": "maybe"}))
            .unwrap_err()
            .contains("unknown action"));
        assert!(
            read_answer(&json!({"action": "decline", "content": {"a": 1}}))
                .unwrap_err()
                .contains("no `content`")
        );
        assert!(read_answer(&json!({"action": "accept", "content": [1]}))
            .unwrap_err()
            .contains("object"));
        assert!(read_answer(&json!({"action": "accept", "values": {}}))
            .unwrap_err()
            .contains("unknown field"));
        assert!(read_answer(&json!([])).unwrap_err().contains("JSON object"));
    }
}
