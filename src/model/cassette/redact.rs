//! Keeping secrets out of cassettes: [`Redactor`].

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

/// What a secret becomes.
const MASK: &str = "***";

/// Environment variables whose values are secrets wherever they appear:
/// these names, and every name ending in one of [`SECRET_SUFFIXES`].
const SECRET_VARS: &[&str] = &["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LC_AGENT_TOKEN"];
const SECRET_SUFFIXES: &[&str] = &["_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD"];

/// Shorter values are not taken for secrets (they would mask common words).
const MIN_SECRET_CHARS: usize = 8;

/// Erases secrets from text: the values of the secret environment
/// variables and of secrets given by the caller, `Authorization` /
/// `x-api-key` / `api_key` values, `Bearer` tokens and `sk-` keys.
#[derive(Debug, Clone, Default)]
pub(super) struct Redactor {
    secrets: Vec<String>,
}

fn patterns() -> &'static [(Regex, &'static str)] {
    static PATTERNS: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        [
            // `Authorization: Bearer X`, `"x-api-key": "X"`, `api_key=X`.
            (
                r#"(?i)((?:authorization|proxy-authorization|x-api-key|api[_-]?key)"?\s*[:=]\s*"?)(?:(?:bearer|basic)\s+)?[^\s"',;}]{4,}"#,
                "${1}***",
            ),
            (r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}", "${1}***"),
            (r"\bsk-[A-Za-z0-9_-]{16,}", "sk-***"),
        ]
        .into_iter()
        .filter_map(|(pattern, replacement)| {
            Regex::new(pattern).ok().map(|regex| (regex, replacement))
        })
        .collect()
    })
}

impl Redactor {
    /// A redactor of the patterns and of the secret environment variables
    /// set now.
    pub(super) fn from_env() -> Self {
        let mut redactor = Self::default();
        for (name, value) in std::env::vars() {
            let secret = SECRET_VARS.contains(&name.as_str())
                || SECRET_SUFFIXES.iter().any(|suffix| name.ends_with(suffix));
            if secret {
                redactor.add(&value);
                // `user:token,user:token` (LC_AGENT_TOKEN) and lists.
                for piece in value.split([',', ':', ' ']) {
                    redactor.add(piece);
                }
            }
        }
        redactor
    }

    /// Also erases `secret` (ignored when shorter than 8 characters).
    pub(super) fn add(&mut self, secret: &str) {
        let secret = secret.trim();
        if secret.chars().count() >= MIN_SECRET_CHARS && !self.secrets.iter().any(|s| s == secret) {
            self.secrets.push(secret.to_string());
            // Longest first, so a secret containing another is erased whole.
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// `text` without secrets.
    pub(super) fn text(&self, text: &str) -> String {
        let mut text = text.to_string();
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), MASK);
            }
        }
        for (regex, replacement) in patterns() {
            if regex.is_match(&text) {
                text = regex.replace_all(&text, *replacement).into_owned();
            }
        }
        text
    }

    /// Every string in `value` (keys aside) without secrets.
    pub(super) fn value(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                let clean = self.text(text);
                if clean != *text {
                    *text = clean;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.value(item)),
            Value::Object(fields) => fields.values_mut().for_each(|field| self.value(field)),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_tokens_and_keys_are_erased() {
        let r = Redactor::default();
        assert_eq!(
            r.text("Authorization: Bearer abcdefgh12345678"),
            "Authorization: ***"
        );
        assert_eq!(
            r.text(r#"{"x-api-key": "sk-ant-0123456789abcdefXYZ"}"#),
            r#"{"x-api-key": "***"}"#
        );
        assert_eq!(
            r.text("use bearer tok.en-12345678 now"),
            "use bearer *** now"
        );
        assert_eq!(r.text("key sk-proj-0123456789abcdefgh"), "key sk-***");
        assert_eq!(r.text("api_key=hunter22hunter"), "api_key=***");
        assert_eq!(r.text("plain words stay"), "plain words stay");
    }

    #[test]
    fn given_secrets_are_erased_longest_first() {
        let mut r = Redactor::default();
        r.add("short");
        r.add("my-secret-value");
        r.add("my-secret-value-longer");
        assert_eq!(
            r.text("a my-secret-value-longer b my-secret-value short"),
            "a *** b *** short"
        );
    }

    #[test]
    fn strings_in_json_are_erased_keys_kept() {
        let mut r = Redactor::default();
        r.add("s3cr3t-t0ken");
        let mut v =
            serde_json::json!({"s3cr3t-t0ken": ["x s3cr3t-t0ken", 1, {"k": "s3cr3t-t0ken"}]});
        r.value(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"s3cr3t-t0ken": ["x ***", 1, {"k": "***"}]})
        );
    }
}
