//! The OpenAI-compatible endpoints: `GET /v1/models` and `POST
//! /v1/chat/completions`, streamed (SSE chunks, then `data: [DONE]`) or
//! not. The server runs the agent loop itself — tools execute here — and
//! answers with the agent's final answer, so any OpenAI client gets a
//! working agent.
//!
//! ```text
//!  {model, messages, stream?, session?}   (or header x-lc-agent-session)
//!    no session ─▶ a new session from the messages (system, user, assistant)
//!    session    ─▶ that saved session + the last user message
//!  ─▶ run (Session) ─▶ chat.completion | chat.completion.chunk ... [DONE]
//!     both carry "session": <id> (and the header) to continue it next time; the
//!     id is chatcmpl-<session id>-<8 hex> (proxies that drop fields keep it)
//!     "usage": the run's tokens (sub-agents included); streamed with
//!     stream_options.include_usage as a last chunk with no choices
//!  tools / functions / tool_choice (other than auto, none) / response_format (other than text)
//!     ─▶ 400 naming the field: the agent runs its own tools and answers in text
//!  store: false ─▶ the same run, nothing saved, no session named
//! ```

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use lc_agent::{ChatNode, HumanNode, Message, NetworkEvent, StreamDelta, SystemNode};
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::auth::User;
use crate::error::ApiError;
use crate::run::{Item, RunEnd, Session};
use crate::state::AppState;

/// The header naming (in) or reporting (out) the session of a completion.
pub const SESSION_HEADER: &str = "x-lc-agent-session";

pub(crate) async fn models(State(state): State<Arc<AppState>>, _user: User) -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{"id": state.config.model_name, "object": "model", "created": 0, "owned_by": "lc-agent"}],
    }))
}

/// `GET /v1/models/{id}`: the served model (404 for another name).
pub(crate) async fn model(
    State(state): State<Arc<AppState>>,
    _user: User,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<Json<Value>, ApiError> {
    if id != state.config.model_name {
        return Err(ApiError::NotFound(format!(
            "no model `{id}`: this server serves `{}`",
            state.config.model_name
        )));
    }
    Ok(Json(
        json!({"id": id, "object": "model", "created": 0, "owned_by": "lc-agent"}),
    ))
}

/// One message of the request (only what the agent uses is read).
#[derive(Debug, Deserialize)]
pub(crate) struct InMessage {
    role: String,
    #[serde(default)]
    content: Option<Value>,
}

impl InMessage {
    /// The text: a string, or the text parts of a list of parts.
    fn text(&self) -> Result<String, ApiError> {
        match &self.content {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Array(parts)) => Ok(parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("")),
            Some(other) => Err(ApiError::BadRequest(format!(
                "message content must be a string or a list of parts, got `{other}`"
            ))),
        }
    }
}

/// `POST /v1/chat/completions` body. Client tools, a forced tool choice
/// and structured output are refused (400, [`Completion::check_supported`]);
/// other OpenAI fields (`temperature`, `max_tokens`, ...) are accepted and
/// ignored: the agent's own settings apply.
#[derive(Debug, Deserialize)]
pub(crate) struct Completion {
    #[serde(default)]
    model: Option<String>,
    messages: Vec<InMessage>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    session: Option<Uuid>,
    /// OpenAI's `store`: `false` keeps nothing (no session is saved, the
    /// answer names none; a named session is read, not changed).
    #[serde(default)]
    store: Option<bool>,
    /// `{"include_usage": true}` adds a last chunk with the run's usage.
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    /// Client tools: refused (the agent runs its own; see `/v1/tools`).
    #[serde(default)]
    tools: Option<Vec<Value>>,
    /// Refused with client tools; `auto` and `none` alone are harmless.
    #[serde(default)]
    tool_choice: Option<Value>,
    /// The legacy spelling of client tools: refused.
    #[serde(default)]
    functions: Option<Vec<Value>>,
    /// Only `{"type": "text"}`: the agent answers in text.
    #[serde(default)]
    response_format: Option<Value>,
}

/// `stream_options` of a streamed completion.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

impl Completion {
    /// Refuses, with a 400 naming the field, what the agent cannot honour:
    /// client tools (the agent runs its own tools here and answers in
    /// text, so a client's function definitions would never be called),
    /// a forced tool choice, and structured output formats.
    fn check_supported(&self) -> Result<(), ApiError> {
        let unsupported = |field: &str, why: &str| {
            Err(ApiError::BadRequest(format!(
                "`{field}` is not supported: {why}"
            )))
        };
        if self.tools.as_ref().is_some_and(|t| !t.is_empty())
            || self.functions.as_ref().is_some_and(|f| !f.is_empty())
        {
            let field = if self.tools.is_some() {
                "tools"
            } else {
                "functions"
            };
            return unsupported(
                field,
                "the agent runs its own tools on the server (GET /v1/tools lists them) and \
                 answers in text; send the request without client tools",
            );
        }
        match &self.tool_choice {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s == "auto" || s == "none" => {}
            Some(_) => {
                return unsupported(
                    "tool_choice",
                    "the agent chooses its own tools; only \"auto\" and \"none\" are accepted",
                )
            }
        }
        match &self.response_format {
            None | Some(Value::Null) => {}
            Some(f) if f.get("type").and_then(Value::as_str) == Some("text") => {}
            Some(f) => {
                let kind = f.get("type").and_then(Value::as_str).unwrap_or("?");
                return unsupported(
                    "response_format",
                    &format!(
                        "the agent answers in text; type `{kind}` is not available (only \"text\")"
                    ),
                );
            }
        }
        Ok(())
    }
}

fn session_of(headers: &HeaderMap, body: &Completion) -> Result<Option<Uuid>, ApiError> {
    if let Some(id) = body.session {
        return Ok(Some(id));
    }
    match headers.get(SESSION_HEADER) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .map(Some)
            .ok_or_else(|| {
                ApiError::BadRequest(format!("the {SESSION_HEADER} header is not a session id"))
            }),
    }
}

pub(crate) async fn completions(
    State(state): State<Arc<AppState>>,
    User(user): User,
    headers: HeaderMap,
    Json(body): Json<Completion>,
) -> Result<Response, ApiError> {
    body.check_supported()?;
    let include_usage = body
        .stream_options
        .as_ref()
        .is_some_and(|o| o.include_usage);
    let Some(last) = body.messages.last() else {
        return Err(ApiError::BadRequest("`messages` is empty".to_string()));
    };
    if last.role != "user" {
        return Err(ApiError::BadRequest(format!(
            "the last message must be the user's, got `{}`",
            last.role
        )));
    }
    let session = match session_of(&headers, &body)? {
        Some(id) => {
            let session = Session::open(&state, &user, id).await?;
            session.human(&last.text()?);
            session
        }
        None => {
            let title: String = last.text()?.chars().take(60).collect();
            let session = Session::create(&state, &user, &title)?;
            {
                let _scope = session.net.enter();
                for m in &body.messages {
                    let text = m.text()?;
                    match m.role.as_str() {
                        "system" | "developer" => {
                            SystemNode::new(text);
                        }
                        "user" => {
                            HumanNode::new(text);
                        }
                        "assistant" => ChatNode::new().set_output(Message::ai(text)),
                        // The agent runs its tools itself; a client's tool
                        // messages have nothing to answer here.
                        "tool" | "function" => {}
                        other => {
                            return Err(ApiError::BadRequest(format!(
                                "unknown message role `{other}`"
                            )))
                        }
                    }
                }
            }
            session
        }
    };
    let keep = body.store != Some(false);
    let mut session = session;
    if !keep {
        session.list = Arc::new(crate::unsaved::Unsaved { user: user.clone() });
    }
    session.commit().await?;
    let id = session.net.id();
    let model = body
        .model
        .clone()
        .unwrap_or_else(|| state.config.model_name.clone());
    // The session rides in the id too, which proxies keep when they drop
    // other fields: `chatcmpl-<session id>-<8 hex>`.
    let nonce = Uuid::new_v4().simple().to_string();
    let completion_id = if keep {
        format!("chatcmpl-{id}-{}", &nonce[..8])
    } else {
        format!("chatcmpl-{nonce}")
    };
    let created = chrono::Utc::now().timestamp();
    let mut response = if body.stream {
        stream(session, completion_id, model, created, keep, include_usage).into_response()
    } else {
        // The run goes on in its own task (a timeout or a client that
        // goes away does not cut it short; it still saves).
        let mut rx = session.stream();
        let end = loop {
            match rx.recv().await {
                Some(Item::End(end)) => break end,
                Some(_) => continue,
                None => {
                    return Err(ApiError::Internal(
                        "the run ended without a result".to_string(),
                    ))
                }
            }
        };
        if let Some((status, message)) = end.error {
            ApiError::from_status(status, message).into_response()
        } else {
            Json(json!({
                "id": completion_id,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "session": keep.then_some(id),
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": answer_text(&end, id)},
                    "finish_reason": "stop",
                }],
                "usage": crate::usage::openai_usage(&end.usage),
            }))
            .into_response()
        }
    };
    if let Ok(value) = HeaderValue::from_str(&id.to_string()) {
        if keep {
            response.headers_mut().insert(SESSION_HEADER, value);
        }
    }
    Ok(response)
}

/// The answer, or what waits for a decision.
fn answer_text(end: &RunEnd, id: Uuid) -> String {
    if end.pending.is_empty() {
        return end.answer.clone();
    }
    let calls: Vec<String> = end
        .pending
        .iter()
        .map(|p| format!("{} {}", p.tool_call.name, p.tool_call.arguments))
        .collect();
    format!(
        "Waiting for approval: {}. Decide with POST /api/sessions/{id}/approvals.",
        calls.join("; ")
    )
}

fn stream(
    session: Session,
    completion_id: String,
    model: String,
    created: i64,
    keep: bool,
    include_usage: bool,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let id = keep.then_some(session.net.id());
    let root = session.net.clone();
    let chunk = move |delta: Option<Value>, finish: Option<&str>, usage: Option<Value>| {
        let choices = match delta {
            Some(delta) => json!([{"index": 0, "delta": delta, "finish_reason": finish}]),
            None => json!([]),
        };
        let mut chunk = json!({
            "id": completion_id, "object": "chat.completion.chunk", "created": created,
            "model": model, "session": id, "choices": choices,
        });
        // With `stream_options.include_usage`, every chunk has `usage`:
        // null until the last one (no choices) carries the run's.
        if include_usage {
            chunk["usage"] = usage.unwrap_or(Value::Null);
        }
        Event::default().data(chunk.to_string())
    };
    let rx = session.stream();
    let first = vec![chunk(
        Some(json!({"role": "assistant", "content": ""})),
        None,
        None,
    )];
    let state = (rx, root, chunk, Some(first), false, String::new());
    let events = futures::stream::unfold(
        state,
        move |(mut rx, root, chunk, first, over, mut streamed)| async move {
            if let Some(first) = first {
                return Some((first, (rx, root, chunk, None, over, streamed)));
            }
            if over {
                return None;
            }
            loop {
                match rx.recv().await {
                    None => return None,
                    Some(Item::Event(NetworkEvent::Delta {
                        delta: StreamDelta::Text(text),
                        ..
                    })) if !text.is_empty() => {
                        streamed.push_str(&text);
                        let event = chunk(Some(json!({"content": text})), None, None);
                        return Some((vec![event], (rx, root, chunk, None, false, streamed)));
                    }
                    Some(Item::End(end)) => {
                        let events = match &end.error {
                            Some((status, message)) => vec![Event::default().data(
                                ApiError::from_status(*status, message.clone())
                                    .body()
                                    .to_string(),
                            )],
                            None => {
                                // Text that did not stream (a waiting call's
                                // note) goes out in the last chunk.
                                let answer = answer_text(&end, root.id());
                                let rest = if streamed.ends_with(&answer) {
                                    String::new()
                                } else {
                                    answer
                                };
                                let delta = if rest.is_empty() {
                                    json!({})
                                } else {
                                    json!({"content": rest})
                                };
                                let mut events = vec![chunk(Some(delta), Some("stop"), None)];
                                if include_usage {
                                    let usage = crate::usage::openai_usage(&end.usage);
                                    events.push(chunk(None, None, Some(usage)));
                                }
                                events
                            }
                        };
                        return Some((events, (rx, root, chunk, None, true, streamed)));
                    }
                    Some(_) => continue,
                }
            }
        },
    )
    .flat_map(futures::stream::iter)
    .map(Ok)
    .chain(futures::stream::once(async {
        Ok(Event::default().data("[DONE]"))
    }));
    Sse::new(events).keep_alive(KeepAlive::default())
}

use futures::StreamExt as _;
