//! A node's metadata: a few keys in the order they were set, the values
//! the library itself writes on every turn kept typed.
//!
//! ```text
//!  Metadata [ (key, Entry) … ]        keys: &'static str for the known ones
//!     Entry::Json(Value)              what a user or an older file set
//!     Entry::Usage(Usage)             `token_usage`, written by a chat call
//!     Entry::Timings(Timings)         `timings`, written by every run
//! ```
//!
//! A turn records its timings and usage without building JSON or hashing a
//! key; the saved form is written from the typed values, exactly as their
//! JSON would be (same keys, same order, same text), so files re-save byte
//! for byte. Readers outside the core see a JSON object
//! ([`NodeRef::metadata`](crate::NodeRef::metadata)).

use std::borrow::Cow;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::model::Usage;

/// The keys the library writes, matched when a saved node is read so that
/// they take no allocation.
const KNOWN_KEYS: [&str; 9] = [
    "timings",
    "token_usage",
    "chat_model_name",
    "response_model",
    "finish_reason",
    "added_by",
    "error",
    "held",
    "tool_retries",
];

/// A metadata key: a known one borrowed, any other owned.
pub(crate) type Key = Cow<'static, str>;

/// When a node ran and for how long (saved as `{"started_at": RFC 3339
/// with microseconds, "elapsed_us": n}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timings {
    /// When the node started.
    pub(crate) started_at: chrono::DateTime<chrono::Utc>,
    /// How long it ran, in microseconds.
    pub(crate) elapsed_us: u64,
}

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// Any JSON value.
    Json(Value),
    /// A chat call's token usage.
    Usage(Usage),
    /// A run's timings.
    Timings(Timings),
    /// A string shared with its writer (`added_by`: the modifier's id,
    /// one copy for every node it adds).
    Text(std::sync::Arc<str>),
}

impl Entry {
    /// The value as JSON.
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Entry::Json(v) => v.clone(),
            Entry::Text(s) => Value::String(s.to_string()),
            // Written as it saves (see `Serialize`); numbers and a time:
            // it always serializes.
            typed => serde_json::to_value(typed).unwrap_or(Value::Null),
        }
    }

    /// The value as a string, when it is one.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Entry::Json(v) => v.as_str(),
            Entry::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The value as token usage, when it is (or reads as) one.
    pub(crate) fn usage(&self) -> Option<Usage> {
        match self {
            Entry::Usage(u) => Some(*u),
            Entry::Json(v) => Usage::deserialize(v).ok(),
            Entry::Timings(_) | Entry::Text(_) => None,
        }
    }

    /// When the node started, for timings (typed or read back from JSON).
    pub(crate) fn started_at(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        match self {
            Entry::Timings(t) => Some(t.started_at),
            Entry::Json(v) => v
                .get("started_at")
                .and_then(Value::as_str)
                .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
                .map(|t| t.with_timezone(&chrono::Utc)),
            Entry::Usage(_) | Entry::Text(_) => None,
        }
    }
}

impl From<Value> for Entry {
    fn from(v: Value) -> Self {
        Entry::Json(v)
    }
}

impl Serialize for Entry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Entry::Json(v) => v.serialize(s),
            Entry::Usage(u) => u.serialize(s),
            Entry::Text(t) => t.serialize(s),
            Entry::Timings(t) => {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("started_at", &crate::files::rfc3339_micros(t.started_at))?;
                map.serialize_entry("elapsed_us", &t.elapsed_us)?;
                map.end()
            }
        }
    }
}

/// A node's metadata (see the module's documentation).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Metadata(Vec<(Key, Entry)>);

impl Metadata {
    /// Room for `n` more keys.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.0.reserve(n);
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&Entry> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The string value of `key`.
    pub(crate) fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Entry::as_str)
    }

    /// Sets `key`; an existing key keeps its place. Returns the old value.
    pub(crate) fn insert(&mut self, key: impl Into<Key>, value: impl Into<Entry>) -> Option<Entry> {
        let key = key.into();
        let value = value.into();
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, old)) => Some(std::mem::replace(old, value)),
            None => {
                self.0.push((key, value));
                None
            }
        }
    }

    /// Removes `key`, keeping the others in order.
    pub(crate) fn remove(&mut self, key: &str) -> Option<Entry> {
        let at = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(at).1)
    }

    /// The metadata as a JSON object.
    pub(crate) fn to_map(&self) -> Map<String, Value> {
        let mut map = Map::with_capacity(self.0.len());
        for (k, v) in &self.0 {
            map.insert(k.to_string(), v.to_value());
        }
        map
    }
}

/// A key, borrowed from the known ones when it is one of them, else
/// owned (an owned key is kept as it is, not copied).
pub(crate) fn key_of(key: Cow<'_, str>) -> Key {
    match KNOWN_KEYS.iter().find(|k| **k == key) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(key.into_owned()),
    }
}

impl From<Map<String, Value>> for Metadata {
    fn from(map: Map<String, Value>) -> Self {
        Metadata(
            map.into_iter()
                .map(|(k, v)| (key_of(Cow::Owned(k)), Entry::Json(v)))
                .collect(),
        )
    }
}

impl Serialize for Metadata {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k.as_ref(), v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = Metadata;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a metadata object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Metadata, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(key) = map.next_key::<KeyText<'de>>()? {
                    let key = key_of(key.0);
                    // The library's own values are read typed when their
                    // JSON is exactly what the typed value writes.
                    let value = match key.as_ref() {
                        "timings" => map.next_value::<Fields<'de>>()?.timings(),
                        "token_usage" => map.next_value::<Fields<'de>>()?.usage(),
                        _ => Entry::Json(map.next_value()?),
                    };
                    // A key given twice keeps its first place and its last
                    // value, as a JSON object reads.
                    match out.iter_mut().find(|(k, _): &&mut (Key, Entry)| *k == key) {
                        Some((_, old)) => *old = value,
                        None => out.push((key, value)),
                    }
                }
                Ok(Metadata(out))
            }
        }
        d.deserialize_map(Entries)
    }
}

/// A value read as the fields of an object, in order, with no map built
/// (any other JSON value as it is).
enum Fields<'de> {
    Object(Vec<(Cow<'de, str>, Value)>),
    Other(Value),
}

impl Fields<'_> {
    /// The value as an object (for a value that is not typed after all).
    fn into_value(self) -> Value {
        match self {
            Fields::Object(fields) => Value::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| (k.into_owned(), v))
                    .collect(),
            ),
            Fields::Other(v) => v,
        }
    }

    /// Typed timings when the object is exactly `{"started_at": <the time
    /// as the library writes it>, "elapsed_us": n}`.
    fn timings(self) -> Entry {
        if let Fields::Object(fields) = &self
            && let [(k1, Value::String(at)), (k2, elapsed)] = fields.as_slice()
            && k1 == "started_at"
            && k2 == "elapsed_us"
            && let Some(elapsed_us) = elapsed.as_u64()
            && let Ok(started) = chrono::DateTime::parse_from_rfc3339(at)
        {
            let started_at = started.with_timezone(&chrono::Utc);
            if crate::files::rfc3339_micros(started_at) == *at {
                return Entry::Timings(Timings {
                    started_at,
                    elapsed_us,
                });
            }
        }
        Entry::Json(self.into_value())
    }

    /// Typed usage when the object holds exactly the keys, in the order,
    /// that the usage writes (counts as whole numbers, `estimated` only
    /// when true).
    fn usage(self) -> Entry {
        const OPTIONAL: [&str; 3] = [
            "cache_read_tokens",
            "cache_write_tokens",
            "reasoning_tokens",
        ];
        let Fields::Object(fields) = &self else {
            return Entry::Json(self.into_value());
        };
        let mut usage = Usage::default();
        let mut expected = ["prompt_tokens", "completion_tokens", "total_tokens"].into_iter();
        let mut optional = OPTIONAL.iter().enumerate();
        let mut fits = fields.len() >= 3;
        for (i, (key, value)) in fields.iter().enumerate() {
            if !fits {
                break;
            }
            if i < 3 {
                fits = expected.next() == Some(key.as_ref());
                let n = value.as_u64();
                fits &= n.is_some();
                let n = n.unwrap_or(0);
                match i {
                    0 => usage.prompt_tokens = n,
                    1 => usage.completion_tokens = n,
                    _ => usage.total_tokens = n,
                }
                continue;
            }
            if key == "estimated" {
                // Written only when true, and last.
                fits = value == &Value::Bool(true) && i == fields.len() - 1;
                usage.estimated = true;
                continue;
            }
            // An optional count: in its order, and written only when not 0.
            fits = match optional.find(|(_, name)| **name == key.as_ref()) {
                Some((slot, _)) => match value.as_u64() {
                    Some(n) if n != 0 => {
                        match slot {
                            0 => usage.cache_read_tokens = n,
                            1 => usage.cache_write_tokens = n,
                            _ => usage.reasoning_tokens = n,
                        }
                        true
                    }
                    _ => false,
                },
                None => false,
            };
        }
        if fits {
            Entry::Usage(usage)
        } else {
            Entry::Json(self.into_value())
        }
    }
}

impl<'de> Deserialize<'de> for Fields<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
                let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some(key) = map.next_key::<KeyText<'de>>()? {
                    let value: Value = map.next_value()?;
                    fields.push((key.0, value));
                }
                // A key given twice reads as a JSON object does.
                let twice = |(i, (key, _)): (usize, &(Cow<'_, str>, Value))| {
                    fields[..i].iter().any(|(earlier, _)| earlier == key)
                };
                if fields.iter().enumerate().any(twice) {
                    return Ok(Fields::Other(Fields::Object(fields).into_value()));
                }
                Ok(Fields::Object(fields))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Fields<'de>, A::Error> {
                Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(Fields::Other)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Fields<'de>, E> {
                Ok(Fields::Other(Value::Bool(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Fields<'de>, E> {
                Ok(Fields::Other(Value::from(v)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Fields<'de>, E> {
                Ok(Fields::Other(Value::from(v)))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Fields<'de>, E> {
                Ok(Fields::Other(Value::from(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Fields<'de>, E> {
                Ok(Fields::Other(Value::String(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Fields<'de>, E> {
                Ok(Fields::Other(Value::String(v)))
            }
            fn visit_unit<E>(self) -> Result<Fields<'de>, E> {
                Ok(Fields::Other(Value::Null))
            }
            fn visit_none<E>(self) -> Result<Fields<'de>, E> {
                Ok(Fields::Other(Value::Null))
            }
        }
        d.deserialize_any(V)
    }
}

/// A key as read: borrowed from the input when it can be.
struct KeyText<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for KeyText<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = KeyText<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned(v)))
            }
        }
        d.deserialize_str(Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_values_save_as_their_json_would() {
        let started = chrono::DateTime::parse_from_rfc3339("2026-11-21T10:00:00.123456Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let usage = Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            total_tokens: 15,
            estimated: true,
            ..Usage::default()
        };
        let mut m = Metadata::default();
        m.insert("user", json!({"a": [1, 2]}));
        m.insert(
            "timings",
            Entry::Timings(Timings {
                started_at: started,
                elapsed_us: 42,
            }),
        );
        m.insert("token_usage", Entry::Usage(usage));
        let as_map = m.to_map();
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            serde_json::to_string(&as_map).unwrap()
        );
        assert_eq!(
            as_map["timings"],
            json!({"started_at": "2026-11-21T10:00:00.123456Z", "elapsed_us": 42})
        );
        assert_eq!(m.get("token_usage").and_then(Entry::usage), Some(usage));
        assert_eq!(m.get("timings").and_then(Entry::started_at), Some(started));
    }

    #[test]
    fn order_is_kept_through_insert_remove_and_a_round_trip() {
        let text = r#"{"b":1,"error":"x","a":{"k":[true,null]},"timings":{"elapsed_us":3,"started_at":"t"}}"#;
        let mut m: Metadata = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&m).unwrap(), text);
        assert!(matches!(
            m.get("error").map(|e| e.as_str()),
            Some(Some("x"))
        ));
        m.insert("b", json!(2));
        m.remove("error");
        m.insert("z", json!(null));
        let keys: Vec<_> = m.to_map().keys().cloned().collect();
        assert_eq!(keys, ["b", "a", "timings", "z"]);
        assert_eq!(
            m.to_map(),
            serde_json::from_str::<Map<String, Value>>(&serde_json::to_string(&m).unwrap())
                .unwrap()
        );
    }

    #[test]
    fn the_librarys_values_read_typed_only_when_they_save_back_the_same() {
        let typed = [
            r#"{"timings":{"started_at":"2026-11-21T10:00:00.123456Z","elapsed_us":7}}"#,
            r#"{"token_usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}"#,
            r#"{"token_usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"cache_read_tokens":4,"reasoning_tokens":5,"estimated":true}}"#,
        ];
        for text in typed {
            let m: Metadata = serde_json::from_str(text).unwrap();
            assert!(!matches!(m.0[0].1, Entry::Json(_)), "{text}");
            assert_eq!(serde_json::to_string(&m).unwrap(), text);
        }
        let as_json = [
            // Another time format, key order, extra key, a zero written,
            // `estimated: false` written, a fraction, a negative, not an
            // object, a key twice.
            r#"{"timings":{"started_at":"2026-11-21T10:00:00Z","elapsed_us":7}}"#,
            r#"{"timings":{"elapsed_us":7,"started_at":"2026-11-21T10:00:00.123456Z"}}"#,
            r#"{"timings":{"started_at":"2026-11-21T10:00:00.123456Z","elapsed_us":7,"x":1}}"#,
            r#"{"token_usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"cache_read_tokens":0}}"#,
            r#"{"token_usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"estimated":false}}"#,
            r#"{"token_usage":{"prompt_tokens":1.5,"completion_tokens":2,"total_tokens":3}}"#,
            r#"{"token_usage":{"prompt_tokens":-1,"completion_tokens":2,"total_tokens":3}}"#,
            r#"{"token_usage":{"completion_tokens":2,"prompt_tokens":1,"total_tokens":3}}"#,
            r#"{"token_usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"reasoning_tokens":5,"cache_read_tokens":4}}"#,
            r#"{"token_usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"estimated":true,"reasoning_tokens":5}}"#,
            r#"{"token_usage":[1,2,{"a":null}]}"#,
            r#"{"timings":null}"#,
            r#"{"token_usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"total_tokens":4}}"#,
        ];
        for text in as_json {
            let m: Metadata = serde_json::from_str(text).unwrap();
            assert!(matches!(m.0[0].1, Entry::Json(_)), "{text}");
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(Value::Object(m.to_map()), value, "{text}");
            assert_eq!(
                serde_json::to_string(&m).unwrap(),
                value.to_string(),
                "{text}"
            );
        }
    }

    #[test]
    fn a_key_given_twice_reads_as_json_does() {
        let text = r#"{"a":1,"b":2,"a":3}"#;
        let m: Metadata = serde_json::from_str(text).unwrap();
        let map: Map<String, Value> = serde_json::from_str(text).unwrap();
        assert_eq!(m.to_map(), map);
    }
}
