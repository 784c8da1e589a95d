//! Reading Redis replies: text, arrays, stream entries, fields.

use ::redis::Value;
use lc_agent::ListError;

use crate::runs::store::RunError;

/// A Redis failure as a run store error.
pub(super) fn store(e: ListError) -> RunError {
    RunError::store("reach Redis", e)
}

/// A reply's text (strings and integers).
pub(super) fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        _ => None,
    }
}

/// A reply's items (arrays, sets, maps as key, value, ...).
pub(super) fn items(v: Value) -> Vec<Value> {
    match v {
        Value::Array(a) | Value::Set(a) => a,
        Value::Map(m) => m.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        Value::Nil => Vec::new(),
        other => vec![other],
    }
}

/// `[[id, [field, value, ...]], ...]` of a stream reply.
pub(super) fn entries(v: Value) -> Vec<(String, Vec<(String, String)>)> {
    items(v)
        .into_iter()
        .filter_map(|entry| {
            let mut parts = items(entry).into_iter();
            let id = text(&parts.next()?)?;
            let fields = items(parts.next().unwrap_or(Value::Nil));
            let pairs = fields
                .chunks(2)
                .filter_map(|kv| Some((text(kv.first()?)?, text(kv.get(1)?)?)))
                .collect();
            Some((id, pairs))
        })
        .collect()
}

/// The value of `name` among `fields`.
pub(super) fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}
