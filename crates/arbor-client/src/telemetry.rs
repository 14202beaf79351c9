//! The client's spans by the OpenTelemetry MCP semantic conventions: one span of kind
//! client per request sent (each round of a call, the handshake and probes too), named
//! `{mcp.method.name} {target}` through `otel.name`, with the attribute names of
//! `arbor_protocol::telemetry`, the server's too. With the `otel` feature the span's
//! OpenTelemetry context is injected into the request's `params._meta` as `traceparent`,
//! `tracestate` and `baggage` (SEP-414), so the server's span continues the trace.
//!
//! Not an exporter (the application installs one, e.g. `arbor_server::telemetry::otlp`);
//! not the metrics. Invariants: nothing is formatted or injected unless a subscriber
//! wants the span (target `arbor::mcp`, level DEBUG, as the server's request spans); on the client side every error is an
//! error (`error.type`: the JSON-RPC code, `tool_error` for `isError`, or the client's
//! own failure class); no token or argument is ever a field.

use arbor_protocol::methods::MethodName;
use arbor_protocol::telemetry as attr;
use arbor_protocol::version::ProtocolVersion;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tracing::field::{display, Empty};
use tracing::Span;

use crate::error::ClientError;
use crate::shared::Shared;

/// The `tracing` target of the client's spans (the server's is the same).
pub(crate) const TARGET: &str = "arbor::mcp";

/// The span of one request: a child of the caller's current span.
pub(crate) fn request_span(
    shared: &Shared,
    method: MethodName,
    params: &Value,
    modern: bool,
    http: bool,
    id: i64,
) -> Span {
    // Read only if the span is recorded (the macro evaluates fields lazily).
    let version = || match modern {
        true => ProtocolVersion::LATEST,
        false => shared.session().map_or(ProtocolVersion::LATEST_LEGACY, |s| s.version),
    };
    let method = method.as_str();
    let name = params.get("name").and_then(Value::as_str);
    let (tool, prompt) = match method {
        "tools/call" => (name, None),
        "prompts/get" => (None, name),
        _ => (None, None),
    };
    let uri = match method {
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => params.get("uri").and_then(Value::as_str),
        _ => None,
    };
    let target = tool.or(prompt);
    tracing::debug_span!(
        target: TARGET,
        "mcp.client.request",
        { attr::OTEL_NAME } = %SpanName(method, target),
        { attr::OTEL_KIND } = "client",
        { attr::OTEL_STATUS_CODE } = Empty,
        { attr::OTEL_STATUS_DESCRIPTION } = Empty,
        { attr::MCP_METHOD_NAME } = method,
        { attr::MCP_PROTOCOL_VERSION } = version().as_str(),
        { attr::MCP_RESOURCE_URI } = uri,
        { attr::GEN_AI_TOOL_NAME } = tool,
        { attr::GEN_AI_PROMPT_NAME } = prompt,
        { attr::GEN_AI_OPERATION_NAME } = tool.map(|_| attr::EXECUTE_TOOL),
        { attr::JSONRPC_REQUEST_ID } = id,
        { attr::ERROR_TYPE } = Empty,
        { attr::RPC_RESPONSE_STATUS_CODE } = Empty,
        { attr::NETWORK_TRANSPORT } = if http { "tcp" } else { "pipe" },
    )
}

struct SpanName<'a>(&'a str, Option<&'a str>);

impl std::fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            Some(target) => write!(f, "{} {target}", self.0),
            None => f.write_str(self.0),
        }
    }
}

/// Records how the request ended: every error is one on the client side.
pub(crate) fn record_outcome(span: &Span, method: MethodName, outcome: &Result<Box<RawValue>, ClientError>) {
    if span.is_disabled() {
        return;
    }
    let (error_type, message): (&dyn std::fmt::Display, String) = match outcome {
        Ok(raw) => {
            if method != MethodName::CallTool || !says_is_error(raw) {
                return;
            }
            (&attr::TOOL_ERROR, "the tool reported an error (isError)".to_owned())
        }
        Err(ClientError::Rpc(e)) => {
            let code = e.code().as_i64();
            span.record(attr::RPC_RESPONSE_STATUS_CODE, display(code));
            span.record(attr::ERROR_TYPE, display(code));
            span.record(attr::OTEL_STATUS_CODE, "error");
            span.record(attr::OTEL_STATUS_DESCRIPTION, e.message());
            return;
        }
        Err(ClientError::Timeout(_)) => (&"timeout", "the call timed out".to_owned()),
        Err(ClientError::Cancelled) => (&"cancelled", "the call was cancelled".to_owned()),
        Err(other) => (&"transport", other.to_string()),
    };
    span.record(attr::ERROR_TYPE, display(error_type));
    span.record(attr::OTEL_STATUS_CODE, "error");
    span.record(attr::OTEL_STATUS_DESCRIPTION, message.as_str());
}

/// Whether a `tools/call` result says `isError: true` (read only for a recorded span).
fn says_is_error(raw: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct IsError {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    serde_json::from_str::<IsError>(raw.get()).ok().and_then(|r| r.is_error) == Some(true)
}

/// Whether requests need their trace context injected: the `otel` feature is on and a
/// subscriber records `span`.
pub(crate) fn injects(span: &Span) -> bool {
    cfg!(feature = "otel") && !span.is_disabled()
}

/// Puts `span`'s W3C trace context into `params._meta` (feature `otel`; nothing
/// without it, or when the span has no valid OpenTelemetry context).
pub(crate) fn inject(span: &Span, params: &mut Value) {
    #[cfg(feature = "otel")]
    {
        let mut carrier = std::collections::HashMap::new();
        otel::inject(span, &mut carrier);
        if carrier.is_empty() {
            return;
        }
        if !params.is_object() {
            *params = Value::Object(Map::new());
        }
        let obj = params.as_object_mut().expect("made an object above");
        let meta = obj.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        let meta = meta.as_object_mut().expect("made an object above");
        for (key, value) in carrier {
            meta.insert(key, Value::String(value));
        }
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = (span, params, Map::<String, Value>::new());
    }
}

#[cfg(feature = "otel")]
mod otel {
    use std::collections::HashMap;
    use std::sync::LazyLock;

    use opentelemetry::propagation::{TextMapCompositePropagator, TextMapPropagator};
    use opentelemetry::trace::TraceContextExt;
    use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
    use tracing::Span;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// W3C trace context and baggage, whatever global propagator the application set:
    /// the `_meta` keys are fixed by SEP-414.
    static PROPAGATOR: LazyLock<TextMapCompositePropagator> = LazyLock::new(|| {
        TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ])
    });

    pub(super) fn inject(span: &Span, carrier: &mut HashMap<String, String>) {
        let cx = span.context();
        if cx.span().span_context().is_valid() {
            PROPAGATOR.inject_context(&cx, carrier);
        }
    }
}
