//! The OTLP exporter, installed in one call (feature `otlp`, which the `arbor-runtime`
//! facade's `otel` feature turns on): [`init`] sends the runtime's spans (and every other
//! INFO span of the process) to an OpenTelemetry collector over OTLP/HTTP (protobuf);
//! [`layer`] gives the `tracing` layer for an application that builds its own subscriber.
//!
//! It is a convenience, not a configuration surface: anything beyond an endpoint and a
//! service name is `opentelemetry_sdk`'s and `tracing-opentelemetry`'s own API, which
//! the spans work with just as well. Invariant: spans are exported by the SDK's batch
//! processor on its own thread, never on a request's path; dropping the guard flushes
//! and shuts the exporter down.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig as _};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// Why the exporter could not be installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtlpError {
    /// The exporter could not be built (a malformed endpoint, no HTTP client).
    #[error("cannot build the OTLP exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// A global `tracing` subscriber was already installed.
    #[error("a global tracing subscriber is already installed: {0}")]
    Subscriber(#[from] tracing::subscriber::SetGlobalDefaultError),
}

/// Keeps the exporter running; dropping it flushes the spans not yet sent and shuts the
/// exporter down (keep it alive for the process's lifetime, e.g. in `main`).
#[derive(Debug)]
#[must_use = "dropping the guard shuts the exporter down"]
pub struct OtlpGuard {
    provider: SdkTracerProvider,
}

impl OtlpGuard {
    /// The tracer provider, for an application that makes spans of its own with the
    /// OpenTelemetry API.
    pub fn provider(&self) -> &SdkTracerProvider {
        &self.provider
    }
}

impl Drop for OtlpGuard {
    fn drop(&mut self) {
        let _ = self.provider.shutdown();
    }
}

/// A `tracing` layer exporting spans to the OTLP/HTTP `endpoint` (e.g.
/// `http://localhost:4318/v1/traces`) as service `service_name` (the runtime's spans, and
/// every other span at INFO), and
/// the guard that keeps its exporter running.
///
/// Its filter is a per-layer one, so that it filters only this layer in a subscriber the
/// application composes with layers of its own.
pub fn layer<S>(
    endpoint: &str,
    service_name: &str,
) -> Result<(impl Layer<S> + Send + Sync + 'static, OtlpGuard), OtlpError>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    let (tracer, guard) = tracer(endpoint, service_name)?;
    let layer = tracing_opentelemetry::layer().with_tracer(tracer).with_filter(filter());
    Ok((layer, guard))
}

/// Installs a global `tracing` subscriber that exports the runtime's spans (and every
/// other INFO span) to the OTLP/HTTP
/// `endpoint` as service `arbor`. Call once, in `main`, and keep the guard.
pub fn init(endpoint: &str) -> Result<OtlpGuard, OtlpError> {
    let (tracer, guard) = tracer(endpoint, "arbor")?;
    // The exporter is this subscriber's only layer, so its filter is the subscriber's
    // (global) one: the same spans pass, and the registry keeps no per-layer filter
    // state, which it would look up at each span's new, enter, exit and close (300 to 400
    // instructions per request, `scripts/bench-instructions --telemetry`).
    let subscriber =
        tracing_subscriber::registry().with(filter()).with(tracing_opentelemetry::layer().with_tracer(tracer));
    tracing::subscriber::set_global_default(subscriber)?;
    Ok(guard)
}

/// The spans exported: the runtime's request spans are DEBUG (`telemetry::TARGET`);
/// everything else at INFO.
fn filter() -> Targets {
    Targets::new().with_target(super::TARGET, Level::DEBUG).with_default(Level::INFO)
}

/// The tracer exporting over OTLP/HTTP, and the guard owning its provider.
fn tracer(endpoint: &str, service_name: &str) -> Result<(SdkTracer, OtlpGuard), OtlpError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .with_headers(Default::default())
        .build()?;
    let resource = Resource::builder().with_service_name(service_name.to_owned()).build();
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
    let tracer: SdkTracer = provider.tracer("arbor");
    Ok((tracer, OtlpGuard { provider }))
}
