//! [`Elicitation`]: an MCP server asking the person for input in the
//! middle of a tool call (`elicitation/create`, form mode).
//!
//! ```text
//!  server ── elicitation/create {message, requestedSchema} ──▶ the connection's handler
//!     │  the capability is declared only when McpTools::with_elicitation gave a channel
//!     │  (else the request is declined, with a warning line)
//!     │  requestedSchema checked: the spec's flat form (else a JSON-RPC error)
//!     ▼
//!  Elicitation ──▶ the channel's reader (a person: the terminal, the page) ── answer() ──┐
//!  server ◀── {action: accept, content} | decline | cancel  (content checked) ◀──────────┘
//! ```
//!
//! The schema is the spec's restricted form: an object of flat properties,
//! each a string (with `format`, `minLength`/`maxLength`), a number or an
//! integer (`minimum`/`maximum`), a boolean, or an enum of strings
//! (`enum`, or `oneOf` of `const`/`title`; `type: array` with such
//! `items` for several choices), each with an optional `default`.
//! [`Elicitation::fields`] reads it for a form; [`Elicitation::check`]
//! validates an answer before it is sent.

use serde_json::{Map, Value};
use tokio::sync::oneshot;

/// A server's request for input, waiting for the person's answer (see the
/// module's documentation). Dropped unanswered, it is declined.
#[derive(Debug)]
pub struct Elicitation {
    server: String,
    message: String,
    schema: Value,
    fields: Vec<ElicitationField>,
    session: Option<String>,
    reply: oneshot::Sender<ElicitationAnswer>,
}

/// What the person answered.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// The values asked for (checked with [`Elicitation::check`]).
    Accept(Map<String, Value>),
    /// No: the server goes on without them.
    Decline,
    /// Dismissed: the server's operation is cancelled.
    Cancel,
}

/// The kind of value a field takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// Text (possibly one of [`ElicitationField::choices`]).
    Text,
    /// A number.
    Number,
    /// A whole number.
    Integer,
    /// Yes or no.
    Boolean,
    /// Several of [`ElicitationField::choices`] (a list of strings).
    Choices,
}

/// One field of the requested form.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationField {
    /// The property name (the key of the answer).
    pub name: String,
    /// Its title, else its name.
    pub label: String,
    /// Its description, if any.
    pub description: Option<String>,
    /// The kind of value.
    pub kind: FieldKind,
    /// The allowed values of an enum, each with its title (the value
    /// when it has none); empty: any value of the kind.
    pub choices: Vec<(String, String)>,
    /// The default value, if the schema gives one.
    pub default: Option<Value>,
    /// Whether an answer must give it.
    pub required: bool,
    /// The property's schema, for its limits (length, range, format).
    schema: Value,
}

impl Elicitation {
    /// The request of `server` with `message` and the requested `schema`;
    /// why the schema is not the spec's flat form, if it is not.
    ///
    /// ```
    /// use lc_agent_deepagent::mcp::{Elicitation, ElicitationAnswer};
    /// use serde_json::json;
    ///
    /// let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    /// let (asked, mut answer) = Elicitation::new("booking", "Your name?".into(), &schema).unwrap();
    /// assert!(asked.check(json!({}).as_object().unwrap()).is_err());
    /// asked.answer(ElicitationAnswer::Decline);
    /// assert_eq!(answer.try_recv().unwrap(), ElicitationAnswer::Decline);
    /// ```
    pub fn new(
        server: &str,
        message: String,
        schema: &Value,
    ) -> Result<(Self, oneshot::Receiver<ElicitationAnswer>), String> {
        let fields = fields(schema)?;
        let (reply, answer) = oneshot::channel();
        Ok((
            Self {
                server: server.to_string(),
                message,
                schema: schema.clone(),
                fields,
                session: None,
                reply,
            },
            answer,
        ))
    }

    /// The request, asked on behalf of `session` (the id of the network
    /// whose tool call the server was answering).
    pub fn for_session(mut self, session: Option<String>) -> Self {
        self.session = session;
        self
    }

    /// The session whose tool call asked, when the connection belongs to
    /// one (`McpSessions`, the `mcp` feature).
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The form as the server sent it (`requestedSchema`): what a client
    /// that draws forms from JSON Schema gets.
    pub fn requested_schema(&self) -> &Value {
        &self.schema
    }

    /// The server that asks (its name in the configuration).
    pub fn server(&self) -> &str {
        &self.server
    }

    /// What it says to the person.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The form's fields, in the schema's order.
    pub fn fields(&self) -> &[ElicitationField] {
        &self.fields
    }

    /// Checks `content` against the form: every required field given,
    /// no field the form does not have, each value of its kind and within
    /// its limits. The first problem, in the person's terms.
    pub fn check(&self, content: &Map<String, Value>) -> Result<(), String> {
        check(&self.fields, content)
    }

    /// Sends the answer to the server. An answer that does not pass
    /// [`Elicitation::check`] is sent as a cancel (the server never gets
    /// values its form does not allow).
    pub fn answer(self, answer: ElicitationAnswer) {
        let answer = match answer {
            ElicitationAnswer::Accept(content) => match self.check(&content) {
                Ok(()) => ElicitationAnswer::Accept(content),
                Err(problem) => {
                    tracing::warn!(server = %self.server, "an answer that does not fit the MCP server's form ({problem}) was not sent; the request was cancelled");
                    ElicitationAnswer::Cancel
                }
            },
            other => other,
        };
        // The server may have given up meanwhile: nothing to tell it then.
        let _ = self.reply.send(answer);
    }
}

impl ElicitationField {
    /// Reads `text` typed by a person as this field's value: a number for
    /// a number, `y`/`n` (or `yes`/`no`, `true`/`false`) for a boolean, a
    /// choice's value, title or number (from 1), several separated by
    /// commas for [`FieldKind::Choices`]. Checked against the field's
    /// limits. Empty text is for the caller to decide (the default).
    pub fn parse(&self, text: &str) -> Result<Value, String> {
        let text = text.trim();
        let value = match self.kind {
            FieldKind::Choices => Value::Array(
                text.split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(|t| self.choice(t).map(Value::String))
                    .collect::<Result<Vec<_>, String>>()?,
            ),
            _ if !self.choices.is_empty() => Value::String(self.choice(text)?),
            FieldKind::Integer => text
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| "a whole number, please".to_string())?,
            FieldKind::Number => text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| "a number, please".to_string())?,
            FieldKind::Boolean => match text.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err("y or n, please".into()),
            },
            FieldKind::Text => Value::String(text.to_string()),
        };
        self.check(&value)?;
        Ok(value)
    }

    /// The value of the choice `text` names (its value, title or number).
    fn choice(&self, text: &str) -> Result<String, String> {
        if let Ok(n) = text.parse::<usize>()
            && (1..=self.choices.len()).contains(&n)
        {
            return Ok(self.choices[n - 1].0.clone());
        }
        self.choices
            .iter()
            .find(|(value, title)| value == text || title.eq_ignore_ascii_case(text))
            .map(|(value, _)| value.clone())
            .ok_or_else(|| {
                format!(
                    "one of {} (or its number), please",
                    self.choices
                        .iter()
                        .map(|(v, _)| v.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }

    /// Whether `value` is one this field takes; the problem if not.
    pub(crate) fn check(&self, value: &Value) -> Result<(), String> {
        let name = &self.name;
        let rule = |key: &str| self.schema.get(key).and_then(Value::as_f64);
        match self.kind {
            FieldKind::Text => {
                let Some(text) = value.as_str() else {
                    return Err(format!("`{name}` must be text"));
                };
                if !self.choices.is_empty() && !self.choices.iter().any(|(v, _)| v == text) {
                    return Err(format!("`{name}` must be one of {}", self.choice_list()));
                }
                let length = text.chars().count() as f64;
                if let Some(min) = rule("minLength")
                    && length < min
                {
                    return Err(format!("`{name}` needs at least {min} characters"));
                }
                if let Some(max) = rule("maxLength")
                    && length > max
                {
                    return Err(format!("`{name}` takes at most {max} characters"));
                }
                if let Some(format) = self.schema.get("format").and_then(Value::as_str)
                    && !fits_format(format, text)
                {
                    return Err(format!("`{name}` must be {}", format_name(format)));
                }
            }
            FieldKind::Number | FieldKind::Integer => {
                let whole = value.is_i64() || value.is_u64();
                let Some(n) = value
                    .as_f64()
                    .filter(|_| whole || self.kind == FieldKind::Number)
                else {
                    return Err(match self.kind {
                        FieldKind::Integer => format!("`{name}` must be a whole number"),
                        _ => format!("`{name}` must be a number"),
                    });
                };
                if let Some(min) = rule("minimum")
                    && n < min
                {
                    return Err(format!("`{name}` must be at least {min}"));
                }
                if let Some(max) = rule("maximum")
                    && n > max
                {
                    return Err(format!("`{name}` must be at most {max}"));
                }
            }
            FieldKind::Boolean => {
                if !value.is_boolean() {
                    return Err(format!("`{name}` must be yes or no (true or false)"));
                }
            }
            FieldKind::Choices => {
                let Some(items) = value.as_array() else {
                    return Err(format!("`{name}` must be a list of choices"));
                };
                for item in items {
                    if !item
                        .as_str()
                        .is_some_and(|t| self.choices.iter().any(|(v, _)| v == t))
                    {
                        return Err(format!(
                            "`{name}` takes only {} ({item} is not one)",
                            self.choice_list()
                        ));
                    }
                }
                if let Some(min) = rule("minItems")
                    && (items.len() as f64) < min
                {
                    return Err(format!("`{name}` needs at least {min} choices"));
                }
                if let Some(max) = rule("maxItems")
                    && (items.len() as f64) > max
                {
                    return Err(format!("`{name}` takes at most {max} choices"));
                }
            }
        }
        Ok(())
    }

    fn choice_list(&self) -> String {
        self.choices
            .iter()
            .map(|(v, _)| v.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The fields of a requested schema; why it is not the spec's flat form.
fn fields(schema: &Value) -> Result<Vec<ElicitationField>, String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the requested schema is not an object".into());
    }
    let required: Vec<&str> = match schema.get("required") {
        None => Vec::new(),
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        Some(_) => return Err("`required` is not a list of names".into()),
    };
    let properties = match schema.get("properties") {
        None => return Ok(Vec::new()),
        Some(Value::Object(properties)) => properties,
        Some(_) => return Err("`properties` is not an object".into()),
    };
    let mut fields = Vec::with_capacity(properties.len());
    for (name, property) in properties {
        let field = field(name, property, required.contains(&name.as_str()))
            .map_err(|why| format!("property `{name}` {why}"))?;
        fields.push(field);
    }
    for name in required {
        if !properties.contains_key(name) {
            return Err(format!("`{name}` is required but not a property"));
        }
    }
    Ok(fields)
}

/// One property as a field; why it is not a flat one.
fn field(name: &str, property: &Value, required: bool) -> Result<ElicitationField, String> {
    let Some(object) = property.as_object() else {
        return Err("is not a schema".into());
    };
    let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_string);
    let kind = match object.get("type").and_then(Value::as_str) {
        Some("string") => FieldKind::Text,
        Some("number") => FieldKind::Number,
        Some("integer") => FieldKind::Integer,
        Some("boolean") => FieldKind::Boolean,
        Some("array") => FieldKind::Choices,
        Some(other) => return Err(format!("is of type `{other}`, which a form cannot ask")),
        None if object.contains_key("enum") || object.contains_key("oneOf") => FieldKind::Text,
        None => return Err("has no type".into()),
    };
    let choices = match kind {
        FieldKind::Text => choices(object)?,
        FieldKind::Choices => {
            let items = object
                .get("items")
                .and_then(Value::as_object)
                .ok_or("is a list without `items`")?;
            let choices = choices(items)?;
            if choices.is_empty() {
                return Err("is a list of something other than choices".into());
            }
            choices
        }
        _ => Vec::new(),
    };
    let field = ElicitationField {
        name: name.to_string(),
        label: text("title").unwrap_or_else(|| name.to_string()),
        description: text("description"),
        kind,
        choices,
        default: object.get("default").cloned(),
        required,
        schema: property.clone(),
    };
    if let Some(default) = &field.default {
        field
            .check(default)
            .map_err(|why| format!("has a default that does not fit it ({why})"))?;
    }
    Ok(field)
}

/// The choices of an enum (`enum` with `enumNames`, or `oneOf`/`anyOf`
/// of `const` and `title`): `(value, title)`.
fn choices(schema: &Map<String, Value>) -> Result<Vec<(String, String)>, String> {
    if let Some(values) = schema.get("enum") {
        let values = values
            .as_array()
            .ok_or("has an `enum` that is not a list")?;
        let names = schema.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let value = v
                    .as_str()
                    .ok_or_else(|| format!("has a choice that is not text ({v})"))?;
                let title = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .unwrap_or(value);
                Ok((value.to_string(), title.to_string()))
            })
            .collect();
    }
    let Some(options) = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)
    else {
        return Ok(Vec::new());
    };
    options
        .iter()
        .map(|o| {
            let value = o
                .get("const")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("has a choice without a text `const` ({o})"))?;
            let title = o.get("title").and_then(Value::as_str).unwrap_or(value);
            Ok((value.to_string(), title.to_string()))
        })
        .collect()
}

/// Checks `content` against `fields` (see [`Elicitation::check`]).
fn check(fields: &[ElicitationField], content: &Map<String, Value>) -> Result<(), String> {
    if let Some(name) = content
        .keys()
        .find(|k| !fields.iter().any(|f| &f.name == *k))
    {
        return Err(format!("the form has no field `{name}`"));
    }
    for field in fields {
        match content.get(&field.name) {
            Some(value) => field.check(value)?,
            None if field.required => return Err(format!("`{}` is required", field.name)),
            None => {}
        }
    }
    Ok(())
}

/// Whether `text` has the string `format` (email, uri, date, date-time);
/// an unknown format takes any text.
fn fits_format(format: &str, text: &str) -> bool {
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let date = |s: &str| {
        let parts: Vec<&str> = s.split('-').collect();
        parts.len() == 3 && digits(parts[0], 4) && digits(parts[1], 2) && digits(parts[2], 2)
    };
    match format {
        "email" => text.split_once('@').is_some_and(|(user, host)| {
            !user.is_empty() && host.contains('.') && !text.contains(' ')
        }),
        "uri" => text.split_once(':').is_some_and(|(scheme, rest)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !rest.is_empty()
                && !text.contains(' ')
        }),
        "date" => date(text),
        "date-time" => text
            .split_once(['T', 't'])
            .is_some_and(|(d, time)| date(d) && time.len() >= 8 && time.as_bytes()[2] == b':'),
        _ => true,
    }
}

/// What a format is called in a sentence.
fn format_name(format: &str) -> &str {
    match format {
        "email" => "an email address",
        "uri" => "an address (URI)",
        "date" => "a date (YYYY-MM-DD)",
        "date-time" => "a date and time (YYYY-MM-DDTHH:MM:SS)",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "title": "Your name", "minLength": 1},
            "party": {"type": "integer", "default": 2, "minimum": 1, "maximum": 12},
            "room": {"type": "string", "enum": ["inside", "terrace"], "default": "inside"},
            "time": {"type": "string", "oneOf": [
                {"const": "19", "title": "7 pm"}, {"const": "21", "title": "9 pm"}]},
            "extras": {"type": "array", "items": {"type": "string", "enum": ["cake", "wine"]}},
            "email": {"type": "string", "format": "email"},
            "vegetarian": {"type": "boolean", "default": false}},
            "required": ["name"]})
    }

    #[test]
    fn fields_read_defaults_enums_and_required() {
        let (e, _rx) = Elicitation::new("s", "Book a table".into(), &form()).unwrap();
        let fields = e.fields();
        assert_eq!(fields.len(), 7);
        assert_eq!(fields[0].name, "name");
        assert_eq!(fields[0].label, "Your name");
        assert!(fields[0].required);
        assert_eq!(fields[1].default, Some(json!(2)));
        assert_eq!(fields[1].kind, FieldKind::Integer);
        assert_eq!(
            fields[2].choices,
            [
                ("inside".to_string(), "inside".to_string()),
                ("terrace".to_string(), "terrace".to_string())
            ]
        );
        assert_eq!(fields[3].choices[1], ("21".to_string(), "9 pm".to_string()));
        assert_eq!(fields[4].kind, FieldKind::Choices);
        assert_eq!(fields[6].kind, FieldKind::Boolean);
    }

    #[test]
    fn answers_are_checked_and_typed_text_is_parsed() {
        let (e, _rx) = Elicitation::new("s", "Book".into(), &form()).unwrap();
        let ok = json!({"name": "Ada", "party": 3, "room": "terrace", "extras": ["cake"]});
        assert_eq!(e.check(ok.as_object().unwrap()), Ok(()));
        let missing = json!({"party": 3});
        assert_eq!(
            e.check(missing.as_object().unwrap()),
            Err("`name` is required".into())
        );
        let roof = json!({"name": "Ada", "room": "roof"});
        assert!(e
            .check(roof.as_object().unwrap())
            .unwrap_err()
            .contains("one of inside, terrace"));
        let big = json!({"name": "Ada", "party": 40});
        assert_eq!(
            e.check(big.as_object().unwrap()),
            Err("`party` must be at most 12".into())
        );
        let extra = json!({"name": "Ada", "shoe": 3});
        assert!(e.check(extra.as_object().unwrap()).is_err());
        let f = e.fields();
        assert_eq!(f[1].parse("4"), Ok(json!(4)));
        assert!(f[1].parse("four").is_err());
        assert_eq!(f[2].parse("2"), Ok(json!("terrace")));
        assert_eq!(f[3].parse("9 PM"), Ok(json!("21")));
        assert_eq!(f[4].parse("wine, 1"), Ok(json!(["wine", "cake"])));
        assert!(f[5].parse("not an address").is_err());
        assert_eq!(f[5].parse("ada@example.org"), Ok(json!("ada@example.org")));
        assert_eq!(f[6].parse("y"), Ok(json!(true)));
    }

    #[test]
    fn a_schema_that_is_not_flat_is_refused() {
        let nested = json!({"type": "object", "properties": {
            "address": {"type": "object", "properties": {"city": {"type": "string"}}}}});
        let why = Elicitation::new("s", "m".into(), &nested).unwrap_err();
        assert_eq!(
            why,
            "property `address` is of type `object`, which a form cannot ask"
        );
        let bad_default = json!({"type": "object", "properties": {
            "n": {"type": "integer", "default": "many"}}});
        assert!(Elicitation::new("s", "m".into(), &bad_default).is_err());
    }

    #[tokio::test]
    async fn an_answer_that_does_not_fit_is_sent_as_a_cancel() {
        let (e, rx) = Elicitation::new("s", "m".into(), &form()).unwrap();
        e.answer(ElicitationAnswer::Accept(Map::new()));
        assert_eq!(rx.await.unwrap(), ElicitationAnswer::Cancel);
    }
}
