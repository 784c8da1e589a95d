//! An MCP server's request for input (`elicitation/create`), asked on the
//! same [`Input`] as the approvals while the tool call waits.
//!
//! ```text
//!  MCP server `booking` asks: Book a table for Friday?
//!  fill in the form? [y = yes, n = decline, c = cancel] y
//!    Name: Ada
//!    Party (how many people) [2]:            (empty: the default)
//!    Room (1 inside, 2 terrace) [inside]: 2  (a choice's number or value)
//!    Vegetarian (y/n) [n]:
//!    to send: name="Ada" party=2 room="terrace" vegetarian=false
//!  send? [y = send, n = decline, c = cancel]
//! ```
//!
//! Only a program with a person at a terminal declares the capability
//! (`chat`, and `run` with stdin a terminal; `agent.rs`); elsewhere
//! (`exec`, `acp`, `serve`, piped `run`/`chat`) a server that asks anyway
//! is declined with a warning line. The end of input or Ctrl-C at a
//! question cancels.

use lc_agent_deepagent::mcp::{Elicitation, ElicitationAnswer, ElicitationField, FieldKind};
use serde_json::{Map, Value};

use crate::console::{paint, Look};
use crate::input::Input;

/// How many times a field is asked again after an answer that does not fit.
const RETRIES: usize = 3;

/// Asks `request` on `input` and sends the answer to its server.
pub(crate) fn ask(request: Elicitation, input: &mut dyn Input, look: Look) {
    eprintln!(
        "{} {}",
        paint(
            look.color,
            "1;33",
            &format!("MCP server `{}` asks:", request.server())
        ),
        request.message()
    );
    let answer = match choose(
        input,
        "fill in the form? [y = yes, n = decline, c = cancel] ",
    ) {
        Choice::Yes => form(&request, input),
        Choice::No => ElicitationAnswer::Decline,
        Choice::Cancel => ElicitationAnswer::Cancel,
    };
    let said = match &answer {
        ElicitationAnswer::Accept(_) => "sent",
        ElicitationAnswer::Decline => "declined",
        ElicitationAnswer::Cancel => "cancelled",
    };
    eprintln!("{said} (MCP server `{}`)", request.server());
    request.answer(answer);
}

/// A yes / no / cancel question's answer.
enum Choice {
    Yes,
    No,
    Cancel,
}

/// Asks `prompt` until the answer is y, n or c (empty: yes); the end of
/// input cancels.
fn choose(input: &mut dyn Input, prompt: &str) -> Choice {
    loop {
        let Some(line) = input.line(prompt) else {
            return Choice::Cancel;
        };
        match line.trim().to_ascii_lowercase().as_str() {
            "" | "y" | "yes" => return Choice::Yes,
            "n" | "no" => return Choice::No,
            "c" | "cancel" => return Choice::Cancel,
            _ => eprintln!("  y, n or c, please"),
        }
    }
}

/// The form, field by field, then the values to confirm.
fn form(request: &Elicitation, input: &mut dyn Input) -> ElicitationAnswer {
    let mut content = Map::new();
    for field in request.fields() {
        let mut tries = 0;
        loop {
            let Some(line) = input.line(&prompt(field)) else {
                return ElicitationAnswer::Cancel;
            };
            match value(field, &line) {
                Ok(Some(v)) => {
                    content.insert(field.name.clone(), v);
                    break;
                }
                Ok(None) => break,
                Err(problem) => {
                    tries += 1;
                    eprintln!("  {problem}");
                    if tries > RETRIES {
                        return ElicitationAnswer::Cancel;
                    }
                }
            }
        }
    }
    if let Err(problem) = request.check(&content) {
        eprintln!("  {problem}");
        return ElicitationAnswer::Cancel;
    }
    let shown: Vec<String> = content.iter().map(|(k, v)| format!("{k}={v}")).collect();
    eprintln!(
        "  to send: {}",
        if shown.is_empty() {
            "nothing (an empty form)".to_string()
        } else {
            shown.join(" ")
        }
    );
    match choose(input, "send? [y = send, n = decline, c = cancel] ") {
        Choice::Yes => ElicitationAnswer::Accept(content),
        Choice::No => ElicitationAnswer::Decline,
        Choice::Cancel => ElicitationAnswer::Cancel,
    }
}

/// `  Label (description) (choices) [default]: `.
fn prompt(field: &ElicitationField) -> String {
    let mut text = format!("  {}", field.label);
    if let Some(description) = &field.description
        && description != &field.label
    {
        text.push_str(&format!(" ({description})"));
    }
    if !field.choices.is_empty() {
        let choices: Vec<String> = field
            .choices
            .iter()
            .enumerate()
            .map(|(i, (_, title))| format!("{} {title}", i + 1))
            .collect();
        text.push_str(&format!(" ({}", choices.join(", ")));
        if field.kind == FieldKind::Choices {
            text.push_str("; several: 1,2");
        }
        text.push(')');
    } else if field.kind == FieldKind::Boolean {
        text.push_str(" (y/n)");
    }
    match &field.default {
        Some(default) => text.push_str(&format!(" [{}]", plain(default))),
        None if !field.required => text.push_str(" [empty: leave out]"),
        None => {}
    }
    text.push_str(": ");
    text
}

/// A value as a person reads it.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "y".into(),
        Value::Bool(false) => "n".into(),
        Value::Array(items) => items.iter().map(plain).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// The value of `text` for `field`; `None` to leave it out.
fn value(field: &ElicitationField, text: &str) -> Result<Option<Value>, String> {
    if text.trim().is_empty() {
        return match (&field.default, field.required) {
            (Some(default), _) => Ok(Some(default.clone())),
            (None, false) => Ok(None),
            (None, true) => Err(format!("`{}` is required", field.label)),
        };
    }
    field.parse(text).map(Some)
}
