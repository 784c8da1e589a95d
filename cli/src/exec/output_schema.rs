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

use lc_agent::{NetworkError, OutputSchema};

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
/// schema (exit code 4); `None` for any other error.
pub(crate) fn mismatch(error: &NetworkError) -> Option<CliError> {
    let NetworkError::NodeFailed { source, .. } = error else {
        return None;
    };
    match source.downcast_ref::<NetworkError>()? {
        NetworkError::SchemaMismatch { attempts, errors } => Some(CliError::new(
            Kind::SchemaMismatch,
            format!(
                "the answer is not valid against --output-schema after {attempts} answers: {}",
                errors.join("; ")
            ),
        )),
        _ => None,
    }
}
