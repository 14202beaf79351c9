//! Trace context across the wire, with real parts: our client calls our server over
//! Streamable HTTP on loopback, in both eras, inside an application span; the spans go
//! through `tracing-opentelemetry` into opentelemetry_sdk's in-memory exporter. The
//! server's `tools/call` span must be in the client's trace, a child of the client's
//! `tools/call` span (the `traceparent` the client injected into `params._meta`), and
//! the client's span a child of the application's.
//!
//! Its own test binary (`required-features = ["otel", "client"]`; `scripts/test` runs it
//! as `cargo test -p arbor-runtime --features otel,client --test otel`): the exporter is
//! behind the process's global subscriber.

use std::time::Duration;

use arbor::client::{Client, ClientOptions, EraCache, EraMode, HttpTarget};
use arbor::http::{HttpConfig, HttpServer};
use arbor::server::router::NoArgs;
use arbor::server::{Router, Server};
use opentelemetry::trace::{SpanKind, TraceId, TracerProvider as _};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| &kv.value)
}

/// The exported span named `name` of `kind` in trace `trace`, polled for a bounded while
/// (the server's span ends when its answer is written, the client's when it is read).
async fn exported(
    exporter: &InMemorySpanExporter,
    provider: &SdkTracerProvider,
    trace: TraceId,
    name: &str,
    kind: SpanKind,
) -> SpanData {
    for _ in 0..200 {
        let _ = provider.force_flush();
        let spans = exporter.get_finished_spans().unwrap();
        let found: Vec<_> = spans
            .into_iter()
            .filter(|s| s.name == name && s.span_kind == kind && s.span_context.trace_id() == trace)
            .collect();
        if let Some(span) = found.into_iter().next() {
            return span;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let names: Vec<_> = exporter
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .map(|s| (s.name, s.span_kind, s.span_context.trace_id(), s.parent_span_id))
        .collect();
    panic!("no {kind:?} span {name:?} in trace {trace}: {names:#?}");
}

#[tokio::test]
async fn the_servers_span_continues_the_clients_trace_in_both_eras() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("otel-test"));
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).unwrap();

    let router = Router::new("otel", "1").tool("hello", "says hello", |_: NoArgs| async { "hi" });
    let config = HttpConfig { bind: "127.0.0.1:0".parse().unwrap(), ..Default::default() };
    let bound = HttpServer::with_config(Server::new(router), config).bind().await.unwrap();
    let url = format!("http://{}/mcp", bound.local_addr());
    let shutdown = bound.shutdown_handle();
    let served = tokio::spawn(bound.run());

    for (mode, version) in [(EraMode::ForceModern, "2026-07-28"), (EraMode::ForceLegacy, "2025-11-25")] {
        let options = ClientOptions::default().era(mode).era_cache(EraCache::new());
        let client = Client::connect_http(HttpTarget::new(url.clone()), options).await.unwrap();
        let app = tracing::info_span!("application work");
        let trace = {
            use opentelemetry::trace::TraceContextExt;
            use tracing_opentelemetry::OpenTelemetrySpanExt;
            app.context().span().span_context().trace_id()
        };
        let answer = tracing::Instrument::instrument(client.call_tool("hello", serde_json::json!({})), app.clone());
        let answer = answer.await.unwrap();
        assert_eq!(answer.content.len(), 1);
        drop(app);
        client.close().await;

        let app = exported(&exporter, &provider, trace, "application work", SpanKind::Internal).await;
        let client_span = exported(&exporter, &provider, trace, "tools/call hello", SpanKind::Client).await;
        let server_span = exported(&exporter, &provider, trace, "tools/call hello", SpanKind::Server).await;
        assert_eq!(
            client_span.parent_span_id,
            app.span_context.span_id(),
            "{mode:?}: the client's span is the app's child"
        );
        assert_eq!(
            server_span.parent_span_id,
            client_span.span_context.span_id(),
            "{mode:?}: the server's span is the client's child, through _meta's traceparent"
        );
        for span in [&client_span, &server_span] {
            assert_eq!(attribute(span, "mcp.method.name"), Some(&Value::from("tools/call")));
            assert_eq!(attribute(span, "gen_ai.tool.name"), Some(&Value::from("hello")));
            assert_eq!(attribute(span, "mcp.protocol.version"), Some(&Value::from(version)), "{mode:?}");
            assert_eq!(attribute(span, "network.transport"), Some(&Value::from("tcp")));
            assert_eq!(attribute(span, "error.type"), None);
        }
        let session = attribute(&server_span, "mcp.session.id");
        match mode {
            EraMode::ForceModern => assert_eq!(session, None, "never on 2026-07-28"),
            _ => assert!(session.is_some(), "a legacy request names its session"),
        }
    }
    shutdown.shutdown();
    let _ = served.await;
    let _ = provider.shutdown();
}
