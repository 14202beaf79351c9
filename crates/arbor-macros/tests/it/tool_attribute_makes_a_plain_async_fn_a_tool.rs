//! `#[arbor::tool]` tools registered with one call each, served by a real `Server` over an
//! in-memory transport and called by a real `Client`: what clients list (name, description
//! from the doc comment, title, hints, scopes in `_meta`, schemas) and what calls answer.

use arbor::client::{Client, ClientOptions};
use arbor::prelude::*;
use arbor::server::router::RouterError;
use arbor::server::ConnectOptions;
use arbor::transport::Transport;
use serde_json::{json, Value};
use std::time::Duration;

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

/// Adds two numbers.
///
/// Both are 64-bit integers.
#[tool(read_only, idempotent, open_world = false)]
async fn add(args: AddArgs) -> Result<String, ToolError> {
    let sum = args.a.checked_add(args.b).ok_or_else(|| ToolError::failed("the sum overflows"))?;
    Ok(sum.to_string())
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct PathArgs {
    path: String,
}

#[derive(Serialize, JsonSchema)]
pub(crate) struct Deleted {
    deleted: String,
}

/// Deletes a file (it only says so).
#[arbor::tool(name = "files.delete", title = "Delete file", destructive, structured, scopes = ["files:write", "files:read"])]
pub(crate) async fn delete(_cx: RequestContext, args: PathArgs) -> Result<Deleted, ToolError> {
    Ok(Deleted { deleted: args.path })
}

/// Says which request this is.
#[tool(description = "Answers with the request's tenant")]
async fn whoami(cx: RequestContext) -> String {
    cx.connection().tenant.to_string()
}

/// Takes a bare string, whose schema is no object: this cannot be a tool.
#[tool]
async fn shout(text: String) -> String {
    text.to_uppercase()
}

#[test]
fn a_tool_that_cannot_be_one_is_an_error_from_try_route() {
    let error = shout::try_route().expect_err("a string schema is no tool schema");
    assert!(matches!(error, RouterError::Schema { .. }), "{error:?}");
    let refused = Router::new("macros", "1").tool_route(add::route()).try_tool_route(add::route());
    assert!(matches!(refused, Err(RouterError::Duplicate { .. })), "{refused:?}");
}

fn tools(list: &[arbor::protocol::model::tools::Tool], name: &str) -> Value {
    let tool = list.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name} is not listed"));
    serde_json::to_value(tool).expect("a tool serialises")
}

async fn text(client: &Client, name: &str, arguments: Value) -> (String, Option<bool>, Option<Value>) {
    let result = client.call_tool(name, arguments).await.expect("the call is answered");
    let value = serde_json::to_value(&result).expect("a result serialises");
    let text = value["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    (text, result.is_error, value.get("structuredContent").cloned())
}

#[tokio::test]
async fn tool_attribute_makes_a_plain_async_fn_a_tool() {
    // The function is still a function.
    assert_eq!(add(AddArgs { a: 2, b: 3 }).await.ok().as_deref(), Some("5"));

    let router =
        Router::new("macros", "1").tool_route(add::route()).tool_route(delete::route()).tool_route(whoami::route());
    let server = Server::new(router);
    let (server_side, client_side) = Transport::memory_pair();
    let connection = server.connect(server_side, ConnectOptions::tenant("acme")).await.expect("connects");
    let client =
        tokio::time::timeout(Duration::from_secs(10), Client::connect_transport(client_side, ClientOptions::default()))
            .await
            .expect("the handshake is bounded")
            .expect("the client connects");

    let list = client.list_all_tools().await.expect("tools/list is answered");
    assert_eq!(list.len(), 3);
    let listed = tools(&list, "add");
    assert_eq!(listed["description"], "Adds two numbers.\n\nBoth are 64-bit integers.");
    assert_eq!(listed["annotations"], json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}));
    assert_eq!(listed["inputSchema"]["properties"]["a"]["description"], "The first addend.");
    assert_eq!(listed["inputSchema"]["required"], json!(["a", "b"]));
    assert!(listed.get("outputSchema").is_none(), "an unstructured tool has no outputSchema: {listed}");
    assert!(listed.get("_meta").is_none(), "no scopes, no _meta: {listed}");

    let listed = tools(&list, "files.delete");
    assert_eq!(listed["title"], "Delete file");
    assert_eq!(listed["description"], "Deletes a file (it only says so).");
    assert_eq!(listed["annotations"], json!({"destructiveHint": true}));
    assert_eq!(listed["_meta"]["arbor/scopes"], json!(["files:write", "files:read"]));
    assert_eq!(listed["outputSchema"]["properties"]["deleted"]["type"], "string");

    let listed = tools(&list, "whoami");
    assert_eq!(listed["description"], "Answers with the request's tenant", "the attribute wins over the doc");
    assert_eq!(listed["inputSchema"]["type"], "object");

    assert_eq!(text(&client, "add", json!({"a": 40, "b": 2})).await, ("42".into(), None, None));
    let (message, is_error, _) = text(&client, "add", json!({"a": i64::MAX, "b": 1})).await;
    assert_eq!((message.as_str(), is_error), ("the sum overflows", Some(true)));
    let (message, is_error, _) = text(&client, "add", json!({"a": "forty"})).await;
    assert!(message.starts_with("Invalid arguments for tool add"), "{message}");
    assert_eq!(is_error, Some(true));

    let (_, is_error, structured) = text(&client, "files.delete", json!({"path": "/tmp/x"})).await;
    assert_eq!(is_error, None);
    assert_eq!(structured, Some(json!({"deleted": "/tmp/x"})));
    assert_eq!(text(&client, "whoami", json!({})).await.0, "acme");

    client.close().await;
    tokio::time::timeout(Duration::from_secs(10), connection.closed()).await.expect("the connection closes");
    server.shutdown().await;
}
