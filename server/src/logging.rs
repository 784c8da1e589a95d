//! The server's logs: a `tracing` subscriber on stderr, text or JSON lines,
//! filtered by `RUST_LOG`.
//!
//! ```text
//!  init_logging(LogFormat::Text | Json)
//!    RUST_LOG unset ─▶ info for the server (one access line per request, failures
//!                      with their causes, start and shutdown), warn for everything else
//!    --log-format json ─▶ one JSON object per line: timestamp, level, target,
//!                         fields (method, route, status, duration_ms, user, session),
//!                         and the request span (its id)
//! ```
//!
//! What is logged: every request (target `lc_agent_server::access`), every
//! 5xx answer and failed run with the whole error chain (a Redis outage,
//! an unreachable model), connections refused over the limit. Tokens are
//! never logged, and neither are queries.

use tracing_subscriber::EnvFilter;

/// The form of the log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (for log collectors).
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!("unknown log format `{other}`: use text or json")),
        }
    }
}

/// The filter when `RUST_LOG` is not set.
pub const DEFAULT_FILTER: &str = "warn,lc_agent_server=info,lc_agent=warn";

/// Errors of setting the logs up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoggingError {
    /// `RUST_LOG` cannot be read as a filter.
    #[error("RUST_LOG: {0}")]
    Filter(String),
    /// A subscriber is already installed in this process.
    #[error("logging is already set up in this process")]
    AlreadySet,
}

/// Installs the process's subscriber: stderr, `format`, filtered by
/// `RUST_LOG` (else [`DEFAULT_FILTER`]).
pub fn init_logging(format: LogFormat) -> Result<(), LoggingError> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(text) if !text.trim().is_empty() => {
            EnvFilter::try_new(&text).map_err(|e| LoggingError::Filter(e.to_string()))?
        }
        _ => EnvFilter::new(DEFAULT_FILTER),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match format {
        LogFormat::Text => builder.with_ansi(false).with_target(true).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
    result.map_err(|_| LoggingError::AlreadySet)
}
