//! Sending the runs' spans ([`crate::telemetry`]) to an OpenTelemetry
//! receiver (a collector, Jaeger, Arize Phoenix, Langfuse...) over OTLP.
//!
//! ```text
//!  OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) unset ─▶ None: no exporter, no cost
//!  set ─▶ layer(): tracing-opentelemetry ─▶ batch processor ─▶ OTLP exporter
//!           OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf (default) | http/json | grpc
//!           OTEL_SERVICE_NAME (default `lc-agent`), OTEL_RESOURCE_ATTRIBUTES,
//!           OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT
//!  OtelGuard dropped ─▶ what is left is sent (at most 5 s), the exporter stops
//! ```
//!
//! The layer takes the `gen_ai` spans and, as span events, the warnings
//! and errors logged inside them; the logs' own filters are not involved.
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! # fn main() -> Result<(), lc_agent::otel::OtelError> {
//! // Keep the guard until the program ends: dropping it sends the rest.
//! let otel = lc_agent::otel::layer_from_env()?;
//! let (layer, _guard) = match otel {
//!     Some((layer, guard)) => (Some(layer), Some(guard)),
//!     None => (None, None),
//! };
//! tracing_subscriber::registry().with(layer).init();
//! # Ok(())
//! # }
//! ```

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::{Level, Subscriber};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The service name when `OTEL_SERVICE_NAME` says none.
pub(crate) const DEFAULT_SERVICE_NAME: &str = "lc-agent";

/// Why the exporter could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// The OTLP exporter refused its settings (an endpoint that is not a
    /// URL, an unknown protocol...).
    #[error("OpenTelemetry exporter (OTEL_EXPORTER_OTLP_*): {0}")]
    Exporter(String),
}

/// The endpoint the environment names for traces
/// (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else
/// `OTEL_EXPORTER_OTLP_ENDPOINT`), when it names one.
pub(crate) fn endpoint_from_env() -> Option<String> {
    [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]
    .iter()
    .filter_map(|var| std::env::var(var).ok())
    .map(|v| v.trim().to_string())
    .find(|v| !v.is_empty())
}

/// Keeps the exporter running; dropping it sends the spans not sent yet
/// (waiting at most 5 s) and stops it.
pub struct OtelGuard {
    provider: SdkTracerProvider,
}

impl std::fmt::Debug for OtelGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtelGuard").finish_non_exhaustive()
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "could not send the last OpenTelemetry spans");
        }
    }
}

/// The layer [`layer_from_env`] makes, boxed.
pub type OtelLayer<S> = Box<dyn Layer<S> + Send + Sync>;

/// The process's exporter, kept by [`keep`] until [`shutdown`].
static KEPT: parking_lot::Mutex<Option<OtelGuard>> = parking_lot::Mutex::new(None);

/// Keeps `guard` for the rest of the process (a program whose subscriber
/// is installed far from where it ends); [`shutdown`] sends what is left.
pub fn keep(guard: OtelGuard) {
    *KEPT.lock() = Some(guard);
}

/// Sends the spans not sent yet and stops the exporter that [`keep`]
/// kept (nothing when there is none). Call it before the process exits.
pub fn shutdown() {
    let guard = KEPT.lock().take();
    drop(guard);
}

/// The subscriber layer that exports the runs' spans, when the
/// environment names an endpoint (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else
/// `OTEL_EXPORTER_OTLP_ENDPOINT`); `None` when it
/// does not (nothing starts, nothing is spent). The protocol is
/// `OTEL_EXPORTER_OTLP_PROTOCOL`'s (`http/protobuf` by default, `grpc`
/// needs a Tokio runtime running: call this inside it). Keep the guard
/// until the program ends.
pub fn layer_from_env<S>() -> Result<Option<(OtelLayer<S>, OtelGuard)>, OtelError>
where
    S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    if endpoint_from_env().is_none() {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .build()
        .map_err(|e| OtelError::Exporter(e.to_string()))?;
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.trim().is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name"));
    let mut resource = Resource::builder();
    if !named {
        resource = resource.with_service_name(DEFAULT_SERVICE_NAME);
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("lc-agent");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(
            Targets::new()
                .with_target(crate::telemetry::TARGET, Level::TRACE)
                .with_default(Level::WARN),
        );
    Ok(Some((Box::new(layer), OtelGuard { provider })))
}
