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

/// Keys shorter than this are not masked: a one-letter test key such as
/// `x` would otherwise mask every `x` of an error text (and hide what the
/// error says), and a key this short protects nothing.
pub(crate) const MIN_SECRET_CHARS: usize = 8;

/// `text` with every whole occurrence of the API key (one not inside a
/// longer word) replaced by `***`; keys shorter than
/// [`MIN_SECRET_CHARS`] are left alone.
pub(crate) fn redact(key: Option<&ApiKey>, text: &str) -> String {
    let Some(ApiKey(key)) = key.filter(|k| k.0.chars().count() >= MIN_SECRET_CHARS) else {
        return text.to_string();
    };
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(key.as_str()) {
        let before = rest[..at].chars().next_back().or(out.chars().next_back());
        let after = rest[at + key.len()..].chars().next();
        out.push_str(&rest[..at]);
        if word(before) || word(after) {
            out.push_str(key);
        } else {
            out.push_str("***");
        }
        rest = &rest[at + key.len()..];
    }
    out.push_str(rest);
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_secrets_of_a_meaningful_length_are_masked() {
        let short = ApiKey("x".into());
        let text = "maximum context length exceeded";
        assert_eq!(redact(Some(&short), text), text);
        let key = ApiKey("sk-secret-123".into());
        assert_eq!(
            redact(Some(&key), "bad key sk-secret-123, see sk-secret-123"),
            "bad key ***, see ***"
        );
        assert_eq!(
            redact(Some(&key), "Bearer sk-secret-123 in ?k=sk-secret-123&x"),
            "Bearer *** in ?k=***&x"
        );
        // Inside a longer word it is another token, not the key.
        assert_eq!(redact(Some(&key), "xsk-secret-1234"), "xsk-secret-1234");
    }
}
