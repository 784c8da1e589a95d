//! Error text without secrets: the [`ApiKey`] (its `Debug` shows `***`)
//! and the helpers that every error message quoting the server or the HTTP
//! client goes through — they erase the key and cut long text short.

use std::borrow::Cow;
use std::fmt;

/// How much of an error body is kept in [`ModelError::Http`] (and of an
/// error reported in the middle of a stream).
///
/// [`ModelError::Http`]: crate::error::ModelError::Http
pub(crate) const MAX_ERROR_BODY_CHARS: usize = 2000;
/// How much of a malformed body is quoted in
/// [`ModelError::InvalidResponse`].
///
/// [`ModelError::InvalidResponse`]: crate::error::ModelError::InvalidResponse
pub(crate) const MAX_EXCERPT_CHARS: usize = 200;

/// An API key; its `Debug` never shows it. It is only ever sent in its
/// header (`Authorization`, or a provider's own such as `x-api-key`).
#[derive(Clone)]
pub(crate) struct ApiKey(pub(crate) String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"***\"")
    }
}

/// `text` with every occurrence of the API key replaced by `***`.
pub(crate) fn redact(key: Option<&ApiKey>, text: &str) -> String {
    match key {
        Some(ApiKey(key)) if !key.is_empty() => text.replace(key.as_str(), "***"),
        _ => text.to_string(),
    }
}

/// `text` cut to `max` characters (marked with `…` when cut), then
/// redacted.
pub(crate) fn excerpt(key: Option<&ApiKey>, text: &str, max: usize) -> String {
    let short = match text.char_indices().nth(max) {
        Some((end, _)) => Cow::Owned(format!("{}…", &text[..end])),
        None => Cow::Borrowed(text),
    };
    redact(key, &short)
}

/// An error and its causes on one line, redacted.
pub(crate) fn describe(key: Option<&ApiKey>, error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    redact(key, &text)
}
