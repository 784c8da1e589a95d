//! Reading a tool's arguments: the one place where argument errors are
//! worded, for every tool built on [`TypedTool`](crate::TypedTool) (and
//! for the checks made before any tool runs).
//!
//! A tool's arguments are a struct that derives `Deserialize`; [`parse`]
//! reads it from the model's JSON object. Every mistake becomes
//! [`ToolError::InvalidArguments`], which reads
//! `Invalid arguments for <tool>: <reason>`, with one wording per kind of
//! mistake:
//!
//! ```text
//!  mistake                   reason (after "Invalid arguments for <tool>: ")
//!  ────────────────────────  ──────────────────────────────────────────────────────
//!  not JSON                  not valid JSON (<parser error>)       (ToolError::InvalidJson)
//!  not an object             expected a JSON object, got <json>
//!  absent (or null)          missing required argument `k`
//!  wrong JSON type           `k` must be a string|a boolean|an integer|a number|
//!                            an array|an object, got <json>
//!  out of range              `k` must be at least <min>, got <n>   (AtLeast, integer types)
//!                            `k` must be at most <max>, got <n>    (integer types)
//!  not one of the choices    `k` must be one of "a", "b", got "x"  (unit enums)
//!  not an argument           unknown argument `x`, expected `a`, `b` or `c`
//! ```
//!
//! `k` names nested values by path: `todos[1].status`. The rules:
//!
//! - Fields are read in the order the struct declares them, whatever the
//!   order of the keys, so the mistake reported first never depends on how
//!   the model ordered its arguments. Keys the struct does not declare are
//!   refused after every declared field has been read (the struct needs no
//!   `#[serde(deny_unknown_fields)]`; nested structs are checked the same
//!   way). A tool's JSON schema says `"additionalProperties": false` to
//!   tell the model.
//! - An absent (or null) field is handed to its type as "none":
//!   `Option<T>` reads it as `None`, any other type reports it missing. So
//!   optional arguments are `Option`s (the tool applies their defaults),
//!   never `#[serde(default)]`.
//! - Strings are borrowed from the arguments, not copied: an `Args` struct
//!   may hold `&'a str` (see [`TypedTool::Args`](crate::TypedTool::Args)).
//! - A check only the tool can make (an empty path, a limit too high for
//!   this tool) is a [`ToolError::InvalidArguments`] too, made with
//!   [`invalid`], so it reads the same way.
//!
//! ```
//! use lc_agent::tool_args::{parse, AtLeast};
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! #[derive(Deserialize)]
//! struct ReadArgs<'a> {
//!     file_path: &'a str,
//!     limit: Option<AtLeast<1>>,
//! }
//!
//! let wrong = |args| parse::<ReadArgs>("read", &args).err().map(|e| e.to_string());
//! assert_eq!(wrong(json!({"limit": 0})).unwrap(), "Invalid arguments for read: missing required argument `file_path`");
//! assert_eq!(wrong(json!({"file_path": 3})).unwrap(), "Invalid arguments for read: `file_path` must be a string, got 3");
//! assert_eq!(wrong(json!({"file_path": "/a", "limit": 0})).unwrap(), "Invalid arguments for read: `limit` must be at least 1, got 0");
//! assert_eq!(wrong(json!({"file_path": "/a", "lines": 3})).unwrap(), "Invalid arguments for read: unknown argument `lines`, expected `file_path` or `limit`");
//! assert_eq!(wrong(json!(["/a"])).unwrap(), "Invalid arguments for read: expected a JSON object, got [\"/a\"]");
//!
//! let args = json!({"file_path": "/a.txt", "limit": 2.0});
//! let read: ReadArgs = parse("read", &args).unwrap();
//! assert_eq!((read.file_path, read.limit.map(AtLeast::get)), ("/a.txt", Some(2)));
//! ```

use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, IntoDeserializer, Visitor};
use serde_json::{Map, Value};

use crate::error::ToolError;

/// Reads the arguments of `tool` into its typed `Args`. `null` reads as
/// `{}`; any other value that is not an object is refused with
/// `not_an_object`'s wording.
pub fn parse<'a, T: Deserialize<'a>>(tool: &str, args: &'a Value) -> Result<T, ToolError> {
    let value = match args {
        Value::Object(_) | Value::Null => args,
        other => return Err(not_an_object(tool, other)),
    };
    let root = Path {
        parent: None,
        seg: Seg::Root,
    };
    let field = Field {
        value: Some(value),
        path: root,
        top: true,
    };
    T::deserialize(field).map_err(|e| invalid(tool, e.at(&root, Some(value)).to_string()))
}

/// The error for arguments of `tool` that are not a JSON object
/// (`Invalid arguments for ls: expected a JSON object, got [1,2]`).
pub(crate) fn not_an_object(tool: &str, given: &Value) -> ToolError {
    invalid(tool, format!("expected a JSON object, got {given}"))
}

/// The error for arguments of `tool` that are wrong for `reason`: for the
/// checks only a tool can make, worded like the rest (name the argument in
/// backticks, say what it must be, then `got <value>`).
///
/// ```
/// use lc_agent::tool_args::invalid;
///
/// let err = invalid("execute", "`timeout` must be at most 3600 seconds, got 3601");
/// assert_eq!(err.to_string(), "Invalid arguments for execute: `timeout` must be at most 3600 seconds, got 3601");
/// ```
pub fn invalid(tool: &str, reason: impl Into<String>) -> ToolError {
    ToolError::InvalidArguments {
        tool: tool.to_string(),
        reason: reason.into(),
    }
}

/// A whole number of at least `MIN`: how a tool reads a count, an offset
/// or a timeout. A JSON number without a fraction (`2.0`) counts as whole.
///
/// ```
/// use lc_agent::tool_args::AtLeast;
///
/// assert_eq!(AtLeast::<1>::new(3).map(AtLeast::get), Some(3));
/// assert!(AtLeast::<1>::new(0).is_none());
/// ```
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
        deserializer.deserialize_any(AtLeastVisitor::<MIN>)
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

/// Where a value sits in the arguments (`todos[1].status`), kept on the
/// stack and written out only for an error.
#[derive(Clone, Copy)]
struct Path<'p> {
    parent: Option<&'p Path<'p>>,
    seg: Seg<'p>,
}

#[derive(Clone, Copy)]
enum Seg<'p> {
    /// The arguments object itself.
    Root,
    /// A key of an object.
    Key(&'p str),
    /// An element of an array.
    Index(usize),
}

impl Path<'_> {
    fn child<'c>(&'c self, seg: Seg<'c>) -> Path<'c> {
        Path {
            parent: Some(self),
            seg,
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(parent) = self.parent {
            parent.fmt(f)?;
        }
        match self.seg {
            Seg::Root => Ok(()),
            Seg::Key(key) => match self.parent {
                Some(Path { seg: Seg::Root, .. }) | None => f.write_str(key),
                Some(_) => write!(f, ".{key}"),
            },
            Seg::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// Why an argument was refused; [`ArgError::at`] ties it to its path.
#[derive(Debug)]
enum ArgError {
    /// Absent or null, and the type has no "none".
    Missing,
    /// The wrong JSON type; what was expected ("a string").
    Expected(String),
    /// Any other reason, to follow the path ("must be at least 1, got 0").
    Reason(String),
    /// The whole reason, path included.
    At(String),
}

impl ArgError {
    /// The reason as the model reads it, naming `path` (and the value given).
    fn at(self, path: &Path<'_>, value: Option<&Value>) -> Self {
        ArgError::At(match self {
            ArgError::At(reason) => reason,
            ArgError::Missing => format!("missing required argument `{path}`"),
            ArgError::Expected(what) if matches!(path.seg, Seg::Root) => {
                format!("expected {what}, got {}", value.unwrap_or(&Value::Null))
            }
            ArgError::Expected(what) => {
                format!(
                    "`{path}` must be {what}, got {}",
                    value.unwrap_or(&Value::Null)
                )
            }
            ArgError::Reason(reason) if matches!(path.seg, Seg::Root) => reason,
            ArgError::Reason(reason) => format!("`{path}` {reason}"),
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

    fn invalid_value(_: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
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

/// One value of the arguments (`None`: absent or null) at `path`.
struct Field<'p, 'de> {
    value: Option<&'de Value>,
    path: Path<'p>,
    /// The arguments object itself (where `null` reads as `{}`).
    top: bool,
}

impl<'de> Field<'_, 'de> {
    /// The value as the JSON type `what` that `get` reads.
    fn typed<T>(&self, what: &str, get: fn(&'de Value) -> Option<T>) -> Result<T, ArgError> {
        let value = self.value.ok_or(ArgError::Missing)?;
        get(value).ok_or_else(|| ArgError::Expected(what.to_string()))
    }

    /// The value as a whole number (`2.0` counts), or the wrong type.
    fn integer(&self) -> Result<i128, ArgError> {
        self.typed("an integer", |v| {
            let n = v.as_number()?;
            if let Some(i) = n.as_i64() {
                return Some(i128::from(i));
            }
            if let Some(u) = n.as_u64() {
                return Some(i128::from(u));
            }
            let f = n.as_f64()?;
            (f.fract() == 0.0 && f.abs() < 9e15).then_some(f as i128)
        })
    }

    /// The value as an integer of type `T`, or why not (out of range named
    /// with `T`'s bounds).
    fn int<T: TryFrom<i128> + Into<i128> + Copy>(&self, min: T, max: T) -> Result<T, ArgError> {
        let n = self.integer()?;
        T::try_from(n).map_err(|_| {
            if n < min.into() {
                ArgError::Reason(format!("must be at least {}, got {n}", min.into()))
            } else {
                ArgError::Reason(format!("must be at most {}, got {n}", max.into()))
            }
        })
    }

    fn object(&self) -> Result<&'de Map<String, Value>, ArgError> {
        self.typed("an object", Value::as_object)
    }
}

macro_rules! integers {
    ($($method:ident $ty:ident $visit:ident $wide:ident;)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
            let n = self.int::<$ty>($ty::MIN, $ty::MAX)?;
            visitor.$visit($wide::from(n))
        }
    )*};
}

impl<'de> Deserializer<'de> for Field<'_, 'de> {
    type Error = ArgError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        match self.value {
            // The arguments were `null`: read as `{}`.
            Some(Value::Null) if self.top => visitor.visit_map(Entries {
                entries: None,
                value: None,
                path: self.path,
            }),
            None => Err(ArgError::Missing),
            Some(Value::Null) => visitor.visit_unit(),
            Some(Value::Bool(b)) => visitor.visit_bool(*b),
            Some(Value::Number(n)) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => visitor.visit_i64(i),
                (None, Some(u)) => visitor.visit_u64(u),
                (None, None) => visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN)),
            },
            Some(Value::String(s)) => visitor.visit_borrowed_str(s),
            Some(Value::Array(items)) => visitor.visit_seq(Elements {
                items: items.iter().enumerate(),
                path: self.path,
            }),
            Some(Value::Object(map)) => visitor.visit_map(Entries {
                entries: Some(map.iter()),
                value: None,
                path: self.path,
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        match self.value {
            None | Some(Value::Null) => visitor.visit_none(),
            Some(_) => visitor.visit_some(self),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        visitor.visit_bool(self.typed("a boolean", Value::as_bool)?)
    }

    integers! {
        deserialize_i8 i8 visit_i64 i64;
        deserialize_i16 i16 visit_i64 i64;
        deserialize_i32 i32 visit_i64 i64;
        deserialize_i64 i64 visit_i64 i64;
        deserialize_u8 u8 visit_u64 u64;
        deserialize_u16 u16 visit_u64 u64;
        deserialize_u32 u32 visit_u64 u64;
        deserialize_u64 u64 visit_u64 u64;
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        visitor.visit_f64(self.typed("a number", Value::as_f64)?)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        visitor.visit_borrowed_str(self.typed("a string", Value::as_str)?)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        self.deserialize_str(visitor)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        let one = |v: &Value| {
            let mut chars = v.as_str()?.chars();
            chars.next().filter(|_| chars.next().is_none())
        };
        visitor.visit_char(self.typed("a single character", one)?)
    }

    fn deserialize_enum<V: Visitor<'de>>(self, _: &str, _: Names, visitor: V) -> Out<'de, V> {
        visitor.visit_enum(self.typed("a string", Value::as_str)?.into_deserializer())
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        let items = self.typed("an array", Value::as_array)?;
        visitor.visit_seq(Elements {
            items: items.iter().enumerate(),
            path: self.path,
        })
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Out<'de, V> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &str,
        _len: usize,
        visitor: V,
    ) -> Out<'de, V> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        let entries = match self.value {
            // The arguments were `null`: read as `{}`.
            Some(Value::Null) if self.top => None,
            _ => Some(self.object()?.iter()),
        };
        visitor.visit_map(Entries {
            entries,
            value: None,
            path: self.path,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &str,
        fields: Names,
        visitor: V,
    ) -> Out<'de, V> {
        let map = match self.value {
            // The arguments were `null`: read as `{}`.
            Some(Value::Null) if self.top => None,
            _ => Some(self.object()?),
        };
        visitor.visit_map(InOrder {
            map,
            fields,
            next: 0,
            key: "",
            path: self.path,
        })
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &str, visitor: V) -> Out<'de, V> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Out<'de, V> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        i128 u128 bytes byte_buf unit unit_struct identifier
    }
}

/// Hands a struct its fields in declared order (every field, present or
/// not), then refuses the keys it does not declare.
struct InOrder<'p, 'de> {
    map: Option<&'de Map<String, Value>>,
    fields: Names,
    next: usize,
    key: &'static str,
    path: Path<'p>,
}

impl InOrder<'_, '_> {
    /// The first key the struct does not declare, as an error.
    fn unknown(&self) -> Option<ArgError> {
        let map = self.map?;
        let key = map.keys().find(|k| !self.fields.contains(&k.as_str()))?;
        let path = self.path.child(Seg::Key(key));
        let names: Vec<String> = self.fields.iter().map(|f| format!("`{f}`")).collect();
        let expected = match names.as_slice() {
            [] => "this takes no arguments".to_string(),
            [one] => format!("expected {one}"),
            [a, b] => format!("expected {a} or {b}"),
            [rest @ .., last] => format!("expected {} or {last}", rest.join(", ")),
        };
        Some(ArgError::At(format!(
            "unknown argument `{path}`, {expected}"
        )))
    }
}

impl<'de> de::MapAccess<'de> for InOrder<'_, 'de> {
    type Error = ArgError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ArgError> {
        let Some(&key) = self.fields.get(self.next) else {
            return match self.unknown() {
                Some(e) => Err(e),
                None => Ok(None),
            };
        };
        self.next += 1;
        self.key = key;
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ArgError> {
        let value = self
            .map
            .and_then(|map| map.get(self.key))
            .filter(|v| !v.is_null());
        let path = self.path.child(Seg::Key(self.key));
        seed.deserialize(Field {
            value,
            path,
            top: false,
        })
        .map_err(|e| e.at(&path, value))
    }
}

/// The elements of an array, each at its index.
struct Elements<'p, 'de> {
    items: std::iter::Enumerate<std::slice::Iter<'de, Value>>,
    path: Path<'p>,
}

impl<'de> de::SeqAccess<'de> for Elements<'_, 'de> {
    type Error = ArgError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ArgError> {
        let Some((i, value)) = self.items.next() else {
            return Ok(None);
        };
        let path = self.path.child(Seg::Index(i));
        seed.deserialize(Field {
            value: Some(value),
            path,
            top: false,
        })
        .map(Some)
        .map_err(|e| e.at(&path, Some(value)))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// The entries of an object read as a map (every key, in the object's
/// order).
struct Entries<'p, 'de> {
    entries: Option<serde_json::map::Iter<'de>>,
    value: Option<(&'de str, &'de Value)>,
    path: Path<'p>,
}

impl<'de> de::MapAccess<'de> for Entries<'_, 'de> {
    type Error = ArgError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ArgError> {
        let Some((key, value)) = self.entries.as_mut().and_then(Iterator::next) else {
            return Ok(None);
        };
        self.value = Some((key, value));
        seed.deserialize(de::value::BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ArgError> {
        let Some((key, value)) = self.value.take() else {
            return Err(ArgError::At("a map value without its key".to_string()));
        };
        let path = self.path.child(Seg::Key(key));
        seed.deserialize(Field {
            value: Some(value),
            path,
            top: false,
        })
        .map_err(|e| e.at(&path, Some(value)))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.as_ref().map_or(0, ExactSizeIterator::len))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Read<'a> {
        file_path: &'a str,
        offset: Option<AtLeast<0>>,
        limit: Option<AtLeast<1>>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Files,
        Content,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Search<'a> {
        pattern: &'a str,
        mode: Option<Mode>,
        context: Option<AtLeast<0>>,
        count: Option<u8>,
        flags: Option<Vec<bool>>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Item {
        content: String,
        mode: Mode,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Plan {
        items: Vec<Item>,
    }

    fn reason<'a, T: Deserialize<'a>>(args: &'a Value) -> String {
        match parse::<T>("t", args) {
            Ok(_) => "ok".to_string(),
            Err(e) => e
                .to_string()
                .trim_start_matches("Invalid arguments for t: ")
                .to_string(),
        }
    }

    #[test]
    fn the_first_mistake_in_declared_order_whatever_the_key_order() {
        let args = json!({"limit": 0, "offset": "x"});
        assert_eq!(
            reason::<Read>(&args),
            "missing required argument `file_path`"
        );
        let args = json!({"count": 0, "context": -1, "mode": "lines", "pattern": "x"});
        assert_eq!(
            reason::<Search>(&args),
            "`mode` must be one of \"files\", \"content\", got \"lines\""
        );
        let args = json!({"zzz": 1, "context": -1, "pattern": "x"});
        assert_eq!(
            reason::<Search>(&args),
            "`context` must be at least 0, got -1"
        );
    }

    #[test]
    fn types_nulls_and_numbers() {
        let cases = [
            (json!({"pattern": "x", "mode": null, "flags": null}), "ok"),
            (
                json!({"pattern": ["x"]}),
                "`pattern` must be a string, got [\"x\"]",
            ),
            (json!({"pattern": "x", "context": 2.0}), "ok"),
            (
                json!({"pattern": "x", "context": 2.5}),
                "`context` must be an integer, got 2.5",
            ),
            (
                json!({"pattern": "x", "context": u64::MAX}),
                "`context` must be an integer, got 18446744073709551615",
            ),
            (
                json!({"pattern": "x", "count": 256}),
                "`count` must be at most 255, got 256",
            ),
            (
                json!({"pattern": "x", "count": -1}),
                "`count` must be at least 0, got -1",
            ),
            (
                json!({"pattern": "x", "count": "1"}),
                "`count` must be an integer, got \"1\"",
            ),
            (
                json!({"pattern": "x", "flags": [true, 1]}),
                "`flags[1]` must be a boolean, got 1",
            ),
            (
                json!({"pattern": "x", "flags": true}),
                "`flags` must be an array, got true",
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(reason::<Search>(&args), expected, "{args}");
        }
    }

    #[test]
    fn nested_values_are_named_by_path() {
        let cases = [
            (json!({"items": []}), "ok"),
            (
                json!({"items": [{"content": "a", "mode": "files"}, {"content": "b"}]}),
                "missing required argument `items[1].mode`",
            ),
            (
                json!({"items": [{"content": "a", "mode": "all"}]}),
                "`items[0].mode` must be one of \"files\", \"content\", got \"all\"",
            ),
            (
                json!({"items": [{"content": "a", "mode": "files", "due": 1}]}),
                "unknown argument `items[0].due`, expected `content` or `mode`",
            ),
            (
                json!({"items": ["a"]}),
                "`items[0]` must be an object, got \"a\"",
            ),
            (json!({"items": "a"}), "`items` must be an array, got \"a\""),
        ];
        for (args, expected) in cases {
            assert_eq!(reason::<Plan>(&args), expected, "{args}");
        }
    }

    #[test]
    fn unknown_arguments_come_after_the_declared_ones() {
        let args = json!({"file_path": "/a", "lines": 3});
        assert_eq!(
            reason::<Read>(&args),
            "unknown argument `lines`, expected `file_path`, `offset` or `limit`"
        );
        #[derive(Deserialize)]
        struct Nothing {}
        assert_eq!(reason::<Nothing>(&json!({})), "ok");
        assert_eq!(
            reason::<Nothing>(&json!({"x": 1})),
            "unknown argument `x`, this takes no arguments"
        );
    }

    #[test]
    fn the_arguments_must_be_an_object() {
        assert_eq!(
            reason::<Search>(&Value::Null),
            "missing required argument `pattern`"
        );
        assert_eq!(
            reason::<Plan>(&json!([1])),
            "expected a JSON object, got [1]"
        );
        assert_eq!(
            reason::<Plan>(&json!("x")),
            "expected a JSON object, got \"x\""
        );
    }

    #[test]
    fn maps_and_values_are_read_whole() {
        #[derive(Deserialize)]
        struct Free {
            env: std::collections::BTreeMap<String, u32>,
            extra: Option<Value>,
        }
        let args = json!({"env": {"a": 1, "b": 2}, "extra": {"k": [1, "x", null]}});
        let free: Free = parse("t", &args).unwrap();
        assert_eq!(free.env.len(), 2);
        assert_eq!(free.extra, Some(json!({"k": [1, "x", null]})));
        let args = json!({"env": {"a": "1"}});
        assert_eq!(
            reason::<Free>(&args),
            "`env.a` must be an integer, got \"1\""
        );
    }
}
