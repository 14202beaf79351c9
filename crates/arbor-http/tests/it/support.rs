//! The fixture every test serves over a real loopback socket, and a small client: POST
//! helpers for both eras and an SSE event reader with a bound on every wait.

use std::sync::Arc;
use std::time::Duration;

use arbor_http::{HttpConfig, HttpServer, ShutdownHandle};
use arbor_protocol::model::content::ContentBlock;
use arbor_protocol::model::mrtr::InputResponse;
use arbor_protocol::model::subscriptions::SubscriptionFilter;
use arbor_protocol::model::tools::CallToolResult;
use arbor_server::bus::BusMessage;
use arbor_server::router::NoArgs;
use arbor_server::{
    Channel, Flow, InputRequired, Reply, RequestContext, Router, RouterHandle, Server, Subscribe, SubscriptionHandler,
};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};
use tests::peer::http::EventBuffer;
use tokio::sync::mpsc;

/// Every wait in a test is bounded by this, so a broken server fails instead of hanging.
pub const PATIENCE: Duration = Duration::from_secs(10);

pub const MODERN: &str = "2026-07-28";

#[derive(Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    pub message: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RegionArgs {
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: Option<String>,
}

/// What the server side lets a test observe.
pub struct Probe {
    /// A `slow` call started.
    pub started: mpsc::UnboundedReceiver<()>,
    /// A `slow` call saw its cancellation.
    pub cancelled: mpsc::UnboundedReceiver<()>,
    /// A listen stream's `handle_close` ran.
    pub closed: mpsc::UnboundedReceiver<()>,
}

/// Signals when dropped.
struct Dropped(mpsc::UnboundedSender<()>);

impl Drop for Dropped {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

struct Closes(mpsc::UnboundedSender<()>);

impl SubscriptionHandler for Closes {
    type State = ();
    async fn subscribe(&self, _: &SubscriptionFilter, _: &Channel) -> Subscribe<()> {
        Subscribe::Accept(())
    }
    async fn handle_message(&self, _: Arc<BusMessage>, _: &Channel, _: &mut ()) -> Flow {
        Flow::Stream
    }
    async fn handle_close(&self, _: &Channel, _: ()) {
        let _ = self.0.send(());
    }
}

/// The fixture: `echo`, `slow` (waits for its cancellation), `progress` (two progress
/// notifications, then a result), `ask` (asks the user's name), `region` (an
/// `x-mcp-header` argument), `nap` (answers after 300 ms), `fault` (acts out a fault of
/// the kit, `crate::kit`).
pub fn fixture() -> (Server, RouterHandle, Probe) {
    fixture_with(arbor_server::ServerConfig::default())
}

/// [`fixture`] with a server configuration of its own (a tenant policy, say).
pub fn fixture_with(server_config: arbor_server::ServerConfig) -> (Server, RouterHandle, Probe) {
    let (started_tx, started) = mpsc::unbounded_channel();
    let (cancelled_tx, cancelled) = mpsc::unbounded_channel();
    let (closed_tx, closed) = mpsc::unbounded_channel();
    let router = Router::new("http-fixture", "1.0.0")
        .tool("echo", "Says it back", |args: EchoArgs| async move { args.message })
        .tool("slow", "Runs until cancelled", move |_: NoArgs, cx: RequestContext| {
            let (started, cancelled) = (started_tx.clone(), cancelled_tx.clone());
            async move {
                let _ = started.send(());
                // Stopped from outside, the future is dropped: the guard tells.
                let guard = Dropped(cancelled.clone());
                tokio::select! {
                    _ = cx.cancelled() => {}
                    _ = tokio::time::sleep(Duration::from_secs(60)) => std::mem::forget(guard),
                }
                "done"
            }
        })
        .tool("progress", "Reports progress", |_: NoArgs, cx: RequestContext| async move {
            cx.progress(1.0, Some(2.0), None);
            cx.progress(2.0, Some(2.0), None);
            tokio::time::sleep(Duration::from_millis(20)).await;
            "finished"
        })
        .tool("nap", "Answers after a while", |_: NoArgs| async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            "rested"
        })
        .tool("fault", "Acts out the fault kit's fault", crate::kit::act)
        .tool("region", "Has a header argument", |args: RegionArgs| async move {
            args.region.unwrap_or_else(|| "none".into())
        })
        .tool("ask", "Asks a name", |_: NoArgs, cx: RequestContext| async move {
            let answer = cx.input_responses().and_then(|r| r.get("name")).cloned();
            match answer {
                Some(InputResponse::Elicit(reply)) => {
                    let name = reply.content.as_ref().and_then(|c| c.get("name")).and_then(|n| n.as_str());
                    let text = format!("hello {}", name.unwrap_or("?"));
                    let content = vec![ContentBlock::text(text)];
                    Reply::Complete(CallToolResult::new(content))
                }
                _ => {
                    let params = serde_json::from_value(json!({
                        "message": "What is your name?",
                        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
                    }))
                    .unwrap();
                    Reply::InputRequired(InputRequired::new().elicit("name", params))
                }
            }
        });
    let handle = router.handle();
    let server = Server::with_config(router, server_config).subscription_handler(Closes(closed_tx));
    (server, handle, Probe { started, cancelled, closed })
}

/// A served fixture on 127.0.0.1:0.
pub struct Served {
    pub url: String,
    pub base: String,
    pub port: u16,
    pub http: HttpServer,
    pub client: reqwest::Client,
    pub handle: RouterHandle,
    pub probe: Probe,
    stop: ShutdownHandle,
    run: tokio::task::JoinHandle<std::io::Result<()>>,
}

pub async fn serve(config: HttpConfig) -> Served {
    serve_with(arbor_server::ServerConfig::default(), config).await
}

/// [`serve`] with a server configuration of its own.
pub async fn serve_with(server_config: arbor_server::ServerConfig, config: HttpConfig) -> Served {
    let (server, handle, probe) = fixture_with(server_config);
    let config = config.bind("127.0.0.1:0".parse().unwrap());
    let http = HttpServer::with_config(server, config);
    let bound = http.clone().bind().await.expect("bind");
    let addr = bound.local_addr();
    let stop = bound.shutdown_handle();
    let run = tokio::spawn(bound.run());
    let client = reqwest::Client::builder().timeout(PATIENCE).build().unwrap();
    let base = format!("http://{addr}");
    Served { url: format!("{base}/mcp"), base, port: addr.port(), http, client, handle, probe, stop, run }
}

impl Served {
    /// Shuts down and waits for `run` to return.
    pub async fn finish(self) {
        self.stop.shutdown();
        let ran = tokio::time::timeout(PATIENCE, self.run).await.expect("shutdown finished in time");
        ran.unwrap().unwrap();
    }

    /// A POST of `body` with the usual head and `headers`.
    pub fn post(&self, body: &Value, headers: &[(&str, &str)]) -> reqwest::RequestBuilder {
        let mut request = tests::peer::http::post(&self.client, &self.url, body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
    }

    /// A 2026-07-28 request with `_meta` and every header it needs, plus `extra`.
    pub fn modern(&self, id: i64, method: &str, mut params: Value, extra: &[(&str, &str)]) -> reqwest::RequestBuilder {
        let mut meta = params.get("_meta").cloned().unwrap_or_else(|| json!({}));
        meta["io.modelcontextprotocol/protocolVersion"] = json!(MODERN);
        meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
        params["_meta"] = meta;
        let name = params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str).map(str::to_owned);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
        if let Some(name) = name.as_deref() {
            headers.push(("mcp-name", name));
        }
        headers.extend_from_slice(extra);
        self.post(&body, &headers)
    }

    /// Opens a legacy session at `version` (with `capabilities`), sends `initialized`,
    /// and returns its id.
    pub async fn initialize(&self, version: &str, capabilities: Value) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": capabilities,
            "clientInfo": {"name": "it", "version": "1"}}});
        let response = self.post(&init, &[]).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["result"]["protocolVersion"], version, "{body}");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = self.post(&initialized, &[("mcp-session-id", &session)]).send().await.unwrap();
        assert_eq!(response.status(), 202);
        session
    }
}

/// One SSE event as read (the shared `tests` event).
pub use tests::peer::http::Event;

/// Reads events off an SSE response, skipping comments.
pub struct SseReader {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: EventBuffer,
}

impl SseReader {
    pub fn new(response: reqwest::Response) -> SseReader {
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        SseReader { body: response.bytes_stream().boxed(), buf: EventBuffer::default() }
    }

    /// The next event, `None` when the stream ended.
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.buf.next_event() {
                return Some(event);
            }
            let chunk = tokio::time::timeout(PATIENCE, self.body.next()).await.expect("an SSE event in time")?;
            self.buf.push(&chunk.ok()?);
        }
    }

    /// The next event that carries data.
    pub async fn next_data(&mut self) -> Event {
        loop {
            let event = self.next().await.expect("the stream ended early");
            if !event.data.is_empty() {
                return event;
            }
        }
    }
}

/// Waits for one signal from the server side.
pub async fn signalled(rx: &mut mpsc::UnboundedReceiver<()>, what: &str) {
    tokio::time::timeout(PATIENCE, rx.recv()).await.unwrap_or_else(|_| panic!("{what} in time")).expect(what);
}

/// Polls `done` every 5 ms until it holds; fails the test with `what` after [`PATIENCE`]
/// (the shared `tests::poll::until`).
pub async fn until(what: &str, done: impl FnMut() -> bool) {
    tests::poll::until(what, PATIENCE, done).await;
}

/// Polls the async `check` every 20 ms until it gives a value; fails the test with `what`
/// after [`PATIENCE`].
pub async fn until_async<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    tokio::time::timeout(PATIENCE, async {
        loop {
            if let Some(value) = check().await {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} in time"))
}

/// `background`: a tool that may run as a task (the tasks extension), done after 50 ms.
pub fn background_task() -> arbor_server::router::ToolRoute {
    arbor_server::router::ToolRoute::new("background", |_: NoArgs| async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        "done"
    })
    .task_support(arbor_server::TaskSupport::Optional)
}

/// `ask`: asks the user's name (input required), then answers "hi".
pub fn ask_name() -> arbor_server::router::ToolRoute {
    arbor_server::router::ToolRoute::new("ask", |_: NoArgs, cx: RequestContext| async move {
        match cx.input_responses().and_then(|r| r.get("name")).cloned() {
            Some(InputResponse::Elicit(_)) => Reply::Complete(CallToolResult::new(vec![ContentBlock::text("hi")])),
            _ => {
                let params = serde_json::from_value(json!({"message": "Name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}))
                .unwrap();
                Reply::InputRequired(InputRequired::new().elicit("name", params))
            }
        }
    })
}

/// A server for the observer's tests: tools `echo`, `hold` (runs until cancelled, at most
/// a minute) and `long_task` (a task of the tasks extension that works for a minute), the
/// tenant named by an `x-tenant` header, and the observer on at `interval`.
pub struct Observed {
    pub base: String,
    pub url: String,
    pub client: reqwest::Client,
    pub server: Server,
    stop: ShutdownHandle,
    run: tokio::task::JoinHandle<std::io::Result<()>>,
    /// Responses a test keeps open (listens).
    pub open: Vec<reqwest::Response>,
    /// Calls still waiting for their answer.
    held: Vec<tokio::task::JoinHandle<()>>,
}

pub async fn serve_observed(config: HttpConfig) -> Observed {
    let router = Router::new("observed", "1.0.0")
        .tool("echo", "Says it back", |args: EchoArgs| async move { args.message })
        .tool("hold", "Runs until cancelled", |_: NoArgs, cx: RequestContext| async move {
            tokio::select! {
                _ = cx.cancelled() => {}
                _ = tokio::time::sleep(Duration::from_secs(60)) => {}
            }
            "held"
        })
        .tool_route(
            arbor_server::router::ToolRoute::new("long_task", |_: NoArgs| async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                "done"
            })
            .task_support(arbor_server::TaskSupport::Optional),
        );
    // Dynamic, so tool list changes are advertised and a listen for them is served.
    let _ = router.handle();
    let server = Server::new(router);
    let config = config.bind("127.0.0.1:0".parse().unwrap()).tenant(|parts| {
        let tenant = parts.headers.get("x-tenant").and_then(|v| v.to_str().ok()).map(str::to_owned);
        arbor_server::ConnectOptions { tenant, ..Default::default() }
    });
    let http = HttpServer::with_config(server.clone(), config);
    let bound = http.bind().await.expect("bind");
    let addr = bound.local_addr();
    let stop = bound.shutdown_handle();
    let run = tokio::spawn(bound.run());
    let client = reqwest::Client::builder().timeout(PATIENCE).build().unwrap();
    let base = format!("http://{addr}");
    Observed { url: format!("{base}/mcp"), base, client, server, stop, run, open: Vec::new(), held: Vec::new() }
}

impl Observed {
    pub async fn finish(self) {
        drop(self.open);
        for call in self.held {
            call.abort();
        }
        self.stop.shutdown();
        let ran = tokio::time::timeout(PATIENCE, self.run).await.expect("shutdown finished in time");
        ran.unwrap().unwrap();
    }

    fn post(&self, tenant: &str, body: &Value, headers: &[(&str, &str)]) -> reqwest::RequestBuilder {
        let mut request = tests::peer::http::post(&self.client, &self.url, body).header("x-tenant", tenant);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
    }

    /// Opens an initialized legacy session (2025-06-18) of `tenant`; returns its id.
    pub async fn session(&self, tenant: &str) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
        let response = self.post(tenant, &init, &[]).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let _ = response.bytes().await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = self.post(tenant, &initialized, &[("mcp-session-id", &session)]).send().await.unwrap();
        assert_eq!(response.status(), 202);
        session
    }

    /// A legacy `tools/call` on `session`, answered.
    pub async fn echo(&self, tenant: &str, session: &str, id: i64) {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "hi"}}});
        let response = self.post(tenant, &call, &[("mcp-session-id", session)]).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let _ = response.bytes().await;
    }

    /// Starts `hold` on `session` as request `id` and keeps its response open.
    pub async fn hold(&mut self, tenant: &str, session: &str, id: i64) {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "hold"}});
        // The answer comes as an SSE stream after `json_wait`, or never: keep the response.
        let request = self.post(tenant, &call, &[("mcp-session-id", session)]);
        self.held.push(tokio::spawn(async move {
            if let Ok(response) = request.send().await {
                let _ = response.bytes().await;
            }
        }));
    }

    fn modern_body(id: i64, method: &str, params: Value, capabilities: Value) -> Value {
        let mut params = params;
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities});
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    /// A 2026-07-28 `subscriptions/listen` of `tenant` for tool list changes, kept open.
    pub async fn listen(&mut self, tenant: &str, id: i64) {
        let body = Self::modern_body(
            id,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
            json!({}),
        );
        let headers = [("mcp-protocol-version", MODERN), ("mcp-method", "subscriptions/listen")];
        let response = self.post(tenant, &body, &headers).send().await.unwrap();
        assert_eq!(response.status(), 200);
        self.open.push(response);
    }

    /// A 2026-07-28 `tools/call` of `long_task` that becomes a task; returns the answer.
    pub async fn start_task(&self, tenant: &str, id: i64) -> Value {
        let ext = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
        let body = Self::modern_body(id, "tools/call", json!({"name": "long_task", "arguments": {}}), ext);
        let headers = [("mcp-protocol-version", MODERN), ("mcp-method", "tools/call"), ("mcp-name", "long_task")];
        let response = self.post(tenant, &body, &headers).send().await.unwrap();
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }

    /// The observer's JSON snapshot.
    pub async fn snapshot(&self) -> Value {
        let response = self.client.get(format!("{}/observer/snapshot", self.base)).send().await.unwrap();
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }
}

/// The node of `view` at `path` (child ids from the root).
pub fn node<'a>(view: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut node = &view["root"];
    for id in path {
        node = node["children"].as_array()?.iter().find(|c| c["id"] == *id)?;
    }
    Some(node)
}

/// The load of `tenant` in `view`.
pub fn load<'a>(view: &'a Value, tenant: &str) -> Option<&'a Value> {
    view["tenants"].as_array()?.iter().find(|t| t["tenant"] == tenant)
}
