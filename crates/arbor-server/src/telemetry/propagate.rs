//! W3C trace context (SEP-414) read from a request's `params._meta`: `traceparent`,
//! `tracestate` and `baggage`, unprefixed, as the client injected them.
//!
//! With the `otel` feature the context becomes the OpenTelemetry parent of the request's
//! span (`tracing-opentelemetry`'s `set_parent`), so the server's span continues the
//! client's trace; without it the raw `traceparent` is only recorded as a field
//! ([`attr::ARBOR_TRACEPARENT`]). It is not an HTTP propagator: trace headers of the
//! HTTP exchange are not read (one MCP request may span several HTTP requests).
//!
//! Invariant: a malformed or absent context changes nothing (the span keeps its
//! `tracing` parent); nothing here allocates unless the span is recorded.

use arbor_protocol::meta::Meta;
use tracing::Span;

#[allow(unused_imports)] // Used without the `otel` feature only.
use super::attr;

/// Makes the trace context in `meta`, if any, the parent of `span` (feature `otel`), or
/// records the raw `traceparent` on it.
pub(crate) fn adopt(span: &Span, meta: &Meta) {
    #[cfg(feature = "otel")]
    {
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        if let Some(cx) = parent_context(meta) {
            // Fails only when no OpenTelemetry layer listens: nothing to parent then.
            let _ = span.set_parent(cx);
        }
    }
    #[cfg(not(feature = "otel"))]
    if let Some(traceparent) = meta.traceparent() {
        span.record(attr::ARBOR_TRACEPARENT, traceparent);
    }
}

#[cfg(feature = "otel")]
pub use otel::parent_context;

#[cfg(feature = "otel")]
mod otel {
    use std::sync::LazyLock;

    use arbor_protocol::meta::Meta;
    use opentelemetry::propagation::{Extractor, TextMapCompositePropagator, TextMapPropagator};
    use opentelemetry::trace::TraceContextExt;
    use opentelemetry::Context;
    use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};

    /// The W3C trace context and baggage formats, used whatever global propagator the
    /// application set: the keys in `_meta` are fixed by SEP-414.
    static PROPAGATOR: LazyLock<TextMapCompositePropagator> = LazyLock::new(|| {
        TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ])
    });

    /// `_meta` read as a carrier: only its string values.
    struct MetaCarrier<'a>(&'a Meta);

    impl Extractor for MetaCarrier<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(serde_json::Value::as_str)
        }

        fn keys(&self) -> Vec<&str> {
            self.0.iter().map(|(k, _)| k).collect()
        }
    }

    /// The OpenTelemetry context `_meta` carries (`traceparent`, `tracestate`,
    /// `baggage`), when it names a valid remote span; `None` otherwise.
    pub fn parent_context(meta: &Meta) -> Option<Context> {
        meta.traceparent()?;
        let cx = PROPAGATOR.extract(&MetaCarrier(meta));
        cx.span().span_context().is_valid().then_some(cx)
    }
}
