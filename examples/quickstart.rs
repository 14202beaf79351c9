//! Quickstart: an MCP server with a typed tool, a resource and a live update, served over
//! Streamable HTTP to clients of every protocol revision. `cargo run --example quickstart`,
//! then point any MCP client at http://127.0.0.1:3000/mcp (`--port N`: elsewhere; 0: any).
//!
//! `clock://ticks` counts the seconds since start; a client subscribed to it (a
//! `subscriptions/listen` or a legacy `resources/subscribe`) hears of every tick.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: f64,
    /// The second addend.
    b: f64,
}

/// Adds two numbers.
#[tool(read_only, idempotent)]
async fn add(args: AddArgs) -> String {
    (args.a + args.b).to_string()
}

const TICKS: &str = "clock://ticks";

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let ticks = Arc::new(AtomicU64::new(0));
    let read = ticks.clone();
    let router = Router::new("quickstart", "0.1.0")
        .subscriptions() // clients may subscribe to the resources below
        .tool_route(add::route())
        .resource(TICKS, "ticks", "Seconds since the server started.", "text/plain", move || {
            let n = read.load(Ordering::Relaxed);
            async move { n.to_string() }
        });
    let server = Server::new(router);

    // The live update: one call tells every subscriber, in either era, that it changed.
    let notifier = server.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(1));
        loop {
            every.tick().await;
            ticks.fetch_add(1, Ordering::Relaxed);
            let _ = notifier.notify_resource_updated(TICKS);
        }
    });

    let port = std::env::args().skip_while(|a| a != "--port").nth(1).and_then(|p| p.parse().ok());
    let config = HttpConfig::default().bind(([127, 0, 0, 1], port.unwrap_or(3000)).into());
    let bound = HttpServer::with_config(server, config).bind().await?;
    eprintln!("quickstart: listening on http://{}/mcp", bound.local_addr());
    bound.run().await
}
