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
//! With the feature `otel` (on by default) and `OTEL_EXPORTER_OTLP_ENDPOINT`
//! set, the runs' spans go to that OpenTelemetry receiver too
//! (`lc_agent::otel`; `lc_agent::otel::shutdown` sends the last ones).
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
pub(crate) const DEFAULT_FILTER: &str = "warn,lc_agent_server=info,lc_agent=warn";

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
/// `RUST_LOG` (else `DEFAULT_FILTER`).
pub fn init_logging(format: LogFormat) -> Result<(), LoggingError> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(text) if !text.trim().is_empty() => {
            EnvFilter::try_new(&text).map_err(|e| LoggingError::Filter(e.to_string()))?
        }
        _ => EnvFilter::new(DEFAULT_FILTER),
    };
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;

    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let logs = match format {
        LogFormat::Text => fmt.with_ansi(false).with_target(true).boxed(),
        LogFormat::Json => fmt
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .boxed(),
    };
    let (otel, problem) = telemetry();
    let result = tracing_subscriber::registry()
        .with(otel)
        .with(logs.with_filter(filter))
        .try_init();
    result.map_err(|_| LoggingError::AlreadySet)?;
    if let Some(problem) = problem {
        tracing::warn!("{problem}; no traces are sent");
    }
    Ok(())
}

type Registry = tracing_subscriber::Registry;
type OtelLayer = Box<dyn tracing_subscriber::Layer<Registry> + Send + Sync>;

/// The layer that exports the runs' spans when `OTEL_EXPORTER_OTLP_ENDPOINT`
/// is set (feature `otel`); its guard is kept until
/// `lc_agent::otel::shutdown`.
#[cfg(feature = "otel")]
fn telemetry() -> (Option<OtelLayer>, Option<String>) {
    match lc_agent::otel::layer_from_env::<Registry>() {
        Ok(Some((layer, guard))) => {
            lc_agent::otel::keep(guard);
            (Some(layer), None)
        }
        Ok(None) => (None, None),
        Err(e) => (None, Some(e.to_string())),
    }
}

#[cfg(not(feature = "otel"))]
fn telemetry() -> (Option<OtelLayer>, Option<String>) {
    (None, None)
}
