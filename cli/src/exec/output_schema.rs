//! `--output-schema FILE`: the final answer must be one JSON value valid
//! against a JSON Schema (validated with the `jsonschema` crate).
//!
//! The prompt gets the schema and asks for the value alone; an answer
//! that is not JSON, or not valid against the schema, is sent back to the
//! agent with the errors, as a new turn, at most [`ATTEMPTS`] answers in
//! all; after that the run fails with the errors (exit code 4). An answer
//! wrapped in one Markdown code fence is read as the JSON inside it.

use std::path::Path;

use serde_json::Value;

use crate::error::{CliError, CliResult};

/// How many answers are read at most (the first and two more).
pub(crate) const ATTEMPTS: usize = 3;

/// A schema read from `--output-schema`.
pub(crate) struct OutputSchema {
    schema: Value,
    validator: jsonschema::Validator,
}

impl OutputSchema {
    /// The schema in `path` (a usage error when it is no schema).
    pub(crate) fn read(path: &Path) -> CliResult<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::usage(format!(
                "--output-schema {}: cannot read it: {e}",
                path.display()
            ))
        })?;
        let schema: Value = serde_json::from_str(&text).map_err(|e| {
            CliError::usage(format!("--output-schema {}: not JSON: {e}", path.display()))
        })?;
        let validator = jsonschema::validator_for(&schema).map_err(|e| {
            CliError::usage(format!(
                "--output-schema {}: not a JSON Schema: {e}",
                path.display()
            ))
        })?;
        Ok(Self { schema, validator })
    }

    /// The prompt, with what the answer must be.
    pub(crate) fn prompt(&self, prompt: &str) -> String {
        format!(
            "{prompt}\n\nYour final answer must be only a JSON value (no other text, no code \
             fence) valid against this JSON Schema:\n{}",
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

    /// The answer's JSON value, or what is wrong with it.
    pub(crate) fn check(&self, answer: &str) -> Result<Value, Vec<String>> {
        let text = unfenced(answer.trim());
        let value: Value =
            serde_json::from_str(text).map_err(|e| vec![format!("the answer is not JSON: {e}")])?;
        let errors: Vec<String> = self
            .validator
            .iter_errors(&value)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect();
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(errors)
        }
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

#[cfg(test)]
mod tests {
    use super::unfenced;

    #[test]
    fn a_fenced_answer_is_read_inside_its_fence() {
        assert_eq!(unfenced("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(unfenced("{\"a\": 1}"), "{\"a\": 1}");
    }
}
