//! A tiny MCP server over stdio, for `arbor-client`'s process tests: `echo` says its
//! message back, `exit` ends the process at once (an unexpected exit, as the client sees
//! it), `whoami` answers the process id (to tell a restarted process from the first).
//! It writes a line to stderr on start, which the client captures into its logs.
//! `--skills DIR` also serves the skills below `DIR` (the skills extension, for the
//! client's skills tests over a real pipe).
//!
//! `cargo test -p arbor-client` builds it; the tests find it next to their own binary.

use arbor_server::router::{NoArgs, Router};
use arbor_server::Server;
use serde::Deserialize;

#[derive(Deserialize, schemars::JsonSchema)]
struct Echo {
    /// What to say back.
    message: String,
}

#[tokio::main]
async fn main() {
    eprintln!("stdio_test_server {} starting", std::process::id());
    let router = Router::new("stdio-test-server", "0.0.1")
        .tool("echo", "Says it back", |args: Echo| async move { args.message })
        .tool("exit", "Exits the process", |_: NoArgs| async move {
            std::process::exit(0);
            #[allow(unreachable_code)]
            String::new()
        })
        .tool("whoami", "The process id", |_: NoArgs| async move { std::process::id().to_string() });
    let args: Vec<String> = std::env::args().collect();
    let router = match args.iter().position(|a| a == "--skills").and_then(|i| args.get(i + 1)) {
        Some(dir) => router.skills_dir(dir),
        None => router,
    };
    if let Err(e) = Server::new(router).serve_stdio().await {
        eprintln!("stdio_test_server: {e}");
    }
}
