//! An MCP server (three typed tools, a resource, a template, a prompt, a live subscription)
//! mounted in an axum app beside `/health`, and a client that calls it all and watches
//! `notes://latest` while a note is posted: `cargo run --example mounted_app` prints one
//! line per answer and exits (the tests check the lines). Written against `arbor` alone.
use arbor::prelude::*;
use std::sync::{Arc, OnceLock};

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

/// Adds two integers.
#[tool(structured, read_only)]
async fn add(args: AddArgs) -> Result<Sum, ToolError> {
    let sum = args.a.checked_add(args.b).ok_or_else(|| ToolError::failed("the sum overflows"))?;
    Ok(Sum { sum })
}

/// Returns the text in capitals.
#[tool(read_only)]
async fn shout(args: Text) -> String {
    args.text.to_uppercase()
}

#[derive(Deserialize)]
struct NoteId {
    id: usize,
}

const LATEST: &str = "notes://latest";
type Notes = Arc<tokio::sync::Mutex<Vec<String>>>;

fn router(notes: Notes, server: Arc<OnceLock<Server>>) -> Router {
    let (read, by_id) = (notes.clone(), notes.clone());
    Router::new("notes", "1.0.0")
        .subscriptions()
        .tool_route(add::route())
        .tool_route(shout::route())
        .tool("post", "Posts a note; subscribers of notes://latest hear of it.", move |args: Text| {
            let (notes, server) = (notes.clone(), server.clone());
            async move {
                notes.lock().await.push(args.text);
                let _ = server.get().map(|s| s.notify_resource_updated(LATEST));
                "posted"
            }
        })
        .resource(LATEST, "latest", "The latest note.", "text/plain", move || {
            let read = read.clone();
            async move { read.lock().await.last().cloned().unwrap_or_default() }
        })
        .resource_template("notes://{id}", "note", "A note by number.", "text/plain", move |v: NoteId| {
            let by_id = by_id.clone();
            async move {
                let note = by_id.lock().await.get(v.id.wrapping_sub(1)).cloned();
                note.ok_or_else(|| McpError::invalid_params("no such note"))
            }
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
    tokio::spawn(async move { arbor::http::serve(listener, app).await }); // TCP_NODELAY set
    let client = Client::connect_http(HttpTarget::new(&url), ClientOptions::new("notes-client", "1.0.0")).await?;
    println!("era: {:?}", client.era());
    let sum: Sum = client.call_tool_as("add", &AddArgs { a: 2, b: 3 }).await?;
    println!("add: {}", sum.sum);
    println!("shout: {}", client.call_tool("shout", json!({"text": "hello"})).await?.text());
    let mut updates = client.watch_resource(LATEST).await?;
    println!("post: {}", client.call_tool("post", json!({"text": "buy milk"})).await?.text());
    let update = tokio::time::timeout(std::time::Duration::from_secs(10), updates.next()).await?;
    println!("updated: {}", update.map(|u| u.uri).unwrap_or_default());
    println!("latest: {}", text(&client.read_resource(LATEST).await?));
    println!("note 1: {}", text(&client.read_resource("notes://1").await?));
    let prompt = client.get_prompt("review", [("text".into(), "kind".into())].into()).await?;
    let first = prompt.messages.first().map(|m| json!(m.content));
    println!("prompt: {}", first.as_ref().and_then(|c| c["text"].as_str()).unwrap_or_default());
    client.close().await;
    mcp.shutdown().await; // streams ended, sessions and endpoints closed, the server stopped
    Ok(())
}

fn text(read: &ReadResourceResult) -> &str {
    match read.contents.first() {
        Some(ResourceContents::Text(t)) => &t.text,
        _ => "",
    }
}
