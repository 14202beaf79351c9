//! The declarative `Router` served by the runtime, raw JSON at the boundary: the same
//! registered functions answer a legacy session and modern per-request calls, and a change
//! through the router's handle reaches a connected client as `list_changed`.

use crate::support::{modern_meta, ScriptedPeer};
use arbor_otp::Gauge;
use arbor_protocol::model::prompts::PromptMessage;
use arbor_server::router::{completion, NoArgs, PromptRoute, Router, RouterHandle, ToolError, ToolRoute};
use arbor_server::{ConnectOptions, Connection, McpError, RequestContext, Server, ServerConfig, Transport};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// What to say back.
    message: String,
}

async fn echo(args: EchoArgs, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(args.message)
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
}

async fn add(args: Pair) -> Result<Sum, ToolError> {
    Ok(Sum { sum: args.a + args.b })
}

#[derive(Deserialize, schemars::JsonSchema)]
struct GreetArgs {
    name: String,
}

async fn greet(args: GreetArgs) -> Vec<PromptMessage> {
    vec![PromptMessage::user(format!("Hello, {}", args.name))]
}

/// A prompt that returns its text alone: one user message.
async fn explain(args: GreetArgs) -> String {
    format!("Explain {} to me", args.name)
}

#[derive(Deserialize)]
struct Id {
    id: u32,
}

async fn item(vars: Id) -> Result<String, McpError> {
    Ok(format!("item {}", vars.id))
}

struct Served {
    server: Server,
    connection: Connection,
    peer: ScriptedPeer,
    gauge: Gauge,
    handle: RouterHandle,
}

async fn serve() -> Served {
    let router = Router::new("routed", "1.0.0")
        .tool("echo", "Says it back", echo)
        .tool_with_output("add", "Adds", add)
        .prompt_route(PromptRoute::new("greet", greet).complete("name", completion::starting_with(["Ada", "Alan"])))
        .prompt("explain", "Asks for an explanation", explain)
        .resource("test://readme", "readme", "A text", "text/plain", || async { "read me" })
        .resource_template("test://items/{id}", "item", "Items", "text/plain", item);
    let handle = router.handle();
    let gauge = Gauge::new();
    let server = Server::with_config(router, ServerConfig::default().gauge(gauge.clone()));
    let (server_side, client_side) = Transport::memory_pair();
    let connection = server.connect(server_side, ConnectOptions::default()).await.unwrap();
    Served { server, connection, peer: ScriptedPeer::new(client_side), gauge, handle }
}

impl Served {
    async fn finish(self) {
        self.peer.close().await;
        self.connection.closed().await;
        self.server.shutdown().await;
        assert_eq!(self.gauge.alive_tasks(), 0, "request tasks leaked");
        assert_eq!(self.gauge.alive_actors(), 0, "actors leaked");
    }
}

#[tokio::test]
async fn a_legacy_session_sees_the_registered_functions_and_their_changes() {
    let mut s = serve().await;
    let init = s.peer.initialize("2025-11-25", json!({})).await;
    let caps = &init["capabilities"];
    assert_eq!(caps["tools"]["listChanged"], true, "{init}");
    assert_eq!(caps["prompts"]["listChanged"], true);
    assert!(caps["completions"].is_object() && caps["logging"].is_object());
    assert!(caps["resources"].get("subscribe").is_none(), "subscriptions were not enabled");

    let listed = s.peer.call(1, "tools/list", json!({})).await;
    assert_eq!(listed["result"]["tools"][0]["inputSchema"]["required"], json!(["message"]), "{listed}");
    assert_eq!(listed["result"]["tools"][1]["outputSchema"]["type"], "object");

    let echoed = s.peer.call(2, "tools/call", json!({"name": "echo", "arguments": {"message": "hi"}})).await;
    assert_eq!(echoed["result"]["content"][0]["text"], "hi", "{echoed}");
    let invalid = s.peer.call(3, "tools/call", json!({"name": "echo", "arguments": {"message": 7}})).await;
    assert_eq!(invalid["result"]["isError"], true, "{invalid}");
    let unknown = s.peer.call(4, "tools/call", json!({"name": "nope", "arguments": {}})).await;
    assert_eq!(unknown["error"]["code"], -32602);
    let summed = s.peer.call(5, "tools/call", json!({"name": "add", "arguments": {"a": 2, "b": 3}})).await;
    assert_eq!(summed["result"]["structuredContent"], json!({"sum": 5}), "{summed}");

    let missing = s.peer.call(6, "resources/read", json!({"uri": "test://items/x"})).await;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    let found = s.peer.call(7, "resources/read", json!({"uri": "test://items/9"})).await;
    assert_eq!(found["result"]["contents"][0]["text"], "item 9");

    let completed = s
        .peer
        .call(
            8,
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "Al"}}),
        )
        .await;
    assert_eq!(completed["result"]["completion"]["values"], json!(["Alan"]), "{completed}");

    s.handle.add_tool(ToolRoute::new("late", |_: NoArgs| async { "late" }).description("Added while serving"));
    let note = s.peer.recv().await;
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    let relisted = s.peer.call(9, "tools/list", json!({})).await;
    assert_eq!(relisted["result"]["tools"].as_array().unwrap().len(), 3);
    s.finish().await;
}

#[tokio::test]
async fn modern_requests_get_the_same_answers_with_the_eras_bookkeeping() {
    let mut s = serve().await;
    let meta = modern_meta(json!({}));
    let listed = s.peer.call(1, "tools/list", json!({"_meta": meta})).await;
    assert_eq!(listed["result"]["resultType"], "complete", "{listed}");
    assert!(listed["result"]["ttlMs"].is_u64() && listed["result"]["cacheScope"].is_string());
    let summed =
        s.peer.call(2, "tools/call", json!({"_meta": meta, "name": "add", "arguments": {"a": 1, "b": 1}})).await;
    assert_eq!(summed["result"]["structuredContent"], json!({"sum": 2}), "{summed}");
    let prompt =
        s.peer.call(3, "prompts/get", json!({"_meta": meta, "name": "greet", "arguments": {"name": "Ada"}})).await;
    assert_eq!(prompt["result"]["messages"][0]["content"]["text"], "Hello, Ada", "{prompt}");
    let missing = s.peer.call(4, "resources/read", json!({"_meta": meta, "uri": "test://nowhere"})).await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert_eq!(missing["error"]["data"]["uri"], "test://nowhere");
    let read = s.peer.call(5, "resources/read", json!({"_meta": meta, "uri": "test://readme"})).await;
    assert_eq!(read["result"]["contents"][0]["mimeType"], "text/plain", "{read}");
    assert!(read["result"]["ttlMs"].is_u64());
    s.finish().await;
}

#[tokio::test]
async fn a_prompt_that_returns_text_answers_one_user_message_in_both_eras() {
    let expected = json!([{"role": "user", "content": {"type": "text", "text": "Explain monads to me"}}]);
    let mut legacy = serve().await;
    legacy.peer.initialize("2025-11-25", json!({})).await;
    let got = legacy.peer.call(1, "prompts/get", json!({"name": "explain", "arguments": {"name": "monads"}})).await;
    assert_eq!(got["result"]["messages"], expected, "{got}");
    assert_eq!(got["result"]["description"], "Asks for an explanation", "{got}");
    assert!(got["result"].get("resultType").is_none(), "a legacy result has no resultType: {got}");
    legacy.finish().await;

    let mut modern = serve().await;
    let meta = modern_meta(json!({}));
    let got = modern
        .peer
        .call(1, "prompts/get", json!({"_meta": meta, "name": "explain", "arguments": {"name": "monads"}}))
        .await;
    assert_eq!(got["result"]["messages"], expected, "{got}");
    assert_eq!(got["result"]["resultType"], "complete", "{got}");
    modern.finish().await;
}
