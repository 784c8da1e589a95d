//! What differs between two JSON values, for a person to read: one line
//! per difference, each with the path to it (`messages[2].content`), the
//! recorded value, then the value now.

use serde_json::Value;

/// At most this many differences are listed.
const MAX_LINES: usize = 12;
/// Quoted text longer than this is shortened around the first difference.
const MAX_QUOTE_CHARS: usize = 120;

/// The differences between `recorded` and `now`, one per line, indented
/// by two spaces; empty when they are equal.
pub(super) fn diff(recorded: &Value, now: &Value) -> String {
    let mut lines = Vec::new();
    walk("", recorded, now, &mut lines);
    let more = lines.len().saturating_sub(MAX_LINES);
    lines.truncate(MAX_LINES);
    match more {
        0 => {}
        1 => lines.push("… and 1 more difference".to_string()),
        more => lines.push(format!("… and {more} more differences")),
    }
    lines
        .iter()
        .map(|line| format!("  {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn walk(path: &str, recorded: &Value, now: &Value, lines: &mut Vec<String>) {
    if recorded == now {
        return;
    }
    let here = if path.is_empty() { "(request)" } else { path };
    match (recorded, now) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let inner = join(path, key);
                match b.get(key) {
                    Some(other) => walk(&inner, value, other, lines),
                    None => lines.push(format!("{inner}: recorded {}, now none", quote(value))),
                }
            }
            for (key, value) in b.iter().filter(|(key, _)| !a.contains_key(*key)) {
                lines.push(format!(
                    "{}: recorded none, now {}",
                    join(path, key),
                    quote(value)
                ));
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                lines.push(format!("{here}: {} recorded, {} now", a.len(), b.len()));
            }
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                walk(&format!("{path}[{index}]{}", role(y)), x, y, lines);
            }
            for (index, value) in a.iter().enumerate().skip(b.len()) {
                lines.push(format!(
                    "{path}[{index}]: recorded {}, now none",
                    quote(value)
                ));
            }
            for (index, value) in b.iter().enumerate().skip(a.len()) {
                lines.push(format!(
                    "{path}[{index}]{}: recorded none, now {}",
                    role(value),
                    quote(value)
                ));
            }
        }
        (Value::String(a), Value::String(b)) => {
            let (a, b) = around_difference(a, b);
            lines.push(format!("{here}: recorded {a}, now {b}"));
        }
        _ => lines.push(format!(
            "{here}: recorded {}, now {}",
            quote(recorded),
            quote(now)
        )),
    }
}

/// ` (human)` for a message, so a path says whose message differs.
fn role(value: &Value) -> String {
    value
        .get("role")
        .and_then(Value::as_str)
        .map(|role| format!(" ({role})"))
        .unwrap_or_default()
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A value as compact JSON, shortened.
fn quote(value: &Value) -> String {
    shorten(&value.to_string(), 0)
}

/// Both strings quoted, shortened around where they first differ.
fn around_difference(a: &str, b: &str) -> (String, String) {
    let first = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let start = first.saturating_sub(MAX_QUOTE_CHARS / 3);
    let quoted = |text: &str| shorten(&Value::String(text.to_string()).to_string(), start);
    (quoted(a), quoted(b))
}

/// `text` from char `start` (marked `…` when it does not start at 0), at
/// most [`MAX_QUOTE_CHARS`] chars (marked `…` when cut).
fn shorten(text: &str, start: usize) -> String {
    let count = text.chars().count();
    let mut out: String = text.chars().skip(start).take(MAX_QUOTE_CHARS).collect();
    if start > 0 {
        out.insert(0, '…');
    }
    if start + MAX_QUOTE_CHARS < count {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_values_have_no_difference() {
        let v = json!({"messages": [{"role": "human", "content": "hi"}]});
        assert_eq!(diff(&v, &v), "");
    }

    #[test]
    fn a_changed_message_is_named_by_path_and_role() {
        let a = json!({"messages": [{"role": "system", "content": "s"}, {"role": "human", "content": "Say hi"}]});
        let b = json!({"messages": [{"role": "system", "content": "s"}, {"role": "human", "content": "Say hello"}]});
        assert_eq!(
            diff(&a, &b),
            r#"  messages[1] (human).content: recorded "Say hi", now "Say hello""#
        );
    }

    #[test]
    fn added_removed_and_changed_fields_are_listed() {
        let a = json!({"tools": {"ls": {"description": "list"}}, "tool_choice": "auto"});
        let b = json!({"tools": {"ls": {"description": "list"}, "grep": {"description": "find"}}, "messages": []});
        assert_eq!(
            diff(&a, &b),
            "  tools.grep: recorded none, now {\"description\":\"find\"}\n  \
             tool_choice: recorded \"auto\", now none\n  \
             messages: recorded none, now []"
        );
    }

    #[test]
    fn extra_messages_are_counted_and_shown() {
        let a = json!({"messages": [{"role": "human", "content": "a"}]});
        let b = json!({"messages": [{"role": "human", "content": "a"}, {"role": "ai", "content": "b"}]});
        assert_eq!(
            diff(&a, &b),
            "  messages: 1 recorded, 2 now\n  \
             messages[1] (ai): recorded none, now {\"role\":\"ai\",\"content\":\"b\"}"
        );
    }

    #[test]
    fn long_text_is_shown_around_the_first_difference() {
        let base = "x".repeat(500);
        let a = json!(format!("{base}AAA{base}"));
        let b = json!(format!("{base}BBB{base}"));
        let d = diff(&a, &b);
        assert!(
            d.contains("…") && d.contains("AAA") && d.contains("BBB"),
            "{d}"
        );
        assert!(d.len() < 400, "{d}");
    }

    #[test]
    fn many_differences_are_cut_short() {
        let a = json!((0..40).collect::<Vec<_>>());
        let b = json!((100..140).collect::<Vec<_>>());
        let d = diff(&a, &b);
        assert_eq!(d.lines().count(), MAX_LINES + 1, "{d}");
        assert!(d.ends_with("more differences"), "{d}");
    }
}
