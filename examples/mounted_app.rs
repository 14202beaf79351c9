//! An MCP server mounted in an existing axum app, and a client that uses it: three typed
//! tools, a resource, a template, a prompt and a live subscription, against `arbor` alone.
//!
//! `cargo run --example mounted_app` serves `/health` and `/mcp` on a free loopback port,
//! then connects a client to it, calls everything, watches `notes://latest` while a note
//! is posted, prints one line per answer on stdout and exits (the tests check the lines).
use std::sync::{Arc, Mutex, OnceLock};

use arbor::prelude::*;

#[derive(Deserialize, Serialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Sum {
    sum: i64,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Text {
    text: String,
}

async fn add(args: AddArgs) -> Result<Sum, ToolError> {
    let sum = args.a.checked_add(args.b).ok_or_else(|| ToolError::failed("the sum overflows"))?;
    Ok(Sum { sum })
}

async fn shout(args: Text) -> String {
    args.text.to_uppercase()
}

#[derive(Deserialize)]
struct NoteId {
    id: u32,
}

const LATEST: &str = "notes://latest";

fn router(notes: Arc<Mutex<Vec<String>>>, server: Arc<OnceLock<Server>>) -> Router {
    let (read, by_id) = (notes.clone(), notes.clone());
    Router::new("notes", "1.0.0")
        .subscriptions()
        .tool_with_output("add", "Adds two integers.", add)
        .tool("shout", "Returns the text in capitals.", shout)
        .tool("post", "Posts a note; subscribers of notes://latest hear of it.", move |args: Text| {
            let (notes, server) = (notes.clone(), server.clone());
            async move {
                let mut all = notes.lock().unwrap_or_else(|e| e.into_inner());
                all.push(args.text);
                let _ = server.get().map(|s| s.notify_resource_updated(LATEST));
                format!("note {}", all.len())
            }
        })
        .resource(LATEST, "latest", "The latest note.", "text/plain", move || {
            let last = read.lock().unwrap_or_else(|e| e.into_inner()).last().cloned();
            async move { last.unwrap_or_default() }
        })
        .resource_template("notes://{id}", "note", "A note by number.", "text/plain", move |v: NoteId| {
            let note = by_id.lock().unwrap_or_else(|e| e.into_inner()).get(v.id as usize - 1).cloned();
            async move { note.ok_or_else(|| McpError::invalid_params("no such note")) }
        })
        .prompt("review", "Asks for a review of the notes.", |args: Text| async move {
            format!("Review these notes in a {} tone.", args.text)
        })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The `post` tool announces its update through the server, which holds the router.
    let cell = Arc::new(OnceLock::new());
    let server = Server::new(router(Arc::default(), cell.clone()));
    let _ = cell.set(server.clone());
    let mcp = HttpServer::new(server);
    let app = axum::Router::new().route("/health", axum::routing::get(|| async { "ok" })).merge(mcp.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let client = Client::connect_http(HttpTarget::new(&url), ClientOptions::new("notes-client", "1.0.0")).await?;
    println!("era: {:?}", client.era());
    let sum = client.call_tool("add", json!({"a": 2, "b": 3})).await?;
    println!("add: {}", sum.structured_content.unwrap_or_default());
    println!("shout: {}", client.call_tool("shout", json!({"text": "hello"})).await?.text());

    let filter = SubscriptionFilter { resource_subscriptions: Some(vec![LATEST.into()]), ..Default::default() };
    let mut updates = client.listen(filter).await?;
    println!("post: {}", client.call_tool("post", json!({"text": "buy milk"})).await?.text());
    let update = tokio::time::timeout(std::time::Duration::from_secs(10), updates.next()).await?;
    println!("updated: {}", update.and_then(|n| n.params).unwrap_or_default()["uri"]);
    println!("latest: {}", text(&client.read_resource(LATEST).await?));
    println!("note 1: {}", text(&client.read_resource("notes://1").await?));
    let prompt = client.get_prompt("review", [("text".into(), "kind".into())].into()).await?;
    println!("prompt: {}", serde_json_text(&prompt.messages[0].content));
    client.close().await;
    mcp.shutdown_handle().shutdown();
    Ok(())
}

fn text(read: &ReadResourceResult) -> String {
    match read.contents.first() {
        Some(ResourceContents::Text(t)) => t.text.clone(),
        _ => String::new(),
    }
}

fn serde_json_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        _ => String::new(),
    }
}
