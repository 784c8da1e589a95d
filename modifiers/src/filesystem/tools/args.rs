//! Typed tool arguments: each tool's `Args` struct derives `Deserialize`,
//! and [`parse`] reads it from the model's JSON object with the spec's
//! wording for every mistake: `Invalid arguments for <tool>: <reason>`.
//!
//! ```text
//!  {"limit": 0, "file_path": "/a"}               keys in any order
//!    parse --> the struct's fields in declared order: file_path, offset, limit
//!      absent or null  -> None for an `Option`, else "missing required argument `k`"
//!      wrong JSON type -> "`k` must be a string|a boolean|an integer, got <json>"
//!      below minimum   -> "`k` must be at least <min>, got <n>"      (AtLeast)
//!      unknown choice  -> "`k` must be one of \"a\", \"b\", got \"x\""  (enums)
//!    not an object     -> "expected a JSON object, got <json>"   (null reads as {})
//! ```
//!
//! Fields are read in the order the struct declares them, whatever the
//! order of the keys, so the mistake reported first never depends on how
//! the model ordered its arguments. An absent (or null) field is handed to
//! its type as "none": `Option<T>` reads it as `None`, any other type
//! reports it missing — so optional arguments are `Option`s (their defaults
//! are applied by the tool), never `#[serde(default)]`. Strings are
//! borrowed from the arguments, not copied.

use std::fmt;

use lc_agent::ToolError;
use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, IntoDeserializer, Visitor};
use serde_json::{Map, Value};

/// Reads the arguments of `tool` into its typed `Args`.
///
/// ```
/// use lc_agent_modifiers::filesystem::tools::{args, ReadFileArgs};
/// use serde_json::json;
///
/// let given = json!({"limit": 0, "file_path": "/a.txt"});
/// let err = args::parse::<ReadFileArgs>("read_file", &given).unwrap_err();
/// assert_eq!(err.to_string(), "Invalid arguments for read_file: `limit` must be at least 1, got 0");
/// let given = json!({"file_path": "/a.txt", "offset": 2.0});
/// let read: ReadFileArgs = args::parse("read_file", &given).unwrap();
/// assert_eq!((read.file_path, read.offset.map(|o| o.get())), ("/a.txt", Some(2)));
/// ```
pub fn parse<'a, T: Deserialize<'a>>(tool: &str, args: &'a Value) -> Result<T, ToolError> {
    let fields = match args {
        Value::Object(map) => Fields(Some(map)),
        Value::Null => Fields(None),
        other => {
            return Err(invalid(
                tool,
                format!("expected a JSON object, got {other}"),
            ))
        }
    };
    T::deserialize(fields).map_err(|e| invalid(tool, e.to_string()))
}

/// The error for arguments of `tool` that are wrong for `reason`.
pub fn invalid(tool: &str, reason: String) -> ToolError {
    ToolError::InvalidArguments {
        tool: tool.to_string(),
        reason,
    }
}

/// A whole number of at least `MIN`: how the tools read `offset`, `limit`,
/// `context`, `max_count` and `timeout`. A JSON number without a fraction
/// (`2.0`) counts as whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtLeast<const MIN: i64>(usize);

impl<const MIN: i64> AtLeast<MIN> {
    /// `n` when it is at least `MIN`.
    pub fn new(n: usize) -> Option<Self> {
        (i64::try_from(n).unwrap_or(i64::MAX) >= MIN).then_some(Self(n))
    }

    /// The number.
    pub fn get(self) -> usize {
        self.0
    }
}

impl<'de, const MIN: i64> Deserialize<'de> for AtLeast<MIN> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_i64(AtLeastVisitor::<MIN>)
    }
}

struct AtLeastVisitor<const MIN: i64>;

impl<const MIN: i64> Visitor<'_> for AtLeastVisitor<MIN> {
    type Value = AtLeast<MIN>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer")
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
        if n < MIN {
            return Err(E::custom(format_args!("must be at least {MIN}, got {n}")));
        }
        Ok(AtLeast(usize::try_from(n).unwrap_or(usize::MAX)))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
        match i64::try_from(n) {
            Ok(n) => self.visit_i64(n),
            Err(_) => Err(E::invalid_type(de::Unexpected::Unsigned(n), &self)),
        }
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Self::Value, E> {
        if f.fract() == 0.0 && f.abs() < 9e15 {
            self.visit_i64(f as i64)
        } else {
            Err(E::invalid_type(de::Unexpected::Float(f), &self))
        }
    }
}

/// Why an argument was refused; [`ArgError::at`] ties it to its key.
#[derive(Debug)]
enum ArgError {
    /// Absent or null, and the type has no "none".
    Missing,
    /// The wrong JSON type; what was expected ("a string").
    Expected(String),
    /// Any other reason, to follow the key ("must be at least 1, got 0").
    Reason(String),
    /// The whole reason, key included.
    At(String),
}

impl ArgError {
    /// The reason as the model reads it, naming `key` (and the value given).
    fn at(self, key: &str, value: Option<&Value>) -> Self {
        ArgError::At(match self {
            ArgError::At(reason) => reason,
            ArgError::Missing => format!("missing required argument `{key}`"),
            ArgError::Expected(what) => {
                format!(
                    "`{key}` must be {what}, got {}",
                    value.unwrap_or(&Value::Null)
                )
            }
            ArgError::Reason(reason) => format!("`{key}` {reason}"),
        })
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgError::Missing => f.write_str("missing required argument"),
            ArgError::Expected(what) => write!(f, "expected {what}"),
            ArgError::Reason(reason) | ArgError::At(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for ArgError {}

impl de::Error for ArgError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ArgError::Reason(msg.to_string())
    }

    fn invalid_type(_: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        ArgError::Expected(expected.to_string())
    }

    fn missing_field(_: &'static str) -> Self {
        ArgError::Missing
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        let choices: Vec<String> = expected.iter().map(|c| format!("\"{c}\"")).collect();
        ArgError::Reason(format!(
            "must be one of {}, got \"{variant}\"",
            choices.join(", ")
        ))
    }
}

/// Field or variant names, as serde hands them over.
type Names = &'static [&'static str];
/// What a visitor makes of a value, or why not.
type Out<'de, V> = Result<<V as Visitor<'de>>::Value, ArgError>;

/// The arguments object (`None`: no arguments), read as a struct.
struct Fields<'a>(Option<&'a Map<String, Value>>);

impl<'de> Deserializer<'de> for Fields<'de> {
    type Error = ArgError;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &str,
        fields: Names,
        visitor: V,
    ) -> Out<'de, V> {
        visitor.visit_map(InOrder {
            map: self.0,
            fields: fields.iter(),
            key: "",
        })
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Out<'de, V> {
        Err(ArgError::At(
            "tool arguments are read into a struct".to_string(),
        ))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// Hands a struct its fields in declared order: every field, present or not.
struct InOrder<'a> {
    map: Option<&'a Map<String, Value>>,
    fields: std::slice::Iter<'static, &'static str>,
    key: &'static str,
}

impl<'de> de::MapAccess<'de> for InOrder<'de> {
    type Error = ArgError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ArgError> {
        let Some(&key) = self.fields.next() else {
            return Ok(None);
        };
        self.key = key;
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ArgError> {
        let value = self
            .map
            .and_then(|map| map.get(self.key))
            .filter(|v| !v.is_null());
        seed.deserialize(Field(value))
            .map_err(|e| e.at(self.key, value))
    }
}

/// One argument's value (`None`: absent or null).
struct Field<'a>(Option<&'a Value>);

impl<'a> Field<'a> {
    /// The value as the JSON type `what` that `get` reads.
    fn typed<T>(self, what: &str, get: fn(&'a Value) -> Option<T>) -> Result<T, ArgError> {
        let value = self.0.ok_or(ArgError::Missing)?;
        get(value).ok_or_else(|| ArgError::Expected(what.to_string()))
    }
}

impl<'de> Deserializer<'de> for Field<'de> {
    type Error = ArgError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        match self.0 {
            None => Err(ArgError::Missing),
            Some(Value::Null) => visitor.visit_unit(),
            Some(Value::Bool(b)) => visitor.visit_bool(*b),
            Some(Value::Number(n)) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => visitor.visit_i64(i),
                (None, Some(u)) => visitor.visit_u64(u),
                (None, None) => visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN)),
            },
            Some(Value::String(s)) => visitor.visit_borrowed_str(s),
            Some(Value::Array(_)) => Err(de::Error::invalid_type(de::Unexpected::Seq, &visitor)),
            Some(Value::Object(_)) => Err(de::Error::invalid_type(de::Unexpected::Map, &visitor)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        match self.0 {
            None => visitor.visit_none(),
            Some(_) => visitor.visit_some(self),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        visitor.visit_bool(self.typed("a boolean", Value::as_bool)?)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        visitor.visit_borrowed_str(self.typed("a string", Value::as_str)?)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        self.deserialize_str(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(self, _: &str, _: Names, visitor: V) -> Out<'de, V> {
        visitor.visit_enum(self.typed("a string", Value::as_str)?.into_deserializer())
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::filesystem::tools::{ExecuteArgs, GrepArgs, LsArgs, ReadFileArgs};

    fn reason<'a, T: Deserialize<'a>>(tool: &str, args: &'a Value) -> String {
        match parse::<T>(tool, args) {
            Ok(_) => "ok".to_string(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_first_mistake_in_declared_order_whatever_the_key_order() {
        let args = json!({"limit": 0, "offset": "x"});
        assert_eq!(
            reason::<ReadFileArgs>("read_file", &args),
            "Invalid arguments for read_file: missing required argument `file_path`"
        );
        let args = json!({"max_count": 0, "context": -1, "output_mode": "lines", "pattern": "x"});
        assert_eq!(
            reason::<GrepArgs>("grep", &args),
            "Invalid arguments for grep: `output_mode` must be one of \"files_with_matches\", \"content\", \"count\", got \"lines\""
        );
        let args = json!({"max_count": 0, "context": -1, "pattern": "x"});
        assert_eq!(
            reason::<GrepArgs>("grep", &args),
            "Invalid arguments for grep: `context` must be at least 0, got -1"
        );
    }

    #[test]
    fn types_nulls_and_numbers() {
        let cases = [
            ("ls", json!({"path": null, "recursive": null}), "ok"),
            (
                "ls",
                json!({"path": ["/"]}),
                "`path` must be a string, got [\"/\"]",
            ),
            (
                "ls",
                json!({"recursive": 1}),
                "`recursive` must be a boolean, got 1",
            ),
            ("execute", json!({"command": "x", "timeout": 2.0}), "ok"),
            (
                "execute",
                json!({"command": "x", "timeout": 2.5}),
                "`timeout` must be an integer, got 2.5",
            ),
            (
                "execute",
                json!({"command": "x", "timeout": u64::MAX}),
                "`timeout` must be an integer, got 18446744073709551615",
            ),
            (
                "execute",
                json!({"command": 5, "timeout": 0}),
                "`command` must be a string, got 5",
            ),
            (
                "execute",
                json!({"command": "x", "timeout": 0}),
                "`timeout` must be at least 1, got 0",
            ),
        ];
        for (tool, args, expected) in cases {
            let got = match tool {
                "ls" => reason::<LsArgs>(tool, &args),
                _ => reason::<ExecuteArgs>(tool, &args),
            };
            let prefix = format!("Invalid arguments for {tool}: ");
            assert_eq!(got.trim_start_matches(&prefix), expected, "{tool} {args}");
        }
    }

    #[test]
    fn the_arguments_must_be_an_object() {
        assert_eq!(reason::<LsArgs>("ls", &Value::Null), "ok");
        assert_eq!(
            reason::<LsArgs>("ls", &json!([1])),
            "Invalid arguments for ls: expected a JSON object, got [1]"
        );
    }
}
