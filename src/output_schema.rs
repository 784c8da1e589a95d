//! Typed answers: [`OutputSchema`], the JSON Schema a final answer must
//! follow, and how a chat node holds the model to it.
//!
//! ```text
//!  ChatNode::with_schema(s) / set_output_schema(step, s) / invoke_typed::<T>()
//!        │
//!        ▼  request.output_schema = s (+ a system section naming it)
//!  provider: OpenAI-compatible ─▶ response_format {type: json_schema, json_schema: {name, schema, strict}}
//!                                 (a server that refuses it: a forced tool, remembered)
//!            Anthropic        ─▶ a forced tool whose input_schema is the schema
//!        │
//!        ▼  the answer (text, or the forced tool's arguments as text)
//!  check: JSON? valid (jsonschema)? ─ no ─▶ asked again with the errors (at most
//!        │ yes                              MAX_ANSWERS answers), then the node fails
//!        ▼                                  with NetworkError::SchemaMismatch
//!  node metadata["structured_output"] = the value (saved; loads back exactly)
//! ```
//!
//! The rule is the final answer's: a turn that calls tools is not checked
//! (the tools run, and the next turn answers). Each rejected answer stays
//! on the node (`metadata["schema_rejected"]`: the answer and its errors),
//! so a saved session shows every try. An answer wrapped in one Markdown
//! code fence is read as the JSON inside it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON Schema the final answer must follow, with the name and the
/// strictness sent to the provider.
///
/// ```
/// use lc_agent::OutputSchema;
/// use serde_json::json;
///
/// let schema = OutputSchema::new(json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}},
///     "required": ["city"]
/// }))
/// .unwrap();
/// assert_eq!(schema.check(r#"{"city": "Lyon"}"#).unwrap(), json!({"city": "Lyon"}));
/// assert!(schema.check(r#"{"town": "Lyon"}"#).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputSchema {
    name: String,
    schema: Value,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    strict: bool,
}

impl OutputSchema {
    /// The schema `schema`, named `answer`, not strict. An error when it
    /// is no JSON Schema.
    pub fn new(schema: Value) -> std::result::Result<Self, InvalidSchema> {
        jsonschema::validator_for(&schema).map_err(|e| InvalidSchema(e.to_string()))?;
        Ok(Self {
            name: "answer".to_string(),
            schema,
            strict: false,
        })
    }

    /// The schema of `T` (schemars), named after it.
    pub fn of<T: schemars::JsonSchema>() -> Self {
        let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
        Self {
            name: wire_name(&T::schema_name()),
            schema: schema.to_value(),
            strict: false,
        }
    }

    /// The same schema under another name (sent as the `response_format`
    /// name or the forced tool's name: letters, digits, `_` and `-`).
    pub fn named(mut self, name: &str) -> Self {
        self.name = wire_name(name);
        self
    }

    /// OpenAI's strict mode (every property required,
    /// `additionalProperties: false` on every object); off by default,
    /// since schemas derived with schemars do not say the latter.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// The name sent to the provider.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The schema itself.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Whether OpenAI's strict mode is asked.
    #[cfg(feature = "openai")]
    pub(crate) fn is_strict(&self) -> bool {
        self.strict
    }

    /// The answer's JSON value, or what is wrong with it (each error with
    /// the place in the answer it is about).
    pub fn check(&self, answer: &str) -> std::result::Result<Value, Vec<String>> {
        let validator = jsonschema::validator_for(&self.schema)
            .map_err(|e| vec![format!("the output schema is not a JSON Schema: {e}")])?;
        // The answer as sent, else the JSON it carries: inside a code
        // fence, or between text before and after it. The first reading
        // that validates wins; else the first that parses says what is
        // wrong.
        let mut first: Option<Vec<String>> = None;
        let mut not_json = None;
        for text in readings(answer) {
            let value: Value = match serde_json::from_str(text) {
                Ok(value) => value,
                Err(e) => {
                    not_json.get_or_insert_with(|| format!("the answer is not JSON: {e}"));
                    continue;
                }
            };
            match Self::errors_of(&validator, &value) {
                errors if errors.is_empty() => return Ok(value),
                errors => {
                    first.get_or_insert(errors);
                }
            }
        }
        Err(first.unwrap_or_else(|| vec![not_json.unwrap_or_else(|| "the answer is empty".into())]))
    }

    /// What `validator` finds wrong with `value`, each with its place.
    fn errors_of(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
        validator
            .iter_errors(value)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect()
    }

    /// The system-prompt section that says what the final answer must be
    /// (for every provider: a server that ignores `response_format` still
    /// reads it).
    pub(crate) fn instruction(&self) -> String {
        format!(
            "Your final answer must be only a JSON value (no other text, no code fence) valid \
             against this JSON Schema:\n{}",
            self.schema
        )
    }

    /// What is sent when an answer does not fit.
    pub(crate) fn retry(&self, errors: &[String]) -> String {
        format!(
            "Your answer is not a JSON value valid against the JSON Schema:\n{}\n\nAnswer again \
             with only the JSON value, valid against this JSON Schema:\n{}",
            errors
                .iter()
                .map(|e| format!("- {e}"))
                .collect::<Vec<_>>()
                .join("\n"),
            self.schema
        )
    }

    /// Whether the schema's root is an object (a tool's parameters must
    /// be one; anything else is wrapped in `{"value": ...}`).
    #[cfg(any(feature = "openai", feature = "anthropic"))]
    pub(crate) fn is_object(&self) -> bool {
        self.schema.get("type").and_then(Value::as_str) == Some("object")
    }

    /// The forced tool's parameters.
    #[cfg(any(feature = "openai", feature = "anthropic"))]
    pub(crate) fn tool_parameters(&self) -> Value {
        if self.is_object() {
            self.schema.clone()
        } else {
            serde_json::json!({
                "type": "object",
                "properties": {"value": self.schema},
                "required": ["value"]
            })
        }
    }
}

/// A value given as an output schema that is no JSON Schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a JSON Schema: {0}")]
pub struct InvalidSchema(String);

/// `name` with every character OpenAI refuses in a name made `_`, at most
/// 64 characters.
fn wire_name(name: &str) -> String {
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "answer".to_string()
    } else {
        name
    }
}

/// The text inside one Markdown code fence (```` ```json ... ``` ````), or
/// `text` itself.
fn unfenced(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // The info string (`json`) ends at the first line end.
    body.split_once('\n')
        .map_or(body, |(_, inner)| inner)
        .trim()
}

/// The readings of an answer that may be JSON, in order: the whole text,
/// the inside of a fence around it, the inside of the first fence in it,
/// and the span from the first `{` (or `[`) to the last `}` (or `]`).
fn readings(answer: &str) -> Vec<&str> {
    let whole = answer.trim();
    let mut out = vec![whole, unfenced(whole)];
    if let Some((_, after)) = whole.split_once("```")
        && let Some((inside, _)) = after.split_once("```")
    {
        let inside = inside.split_once('\n').map_or(inside, |(info, body)| {
            if info.trim().chars().all(|c| c.is_ascii_alphanumeric()) {
                body
            } else {
                inside
            }
        });
        out.push(inside.trim());
    }
    for (open, close) in [('{', '}'), ('[', ']')] {
        if let (Some(a), Some(b)) = (whole.find(open), whole.rfind(close))
            && a < b
        {
            out.push(&whole[a..=b]);
        }
    }
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::{unfenced, wire_name};

    #[test]
    fn a_fenced_answer_is_read_inside_its_fence() {
        assert_eq!(unfenced("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(unfenced("{\"a\": 1}"), "{\"a\": 1}");
        let around = "Here it is:\n```json\n{\"a\": 1}\n```\nHope it helps.";
        assert!(super::readings(around).contains(&"{\"a\": 1}"));
        assert!(super::readings("The answer is {\"a\": 1}.").contains(&"{\"a\": 1}"));
    }

    #[test]
    fn names_keep_to_what_providers_take() {
        assert_eq!(wire_name("Vec<City>"), "Vec_City_");
        assert_eq!(wire_name(""), "answer");
    }
}
