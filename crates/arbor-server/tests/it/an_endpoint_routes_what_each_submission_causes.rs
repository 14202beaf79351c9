//! Endpoints (`arbor_server::exchange`): a connection actor fed parsed bodies, whose output
//! goes to the route of the submission that caused it. Modern requests answered on their
//! route with their notifications first; a dropped receiver cancels under `OnClose::Cancel`
//! (task stopped, slot freed, listen closed with `handle_close`) and does not under
//! `Continue`; a legacy elicitation goes out on the asking request's route and its answer
//! comes back in another submission; unrelated messages go to the standalone route; and
//! what a `Parsed` body says about itself.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_bus::BusMessage;
use arbor_otp::Gauge;
use arbor_protocol::error::McpError;
use arbor_protocol::model::capabilities::{ServerCapabilities, ToolsCapability};
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::model::mrtr::InputResponse;
use arbor_protocol::model::subscriptions::SubscriptionFilter;
use arbor_protocol::model::tools::{CallToolRequestParams, CallToolResult};
use arbor_server::exchange::{BodyKind, Endpoint, OnClose, Outgoing, Parsed, Route, RouteReceiver};
use arbor_server::{
    Channel, ConnectOptions, Flow, InputRequired, ListKind, Reply, RequestContext, Server, ServerConfig, ServerHandler,
    ServerInfo, Subscribe, SubscriptionHandler,
};
use serde_json::{json, Value};

use crate::support::modern_meta;

/// Counts what happened to the tools' work.
#[derive(Clone, Default)]
struct Counters {
    /// `slow` calls that ran to the end.
    completed: Arc<AtomicUsize>,
    /// `slow` and `hang` calls whose work was dropped before the end.
    dropped: Arc<AtomicUsize>,
    /// Listen streams whose `handle_close` ran.
    closed: Arc<AtomicUsize>,
}

/// Increments `dropped` unless disarmed: the tool's future was dropped mid-way.
struct DropGuard(Option<Arc<AtomicUsize>>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        if let Some(dropped) = self.0.take() {
            dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

struct Probe(Counters);

fn text(s: impl Into<String>) -> Reply<CallToolResult> {
    CallToolResult::from_text(s).into()
}

impl ServerHandler for Probe {
    fn info(&self) -> ServerInfo {
        ServerInfo::new("probe", "1")
    }

    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities::default()
            .with_tools(ToolsCapability::default().with_list_changed(true))
            .with_logging(serde_json::Map::new())
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> Result<Reply<CallToolResult>, McpError> {
        let arg = |name: &str| params.arguments.as_ref().and_then(|a| a.get(name)).cloned().unwrap_or(Value::Null);
        match params.name.as_str() {
            "echo" => Ok(text(arg("message").as_str().unwrap_or_default())),
            "slow" => {
                let mut guard = DropGuard(Some(self.0.dropped.clone()));
                tokio::time::sleep(Duration::from_millis(arg("ms").as_u64().unwrap_or(100))).await;
                guard.0 = None;
                self.0.completed.fetch_add(1, Ordering::SeqCst);
                Ok(text("slept"))
            }
            "hang" => {
                let _guard = DropGuard(Some(self.0.dropped.clone()));
                std::future::pending::<()>().await;
                unreachable!()
            }
            "report" => {
                cx.progress(1.0, Some(2.0), None);
                cx.log(LoggingLevel::Warning, Some("probe"), json!("careful"));
                cx.progress(2.0, Some(2.0), None);
                Ok(text("reported"))
            }
            "panic" => panic!("the probe broke"),
            "ask" => match cx.input_responses().and_then(|r| r.get("name")) {
                Some(InputResponse::Elicit(answer)) => {
                    let name = answer.content.as_ref().and_then(|c| c.get("name")).cloned().unwrap_or(Value::Null);
                    Ok(text(format!("hello {}", name.as_str().unwrap_or("?"))))
                }
                _ => {
                    let params = serde_json::from_value(json!({
                        "message": "What is your name?",
                        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
                    }))
                    .unwrap();
                    Ok(Reply::InputRequired(InputRequired::new().elicit("name", params)))
                }
            },
            other => Err(McpError::invalid_params(format!("Unknown tool: {other}"))),
        }
    }
}

/// Accepts every listen and counts `handle_close`.
struct Closing(Arc<AtomicUsize>);

impl SubscriptionHandler for Closing {
    type State = ();

    async fn subscribe(&self, _: &SubscriptionFilter, _: &Channel) -> Subscribe<()> {
        Subscribe::Accept(())
    }

    async fn handle_message(&self, _: Arc<BusMessage>, _: &Channel, _: &mut ()) -> Flow {
        Flow::Stream
    }

    async fn handle_close(&self, _: &Channel, _: ()) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

struct Setup {
    server: Server,
    endpoint: Endpoint,
    standalone: RouteReceiver,
    gauge: Gauge,
    counters: Counters,
}

impl Setup {
    async fn new() -> Setup {
        Setup::with_config(ServerConfig::default()).await
    }

    async fn with_config(config: ServerConfig) -> Setup {
        let gauge = Gauge::new();
        let counters = Counters::default();
        let server = Server::with_config(Probe(counters.clone()), config.gauge(gauge.clone()))
            .subscription_handler(Closing(counters.closed.clone()));
        let (route, standalone) = Route::channel();
        let endpoint = server.open_endpoint(ConnectOptions::default(), route).await.unwrap();
        Setup { server, endpoint, standalone, gauge, counters }
    }

    /// Submits `body` on a fresh route and returns its receiver.
    fn submit(&self, body: Value, on_close: OnClose) -> RouteReceiver {
        let (route, receiver) = Route::channel();
        self.endpoint.submit(Parsed::parse(body.to_string().as_bytes()), route, on_close);
        receiver
    }

    /// `initialize` at `version` and `notifications/initialized`, as legacy HTTP would.
    async fn initialize(&self, version: &str, capabilities: Value) {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}});
        let mut route = self.submit(init, OnClose::Continue);
        let answer = json_of(next(&mut route).await);
        assert_eq!(answer["result"]["protocolVersion"], version, "{answer}");
        assert!(end(&mut route).await);
        assert_eq!(self.endpoint.negotiated_version().map(|v| v.as_str()), Some(version));
        let mut route =
            self.submit(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), OnClose::Continue);
        assert!(end(&mut route).await, "a notification causes nothing on its route");
    }

    async fn finish(self) {
        self.endpoint.close();
        self.endpoint.closed().await;
        assert!(!self.endpoint.is_open());
        self.server.shutdown().await;
        assert_eq!(self.gauge.alive_tasks(), 0, "tasks leaked");
        assert_eq!(self.gauge.alive_actors(), 0, "actors leaked");
    }
}

fn modern_call(id: Value, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"_meta": modern_meta(json!({})), "name": tool, "arguments": arguments}})
}

/// The next message on a route; panics after 30 s of the test's clock.
async fn next(route: &mut RouteReceiver) -> Outgoing {
    tokio::time::timeout(Duration::from_secs(30), route.recv())
        .await
        .expect("nothing within 30 s")
        .expect("route ended")
}

/// Whether the route ends (every sender dropped) with nothing more on it.
async fn end(route: &mut RouteReceiver) -> bool {
    tokio::time::timeout(Duration::from_secs(30), route.recv()).await.expect("the route did not end").is_none()
}

fn json_of(message: Outgoing) -> Value {
    serde_json::from_slice(message.bytes()).unwrap()
}

fn response(message: Outgoing) -> Value {
    assert!(matches!(message, Outgoing::Response(_)), "not a response: {message:?}");
    json_of(message)
}

#[tokio::test]
async fn a_modern_request_is_answered_on_its_route_which_then_ends() {
    let s = Setup::new().await;
    let mut route = s.submit(modern_call(json!(1), "echo", json!({"message": "hi"})), OnClose::Cancel);
    let answer = response(next(&mut route).await);
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["content"][0]["text"], "hi");
    assert_eq!(answer["result"]["resultType"], "complete");
    assert!(end(&mut route).await);
    // Refusals go to the route too: unknown method, then a request without terms.
    let mut route = s.submit(json!({"jsonrpc": "2.0", "id": 2, "method": "nope/nope"}), OnClose::Cancel);
    let refused = next(&mut route).await;
    assert_eq!(refused.error_code(), Some(-32601));
    assert!(end(&mut route).await);
    let mut route = s.submit(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}), OnClose::Cancel);
    assert_eq!(next(&mut route).await.error_code(), Some(-32602));
    s.finish().await;
}

#[tokio::test]
async fn progress_and_logs_precede_the_response_on_the_route() {
    let s = Setup::new().await;
    let mut call = modern_call(json!("r"), "report", json!({}));
    call["params"]["_meta"]["progressToken"] = json!("tok");
    call["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    let mut route = s.submit(call, OnClose::Cancel);
    let mut methods = Vec::new();
    loop {
        match next(&mut route).await {
            Outgoing::Notification(bytes) => {
                let note: Value = serde_json::from_slice(&bytes).unwrap();
                methods.push(note["method"].as_str().unwrap().to_owned());
            }
            Outgoing::Response(bytes) => {
                let answer: Value = serde_json::from_slice(&bytes).unwrap();
                assert_eq!(answer["result"]["content"][0]["text"], "reported");
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(methods, ["notifications/progress", "notifications/message", "notifications/progress"]);
    assert!(end(&mut route).await);
    // Nothing leaked to the standalone route.
    let mut standalone = s.standalone;
    assert!(standalone.try_recv().is_none());
    Setup { standalone, ..s }.finish().await;
}

#[tokio::test(start_paused = true)]
async fn dropping_the_receiver_cancels_a_request_and_frees_its_tenant_slot() {
    let s = Setup::with_config(ServerConfig::default().max_in_flight_per_tenant(1)).await;
    let mut route = s.submit(modern_call(json!(1), "hang", json!({})), OnClose::Cancel);
    // While it runs, the tenant's one slot is taken.
    let mut busy = s.submit(modern_call(json!(2), "echo", json!({"message": "x"})), OnClose::Cancel);
    assert_eq!(next(&mut busy).await.error_code(), Some(-32000));
    assert!(route.try_recv().is_none());
    assert_eq!(s.gauge.alive_tasks(), 1);
    drop(route);
    // The task stops (its work dropped), answers nothing, and gives its slot back.
    while s.gauge.alive_tasks() > 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(s.counters.dropped.load(Ordering::SeqCst), 1);
    let mut again = s.submit(modern_call(json!(3), "echo", json!({"message": "y"})), OnClose::Cancel);
    assert_eq!(response(next(&mut again).await)["result"]["content"][0]["text"], "y");
    s.finish().await;
}

#[tokio::test(start_paused = true)]
async fn dropping_a_listens_receiver_closes_the_stream_with_handle_close() {
    let s = Setup::new().await;
    let listen = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
        "params": {"_meta": modern_meta(json!({})), "notifications": {"toolsListChanged": true}}});
    let mut route = s.submit(listen, OnClose::Cancel);
    let ack = json_of(next(&mut route).await);
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    s.server.notify_list_changed(ListKind::Tools).unwrap();
    let change = json_of(next(&mut route).await);
    assert_eq!(change["method"], "notifications/tools/list_changed");
    assert_eq!(change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 9);
    assert_eq!(s.gauge.alive_tasks(), 1);
    drop(route);
    while s.gauge.alive_tasks() > 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(s.counters.closed.load(Ordering::SeqCst), 1);
    let closed = s.counters.closed.clone();
    s.finish().await;
    assert_eq!(closed.load(Ordering::SeqCst), 1, "handle_close runs once");
}

#[tokio::test(start_paused = true)]
async fn two_exchanges_may_use_the_same_id_at_once() {
    let s = Setup::new().await;
    let mut first = s.submit(modern_call(json!(1), "slow", json!({"ms": 100})), OnClose::Cancel);
    let mut second = s.submit(modern_call(json!(1), "slow", json!({"ms": 50})), OnClose::Cancel);
    for route in [&mut second, &mut first] {
        let answer = response(next(route).await);
        assert_eq!(answer["id"], 1);
        assert_eq!(answer["result"]["content"][0]["text"], "slept");
    }
    assert_eq!(s.counters.completed.load(Ordering::SeqCst), 2);
    s.finish().await;
}

#[tokio::test(start_paused = true)]
async fn under_continue_a_dropped_receiver_does_not_stop_the_request() {
    let s = Setup::new().await;
    s.initialize("2025-11-25", json!({})).await;
    let route = s.submit(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 200}}}),
        OnClose::Continue,
    );
    drop(route);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.counters.completed.load(Ordering::SeqCst), 1);
    assert_eq!(s.counters.dropped.load(Ordering::SeqCst), 0);
    // Ids are checked against the session's table as on stdio, and a cancel reaches them.
    let mut hang = s.submit(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "hang"}}),
        OnClose::Continue,
    );
    let mut duplicate = s.submit(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo"}}),
        OnClose::Continue,
    );
    assert_eq!(next(&mut duplicate).await.error_code(), Some(-32600));
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}});
    drop(s.submit(cancel, OnClose::Continue));
    assert!(end(&mut hang).await, "a cancelled request is never answered");
    assert_eq!(s.counters.dropped.load(Ordering::SeqCst), 1);
    s.finish().await;
}

#[tokio::test]
async fn a_legacy_elicitation_goes_out_on_the_asking_route_and_is_answered_by_another_submission() {
    let s = Setup::new().await;
    s.initialize("2025-06-18", json!({"elicitation": {}})).await;
    let mut call = s.submit(
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "ask"}}),
        OnClose::Continue,
    );
    let ask = match next(&mut call).await {
        Outgoing::Request(bytes) => serde_json::from_slice::<Value>(&bytes).unwrap(),
        other => panic!("expected the elicitation request, got {other:?}"),
    };
    assert_eq!(ask["method"], "elicitation/create");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    let parsed = Parsed::parse(answer.to_string().as_bytes());
    assert_eq!(parsed.kind(), BodyKind::Response);
    assert_eq!(parsed.expected_responses(), 0);
    let (route, mut answered) = Route::channel();
    s.endpoint.submit(parsed, route, OnClose::Continue);
    assert!(end(&mut answered).await, "the client's answer causes nothing on its own route");
    let done = response(next(&mut call).await);
    assert_eq!(done["id"], 5);
    assert_eq!(done["result"]["content"][0]["text"], "hello Ada");
    assert!(end(&mut call).await);
    s.finish().await;
}

#[tokio::test]
async fn unrelated_messages_go_to_the_standalone_route_which_can_be_replaced() {
    let mut s = Setup::new().await;
    s.initialize("2025-11-25", json!({})).await;
    // The session's list_changed stream is opening; a ping round trip lets it settle.
    let mut ping = s.submit(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}), OnClose::Continue);
    assert_eq!(response(next(&mut ping).await)["result"], json!({}));
    let mut heard = None;
    for _ in 0..100 {
        s.server.notify_list_changed(ListKind::Tools).unwrap();
        if let Ok(Some(message)) = tokio::time::timeout(Duration::from_millis(20), s.standalone.recv()).await {
            heard = Some(message);
            break;
        }
    }
    let change = heard.expect("list_changed on the standalone route");
    assert!(matches!(change, Outgoing::Notification(_)));
    assert_eq!(json_of(change)["method"], "notifications/tools/list_changed");
    let (replacement, mut new_standalone) = Route::channel();
    s.endpoint.set_standalone(replacement);
    // Drain what the old route got meanwhile; from now on the new one gets it.
    while s.standalone.try_recv().is_some() {}
    s.server.notify_list_changed(ListKind::Tools).unwrap();
    let change = json_of(next(&mut new_standalone).await);
    assert_eq!(change["method"], "notifications/tools/list_changed");
    s.finish().await;
}

#[tokio::test(start_paused = true)]
async fn panics_deadlines_and_batches_behave_as_on_stdio() {
    let s = Setup::with_config(ServerConfig::default().default_deadline(Duration::from_secs(1))).await;
    let mut panicked = s.submit(modern_call(json!(1), "panic", json!({})), OnClose::Cancel);
    assert_eq!(next(&mut panicked).await.error_code(), Some(-32603));
    let mut timed_out = s.submit(modern_call(json!(2), "hang", json!({})), OnClose::Cancel);
    let answer = response(next(&mut timed_out).await);
    assert_eq!(answer["error"]["data"]["reason"], "timeout", "{answer}");
    s.finish().await;

    let s = Setup::new().await;
    s.initialize("2025-03-26", json!({})).await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "b"}}},
    ]);
    let parsed = Parsed::parse(batch.to_string().as_bytes());
    assert_eq!(parsed.kind(), BodyKind::Batch);
    assert_eq!(parsed.expected_responses(), 1);
    let (route, mut receiver) = Route::channel();
    s.endpoint.submit(parsed, route, OnClose::Continue);
    let array = response(next(&mut receiver).await);
    let mut ids: Vec<i64> = array.as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, [1, 2]);
    assert!(end(&mut receiver).await);
    s.finish().await;
}

#[tokio::test]
async fn an_endpoint_is_a_connection_in_the_tree_until_closed() {
    let s = Setup::new().await;
    let tree = serde_json::to_string(&s.server.snapshot().await.unwrap()).unwrap();
    assert!(tree.contains("connection"), "{tree}");
    assert!(s.endpoint.is_open());
    s.endpoint.close();
    s.endpoint.closed().await;
    // A closed endpoint drops what is submitted: the route ends without an answer.
    let mut route = s.submit(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}), OnClose::Cancel);
    assert!(end(&mut route).await);
    s.finish().await;
}

#[test]
fn a_parsed_body_says_what_it_is() {
    let call = modern_call(json!(7), "echo", json!({"message": "hi"}));
    let parsed = Parsed::parse(call.to_string().as_bytes());
    assert_eq!(parsed.kind(), BodyKind::Request);
    assert_eq!(parsed.method(), Some("tools/call"));
    assert_eq!(parsed.request_id(), Some(&7.into()));
    assert_eq!(parsed.params_json().unwrap()["name"], "echo");
    assert_eq!(parsed.modern_version(), Some("2026-07-28"));
    // Header checks read the typed params, without building JSON.
    assert_eq!(parsed.typed_target(), Some(Some("echo")));
    assert_eq!(parsed.typed_arguments().map(|a| &a["message"]), Some(&json!("hi")));
    assert!(!parsed.is_initialize());
    assert!(parsed.error().is_none());
    assert_eq!(parsed.expected_responses(), 1);

    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let parsed = Parsed::parse(init.to_string().as_bytes());
    assert!(parsed.is_initialize());
    assert_eq!(parsed.modern_version(), None);

    let malformed = Parsed::parse(b"{not json");
    assert_eq!(malformed.kind(), BodyKind::Request);
    assert_eq!(malformed.error().map(|e| e.code().as_i64()), Some(-32700));
    assert_eq!(malformed.expected_responses(), 1);

    let unknown = Parsed::parse(br#"{"jsonrpc":"2.0","id":"u","method":"no/such","params":{"x":1}}"#);
    assert_eq!(unknown.error().map(|e| e.code().as_i64()), Some(-32601));
    assert_eq!(unknown.method(), Some("no/such"));
    assert_eq!(unknown.request_id(), Some(&"u".into()));
    assert_eq!(unknown.params_json(), Some(&json!({"x": 1})));

    let bad_params = Parsed::parse(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#);
    assert_eq!(bad_params.error().map(|e| e.code().as_i64()), Some(-32602));
    assert_eq!(bad_params.method(), Some("tools/call"));
    // A refused request has no typed params: its facts come from the body.
    assert_eq!(bad_params.typed_target(), None);
    assert_eq!(bad_params.params_json(), Some(&json!({"name": 5})));

    let read = Parsed::parse(
        br#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
    );
    assert_eq!(read.typed_target(), Some(Some("file:///a")));
    assert_eq!(read.modern_version(), Some("2026-07-28"));
    assert_eq!(read.typed_arguments(), None);
    let list = Parsed::parse(br#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
    assert_eq!(list.typed_target(), Some(None));
    assert_eq!(list.modern_version(), None);

    let note = Parsed::parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(note.kind(), BodyKind::Notification);
    assert_eq!(note.expected_responses(), 0);
    assert_eq!(note.method(), Some("notifications/initialized"));

    let only_notes = Parsed::parse(br#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#);
    assert_eq!(only_notes.kind(), BodyKind::Batch);
    assert_eq!(only_notes.expected_responses(), 0);
    assert_eq!(only_notes.method(), None);

    assert_eq!(Outgoing::Response(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec()).error_code(), None);
    let error = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch"}}"#;
    assert_eq!(Outgoing::Response(error.to_vec()).error_code(), Some(-32020));
    assert_eq!(Outgoing::Notification(error.to_vec()).error_code(), None);
}

#[test]
fn a_routers_tools_report_their_header_annotations() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        #[schemars(extend("x-mcp-header" = "Region"))]
        region: String,
        query: String,
    }
    let router = arbor_server::Router::new("r", "1").tool("sql", "", |_: Args| async { "" }).tool(
        "plain",
        "",
        |_: serde_json::Map<String, Value>| async { "" },
    );
    let server = Server::new(router);
    let headers = server.tool_param_headers("sql");
    assert_eq!(&*headers, [arbor_protocol::era::http::ParamHeader::new("Region", "region")]);
    // Looked up again, it is the same cached list.
    assert!(Arc::ptr_eq(&headers, &server.tool_param_headers("sql")));
    assert!(server.tool_param_headers("plain").is_empty());
    assert!(server.tool_param_headers("missing").is_empty());
}

/// 2026-07-28 requests scoped to their exchange are started from the submitting task,
/// without the actor (`connection::desk`), after the first: they are still in the tree
/// view while they run, bounded, cancelled by their route closing, and stopped unanswered
/// with the endpoint.
#[tokio::test]
async fn requests_started_without_the_actor_stay_supervised_and_in_the_tree() {
    let s = Setup::new().await;
    // The first scoped submission goes through the actor, which makes the desk.
    let mut first = s.submit(modern_call(json!(1), "echo", json!({"message": "a"})), OnClose::Cancel);
    assert_eq!(response(next(&mut first).await)["result"]["content"][0]["text"], "a");
    // From now on the desk serves them on this task: a handler ready at its first poll has
    // its answer on the route when `submit` returns.
    let mut quick = s.submit(modern_call(json!(20), "echo", json!({"message": "q"})), OnClose::Cancel);
    let answer = quick.try_recv().expect("answered before submit returned");
    assert_eq!(response(answer)["result"]["content"][0]["text"], "q");
    let mut hanging: Vec<RouteReceiver> =
        (2..5).map(|i| s.submit(modern_call(json!(i), "hang", json!({})), OnClose::Cancel)).collect();
    let mut cancelled = s.submit(modern_call(json!(9), "hang", json!({})), OnClose::Cancel);
    // Each is in the view while it runs (the view reads the desk's list).
    let view = s.server.observe().await.unwrap();
    let tree = serde_json::to_string(&view.root).unwrap();
    assert_eq!(tree.matches("scoped to its exchange").count(), 4, "{tree}");
    assert!(tree.contains("2026-07-28 endpoint, requester many, 4 in flight"), "{tree}");
    // Closing one route cancels that request only: its work is dropped, it is not
    // answered, and the others still run.
    assert!(cancelled.try_recv().is_none());
    drop(cancelled);
    for _ in 0..1000 {
        if s.counters.dropped.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(s.counters.dropped.load(Ordering::SeqCst), 1, "the cancelled request's work was dropped");
    let view = s.server.observe().await.unwrap();
    let tree = serde_json::to_string(&view.root).unwrap();
    assert_eq!(tree.matches("scoped to its exchange").count(), 3, "{tree}");
    // A method the revision lacks (ping, gone in 2026-07-28) is refused at once, no task.
    let mut ping = s.submit(
        json!({"jsonrpc": "2.0", "id": 10, "method": "ping",
        "params": {"_meta": modern_meta(json!({}))}}),
        OnClose::Cancel,
    );
    let ping = response(next(&mut ping).await);
    assert_eq!(ping["error"]["code"], -32601, "{ping}");
    // The endpoint's close stops the rest unanswered.
    s.endpoint.close();
    s.endpoint.closed().await;
    for route in &mut hanging {
        assert!(end(route).await, "a request stopped with its endpoint is not answered");
    }
    assert_eq!(s.counters.dropped.load(Ordering::SeqCst), 4);
    // And a submission to the closed endpoint is dropped, as through the actor.
    let mut late = s.submit(modern_call(json!(11), "echo", json!({"message": "b"})), OnClose::Cancel);
    assert!(end(&mut late).await);
    s.finish().await;
}

/// A legacy session's requests are started by the endpoint's desk too, from its second
/// ordinary request on (the first, which the actor serves, makes the desk), sharing the
/// actor's id table: a request under an id the other one runs is refused,
/// `notifications/cancelled` (handled by the actor) stops a running one, the id is free
/// again after it, and the view lists the request under its id.
#[tokio::test]
async fn a_sessions_requests_started_without_the_actor_share_its_id_table() {
    let s = Setup::new().await;
    s.initialize("2025-11-25", json!({})).await;
    let legacy_call = |id: i64, tool: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": {"message": "m"}}})
    };
    let mut hanging = s.submit(legacy_call(7, "hang"), OnClose::Continue);
    let mut twin = s.submit(legacy_call(7, "echo"), OnClose::Continue);
    let twin = response(next(&mut twin).await);
    assert_eq!(twin["error"]["code"], -32600, "{twin}");
    assert!(twin["error"]["message"].as_str().unwrap().contains("already in flight"), "{twin}");
    let tree = serde_json::to_string(&s.server.observe().await.unwrap().root).unwrap();
    assert!(tree.contains("\"id 7\""), "{tree}");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}});
    let mut cancelled = s.submit(cancel, OnClose::Continue);
    assert!(end(&mut cancelled).await);
    assert!(end(&mut hanging).await, "a cancelled request is not answered");
    assert_eq!(s.counters.dropped.load(Ordering::SeqCst), 1, "its work was dropped");
    // Served by the desk on this task, its handler ready at its first poll: the answer is
    // on the route when `submit` returns, with no other task run.
    let mut again = s.submit(legacy_call(7, "echo"), OnClose::Continue);
    let answer = again.try_recv().expect("answered before submit returned");
    assert_eq!(response(answer)["result"]["content"][0]["text"], "m");
    s.finish().await;
}
