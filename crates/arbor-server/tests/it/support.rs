//! The harness: a minimal raw `ServerHandler`, a `ScriptedPeer` that speaks raw JSON lines
//! over the in-memory transport (the shared `tests::peer::Exchange` over its frames), the
//! leak check every test ends with, and the task tests' fixture (`TaskSetup`, `task_call`,
//! `created_id`).

use std::time::Duration;

use arbor_otp::Gauge;
use arbor_protocol::error::McpError;
use arbor_protocol::model::capabilities::{
    PromptsCapability, ResourcesCapability, ServerCapabilities, ToolsCapability,
};
use arbor_protocol::model::common::PaginatedRequestParams;
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::model::mrtr::InputResponse;
use arbor_protocol::model::prompts::{GetPromptRequestParams, GetPromptResult, PromptMessage};
use arbor_protocol::model::resources::{ReadResourceRequestParams, ReadResourceResult, ResourceSubscriptionParams};
use arbor_protocol::model::tools::{CallToolRequestParams, CallToolResult, ListToolsResult, Tool};
use arbor_server::{
    CancellationToken, ConnectOptions, Connection, InputRequired, ListChangeSender, ListChanges, Reply, RequestContext,
    Server, ServerConfig, ServerHandler, ServerInfo, Transport,
};
use arbor_transport::{FrameReader, FrameWriter};
use serde_json::{json, Value};
use tests::peer::Exchange;
use tokio::sync::mpsc;

/// A raw handler with a few tools that exercise the runtime.
pub struct TestHandler {
    pub changes: ListChangeSender,
    /// Where the `token` tool hands its context and `cx.cancellation_token()`.
    pub contexts: Option<mpsc::UnboundedSender<(CancellationToken, RequestContext)>>,
}

impl TestHandler {
    pub fn new() -> TestHandler {
        TestHandler { changes: ListChangeSender::default(), contexts: None }
    }
}

fn text(result: impl Into<String>) -> CallToolResult {
    CallToolResult::from_text(result)
}

impl ServerHandler for TestHandler {
    fn info(&self) -> ServerInfo {
        ServerInfo { instructions: Some("test server".into()), ..ServerInfo::new("arbor-test", "0.0.1") }
    }

    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities::default()
            .with_tools(ToolsCapability::default().with_list_changed(true))
            .with_resources(ResourcesCapability::default().with_subscribe(true).with_list_changed(true))
            .with_prompts(PromptsCapability::default())
            .with_logging(serde_json::Map::new())
    }

    fn tool_deadline(&self, tool: &str) -> Option<Duration> {
        (tool == "hang_briefly").then(|| Duration::from_secs(1))
    }

    /// `ask_unannounced` asks for input although its handler says no tool of it does.
    fn tool_asks_input(&self, tool: &str) -> bool {
        tool != "ask_unannounced"
    }

    fn list_changes(&self) -> Option<ListChanges> {
        Some(self.changes.subscribe())
    }

    async fn list_tools(&self, _: PaginatedRequestParams, _: RequestContext) -> Result<ListToolsResult, McpError> {
        let tool = |name: &str| Tool::new(name, json!({"type": "object"}).as_object().unwrap().clone());
        Ok(ListToolsResult::new(vec![tool("echo"), tool("hang")]))
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> Result<Reply<CallToolResult>, McpError> {
        let arg = |name: &str| params.arguments.as_ref().and_then(|a| a.get(name)).cloned().unwrap_or(Value::Null);
        match params.name.as_str() {
            "echo" => Ok(text(arg("message").as_str().unwrap_or_default()).into()),
            "hang" | "hang_briefly" => {
                std::future::pending::<()>().await;
                unreachable!()
            }
            // Hands its context and token to the test, then answers or (`hang`) waits forever.
            "token" => {
                let token = cx.cancellation_token();
                if let Some(contexts) = &self.contexts {
                    let _ = contexts.send((token, cx.clone()));
                }
                if arg("hang") == json!(true) {
                    std::future::pending::<()>().await;
                }
                Ok(text("answered").into())
            }
            "sleep" => {
                tokio::time::sleep(Duration::from_millis(arg("ms").as_u64().unwrap_or(0))).await;
                Ok(text("slept").into())
            }
            "panic" => panic!("the tool broke"),
            "fault" => crate::kit::act(params.arguments.clone().map(Value::Object).unwrap_or(Value::Null)).await,
            "progress" => {
                cx.progress(1.0, Some(2.0), Some("half".into()));
                cx.progress(2.0, Some(2.0), None);
                Ok(text("done").into())
            }
            "log" => {
                cx.log(LoggingLevel::Debug, Some("test"), json!("debug line"));
                cx.log(LoggingLevel::Warning, Some("test"), json!("warning line"));
                Ok(text("logged").into())
            }
            "ask" | "ask_unannounced" => match cx.input_responses().and_then(|r| r.get("name")) {
                Some(InputResponse::Elicit(answer)) => {
                    let name = answer.content.as_ref().and_then(|c| c.get("name")).cloned().unwrap_or(Value::Null);
                    let seen = cx.input_state().cloned().unwrap_or(Value::Null);
                    Ok(text(format!("hello {} ({seen})", name.as_str().unwrap_or("?"))).into())
                }
                _ => {
                    let params = serde_json::from_value(json!({
                        "message": "What is your name?",
                        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
                    }))
                    .unwrap();
                    Ok(Reply::InputRequired(InputRequired::new().elicit("name", params).state(json!({"round": 1}))))
                }
            },
            other => Err(McpError::invalid_params(format!("Unknown tool: {other}"))),
        }
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        _: RequestContext,
    ) -> Result<Reply<ReadResourceResult>, McpError> {
        let contents = serde_json::from_value(json!([{"uri": params.uri, "text": "hello"}])).unwrap();
        Ok(ReadResourceResult::new(contents).into())
    }

    async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext,
    ) -> Result<Reply<GetPromptResult>, McpError> {
        // Like the `ask` tool, it keeps nothing of its arguments in its state: binding the
        // answers to them is the runtime's job.
        match cx.input_responses().and_then(|r| r.get("confirm")) {
            Some(InputResponse::Elicit(_)) => {
                let target = params.arguments.and_then(|a| a.get("target").cloned()).unwrap_or_default();
                Ok(GetPromptResult::new(vec![PromptMessage::user(format!("delete {target}"))]).into())
            }
            _ => {
                let params = serde_json::from_value(json!({
                    "message": "Sure?",
                    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
                }))
                .unwrap();
                Ok(Reply::InputRequired(InputRequired::new().elicit("confirm", params)))
            }
        }
    }

    async fn subscribe(&self, _: ResourceSubscriptionParams, _: RequestContext) -> Result<(), McpError> {
        Ok(())
    }
}

/// The client side of an in-memory connection, speaking raw JSON lines.
pub struct ScriptedPeer {
    reader: FrameReader,
    writer: FrameWriter,
}

impl ScriptedPeer {
    pub fn new(transport: Transport) -> ScriptedPeer {
        let (reader, writer) = transport.into_parts();
        ScriptedPeer { reader, writer }
    }

    /// Sends one JSON value as a line.
    pub fn send(&self, message: Value) {
        self.writer.send(message.to_string().as_bytes()).unwrap();
    }

    /// Sends raw bytes as a line.
    pub fn send_raw(&self, line: &str) {
        self.writer.send(line.as_bytes()).unwrap();
    }

    /// The next message from the server; panics after 30 s (of the test's clock).
    pub async fn recv(&mut self) -> Value {
        let next = tokio::time::timeout(Duration::from_secs(30), self.reader.recv()).await;
        let frame = next.expect("no message within 30 s").unwrap().expect("the server closed the connection");
        serde_json::from_slice(&frame.unwrap()).unwrap()
    }

    /// The next message from the server, or `None` once it closed the connection;
    /// panics after 30 s (of the test's clock).
    pub async fn recv_or_end(&mut self) -> Option<Value> {
        let next = tokio::time::timeout(Duration::from_secs(30), self.reader.recv()).await;
        let frame = next.expect("no message within 30 s").unwrap()?;
        Some(serde_json::from_slice(&frame.unwrap()).unwrap())
    }

    /// The next message that is not a notification.
    pub async fn recv_response(&mut self) -> Value {
        Exchange::next_response(self).await
    }

    /// Sends a request and returns its response, skipping notifications.
    pub async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        Exchange::call(self, id, method, params).await
    }

    /// Sends a request and counts the notifications that arrive before its response.
    pub async fn recv_response_after(&mut self, id: i64, method: &str, params: Value) -> usize {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut notes = 0;
        loop {
            let message = self.recv().await;
            if message.get("id").is_some() {
                assert_eq!(message["id"], json!(id), "{message}");
                return notes;
            }
            notes += 1;
        }
    }

    /// Asserts the server's output ends without another message.
    pub async fn expect_end(&mut self) {
        let next = tokio::time::timeout(Duration::from_secs(30), self.reader.recv()).await.expect("the output ended");
        if let Some(frame) = next.unwrap() {
            panic!("expected the end, got {:?}", String::from_utf8(frame.unwrap()));
        }
    }

    /// Asserts the server sends nothing for `wait`.
    pub async fn expect_silence(&mut self, wait: Duration) {
        if let Ok(next) = tokio::time::timeout(wait, self.reader.recv()).await {
            let frame = next.unwrap().map(|f| String::from_utf8(f.unwrap()).unwrap());
            panic!("expected silence, got {frame:?}");
        }
    }

    /// `initialize` at `version` plus `notifications/initialized`; returns the result.
    pub async fn initialize(&mut self, version: &str, capabilities: Value) -> Value {
        Exchange::initialize(self, version, capabilities).await
    }

    /// Closes the client's output: the server sees end of input.
    pub async fn close(&self) {
        self.writer.close().await;
    }
}

/// The shared request, response and handshake logic, over the in-memory transport.
impl Exchange for ScriptedPeer {
    async fn write_message(&mut self, message: Value) {
        self.send(message);
    }

    async fn read_message(&mut self) -> Value {
        self.recv().await
    }

    fn client_info(&self) -> Value {
        json!({"name": "scripted", "version": "1"})
    }
}

/// `_meta` of a 2026-07-28 request.
pub fn modern_meta(capabilities: Value) -> Value {
    tests::peer::modern_meta(capabilities, None)
}

/// A running server with one connection over the in-memory transport.
pub struct Harness {
    pub server: Server,
    pub connection: Connection,
    pub peer: ScriptedPeer,
    pub gauge: Gauge,
    pub changes: ListChangeSender,
    /// What the `token` tool hands over, one entry per call.
    pub contexts: mpsc::UnboundedReceiver<(CancellationToken, RequestContext)>,
}

impl Harness {
    pub async fn start() -> Harness {
        Harness::with_config(ServerConfig::default()).await
    }

    pub async fn with_config(config: ServerConfig) -> Harness {
        let gauge = Gauge::new();
        let (contexts_tx, contexts) = mpsc::unbounded_channel();
        let handler = TestHandler { contexts: Some(contexts_tx), ..TestHandler::new() };
        let changes = handler.changes.clone();
        let server = Server::with_config(handler, config.gauge(gauge.clone()));
        let (server_side, client_side) = Transport::memory_pair();
        let connection = server.connect(server_side, ConnectOptions::default()).await.unwrap();
        Harness { server, connection, peer: ScriptedPeer::new(client_side), gauge, changes, contexts }
    }

    /// Another connection to the same server.
    pub async fn connect(&self, options: ConnectOptions) -> (Connection, ScriptedPeer) {
        let (server_side, client_side) = Transport::memory_pair();
        let connection = self.server.connect(server_side, options).await.unwrap();
        (connection, ScriptedPeer::new(client_side))
    }

    /// Closes the client side, waits for the connection to stop, shuts the server down and
    /// checks that no actor or task outlived it.
    pub async fn finish(self) {
        self.peer.close().await;
        self.connection.closed().await;
        self.server.shutdown().await;
        assert_eq!(self.gauge.alive_tasks(), 0, "request tasks leaked");
        assert_eq!(self.gauge.alive_actors(), 0, "actors leaked");
    }
}

/// Servers sharing one gauge, the connections made to them, and the leak check a task
/// test ends with.
pub struct TaskSetup {
    pub servers: Vec<Server>,
    pub gauge: Gauge,
    pub connections: Vec<Connection>,
}

impl TaskSetup {
    /// `n` servers, each built by `build` from a default `ServerConfig` that already carries
    /// the gauge.
    pub fn new(n: usize, build: impl Fn(ServerConfig) -> Server) -> TaskSetup {
        let gauge = Gauge::new();
        let config = ServerConfig::default().gauge(gauge.clone());
        let servers = (0..n).map(|_| build(config.clone())).collect();
        TaskSetup { servers, gauge, connections: Vec::new() }
    }

    /// A new connection to the server at `server`, not yet initialized.
    pub async fn connect(&mut self, server: usize, options: ConnectOptions) -> ScriptedPeer {
        let (server_side, client_side) = Transport::memory_pair();
        self.connections.push(self.servers[server].connect(server_side, options).await.unwrap());
        ScriptedPeer::new(client_side)
    }

    /// Closes `peers`, waits for every connection to stop, shuts the servers down and checks
    /// that no task or actor outlived them.
    pub async fn finish(self, peers: Vec<ScriptedPeer>) {
        for p in &peers {
            p.close().await;
        }
        for c in &self.connections {
            c.closed().await;
        }
        for server in &self.servers {
            server.shutdown().await;
        }
        assert_eq!(self.gauge.alive_tasks(), 0, "tasks leaked");
        assert_eq!(self.gauge.alive_actors(), 0, "actors leaked");
    }
}

/// `tools/call` params that run `name` as a 2025-11-25 task kept for `ttl`.
pub fn task_call(name: &str, args: Value, ttl: Value) -> Value {
    json!({"name": name, "arguments": args, "task": {"ttl": ttl}})
}

/// The task id of a 2025-11-25 `CreateTaskResult` response.
pub fn created_id(response: &Value) -> String {
    response["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("no task in {response}")).to_owned()
}

/// The next server→client request, skipping notifications.
pub async fn next_request(peer: &mut ScriptedPeer) -> Value {
    loop {
        let message = peer.recv().await;
        if message.get("method").is_some() && message.get("id").is_some() {
            return message;
        }
        assert!(message.get("id").is_none(), "an unexpected response: {message}");
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Work {
    seconds: u64,
}

/// `sleepy`: sleeps `seconds` and says so (`slept Ns`); may run as a task.
pub fn sleepy() -> arbor_server::router::ToolRoute {
    arbor_server::router::ToolRoute::new("sleepy", |w: Work| async move {
        tokio::time::sleep(std::time::Duration::from_secs(w.seconds)).await;
        format!("slept {}s", w.seconds)
    })
    .description("sleeps")
    .task_support(arbor_server::TaskSupport::Optional)
}
