//! The logs: every library warning a user should see reaches stderr.
//!
//! ```text
//!  tracing::warn!(..) in any crate ─▶ EnvFilter ─▶ Line ─▶ stderr "warning: <message> (<fields>)"
//!        RUST_LOG when set, else: -q errors only, (default) warnings,
//!        -v info, -vv debug, -vvv trace
//! ```
//!
//! A line reads as a sentence: the level in words (`warning:`, `error:`),
//! the message, then the fields in brackets, with a retry's `delay_ms`
//! said as `wait 1.5 s` and `attempt` / `max_retries` as `attempt 1 of
//! 3`. Debug and trace lines name their module. Colour only when stderr
//! is a terminal and neither `NO_COLOR` nor `--no-color` is set.
//!
//! With `OTEL_EXPORTER_OTLP_ENDPOINT` set, the runs' spans also go to that
//! OpenTelemetry receiver (`lc_agent::otel`), whatever the log level.
//!
//! Two warnings of the chat node (an answer cut off at the output limit,
//! an empty answer) are said by the console in its own words, with what
//! to do next (`console.rs`), so the default filter leaves their log
//! lines out; `RUST_LOG` or `-v` show them. So are the hooks' failures
//! and blocks (a line each, from the network's events). The MCP SDK's
//! own warnings (a server message it could not parse, an event stream
//! that broke and was resumed) are left out too: what changes a result
//! reaches the user as that tool call's error, naming the server.

use std::fmt::Write as _;
use std::io::IsTerminal;

use clap::Args;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;

/// How much the logs say; global flags of every subcommand.
#[derive(Debug, Args, Clone, Copy, Default)]
pub(crate) struct LogArgs {
    /// Say more on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG`
    /// overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    pub(crate) verbose: u8,
    /// Say only errors on stderr (no warnings).
    #[arg(short, long, global = true)]
    pub(crate) quiet: bool,
    /// No colour on the terminal (as `NO_COLOR` does).
    #[arg(long, global = true)]
    pub(crate) no_color: bool,
}

impl LogArgs {
    /// Whether colour is allowed (`--no-color` and `NO_COLOR` say no).
    pub(crate) fn color(&self) -> bool {
        !self.no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
    }

    /// The filter when `RUST_LOG` is not set.
    fn default_filter(&self) -> String {
        let level = match (self.quiet, self.verbose) {
            (true, _) => "error",
            (false, 0) => "warn",
            (false, 1) => "info",
            (false, 2) => "debug",
            (false, _) => "trace",
        };
        if self.verbose == 0 {
            // Said by the console (see the module docs).
            format!(
                "{level},lc_agent::nodes::chat=error,lc_agent_deepagent::hooks=error,rmcp=error"
            )
        } else {
            level.to_string()
        }
    }
}

/// Installs the subscriber (once, at start).
pub(crate) fn init(args: &LogArgs) {
    let filter = match std::env::var("RUST_LOG") {
        Ok(text) if !text.trim().is_empty() => EnvFilter::try_new(&text).unwrap_or_else(|e| {
            eprintln!("warning: RUST_LOG={text}: {e}; using the default");
            EnvFilter::new(args.default_filter())
        }),
        _ => EnvFilter::new(args.default_filter()),
    };
    let color = args.color() && std::io::stderr().is_terminal();
    let layer = tracing_subscriber::fmt::layer()
        // A warning never lands on the spinner's line.
        .with_writer(|| {
            crate::console::clear_status();
            std::io::stderr()
        })
        .event_format(Line { color })
        // A closed stderr (a reader that went away) is not worth a word:
        // the subscriber's own complaint would panic in eprintln!.
        .log_internal_errors(false);
    // The spans of the runs, to OTEL_EXPORTER_OTLP_ENDPOINT when set
    // (their own filter: the logs' level does not hide them).
    let (otel, problem) = match lc_agent::otel::layer_from_env() {
        Ok(Some((otel, guard))) => {
            lc_agent::otel::keep(guard);
            (Some(otel), None)
        }
        Ok(None) => (None, None),
        Err(e) => (None, Some(e)),
    };
    let _ = tracing_subscriber::registry()
        .with(layer.with_filter(filter))
        .with(otel)
        .try_init();
    if let Some(e) = problem {
        tracing::warn!("{e}; no traces are sent");
    }
}

/// One event as one line (see the module docs).
struct Line {
    color: bool,
}

impl<S, N> FormatEvent<S, N> for Line
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let meta = event.metadata();
        let (word, color) = match *meta.level() {
            Level::ERROR => ("error", "31"),
            Level::WARN => ("warning", "33"),
            Level::INFO => ("info", "36"),
            Level::DEBUG => ("debug", "2"),
            Level::TRACE => ("trace", "2"),
        };
        let mut fields = Fields::default();
        event.record(&mut fields);
        if self.color {
            write!(writer, "\x1b[{color}m{word}:\x1b[0m ")?;
        } else {
            write!(writer, "{word}: ")?;
        }
        if *meta.level() >= Level::DEBUG {
            write!(writer, "{}: ", meta.target())?;
        }
        writeln!(writer, "{}", fields.sentence())
    }
}

/// An event's fields, gathered for [`Fields::sentence`].
#[derive(Default)]
struct Fields {
    message: String,
    attempt: Option<String>,
    max_retries: Option<String>,
    others: Vec<(String, String)>,
}

impl Fields {
    /// `message (key: value, ...)`, retries in words.
    fn sentence(&self) -> String {
        let mut parts = Vec::new();
        match (&self.attempt, &self.max_retries) {
            (Some(a), Some(m)) => parts.push(format!("attempt {a} of {m}")),
            (Some(a), None) => parts.push(format!("attempt {a}")),
            _ => {}
        }
        for (key, value) in &self.others {
            if key == "delay_ms" {
                let wait = value.parse::<f64>().map_or_else(
                    |_| format!("{value} ms"),
                    |ms| format!("{:.1} s", ms / 1000.0),
                );
                parts.push(format!("wait {wait}"));
            } else {
                parts.push(format!("{key}: {value}"));
            }
        }
        let mut line = self.message.clone();
        if !parts.is_empty() {
            let _ = write!(line, " ({})", parts.join(", "));
        }
        line
    }

    fn add(&mut self, field: &Field, value: String) {
        match field.name() {
            "message" => self.message = value,
            "attempt" => self.attempt = Some(value),
            "max_retries" => self.max_retries = Some(value),
            name if name.starts_with("log.") => {}
            name => self.others.push((name.to_string(), value)),
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.add(field, value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.add(field, format!("{value:?}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_reads_as_a_sentence() {
        let fields = Fields {
            message: "chat completion failed; retrying".into(),
            attempt: Some("1".into()),
            max_retries: Some("3".into()),
            others: vec![
                ("delay_ms".into(), "1500".into()),
                ("error".into(), "HTTP 429: slow down".into()),
            ],
        };
        assert_eq!(
            fields.sentence(),
            "chat completion failed; retrying (attempt 1 of 3, wait 1.5 s, error: HTTP 429: slow down)"
        );
    }

    #[test]
    fn the_default_is_warnings_and_the_flags_move_it() {
        let mut args = LogArgs::default();
        assert!(args.default_filter().starts_with("warn,"));
        args.quiet = true;
        assert!(args.default_filter().starts_with("error"));
        args.quiet = false;
        args.verbose = 2;
        assert_eq!(args.default_filter(), "debug");
    }
}
