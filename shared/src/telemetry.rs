//! Logs and traces for both binaries, set up in one place.
//!
//! - **Logs** go to stderr, human-readable by default or one JSON object per
//!   line with `LOG_FORMAT=json` (what log shippers want); `RUST_LOG` filters.
//! - **Traces** are exported over OTLP/HTTP (protobuf) only when
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` is set; without it no exporter thread or
//!   client exists at all.
//! - **One trace per analysis**, although its steps run on different workers:
//!   ingest stores the W3C `traceparent` of its span on the run
//!   (`analysis_runs.traceparent`), and every step span of that run takes it
//!   as its parent ([`set_parent`]). A retry, a reconciled lease or a step
//!   pushed by another worker therefore stays in the same trace.

use std::collections::HashMap;

use opentelemetry::{
    KeyValue,
    propagation::TextMapPropagator,
    trace::{TraceContextExt, TracerProvider as _},
};
use opentelemetry_sdk::{Resource, propagation::TraceContextPropagator, trace::SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::{
    EnvFilter, Layer, Registry, filter::LevelFilter, layer::SubscriberExt, util::SubscriberInitExt,
};

/// Why telemetry could not be set up: always a setting the operator can fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    #[error("LOG_FORMAT must be `text` or `json`, got {0:?}")]
    LogFormat(String),
    #[error(
        "OTEL_EXPORTER_OTLP_PROTOCOL must be `http/protobuf` (the only OTLP transport built in), got {0:?}"
    )]
    Protocol(String),
    #[error("failed to build the OTLP exporter: {0}")]
    Exporter(String),
    #[error("a global tracing subscriber is already installed: {0}")]
    AlreadyInstalled(String),
}

/// How log lines are written (`LOG_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

impl LogFormat {
    /// Reads `LOG_FORMAT` (unset or empty: text).
    pub fn from_env() -> Result<Self, TelemetryError> {
        Self::parse(&std::env::var("LOG_FORMAT").unwrap_or_default())
    }

    /// Parses a `LOG_FORMAT` value.
    pub fn parse(value: &str) -> Result<Self, TelemetryError> {
        match value.trim() {
            "" | "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(TelemetryError::LogFormat(other.to_string())),
        }
    }
}

/// Who is emitting: becomes the OTLP resource (`service.name`,
/// `service.instance.id`), so a trace shows which worker ran which step.
#[derive(Debug, Clone)]
pub struct Service {
    /// `faultline-producer` or `faultline-worker` (`OTEL_SERVICE_NAME` overrides).
    pub name: &'static str,
    /// The worker id, or host-pid for the producer.
    pub instance: String,
    /// Filter used when `RUST_LOG` is unset.
    pub default_filter: &'static str,
}

/// Keeps the trace exporter alive; dropping it flushes the spans still
/// buffered (a worker stopped by SIGTERM exports its last steps).
#[must_use = "dropping the guard shuts the trace exporter down"]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// True when spans are exported over OTLP.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("warning: flushing traces failed: {e}");
        }
    }
}

/// Installs the global subscriber: env filter, text or JSON logs on stderr,
/// and the OpenTelemetry layer when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
pub fn init(service: &Service) -> Result<Telemetry, TelemetryError> {
    let format = LogFormat::from_env()?;
    // RUST_LOG filters the log lines only: the CLI's quiet default (`warn`)
    // must not disable the `ingest` span whose context becomes the trace.
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| service.default_filter.into());
    let provider = otlp_provider(service)?;
    let otel = provider.as_ref().map(|p| {
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer("faultline"))
            .with_filter(LevelFilter::INFO)
    });
    let logs: Box<dyn Layer<Registry> + Send + Sync> = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .boxed(),
    };
    tracing_subscriber::registry()
        .with(logs.with_filter(filter))
        .with(otel)
        .try_init()
        .map_err(|e| TelemetryError::AlreadyInstalled(e.to_string()))?;
    Ok(Telemetry { provider })
}

/// The OTLP/HTTP exporter, or `None` when no endpoint is configured. The
/// exporter itself reads the standard `OTEL_EXPORTER_OTLP_*` variables
/// (endpoint, headers, timeout) and posts to `{endpoint}/v1/traces`.
fn otlp_provider(service: &Service) -> Result<Option<SdkTracerProvider>, TelemetryError> {
    let endpoint = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").unwrap_or_default();
    if endpoint.trim().is_empty() {
        return Ok(None);
    }
    match std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL")
        .unwrap_or_default()
        .trim()
    {
        "" | "http/protobuf" => {}
        other => return Err(TelemetryError::Protocol(other.to_string())),
    }
    use opentelemetry_otlp::{Protocol, WithExportConfig as _};
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let mut resource = Resource::builder()
        .with_attribute(KeyValue::new(
            "service.instance.id",
            service.instance.clone(),
        ))
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if std::env::var("OTEL_SERVICE_NAME").is_err() {
        resource = resource.with_service_name(service.name);
    }
    Ok(Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build(),
    ))
}

/// The W3C `traceparent` of the current span, when it is being exported.
pub fn current_traceparent() -> Option<String> {
    let cx = tracing::Span::current().context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove("traceparent")
}

/// Makes `traceparent` the remote parent of `span`. Call it before the span
/// is first entered; a missing or malformed value leaves the span a root.
pub fn set_parent(span: &tracing::Span, traceparent: Option<&str>) {
    let Some(tp) = traceparent.filter(|t| !t.is_empty()) else {
        return;
    };
    let carrier = HashMap::from([("traceparent".to_string(), tp.to_string())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    if cx.span().span_context().is_valid() {
        // Only fails when no OpenTelemetry layer is installed: nothing to link.
        let _ = span.set_parent(cx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_format_rejects_unknown_values_precisely() {
        assert_eq!(LogFormat::parse("json").unwrap(), LogFormat::Json);
        assert_eq!(LogFormat::parse("").unwrap(), LogFormat::Text);
        let err = LogFormat::parse("yaml").unwrap_err().to_string();
        assert!(
            err.contains("`text` or `json`") && err.contains("yaml"),
            "{err}"
        );
    }

    #[test]
    fn without_an_exporter_there_is_no_traceparent_to_store() {
        let span = tracing::info_span!("ingest");
        let _entered = span.enter();
        assert_eq!(current_traceparent(), None);
    }
}
