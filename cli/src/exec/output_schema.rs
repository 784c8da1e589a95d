//! `--output-schema FILE`: the final answer must be one JSON value valid
//! against a JSON Schema.
//!
//! The rule is the core's ([`lc_agent::OutputSchema`]): for this run, the
//! schema is the session's `chat` step schema, so the provider is asked
//! for it (`response_format`, or a forced tool), and an answer that is not
//! JSON, or not valid against the schema, is asked again with the errors
//! inside the same model turn, at most [`lc_agent::MAX_ANSWERS`] answers;
//! every rejected answer stays on the chat node
//! (`metadata["schema_rejected"]`). After that the run fails with the
//! errors (exit code 4).

use std::path::Path;

use lc_agent::{NetworkError, OutputSchema, RunnableNetwork};

use crate::error::{CliError, CliResult, Kind};

/// The schema in `path` (a usage error when it is no schema).
pub(crate) fn read(path: &Path) -> CliResult<OutputSchema> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::usage(format!(
            "--output-schema {}: cannot read it: {e}",
            path.display()
        ))
    })?;
    let schema = serde_json::from_str(&text).map_err(|e| {
        CliError::usage(format!("--output-schema {}: not JSON: {e}", path.display()))
    })?;
    OutputSchema::new(schema)
        .map_err(|e| CliError::usage(format!("--output-schema {}: {e}", path.display())))
}

/// `error` as exec says it when it is an answer that never fit the
/// schema (exit code 4), with the rejected answers (kept on the chat node
/// of `net`, so in the saved session); `None` for any other error.
pub(crate) fn mismatch(error: &NetworkError, net: &RunnableNetwork) -> Option<CliError> {
    let NetworkError::NodeFailed { node, source, .. } = error else {
        return None;
    };
    match source.downcast_ref::<NetworkError>()? {
        NetworkError::SchemaMismatch { attempts, errors } => {
            let answers: Vec<String> = net
                .node(*node)
                .and_then(|n| n.metadata_value(REJECTED_KEY))
                .and_then(|v| v.as_array().cloned())
                .unwrap_or_default()
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let answer = r["answer"].as_str().unwrap_or_default();
                    format!("{}. {}", i + 1, shortened(answer))
                })
                .collect();
            let listed = if answers.is_empty() {
                String::new()
            } else {
                format!(
                    "; the rejected answers (kept in the session, node metadata `{REJECTED_KEY}`): {}",
                    answers.join(" ")
                )
            };
            Some(CliError::new(
                Kind::SchemaMismatch,
                format!(
                    "the answer is not valid against --output-schema after {attempts} answers: {}{listed}",
                    errors.join("; ")
                ),
            ))
        }
        _ => None,
    }
}

/// The node metadata key of the rejected answers (the core's).
const REJECTED_KEY: &str = "schema_rejected";

/// An answer on one line, at most 200 characters.
fn shortened(answer: &str) -> String {
    let line = answer.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > 200 {
        format!("{}…", line.chars().take(200).collect::<String>())
    } else {
        line
    }
}
