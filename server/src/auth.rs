//! Who is asking: the [`User`] of a request, from its bearer token.
//!
//! ```text
//!  Authorization: Bearer <token> ─▶ Tokens::user_of ─▶ User("alice")
//!  no tokens configured (loopback only) ─▶ User("default")
//!  missing / unknown token ─▶ 401
//! ```
//!
//! A token belongs in the `Authorization` header. `?token=` is read only
//! where a browser cannot send a header: a `GET` of an event-stream route
//! (`/api/runs/{id}/events`) that asks for an event stream (`Accept:
//! text/event-stream`, what `EventSource` sends); not `/metrics` or any
//! other `GET`. The
//! page itself needs no token to load; `/?token=T` hands it the token,
//! which it keeps in the browser's storage and takes out of the address
//! bar. Everywhere else `?token=` is ignored (401 without a header), so
//! tokens stay out of URLs, logs and proxies. The access log never
//! records a query.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use lc_agent_deepagent::bearer_token;

use crate::access::AccessNote;
use crate::config::ANONYMOUS_USER;
use crate::error::ApiError;
use crate::state::AppState;

/// The user a request acts for: every session it sees is that user's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User(pub String);

fn bearer(parts: &Parts) -> Option<String> {
    let header = parts.headers.get(axum::http::header::AUTHORIZATION)?;
    bearer_token(header.to_str().ok()?).map(str::to_string)
}

/// The routes that answer with an event stream to a `GET`: the only ones
/// where `?token=` is read.
const EVENT_STREAM_ROUTES: &[&str] = &["/api/runs/:id/events"];

/// `?token=` of a `GET` asking for an event stream (see the module docs).
fn query_token(parts: &Parts) -> Option<String> {
    let event_stream = parts
        .headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    let stream_route = parts
        .extensions
        .get::<axum::extract::MatchedPath>()
        .is_some_and(|p| EVENT_STREAM_ROUTES.contains(&p.as_str()));
    if parts.method != axum::http::Method::GET || !event_stream || !stream_route {
        return None;
    }
    parts.uri.query()?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key == "token").then(|| value.to_string())
    })
}

#[axum::async_trait]
impl FromRequestParts<Arc<AppState>> for User {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let user = user_of(parts, state)?;
        if let Some(note) = parts.extensions.get::<AccessNote>() {
            note.user(&user.0);
        }
        Ok(user)
    }
}

fn user_of(parts: &Parts, state: &AppState) -> Result<User, ApiError> {
    {
        let tokens = &state.config.tokens;
        if tokens.is_empty() {
            return Ok(User(ANONYMOUS_USER.to_string()));
        }
        let Some(token) = bearer(parts).or_else(|| query_token(parts)) else {
            return Err(ApiError::Unauthorized(
                "missing bearer token: send `Authorization: Bearer <token>`".to_string(),
            ));
        };
        match tokens.user_of(&token) {
            Some(user) => Ok(User(user.to_string())),
            None => Err(ApiError::Unauthorized("unknown token".to_string())),
        }
    }
}
