//! The OpenAI-compatible endpoints: `GET /v1/models` and `POST
//! /v1/chat/completions`, streamed (SSE chunks, then `data: [DONE]`) or
//! not. The server runs the agent loop itself — tools execute here — and
//! answers with the agent's final answer, so any OpenAI client gets a
//! working agent.
//!
//! ```text
//!  {model, messages, stream?, session?}   (or header x-lc-agent-session)
//!    no session ─▶ a new session from the messages (system, user, assistant)
//!    session    ─▶ that saved session + the last user message (its image parts too)
//!  ─▶ a run (runs/) ─▶ chat.completion | chat.completion.chunk ... [DONE]
//!     both carry "session": <id> and "run": <id> (and the headers x-lc-agent-session,
//!     x-lc-agent-run) to continue it next time; the id is
//!     chatcmpl-<session id>-<8 hex of the run> (proxies that drop fields keep it)
//!     "usage": the run's tokens (sub-agents included); streamed with
//!     stream_options.include_usage as a last chunk with no choices
//!  tools / functions / tool_choice (other than auto, none)
//!     ─▶ 400 naming the field: the agent runs its own tools
//!  response_format json_schema / json_object ─▶ the agent's final answer follows it
//!     (the session's `chat` step schema for this request; see lc_agent::OutputSchema:
//!     asked of the model, checked, asked again with the errors); a schema that is
//!     no JSON Schema, or another type ─▶ 400 naming response_format
//!  n other than 1 ─▶ 400 (one run gives one answer)
//!  a `model` other than the served one (GET /v1/models) ─▶ 404 model_not_found
//!  a user message's image_url parts ─▶ image parts of its human node (a
//!     model whose settings refuse images fails the run with that error)
//!  any other content part (input_audio, file, ...; image_url outside a
//!     user message) ─▶ 400 naming the part (messages[i].content[j]):
//!     never dropped silently
//!  finish_reason: "stop" (answered), "length" (the answer was cut off by the model's
//!     output limit: the node's cut_off; POST /api/sessions/{id}/continue goes on),
//!     "tool_calls" (the run waits for a decision: message.tool_calls are the held
//!     calls — the agent's own, for a person to decide with POST
//!     /api/sessions/{id}/approvals, not for the client to run; content says so)
//! ```
//!
//! A retry never starts a second run: a request with the same
//! `Idempotency-Key`, or the OpenAI SDK's retry of the same body
//! (`x-stainless-retry-count` > 0), reattaches to the run the first try
//! started (for an hour). A try that started no run (a 429, say) does not
//! consume the key; the same key with another body is refused (422). A
//! non-streamed run that outlasts the request timeout answers `408` with
//! `{"run", "session"}` before the timeout; the run goes on, and the SDK's
//! own retry of 408 (or the same key) waits for it again — a plain resend
//! without a key is a new request, and the 408's text says so.
//!
//! `"store": false` runs the agent the same way on a session of its own
//! (a copy of a named session), removed when the run ends: nothing is
//! kept and the answer names no session.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures::StreamExt as _;
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::history::{add_messages, check_messages, image_url, InMessage};
use crate::access::{RUN_HEADER, SESSION_HEADER};
use crate::auth::User;
use crate::error::ApiError;
use crate::hub::copy_of;
use crate::runs::{Input, PendingCall, Refused, Run, RunDone, RunEvent, Target};
use crate::state::AppState;

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

/// `POST /v1/chat/completions` body. Client tools and a forced tool
/// choice are refused (400, [`Completion::check_supported`]); the
/// sampling fields are checked and passed through (`sampling.rs`).
#[derive(Debug, Deserialize)]
pub(crate) struct Completion {
    #[serde(default)]
    model: Option<String>,
    messages: Vec<InMessage>,
    #[serde(flatten)]
    sampling: super::sampling::SamplingIn,
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
    /// How many answers: only 1 (one run gives one answer).
    #[serde(default)]
    n: Option<Value>,
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
        match &self.n {
            None | Some(Value::Null) => {}
            Some(n) if n.as_u64() == Some(1) => {}
            Some(n) => {
                return unsupported(
                    "n",
                    &format!("one run of the agent gives one answer; `n` must be 1, got {n}"),
                )
            }
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
        for (i, m) in self.messages.iter().enumerate() {
            let Some(Value::Array(parts)) = &m.content else {
                continue;
            };
            for (j, part) in parts.iter().enumerate() {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or("?");
                let text = kind == "text" && part.get("text").and_then(Value::as_str).is_some();
                let image = image_url(part).filter(|_| m.role == "user");
                if let Some((url, detail)) = image.clone() {
                    // Checked as the session API checks an image.
                    super::parts::image_at(url, detail).map_err(|why| ApiError::Invalid {
                        param: format!("messages[{i}].content[{j}]"),
                        code: "invalid_value",
                        message: format!("`messages[{i}].content[{j}]`: {why}"),
                    })?;
                }
                if !text && image.is_none() {
                    return unsupported(
                        &format!("messages[{i}].content[{j}]"),
                        &format!(
                            "a `{kind}` content part cannot be read: the agent reads text \
                             parts and, in user messages, `image_url` parts with a `url`; \
                             send the message without it"
                        ),
                    );
                }
            }
        }
        self.output_schema().map(|_| ())
    }
}

impl Completion {
    /// The schema `response_format` asks the final answer to follow:
    /// `json_schema` (its `schema`, `name` and `strict`), `json_object`
    /// (any JSON object); `None` for `text` or none. 400 for anything else,
    /// or a schema that is no JSON Schema.
    fn output_schema(&self) -> Result<Option<lc_agent::OutputSchema>, ApiError> {
        let Some(format) = self.response_format.as_ref().filter(|f| !f.is_null()) else {
            return Ok(None);
        };
        let refused = |why: String| ApiError::BadRequest(format!("`response_format`: {why}"));
        let schema = match format.get("type").and_then(Value::as_str) {
            Some("text") => return Ok(None),
            Some("json_object") => serde_json::json!({"type": "object"}),
            Some("json_schema") => format
                .pointer("/json_schema/schema")
                .cloned()
                .ok_or_else(|| refused("json_schema.schema is missing".to_string()))?,
            other => {
                return Err(refused(format!(
                    "type `{}` is not available (\"text\", \"json_object\" or \"json_schema\")",
                    other.unwrap_or("?")
                )))
            }
        };
        let mut schema = lc_agent::OutputSchema::new(schema)
            .map_err(|e| refused(format!("json_schema.schema: {e}")))?;
        if let Some(name) = format.pointer("/json_schema/name").and_then(Value::as_str) {
            schema = schema.named(name);
        }
        if let Some(strict) = format
            .pointer("/json_schema/strict")
            .and_then(Value::as_bool)
        {
            schema = schema.strict(strict);
        }
        Ok(Some(schema))
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

/// How long a completion's request is remembered, so that a retry of it
/// (an `Idempotency-Key`, or the OpenAI SDK's retry of the same body)
/// reattaches to its run instead of starting another.
const REMEMBER: std::time::Duration = std::time::Duration::from_secs(3600);

/// The run an earlier try of this request started, if this is a retry
/// of it: the same `Idempotency-Key`, or (no key) the SDK's retry
/// (`x-stainless-retry-count` > 0) of the same body. Else remembers this
/// request as run `id`.
async fn earlier_try(
    state: &AppState,
    user: &str,
    headers: &HeaderMap,
    body: &[u8],
    id: Uuid,
) -> Result<Option<Run>, ApiError> {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty());
    let retry = headers
        .get("x-stainless-retry-count")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(0);
    state
        .runs
        .earlier_try(user, key, retry, body, id, REMEMBER)
        .await
}

pub(crate) async fn completions(
    State(state): State<Arc<AppState>>,
    User(user): User,
    headers: HeaderMap,
    raw: axum::body::Bytes,
) -> Result<Response, Refused> {
    // The request's own clock: the 408 must beat the router's timeout.
    let received = tokio::time::Instant::now();
    // OpenAI answers 400 to any body it cannot read, naming the field.
    let body: Completion = serde_json::from_slice(&raw).map_err(|e| {
        let message = format!("the body is not a chat completion request: {e}");
        if e.to_string().contains("missing field `messages`") {
            ApiError::Invalid {
                param: "messages".into(),
                code: "missing_required_parameter",
                message: "`messages` is required: the conversation, ending with the user's message"
                    .into(),
            }
        } else {
            ApiError::BadRequest(message)
        }
    })?;
    body.check_supported()?;
    let sampling = body.sampling.check()?;
    // The one model this server serves (GET /v1/models), as OpenAI
    // answers a model it does not have.
    if let Some(requested) = body
        .model
        .as_ref()
        .filter(|m| **m != state.config.model_name)
    {
        return Err(ApiError::ModelNotFound {
            requested: requested.clone(),
            served: state.config.model_name.clone(),
        }
        .into());
    }
    let include_usage = body
        .stream_options
        .as_ref()
        .is_some_and(|o| o.include_usage);
    let Some(last) = body.messages.last() else {
        return Err(ApiError::BadRequest("`messages` is empty".to_string()).into());
    };
    check_messages(&body.messages)?;
    if last.role != "user" {
        return Err(ApiError::BadRequest(format!(
            "the last message must be the user's, got `{}`",
            last.role
        ))
        .into());
    }
    // The last user message: its text and its image parts (kept, never dropped).
    let said = last.text_and_parts()?;
    let schema = body.output_schema()?;
    let session = session_of(&headers, &body)?;
    let keep = body.store != Some(false);
    let new_id = Uuid::new_v4();
    let (run, after) = match earlier_try(&state, &user, &headers, &raw, new_id).await? {
        // The same request again: its run, from the start.
        Some(run) => (run, 0),
        None => {
            let (target, input) = match (session, keep) {
                (Some(id), true) => (
                    Target::Session(id),
                    Input::Completion(Some(said), schema, sampling),
                ),
                (Some(id), false) => {
                    // The named session is read, and the run goes on a copy.
                    let list = state.hub.list(&user)?;
                    let saved = state.hub.load(&list, id).await?;
                    (
                        Target::Ephemeral(copy_of(&saved)?),
                        Input::Completion(Some(said), schema, sampling),
                    )
                }
                (None, keep) => {
                    // `store: false`: not even the list's index may keep
                    // words of the message.
                    let title = if keep {
                        lc_agent_deepagent::title_of(&said.0)
                    } else {
                        "store: false".to_string()
                    };
                    let net = state.hub.new_session(&user, &title).await?;
                    add_messages(&net, &body.messages)?;
                    let target = if keep {
                        Target::New(net)
                    } else {
                        Target::Ephemeral(net)
                    };
                    (target, Input::Completion(None, schema, sampling))
                }
            };
            let submitted = state
                .runs
                .submit(&user, target, input, Some(new_id))
                .await?;
            (submitted.run, submitted.after)
        }
    };
    let model = body
        .model
        .clone()
        .unwrap_or_else(|| state.config.model_name.clone());
    // The session rides in the id too, which proxies keep when they drop
    // other fields: `chatcmpl-<session id>-<8 hex of the run>`.
    let completion_id = if run.ephemeral {
        format!("chatcmpl-{}", run.id.simple())
    } else {
        format!(
            "chatcmpl-{}-{}",
            run.session,
            &run.id.simple().to_string()[..8]
        )
    };
    let created = run.created_at.timestamp();
    let mut response = if body.stream {
        stream(
            state,
            &run,
            after,
            completion_id,
            model,
            created,
            include_usage,
        )
        .into_response()
    } else {
        let keyed = headers.contains_key("idempotency-key");
        let reply = Reply {
            completion_id,
            model,
            created,
            keyed,
            received,
        };
        whole(state, &run, after, reply).await
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&run.session.to_string())
        && !run.ephemeral
    {
        headers.insert(SESSION_HEADER, value);
    }
    if let Ok(value) = HeaderValue::from_str(&run.id.to_string()) {
        headers.insert(RUN_HEADER, value);
    }
    Ok(response)
}

/// The answer of a `done` event, or what waits for a decision.
fn answer_text(done: &RunDone, session: Uuid) -> String {
    if done.pending_approvals.is_empty() {
        return done.answer.clone();
    }
    let calls: Vec<String> = done
        .pending_approvals
        .iter()
        .map(|p: &PendingCall| format!("{} {}", p.tool_call.name, p.tool_call.arguments))
        .collect();
    format!(
        "Waiting for approval: {}. Decide with POST /api/sessions/{session}/approvals.",
        calls.join("; ")
    )
}

/// OpenAI's `finish_reason` of a `done` event: `tool_calls` when the run
/// waits for decisions on calls (they are the message's `tool_calls`),
/// `length` when the answer was cut off by the model's output limit,
/// else `stop`.
fn finish_reason(done: &RunDone) -> &'static str {
    if !done.pending_approvals.is_empty() {
        "tool_calls"
    } else if done.cut_off {
        "length"
    } else {
        "stop"
    }
}

/// The calls a waiting run holds, as OpenAI's `tool_calls` (`None` when
/// nothing waits). They are the agent's own calls, waiting for a person's
/// decision (`POST /api/sessions/{id}/approvals`); a client does not run
/// them, and a `tool` message sent back is not read.
fn pending_tool_calls(done: &RunDone, streamed: bool) -> Option<Value> {
    if done.pending_approvals.is_empty() {
        return None;
    }
    let calls: Vec<Value> = done
        .pending_approvals
        .iter()
        .enumerate()
        .map(|(index, p)| {
            let mut call = json!({
                "id": p.tool_call.id, "type": "function",
                "function": {"name": p.tool_call.name, "arguments": p.tool_call.arguments},
            });
            if streamed {
                call["index"] = json!(index);
            }
            call
        })
        .collect();
    Some(Value::Array(calls))
}

/// The run's usage of an end event, as OpenAI reports it.
fn usage_of(usage: Option<&Value>) -> Value {
    let totals: lc_agent::UsageTotals = usage
        .and_then(|u| serde_json::from_value(u.clone()).ok())
        .unwrap_or_default();
    crate::usage::openai_usage(&totals)
}

/// A non-streamed answer: waits for the run's end, or answers 408 with
/// the run and session to reattach to before the request's timeout (the
/// run goes on; the same request again reattaches).
/// What a non-streamed answer says besides the run's end.
struct Reply {
    completion_id: String,
    model: String,
    created: i64,
    /// Whether the request came with an `Idempotency-Key`.
    keyed: bool,
    /// When the request came in.
    received: tokio::time::Instant,
}

async fn whole(state: Arc<AppState>, run: &Run, after: u64, reply: Reply) -> Response {
    let Reply {
        completion_id,
        model,
        created,
        keyed,
        received,
    } = reply;
    // Answer the 408 well before the router's own timeout (which could
    // not name the run): a tenth of it, at least a second, at most half.
    let timeout = state.config.request_timeout;
    let margin = (timeout / 10)
        .max(std::time::Duration::from_secs(1))
        .min(timeout / 2);
    let patience = timeout.saturating_sub(margin);
    let mut events = Box::pin(state.runs.clone().events(run.id, after));
    let end = tokio::time::timeout_at(received + patience, async {
        let mut end = None;
        while let Some(e) = events.next().await {
            if e.event.is_end() {
                end = Some(e.event);
            }
        }
        end
    })
    .await;
    let (session, id) = (run.session, run.id);
    let named = (!run.ephemeral).then_some(session);
    let done = match end {
        Ok(Some(RunEvent::Done(done))) => done,
        Ok(Some(RunEvent::Error(error))) => return ApiError::Run(error.failure).into_response(),
        Ok(_) => {
            return ApiError::internal_msg(format!("run {id} ended without a result"))
                .into_response()
        }
        Err(_) => {
            let body = json!({
                "error": {
                    "message": timed_out(id, keyed),
                    "type": "timeout", "code": 408, "run": id, "session": named,
                },
                "run": id, "session": named,
            });
            return (StatusCode::REQUEST_TIMEOUT, Json(body)).into_response();
        }
    };
    let mut message = json!({"role": "assistant", "content": answer_text(&done, session)});
    if let Some(calls) = pending_tool_calls(&done, false) {
        message["tool_calls"] = calls;
    }
    Json(json!({
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "session": named,
        "run": id,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": finish_reason(&done),
        }],
        "usage": usage_of(done.usage.as_ref()),
    }))
    .into_response()
}

/// What a 408 says: how to get the answer of the run that goes on.
/// Only a retry of the same request reattaches (the same
/// `Idempotency-Key`, or the OpenAI SDK's own retry); a plain resend is a
/// new request.
fn timed_out(run: Uuid, keyed: bool) -> String {
    if keyed {
        format!(
            "the run is still going on: the same request with the same Idempotency-Key waits \
             for it (so does the OpenAI SDK's own retry), or follow GET /api/runs/{run}/events"
        )
    } else {
        format!(
            "the run is still going on: follow GET /api/runs/{run}/events (or read its answer \
             from GET /api/runs/{run} when it is done); the OpenAI SDK's own retry of this \
             request waits for it too, but a plain resend starts a new run (send an \
             Idempotency-Key to make resends safe)"
        )
    }
}

fn stream(
    state: Arc<AppState>,
    run: &Run,
    after: u64,
    completion_id: String,
    model: String,
    created: i64,
    include_usage: bool,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>> + use<>> {
    let (session, id) = (run.session, run.id);
    let named = (!run.ephemeral).then_some(session);
    let chunk = move |delta: Option<Value>, finish: Option<&str>, usage: Option<Value>| {
        let choices = match delta {
            Some(delta) => json!([{"index": 0, "delta": delta, "finish_reason": finish}]),
            None => json!([]),
        };
        let mut chunk = json!({
            "id": completion_id, "object": "chat.completion.chunk", "created": created,
            "model": model, "session": named, "run": id, "choices": choices,
        });
        // With `stream_options.include_usage`, every chunk has `usage`:
        // null until the last one (no choices) carries the run's.
        if include_usage {
            chunk["usage"] = usage.unwrap_or(Value::Null);
        }
        chunk
    };
    let first = futures::stream::once({
        let first = chunk(
            Some(json!({"role": "assistant", "content": ""})),
            None,
            None,
        );
        async move { Ok(Event::default().data(first.to_string())) }
    });
    let mut streamed = String::new();
    let body = state
        .runs
        .clone()
        .events(id, after)
        .filter_map(move |e| {
            let out = match e.event {
                RunEvent::Text { text, .. } => {
                    streamed.push_str(&text);
                    (!text.is_empty())
                        .then(|| vec![chunk(Some(json!({"content": text})), None, None)])
                }
                RunEvent::Error(error) => Some(vec![ApiError::Run(error.failure).body()]),
                RunEvent::Done(done) => {
                    // Text that did not stream (a waiting call's note) goes
                    // out in the last chunk.
                    let answer = answer_text(&done, session);
                    let rest = if streamed.ends_with(&answer) {
                        String::new()
                    } else {
                        answer
                    };
                    let mut delta = if rest.is_empty() {
                        json!({})
                    } else {
                        json!({"content": rest})
                    };
                    if let Some(calls) = pending_tool_calls(&done, true) {
                        delta["tool_calls"] = calls;
                    }
                    let mut chunks = vec![chunk(Some(delta), Some(finish_reason(&done)), None)];
                    if include_usage {
                        chunks.push(chunk(None, None, Some(usage_of(done.usage.as_ref()))));
                    }
                    Some(chunks)
                }
                _ => None,
            };
            futures::future::ready(out)
        })
        .flat_map(futures::stream::iter)
        .map(|v| Ok(Event::default().data(v.to_string())));
    let events = first.chain(body).chain(futures::stream::once(async {
        Ok(Event::default().data("[DONE]"))
    }));
    Sse::new(events).keep_alive(KeepAlive::default())
}
