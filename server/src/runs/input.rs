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
//! A request is held by the server that runs the call. On a store shared
//! by several servers (Redis), the holder also lists it in the store, so
//! any server shows it (`pending_input`) and takes its answer: checked
//! against the form there, left in the store, and taken by the holder
//! within its lease loop's poll (half a second at most).
//!
//! ```text
//!  server B: POST .../input/{id} ─▶ not held here ─▶ the session's active run ▸ its listed
//!     requests (the user's, this id) ▸ values checked ▸ post_answer ─▶ waits (5 s at most)
//!     until the holder took it off the list: 200, else 202 (`applied: false`)
//!  server A (holder): lease loop ─▶ take_answers ─▶ the same answer as a local one
//! ```

use std::time::Duration;

use chrono::Utc;
use lc_agent_deepagent::mcp::{Elicitation, ElicitationAnswer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::desk::{EventSender, Held, PendingInput, RunDesk};
use super::event::RunEvent;
use super::service::Runs;

/// A request as its holder lists it in a shared store: whose it is, for
/// the other servers to show and answer only to them.
#[derive(Debug, Serialize, Deserialize)]
struct Listed {
    #[serde(flatten)]
    pending: PendingInput,
    user: String,
    session: Uuid,
}

/// Why an answer was not taken.
#[derive(Debug)]
pub(crate) enum AnswerRefused {
    /// No such request of this user's session on this server.
    NotFound,
    /// The values do not fit the form (the request stays open).
    Invalid(String),
    /// The store shared with the other servers failed.
    Store(super::store::RunError),
}

/// A request just held, as its person is to see it, and the run's event
/// stream.
struct Asked {
    listed: Listed,
    send: EventSender,
}

/// An answer taken: its action, and whether the call has it already
/// (`false`: left for the server that holds the request, which had not
/// taken it yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Answered {
    pub(crate) action: &'static str,
    pub(crate) applied: bool,
}

/// How long an answer given through another server waits for the holder
/// to take it before the request is answered `202`.
const FORWARD_WAIT: Duration = Duration::from_secs(5);

fn action_of(answer: &ElicitationAnswer) -> &'static str {
    match answer {
        ElicitationAnswer::Accept(_) => "accept",
        ElicitationAnswer::Decline => "decline",
        ElicitationAnswer::Cancel => "cancel",
    }
}

/// The answer's JSON as MCP spells it (what [`read_answer`] reads).
fn answer_json(id: Uuid, answer: &ElicitationAnswer) -> Value {
    let mut out = serde_json::json!({"id": id, "action": action_of(answer)});
    if let ElicitationAnswer::Accept(content) = answer {
        out["content"] = Value::Object(content.clone());
    }
    out
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
    pub(crate) async fn close_desk(&self, session: Uuid, run: Uuid) {
        let dropped: Vec<Held> = {
            let mut desk = self.inputs.lock();
            if desk.runs.get(&session).is_some_and(|d| d.run == run) {
                desk.runs.remove(&session);
            }
            desk.held
                .extract_if(|_, h| h.run == run)
                .map(|(_, h)| h)
                .collect()
        };
        let listed = !dropped.is_empty();
        for held in dropped {
            tracing::info!(run = %run, server = held.request.server(), "a request for input was left unanswered when the run ended; declined");
        }
        if listed
            && self.store.shares_input()
            && let Err(e) = self.store.drop_ask(run, None).await
        {
            tracing::warn!(run = %run, error = %e, "cannot take a run's requests for input off the store's list");
        }
    }

    /// Whether this server holds a request for input of `run`.
    pub(crate) fn holds_input(&self, run: Uuid) -> bool {
        self.inputs.lock().held.values().any(|h| h.run == run)
    }

    /// Applies the answers other servers left for `run`'s requests.
    pub(crate) async fn take_answers(&self, run: Uuid) {
        let answers = match self.store.take_answers(run).await {
            Ok(answers) => answers,
            Err(e) => {
                tracing::warn!(run = %run, error = %e, "cannot read the answers left for a run's requests for input");
                return;
            }
        };
        for left in answers {
            let id = left
                .get("id")
                .and_then(Value::as_str)
                .and_then(|id| Uuid::parse_str(id).ok());
            let mut body = left;
            if let Some(body) = body.as_object_mut() {
                body.remove("id");
            }
            let (Some(id), Ok(answer)) = (id, read_answer(&body)) else {
                tracing::warn!(run = %run, "an answer left for a request for input is not one; ignored");
                continue;
            };
            let session = self
                .inputs
                .lock()
                .held
                .get(&id)
                .map(|h| (h.session, h.user.clone()));
            let Some((session, user)) = session else {
                continue;
            };
            if let Err(e) = self.answer_here(&user, session, id, answer).await {
                tracing::warn!(run = %run, input = %id, "an answer left by another server was not taken: {e:?}");
            }
        }
    }

    /// Takes an MCP server's request for input: held for the person of
    /// the session whose run asked, or declined when no run of it
    /// executes here (or the run keeps no session to answer on).
    pub async fn ask(&self, request: Elicitation) {
        let Some(Asked { listed, send }) = self.hold(request) else {
            return;
        };
        let (run, event) = (listed.pending.run, listed.pending.request.clone());
        if self.store.shares_input() {
            let json = serde_json::to_value(&listed).unwrap_or(Value::Null);
            if let Err(e) = self.store.put_ask(run, event.id, &json).await {
                tracing::warn!(run = %run, error = %e, "cannot list a request for input for the other servers (it can be answered on this one)");
            }
        }
        send(RunEvent::InputRequested(event));
    }

    /// Holds `request` for its session's run here; `None` (declined) when
    /// no run of the session executes here or it keeps no session.
    fn hold(&self, request: Elicitation) -> Option<Asked> {
        let session = request.session().and_then(|s| Uuid::parse_str(s).ok());
        let server = request.server().to_string();
        let mut desk = self.inputs.lock();
        let Some((session, at)) = session.and_then(|s| desk.runs.get(&s).map(|d| (s, d))) else {
            drop(desk);
            tracing::warn!(server = %server, "an MCP server asked for input outside a run of this server; declined");
            return None;
        };
        if at.ephemeral {
            let run = at.run;
            drop(desk);
            tracing::warn!(run = %run, server = %server, "an MCP server asked for input in a `store: false` run, which keeps no session to answer on; declined");
            return None;
        }
        let id = Uuid::new_v4();
        let held = Held {
            run: at.run,
            session,
            user: at.user.clone(),
            asked_at: Utc::now(),
            request,
        };
        let asked = Asked {
            listed: Listed {
                pending: held.pending(id),
                user: held.user.clone(),
                session,
            },
            send: at.send.clone(),
        };
        desk.held.insert(id, held);
        drop(desk);
        tracing::info!(run = %asked.listed.pending.run, input = %id, server = %server, "an MCP server asks the person for input");
        Some(asked)
    }

    /// The requests of `user`'s `session` waiting, oldest first: those
    /// held here, and on a shared store those another server holds.
    pub async fn pending_input(&self, user: &str, session: Uuid) -> Vec<PendingInput> {
        let mut out = self.pending_here(user, session);
        if out.is_empty() && self.store.shares_input() {
            out = self.pending_elsewhere(user, session).await;
        }
        out
    }

    /// The requests of the session listed in the shared store.
    async fn pending_elsewhere(&self, user: &str, session: Uuid) -> Vec<PendingInput> {
        let Ok(Some(run)) = self.store.active_of(session).await else {
            return Vec::new();
        };
        let listed = self.listed(run, user, session).await.unwrap_or_default();
        let mut out: Vec<PendingInput> = listed.into_iter().map(|l| l.pending).collect();
        out.sort_by_key(|p| p.asked_at);
        out
    }

    fn pending_here(&self, user: &str, session: Uuid) -> Vec<PendingInput> {
        let desk = self.inputs.lock();
        let mut out: Vec<PendingInput> = desk
            .held
            .iter()
            .filter(|(_, h)| h.session == session && h.user == user)
            .map(|(id, h)| h.pending(*id))
            .collect();
        out.sort_by_key(|p| p.asked_at);
        out
    }

    /// The requests of `user`'s `session` that run `run`'s server lists in
    /// the shared store.
    async fn listed(
        &self,
        run: Uuid,
        user: &str,
        session: Uuid,
    ) -> Result<Vec<Listed>, super::store::RunError> {
        Ok(self
            .store
            .asks(run)
            .await?
            .into_iter()
            .filter_map(|a| serde_json::from_value::<Listed>(a).ok())
            .filter(|l| l.user == user && l.session == session)
            .collect())
    }

    /// Answers request `id` of `user`'s `session`; `content` (an accept's
    /// values) is checked against the form first, and a request whose
    /// values do not fit stays open.
    pub(crate) async fn answer_input(
        &self,
        user: &str,
        session: Uuid,
        id: Uuid,
        answer: ElicitationAnswer,
    ) -> Result<Answered, AnswerRefused> {
        match self.answer_here(user, session, id, answer.clone()).await {
            Err(AnswerRefused::NotFound) if self.store.shares_input() => {
                self.answer_elsewhere(user, session, id, answer).await
            }
            other => other.map(|action| Answered {
                action,
                applied: true,
            }),
        }
    }

    /// An answer to a request another server holds: checked against the
    /// listed form, left in the store, then waited for.
    async fn answer_elsewhere(
        &self,
        user: &str,
        session: Uuid,
        id: Uuid,
        answer: ElicitationAnswer,
    ) -> Result<Answered, AnswerRefused> {
        let run = self
            .store
            .active_of(session)
            .await
            .map_err(AnswerRefused::Store)?
            .ok_or(AnswerRefused::NotFound)?;
        let is_it = |l: &Listed| l.pending.request.id == id;
        let listed = self
            .listed(run, user, session)
            .await
            .map_err(AnswerRefused::Store)?
            .into_iter()
            .find(is_it)
            .ok_or(AnswerRefused::NotFound)?;
        if let ElicitationAnswer::Accept(content) = &answer {
            let request = &listed.pending.request;
            let (form, _) =
                Elicitation::new(&request.server, String::new(), &request.requested_schema)
                    .map_err(AnswerRefused::Invalid)?;
            form.check(content).map_err(AnswerRefused::Invalid)?;
        }
        self.store
            .post_answer(run, &answer_json(id, &answer))
            .await
            .map_err(AnswerRefused::Store)?;
        let started = std::time::Instant::now();
        let mut applied = false;
        while started.elapsed() < FORWARD_WAIT {
            tokio::time::sleep(Duration::from_millis(100)).await;
            match self.listed(run, user, session).await {
                Ok(listed) if !listed.iter().any(is_it) => {
                    applied = true;
                    break;
                }
                _ => {}
            }
        }
        Ok(Answered {
            action: action_of(&answer),
            applied,
        })
    }

    /// Answers a request held here.
    async fn answer_here(
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
        let action = action_of(&answer);
        if let Some(held) = held {
            tracing::info!(run = %held.run, input = %id, action, "a request for input was answered");
            if self.store.shares_input()
                && let Err(e) = self.store.drop_ask(held.run, Some(id)).await
            {
                tracing::warn!(run = %held.run, error = %e, "cannot take an answered request for input off the store's list");
            }
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
