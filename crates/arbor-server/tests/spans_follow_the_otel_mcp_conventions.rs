//! The runtime's spans, captured by a `tracing-subscriber` layer of this test's own: names
//! (`otel.name`), kinds and attributes by the OpenTelemetry MCP semantic conventions,
//! the server-side error classification (a caller's mistake is no error, a panic is),
//! `mcp.session.id` on legacy requests only, tool payloads only when opted in, and the
//! spans of streams, tasks and server→client requests.
//!
//! The capture is the thread's default subscriber (`set_default`) and every test runs on
//! tokio's current-thread runtime, so the server's tasks run on the test's thread and no
//! other test's spans are seen.
//!
//! A test binary of its own (not in `tests/it`): `tracing` caches each callsite's interest
//! globally, so a callsite first hit by another test's thread while no capture existed
//! could be cached as uninteresting and this test's spans would go missing; here every
//! test installs its capture before it starts a server.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::{
    ConnectOptions, Connection, RequestContext, Router, Server, ServerConfig, TaskSupport, ToolError, Transport,
};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

#[allow(dead_code)] // The shared helpers of `tests/it`; this binary uses a few.
#[path = "it/support.rs"]
mod support;

#[allow(dead_code)] // The fault kit's server side, which `support`'s `fault` tool acts out.
#[path = "it/kit.rs"]
mod kit;

use support::{modern_meta, ScriptedPeer};

/// One span as the layer saw it: its fields as strings, and its parent's index.
#[derive(Clone, Debug)]
struct Captured {
    id: u64,
    closed: bool,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
}

impl Captured {
    fn get(&self, key: &str) -> Option<&str> {
        self.fields.get(key).map(String::as_str)
    }
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Captured>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().target() != arbor_server::telemetry::TARGET {
            return;
        }
        let parent = ctx.span(id).and_then(|s| s.parent()).map(|p| p.id().into_u64());
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.0.lock().push(Captured { id: id.into_u64(), closed: false, parent, fields });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut spans = self.0.lock();
        if let Some(span) = spans.iter_mut().rev().find(|s| s.id == id.into_u64() && !s.closed) {
            values.record(&mut Fields(&mut span.fields));
        }
    }

    fn on_close(&self, id: Id, _: Context<'_, S>) {
        let mut spans = self.0.lock();
        if let Some(span) = spans.iter_mut().rev().find(|s| s.id == id.into_u64() && !s.closed) {
            span.closed = true;
        }
    }
}

impl Capture {
    /// The spans exported under `name` (`otel.name`).
    fn named(&self, name: &str) -> Vec<Captured> {
        self.0.lock().iter().filter(|s| s.get("otel.name") == Some(name)).cloned().collect()
    }

    /// The one span named `name`.
    fn one(&self, name: &str) -> Captured {
        let found = self.named(name);
        assert_eq!(found.len(), 1, "spans named {name:?}: {found:#?}\nall: {:#?}", self.0.lock());
        found.into_iter().next().unwrap()
    }

    /// The request span of JSON-RPC id `id`.
    fn request(&self, id: &str) -> Captured {
        let spans = self.0.lock();
        let found: Vec<_> = spans
            .iter()
            .filter(|s| s.get("jsonrpc.request.id") == Some(id) && s.get("otel.kind") == Some("server"))
            .collect();
        assert_eq!(found.len(), 1, "request spans of id {id}: {found:#?}");
        found[0].clone()
    }

    fn by_id(&self, id: u64) -> Captured {
        self.0.lock().iter().rev().find(|s| s.id == id).cloned().expect("a captured parent")
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    message: Option<String>,
}

fn router() -> Router {
    Router::new("spans", "1")
        .tool("echo", "echoes", |args: Echo| async move { args.message.unwrap_or_default() })
        .tool("fail", "reports a tool error", |_: NoArgs| async { Err::<String, _>(ToolError::failed("no luck")) })
        .tool("panic", "panics", |_: NoArgs| async {
            panic!("the tool broke");
            #[allow(unreachable_code)]
            ""
        })
        .tool("hang", "never answers", |_: NoArgs| async {
            std::future::pending::<()>().await;
            ""
        })
        .tool_route(
            ToolRoute::new("slow_task", |_: NoArgs| async { "done as a task" })
                .description("a task")
                .task_support(TaskSupport::Optional),
        )
        .resource("mem://greeting", "greeting", "A greeting", "text/plain", || async { "hello" })
}

struct Setup {
    server: Server,
    connection: Connection,
    peer: ScriptedPeer,
}

async fn setup(config: ServerConfig, options: ConnectOptions) -> Setup {
    let server = Server::with_config(router(), config);
    let (server_side, client_side) = Transport::memory_pair();
    let connection = server.connect(server_side, options).await.unwrap();
    Setup { server, connection, peer: ScriptedPeer::new(client_side) }
}

impl Setup {
    async fn finish(self) {
        self.peer.close().await;
        self.connection.closed().await;
        self.server.shutdown().await;
    }
}

fn capture() -> (Capture, tracing::subscriber::DefaultGuard) {
    let capture = Capture::default();
    let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    (capture, guard)
}

#[tokio::test]
async fn a_tool_call_is_a_server_span_named_and_attributed_by_the_conventions() {
    let (spans, _guard) = capture();
    let mut s = setup(ServerConfig::default(), ConnectOptions::tenant("acme").session_id("session-1".into())).await;
    s.peer.initialize("2025-11-25", json!({})).await;
    let answer = s.peer.call(7, "tools/call", json!({"name": "echo", "arguments": {"message": "hi"}})).await;
    assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
    let modern =
        s.peer.call(8, "tools/call", json!({"_meta": modern_meta(json!({})), "name": "echo", "arguments": {}})).await;
    assert!(modern.get("result").is_some(), "{modern}");
    s.finish().await;

    let connection = spans.one("mcp.session");
    assert_eq!(connection.get("mcp.session.id"), Some("session-1"));
    assert_eq!(connection.get("mcp.protocol.version"), Some("2025-11-25"), "recorded at initialize");
    assert_eq!(connection.get("network.transport"), Some("pipe"));
    assert_eq!(connection.get("arbor.tenant"), Some("acme"));
    assert!(connection.closed, "the connection span ends with the connection");

    let call = spans.request("7");
    assert_eq!(call.get("otel.name"), Some("tools/call echo"));
    assert_eq!(call.get("otel.kind"), Some("server"));
    assert_eq!(call.get("mcp.method.name"), Some("tools/call"));
    assert_eq!(call.get("gen_ai.tool.name"), Some("echo"));
    assert_eq!(call.get("gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(call.get("mcp.protocol.version"), Some("2025-11-25"));
    assert_eq!(call.get("mcp.session.id"), Some("session-1"), "a legacy request names its session");
    assert_eq!(call.get("network.transport"), Some("pipe"));
    assert_eq!(call.get("arbor.tenant"), Some("acme"));
    assert!(call.get("arbor.supervisor.path").unwrap().starts_with("root/tenant:acme/connections/"));
    assert!(call.get("arbor.supervisor.path").unwrap().ends_with("/requests"));
    assert_eq!(call.get("arbor.principal"), None, "no principal without authentication");
    for absent in ["error.type", "otel.status_code", "rpc.response.status_code", "gen_ai.prompt.name"] {
        assert_eq!(call.get(absent), None, "{absent} on a successful call");
    }
    for payload in ["gen_ai.tool.call.arguments", "gen_ai.tool.call.result"] {
        assert_eq!(call.get(payload), None, "{payload} is opt-in");
    }
    assert_eq!(spans.by_id(call.parent.expect("a parent")).get("otel.name"), Some("mcp.session"));
    assert!(call.closed);

    let modern = spans.request("8");
    assert_eq!(modern.get("mcp.protocol.version"), Some("2026-07-28"));
    assert_eq!(modern.get("mcp.session.id"), None, "never on a 2026-07-28 request");
}

#[tokio::test]
async fn only_the_servers_own_failures_are_errors() {
    let (spans, _guard) = capture();
    let mut s = setup(ServerConfig::default(), ConnectOptions::default()).await;
    let meta = modern_meta(json!({}));
    let unknown = s.peer.call(1, "tools/call", json!({"_meta": meta, "name": "nope"})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let panicked = s.peer.call(2, "tools/call", json!({"_meta": meta, "name": "panic"})).await;
    assert_eq!(panicked["error"]["code"], -32603, "{panicked}");
    let failed = s.peer.call(3, "tools/call", json!({"_meta": meta, "name": "fail"})).await;
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    let missing = s.peer.call(4, "resources/read", json!({"_meta": meta, "uri": "mem://nothing"})).await;
    assert!(missing.get("error").is_some(), "{missing}");
    let read = s.peer.call(5, "resources/read", json!({"_meta": meta, "uri": "mem://greeting"})).await;
    assert!(read.get("result").is_some(), "{read}");
    s.finish().await;

    let unknown = spans.request("1");
    assert_eq!(unknown.get("otel.name"), Some("tools/call nope"));
    assert_eq!(unknown.get("rpc.response.status_code"), Some("-32602"));
    assert_eq!(unknown.get("error.type"), None, "an unknown tool is the caller's mistake");
    assert_eq!(unknown.get("otel.status_code"), None);

    let panicked = spans.request("2");
    assert_eq!(panicked.get("rpc.response.status_code"), Some("-32603"));
    assert_eq!(panicked.get("error.type"), Some("-32603"), "a panic is the server's failure");
    assert_eq!(panicked.get("otel.status_code"), Some("error"));
    assert!(panicked.get("otel.status_description").is_some_and(|d| !d.contains("the tool broke")));

    let failed = spans.request("3");
    assert_eq!(failed.get("error.type"), Some("tool_error"));
    assert_eq!(failed.get("otel.status_code"), Some("error"));
    assert_eq!(failed.get("rpc.response.status_code"), None, "a tool error is a result");

    let missing = spans.request("4");
    assert_eq!(missing.get("otel.name"), Some("resources/read"), "a URI is no part of the name");
    assert_eq!(missing.get("mcp.resource.uri"), Some("mem://nothing"));
    assert_eq!(missing.get("error.type"), None, "resource not found is the caller's mistake");
    let read = spans.request("5");
    assert_eq!(read.get("mcp.resource.uri"), Some("mem://greeting"));
    assert_eq!(read.get("error.type"), None);
}

#[tokio::test]
async fn a_refused_request_has_its_span_and_an_overload_is_an_error() {
    let (spans, _guard) = capture();
    // The hung request is stopped when the input ends, after the (shortened) drain.
    let config = ServerConfig::default().max_in_flight_per_connection(1).drain_timeout(Duration::from_millis(1));
    let mut s = setup(config, ConnectOptions::default()).await;
    let meta = modern_meta(json!({}));
    s.peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": meta, "name": "hang"}}));
    let refused = s.peer.call(2, "tools/call", json!({"_meta": meta, "name": "echo"})).await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    s.finish().await;
    let refused = spans.request("2");
    assert_eq!(refused.get("otel.name"), Some("tools/call echo"));
    assert_eq!(refused.get("error.type"), Some("-32000"), "an overload is the server's failure");
    assert_eq!(refused.get("otel.status_code"), Some("error"));
    let hung = spans.request("1");
    assert!(hung.closed, "the hung request's span ends when its connection stops it");
}

/// The report records a deadline or a panic on the span after the work, which owned it,
/// was dropped: the span is still open then, and ends with the report.
#[tokio::test(start_paused = true)]
async fn a_timed_out_request_records_its_deadline_on_its_span_and_a_cancelled_one_just_ends() {
    let (spans, _guard) = capture();
    let config = ServerConfig::default().default_deadline(Duration::from_secs(5));
    let mut s = setup(config, ConnectOptions::default()).await;
    let meta = modern_meta(json!({}));
    // The paused clock runs to the deadline once everything waits.
    let timed_out = s.peer.call(1, "tools/call", json!({"_meta": meta, "name": "hang"})).await;
    assert_eq!(timed_out["error"]["code"], -32603, "{timed_out}");
    s.peer.initialize("2025-11-25", json!({})).await;
    s.peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hang"}}));
    s.peer.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}));
    let after = s.peer.call(3, "tools/call", json!({"name": "echo", "arguments": {}})).await;
    assert!(after.get("result").is_some(), "{after}");
    let cancelled_closed = spans.request("2").closed;
    s.finish().await;

    let timed_out = spans.request("1");
    assert_eq!(timed_out.get("rpc.response.status_code"), Some("-32603"));
    assert_eq!(timed_out.get("error.type"), Some("-32603"), "a deadline passed is the server's failure");
    assert_eq!(timed_out.get("otel.status_code"), Some("error"));
    assert!(timed_out.closed, "the span ends once the report recorded on it");
    let cancelled = spans.request("2");
    assert!(cancelled_closed, "a cancelled request's span ends with it, not with its connection");
    for absent in ["error.type", "otel.status_code", "rpc.response.status_code"] {
        assert_eq!(cancelled.get(absent), None, "{absent} on a cancelled request");
    }
}

/// With the request spans filtered out and the connection's kept (a subscriber at INFO),
/// a failed request records nothing on the span current around it, its connection's.
#[tokio::test(start_paused = true)]
async fn a_request_span_filtered_out_leaves_its_connections_span_alone() {
    use tracing_subscriber::filter::Targets;
    let capture = Capture::default();
    let filter = Targets::new().with_target("arbor::mcp", tracing::Level::INFO);
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone().with_filter(filter)));
    let config = ServerConfig::default().default_deadline(Duration::from_secs(5));
    let mut s = setup(config, ConnectOptions::default().session_id("session-1".into())).await;
    s.peer.initialize("2025-11-25", json!({})).await;
    let panicked = s.peer.call(1, "tools/call", json!({"name": "panic"})).await;
    assert_eq!(panicked["error"]["code"], -32603, "{panicked}");
    let timed_out = s.peer.call(2, "tools/call", json!({"name": "hang"})).await;
    assert_eq!(timed_out["error"]["code"], -32603, "{timed_out}");
    s.finish().await;
    let connection = capture.one("mcp.session");
    assert!(capture.0.lock().iter().all(|span| span.get("otel.kind") != Some("server") || span.id == connection.id));
    for absent in ["error.type", "otel.status_code", "rpc.response.status_code"] {
        assert_eq!(connection.get(absent), None, "{absent} on the connection's span");
    }
    assert!(connection.closed);
}

#[tokio::test]
async fn tool_payloads_are_recorded_only_when_opted_in() {
    let (spans, _guard) = capture();
    let mut s = setup(ServerConfig::default().trace_tool_payloads(true), ConnectOptions::default()).await;
    let params = json!({"_meta": modern_meta(json!({})), "name": "echo", "arguments": {"message": "secret sauce"}});
    let answer = s.peer.call(1, "tools/call", params).await;
    assert_eq!(answer["result"]["content"][0]["text"], "secret sauce");
    s.finish().await;
    let call = spans.request("1");
    let arguments: Value = serde_json::from_str(call.get("gen_ai.tool.call.arguments").unwrap()).unwrap();
    assert_eq!(arguments, json!({"message": "secret sauce"}));
    let result: Value = serde_json::from_str(call.get("gen_ai.tool.call.result").unwrap()).unwrap();
    assert_eq!(result["content"][0]["text"], "secret sauce");
}

#[tokio::test]
async fn streams_and_tasks_have_spans_of_their_own() {
    let (spans, _guard) = capture();
    let mut s = setup(ServerConfig::default(), ConnectOptions::default()).await;
    let meta = modern_meta(json!({}));
    s.peer.send(json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
                       "params": {"_meta": meta, "notifications": {"toolsListChanged": true}}}));
    let ack = s.peer.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    s.peer.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "listen-1"}}));

    let ext = "io.modelcontextprotocol/tasks";
    let with_ext = modern_meta(json!({"extensions": {ext: {}}}));
    let created = s.peer.call(2, "tools/call", json!({"_meta": with_ext, "name": "slow_task"})).await;
    let task_id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {created}")).to_owned();
    let mut done = false;
    for round in 3..100 {
        let got = s.peer.call(round, "tasks/get", json!({"_meta": with_ext, "taskId": task_id})).await;
        if got["result"]["status"] == "completed" {
            done = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(done, "the task completed");
    s.finish().await;

    let listen = spans.one("subscriptions/listen");
    assert_eq!(listen.get("mcp.method.name"), Some("subscriptions/listen"));
    assert_eq!(listen.get("jsonrpc.request.id"), Some("listen-1"));
    assert_eq!(listen.get("otel.kind"), Some("server"));
    assert!(listen.get("arbor.supervisor.path").unwrap().ends_with("/subscriptions"));
    assert!(listen.closed, "the stream span ends with the stream");

    let call = spans.request("2");
    assert_eq!(call.get("otel.name"), Some("tools/call slow_task"));
    let tasks: Vec<_> =
        spans.named("tools/call slow_task").into_iter().filter(|s| s.get("arbor.task.id").is_some()).collect();
    assert_eq!(tasks.len(), 1, "{tasks:#?}");
    let task = &tasks[0];
    assert_eq!(task.get("arbor.task.id"), Some(task_id.as_str()));
    assert_eq!(task.get("gen_ai.tool.name"), Some("slow_task"));
    assert_eq!(task.parent, Some(call.id), "the run is a child of the call that created it");
    assert_eq!(task.get("error.type"), None);
}

#[tokio::test]
async fn a_legacy_server_to_client_request_is_a_client_span_of_the_request_that_asked() {
    let (spans, _guard) = capture();
    let router = Router::new("ask", "1").tool("ask", "asks", |_: NoArgs, cx: RequestContext| async move {
        match cx.input_responses().and_then(|r| r.get("name")) {
            Some(_) => arbor_server::Reply::Complete(arbor_protocol::model::tools::CallToolResult::from_text("thanks")),
            None => {
                let params = serde_json::from_value(json!({"message": "Name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}))
                .unwrap();
                arbor_server::Reply::InputRequired(arbor_server::InputRequired::new().elicit("name", params))
            }
        }
    });
    let server = Server::new(router);
    let (server_side, client_side) = Transport::memory_pair();
    let connection = server.connect(server_side, ConnectOptions::default()).await.unwrap();
    let mut peer = ScriptedPeer::new(client_side);
    peer.initialize("2025-11-25", json!({"elicitation": {}})).await;
    peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}}));
    let asked = peer.recv().await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    peer.send(json!({"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -32601, "message": "no"}}));
    let answer = peer.recv_response().await;
    assert!(answer.get("error").is_some() || answer.get("result").is_some(), "{answer}");
    peer.close().await;
    connection.closed().await;
    server.shutdown().await;

    let ask = spans.one("elicitation/create");
    assert_eq!(ask.get("otel.kind"), Some("client"));
    assert_eq!(ask.get("mcp.method.name"), Some("elicitation/create"));
    assert_eq!(ask.get("error.type"), Some("-32601"), "a client span counts every error code");
    assert_eq!(ask.parent, Some(spans.request("1").id));
}

#[cfg(not(feature = "otel"))]
#[tokio::test]
async fn without_the_otel_feature_the_callers_traceparent_is_recorded_raw() {
    let (spans, _guard) = capture();
    let mut s = setup(ServerConfig::default(), ConnectOptions::default()).await;
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut meta = modern_meta(json!({}));
    meta["traceparent"] = json!(traceparent);
    s.peer.call(1, "tools/list", json!({"_meta": meta})).await;
    s.finish().await;
    let list = spans.request("1");
    assert_eq!(list.get("otel.name"), Some("tools/list"));
    assert_eq!(list.get("arbor.traceparent"), Some(traceparent));
}
