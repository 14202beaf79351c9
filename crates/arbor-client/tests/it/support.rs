//! The fixtures: our own server (`arbor-server`) with a test handler, reached over an
//! in-memory pair, and a client handler that answers elicitations.

use std::sync::Arc;
use std::time::Duration;

use arbor_client::handler::{ClientHandler, ElicitationContext, ElicitationHandler};
use arbor_client::{Client, ClientOptions, EraCache, EraMode, ServerTarget};
use arbor_protocol::era::http::{param_headers, ParamHeader};
use arbor_protocol::error::McpError;
use arbor_protocol::model::capabilities::{
    PromptsCapability, ResourcesCapability, ServerCapabilities, ToolsCapability,
};
use arbor_protocol::model::common::{JsonObject, PaginatedRequestParams};
use arbor_protocol::model::content::ContentBlock;
use arbor_protocol::model::elicitation::{ElicitRequestParams, ElicitResult};
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::model::mrtr::InputResponse;
use arbor_protocol::model::resources::{ReadResourceRequestParams, ReadResourceResult, ResourceSubscriptionParams};
use arbor_protocol::model::tools::{CallToolRequestParams, CallToolResult, ListToolsResult, Tool};
use arbor_server::router::NoArgs;
use arbor_server::{
    ConnectOptions, InputRequired, Reply, RequestContext, Server, ServerConfig, ServerHandler, ServerInfo, Transport,
};
use parking_lot::Mutex;
use serde_json::{json, Value};

/// Tools the test server offers, in list order.
pub const TOOLS: [&str; 6] = ["echo", "hang", "slow", "ask", "region", "bad_header"];

/// What the server saw, for assertions.
#[derive(Default)]
pub struct Seen {
    /// Requests whose handler was stopped before it finished (cancelled).
    pub stopped: Mutex<Vec<String>>,
    /// URIs of legacy `resources/unsubscribe` requests, in order.
    pub unsubscribed: Mutex<Vec<String>>,
}

pub struct TestServer {
    pub seen: Arc<Seen>,
}

struct StopGuard(Arc<Seen>, String, bool);

impl Drop for StopGuard {
    fn drop(&mut self) {
        if !self.2 {
            self.0.stopped.lock().push(self.1.clone());
        }
    }
}

/// Tool input schemas: `region` mirrors its argument into `Mcp-Param-Region`;
/// `bad_header` annotates a `number`, which makes the tool invalid for HTTP clients.
fn schema(tool: &str) -> Value {
    match tool {
        "region" => json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}),
        "bad_header" => json!({"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}),
        _ => json!({"type": "object"}),
    }
}

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::from_text(t)
}

impl ServerHandler for TestServer {
    fn info(&self) -> ServerInfo {
        ServerInfo::new("arbor-client-test", "0.0.1")
    }

    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities::default()
            .with_tools(ToolsCapability::default().with_list_changed(true))
            .with_logging(JsonObject::new())
            .with_resources(ResourcesCapability::default().with_subscribe(true))
            .with_prompts(PromptsCapability::default())
    }

    fn tool_param_headers(&self, tool: &str) -> Option<Arc<[ParamHeader]>> {
        (tool == "region").then(|| param_headers(&schema(tool)).into())
    }

    fn tool_deadline(&self, _: &str) -> Option<Duration> {
        Some(Duration::from_secs(3600))
    }

    /// Two tools per page; the cursor is the index of the next tool.
    async fn list_tools(&self, params: PaginatedRequestParams, _: RequestContext) -> Result<ListToolsResult, McpError> {
        let start: usize = match params.cursor.as_deref() {
            None => 0,
            Some(c) => c.parse().map_err(|_| McpError::invalid_params("bad cursor"))?,
        };
        let tools = TOOLS
            .iter()
            .skip(start)
            .take(2)
            .map(|name| Tool::new(*name, schema(name).as_object().unwrap().clone()))
            .collect();
        let next = start + 2;
        let mut result = ListToolsResult::new(tools);
        result.next_cursor = (next < TOOLS.len()).then(|| next.to_string());
        Ok(result)
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> Result<Reply<CallToolResult>, McpError> {
        let arg = |name: &str| params.arguments.as_ref().and_then(|a| a.get(name)).cloned().unwrap_or(Value::Null);
        match params.name.as_str() {
            "echo" => Ok(text(arg("message").as_str().unwrap_or_default()).into()),
            "log" => {
                cx.log(LoggingLevel::Warning, Some("test"), json!("careful\u{202e}\u{7} now"));
                Ok(text("logged").into())
            }
            "ask_forever" => {
                let params = serde_json::from_value(json!({
                    "message": "Again?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
                }))
                .unwrap();
                Ok(Reply::InputRequired(InputRequired::new().elicit("name", params)))
            }
            "region" => Ok(text(format!("served in {}", arg("region").as_str().unwrap_or("?"))).into()),
            // Unlisted: `{"sum": a + b}` as structured content and as JSON text.
            "sum" => {
                let sum = json!({"sum": arg("a").as_i64().unwrap_or(0) + arg("b").as_i64().unwrap_or(0)});
                Ok(text(sum.to_string()).with_structured_content(sum).into())
            }
            // Unlisted: the JSON in a single text block only, as before 2025-06-18.
            "sum_text" => Ok(text(json!({"sum": 7}).to_string()).into()),
            // Unlisted: a tool that fails, in two text blocks.
            "fails" => Ok(CallToolResult::new(vec![ContentBlock::text("no"), ContentBlock::text("such luck")])
                .with_is_error(true)
                .into()),
            "hang" => {
                let mut guard = StopGuard(self.seen.clone(), format!("hang {}", cx.request_id()), false);
                std::future::pending::<()>().await;
                guard.2 = true;
                unreachable!()
            }
            // Sends `steps` progress notifications, `every` seconds apart, then answers.
            "slow" => {
                let steps = arg("steps").as_u64().unwrap_or(1);
                let every = arg("every").as_u64().unwrap_or(1);
                for i in 1..=steps {
                    tokio::time::sleep(Duration::from_secs(every)).await;
                    cx.progress(i as f64, Some(steps as f64), None);
                }
                Ok(text("done").into())
            }
            "ask" => match cx.input_responses().and_then(|r| r.get("name")) {
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

    async fn subscribe(&self, _: ResourceSubscriptionParams, _: RequestContext) -> Result<(), McpError> {
        Ok(())
    }

    async fn unsubscribe(&self, params: ResourceSubscriptionParams, _: RequestContext) -> Result<(), McpError> {
        self.seen.unsubscribed.lock().push(params.uri);
        Ok(())
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        _: RequestContext,
    ) -> Result<Reply<ReadResourceResult>, McpError> {
        let contents = serde_json::from_value(json!([{"uri": params.uri, "text": "hello"}])).unwrap();
        Ok(ReadResourceResult::new(contents).into())
    }
}

/// Answers every form elicitation with `{"name": <assigns.name or "Ada">}`.
pub struct Answers;

impl ElicitationHandler for Answers {
    async fn handle_elicitation(
        &self,
        _: ElicitRequestParams,
        ctx: &ElicitationContext,
    ) -> Result<ElicitResult, McpError> {
        let name = ctx.assigns.as_ref().and_then(|a| a.get("name")).cloned().unwrap_or_else(|| json!("Ada"));
        let content = json!({ "name": name }).as_object().unwrap().clone();
        Ok(ElicitResult::accept(content))
    }
}

pub struct AnsweringHandler;

impl ClientHandler for AnsweringHandler {
    fn elicitation(&self) -> Option<&impl ElicitationHandler> {
        Some(&Answers)
    }
}

/// A tool that asks for a name (`who`) by elicitation, then answers `confirmed by <name>`.
pub async fn confirm(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    match cx.input_responses().and_then(|r| r.get("who")) {
        Some(answer) => {
            let text = serde_json::to_value(answer).unwrap()["content"]["name"].as_str().unwrap_or("?").to_owned();
            Reply::Complete(CallToolResult::from_text(format!("confirmed by {text}")))
        }
        None => {
            let form: ElicitRequestParams = serde_json::from_value(json!({
                "message": "Who?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
            }))
            .unwrap();
            Reply::InputRequired(InputRequired::new().elicit("who", form))
        }
    }
}

/// A target that connects a fresh in-memory pair to `server` each time.
pub fn memory_target(server: &Server) -> ServerTarget {
    let server = server.clone();
    ServerTarget::transport_factory(None, move || {
        let server = server.clone();
        async move {
            let (server_side, client_side) = Transport::memory_pair();
            server.connect(server_side, ConnectOptions::default()).await.map_err(std::io::Error::other)?;
            Ok(client_side)
        }
    })
}

/// Our server, and a target that connects a fresh in-memory pair to it each time.
pub struct Fixture {
    pub server: Server,
    pub seen: Arc<Seen>,
}

impl Fixture {
    pub fn new() -> Fixture {
        let seen = Arc::new(Seen::default());
        let server = Server::with_config(TestServer { seen: seen.clone() }, ServerConfig::default());
        Fixture { server, seen }
    }

    pub fn target(&self) -> ServerTarget {
        memory_target(&self.server)
    }

    pub async fn client(&self, era: EraMode) -> Client {
        self.client_with(ClientOptions::new("test-client", "1.0.0").era(era)).await
    }

    pub async fn client_with(&self, options: ClientOptions) -> Client {
        Client::connect(self.target(), options.era_cache(EraCache::new())).await.expect("connects")
    }
}

/// Our server behind our Streamable HTTP transport on a loopback port.
pub struct HttpFixture {
    pub fixture: Fixture,
    pub url: String,
    shutdown: arbor_http::ShutdownHandle,
}

impl HttpFixture {
    pub async fn start() -> HttpFixture {
        let fixture = Fixture::new();
        let config = arbor_http::HttpConfig { bind: "127.0.0.1:0".parse().unwrap(), ..Default::default() };
        let bound = arbor_http::HttpServer::with_config(fixture.server.clone(), config).bind().await.unwrap();
        let url = format!("http://{}/mcp", bound.local_addr());
        let shutdown = bound.shutdown_handle();
        tokio::spawn(bound.run());
        HttpFixture { fixture, url, shutdown }
    }

    pub async fn client(&self, options: ClientOptions) -> Client {
        let target = arbor_client::HttpTarget::new(self.url.clone());
        Client::connect_http(target, options.era_cache(EraCache::new())).await.expect("connects over HTTP")
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        self.shutdown.shutdown();
    }
}
