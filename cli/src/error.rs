//! [`CliError`]: how a command fails — a kind that is the exit code, and a
//! message for stderr — and [`exit`], the one place that turns a command's
//! result into the process's exit code.
//!
//! | kind | exit code | when |
//! | --- | --- | --- |
//! | [`Kind::Failed`] | 1 | the work failed (the message says why) |
//! | [`Kind::Usage`] | 2 | bad flags, files or arguments |
//! | [`Kind::AwaitingApproval`] | 3 | a call waits for approval and stdin ended (`exec`: nobody can give it) |
//! | [`Kind::SchemaMismatch`] | 4 | `exec --output-schema`: the answer does not fit the schema |
//! | [`Kind::Interrupted`] | 130 | Ctrl-C stopped the run |
//!
//! Messages speak of flags, not of the library's API ([`in_cli_terms`]).
//! A failure with an empty message prints nothing (`lc-agent tool` has
//! printed the tool's error on stdout already).

use std::process::ExitCode;

/// What kind of failure (and so which exit code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Exit 1.
    Failed,
    /// Exit 2.
    Usage,
    /// Exit 3.
    AwaitingApproval,
    /// Exit 4.
    SchemaMismatch,
    /// Exit 130 (128 + SIGINT, as shells do).
    Interrupted,
}

/// A command's failure: its kind, what to say on stderr, and the error
/// it came from (kept for what the CLI decides by the error's type, such
/// as [`CliError::is_context_overflow`]).
#[derive(Debug)]
pub(crate) struct CliError {
    pub(crate) kind: Kind,
    pub(crate) message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl CliError {
    /// The work failed (exit 1).
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self::new(Kind::Failed, message)
    }

    /// Bad usage (exit 2).
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::new(Kind::Usage, message)
    }

    /// A failure of `kind`.
    pub(crate) fn new(kind: Kind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// The same failure, caused by `source`.
    pub(crate) fn caused_by(
        mut self,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// Whether a request did not fit the model's context window
    /// ([`ModelError::ContextOverflow`](lc_agent::ModelError::ContextOverflow)
    /// among the causes), whatever the message says.
    pub(crate) fn is_context_overflow(&self) -> bool {
        self.overflow_sizes().is_some()
    }

    /// The sizes (the request's tokens, the window) of a request that did
    /// not fit, when that is among the causes.
    pub(crate) fn overflow_sizes(&self) -> Option<(Option<usize>, Option<usize>)> {
        use lc_agent::{ModelError, NetworkError};
        let mut current: Option<&(dyn std::error::Error + 'static)> = self
            .source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static));
        while let Some(e) = current {
            // `NetworkError::Model` is transparent: its source skips the
            // model error, so both types are looked at.
            let model =
                e.downcast_ref::<ModelError>()
                    .or_else(|| match e.downcast_ref::<NetworkError>() {
                        Some(NetworkError::Model(m)) => Some(m),
                        _ => None,
                    });
            if let Some(ModelError::ContextOverflow { tokens, window }) = model {
                return Some((*tokens, *window));
            }
            current = e.source();
        }
        None
    }

    /// The process exit code.
    pub(crate) fn code(&self) -> u8 {
        match self.kind {
            Kind::Failed => 1,
            Kind::Usage => 2,
            Kind::AwaitingApproval => 3,
            Kind::SchemaMismatch => 4,
            Kind::Interrupted => 130,
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// A command's result.
pub(crate) type CliResult<T = ()> = Result<T, CliError>;

/// The exit code of a command's result; says the error on stderr.
pub(crate) fn exit(result: CliResult) -> ExitCode {
    // The traces of the run leave before the process does.
    lc_agent::otel::shutdown();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if !e.message.is_empty() {
                eprintln!("error: {}", in_cli_terms(&e.message));
            }
            ExitCode::from(e.code())
        }
    }
}

/// A library message in the command line's terms: the builder calls it
/// suggests become the flags and variables that do the same.
pub(crate) fn in_cli_terms(message: &str) -> String {
    message
        .replace(" or call `.model(..)`", " or pass --model NAME")
        .replace(" or call `.api_key(..)`", "")
        .replace(
            " or call `.base_url(..)`",
            "; or --script FILE for an offline scripted model",
        )
}

/// Whether `error` is a closed pipe (the reader of stdout is gone, as
/// with `| head -1`): a quiet success, not a failure.
pub(crate) fn is_broken_pipe(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::BrokenPipe
        {
            return true;
        }
        current = e.source();
    }
    false
}

/// A run's failure in the user's terms: a node's failure says what
/// failed (the model, a tool) without the node's id.
pub(crate) fn in_user_terms(error: &lc_agent::NetworkError) -> String {
    match error {
        // A stuck model is not a failed call: it says so itself.
        lc_agent::NetworkError::NodeFailed { source, .. }
            if matches!(
                source.downcast_ref::<lc_agent::NetworkError>(),
                Some(lc_agent::NetworkError::Stuck { .. })
            ) =>
        {
            source.to_string()
        }
        lc_agent::NetworkError::NodeFailed { kind, message, .. } => {
            let what = match kind.as_str() {
                "chat" => "the model call failed",
                "tool" => "a tool call failed",
                "network" => "a sub-agent failed",
                "summary" => "the summary failed",
                other => return format!("the {other} step failed: {message}"),
            };
            format!("{what}: {message}")
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_calls_become_flags() {
        let text = in_cli_terms(
            "no model name for http://x/v1: set OPENAI_MODEL to a model that server serves, or call `.model(..)`",
        );
        assert!(text.ends_with("or pass --model NAME"), "{text}");
        assert!(!in_cli_terms("set OPENAI_API_KEY or call `.api_key(..)` (a local server needs only a base URL: set OPENAI_BASE_URL or call `.base_url(..)`)").contains("call `"));
    }
}
