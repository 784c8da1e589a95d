//! Who is asking: the [`User`] of a request, from its bearer token.
//!
//! ```text
//!  Authorization: Bearer <token> ─▶ Tokens::user_of ─▶ User("alice")
//!  no tokens configured (loopback only) ─▶ User("default")
//!  missing / unknown token ─▶ 401
//! ```
//!
//! The web page cannot set a header on its first GET, so the token may
//! also come as `?token=` on the page's own requests (the page keeps it
//! in the browser's storage).

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::config::ANONYMOUS_USER;
use crate::error::ApiError;
use crate::state::AppState;

/// The user a request acts for: every session it sees is that user's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User(pub String);

fn bearer(parts: &Parts) -> Option<String> {
    let header = parts.headers.get(axum::http::header::AUTHORIZATION)?;
    let text = header.to_str().ok()?.trim();
    let (scheme, token) = text.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_string())
}

fn query_token(parts: &Parts) -> Option<String> {
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
