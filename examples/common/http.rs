//! Serving an example's [`Server`] over Streamable HTTP until Ctrl-C or SIGTERM, shared by
//! `demo_server`, `conformance_server` and `bench_server` (each includes this file with
//! `#[path]`).
//!
//! It is not the HTTP transport (`arbor_http` is) nor the signal handling
//! (`Bound::shutdown_on_signal` is: a thread of its own hears the signal even while every
//! worker is busy, and exits the process with status 1 if the graceful shutdown has not
//! ended it within `shutdown_grace` + `arbor_http::EXIT_SLACK`); it binds, says where it
//! listens and serves.
//!
//! Invariant: the bound address is printed on stderr as `<name>: listening on
//! http://ADDR/PATH` before the first request can be served and after the signal handlers
//! are installed, so a test that started the process on port 0 can read which port it
//! got and stop it with SIGTERM at once.

use std::process::ExitCode;

use arbor_http::{HttpConfig, HttpServer};
use arbor_server::Server;

/// Binds `config.bind`, prints the endpoint's URL on stderr and serves until Ctrl-C or
/// SIGTERM, then shuts down gracefully (streams end, sessions close, the server stops).
pub async fn serve(name: &str, server: Server, config: HttpConfig) -> ExitCode {
    let path = config.path.clone();
    let bound = match HttpServer::with_config(server, config).bind().await {
        Ok(bound) => bound,
        Err(e) => {
            tracing::error!(error = %e, "{name}: cannot listen");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = bound.shutdown_on_signal().await {
        tracing::error!(error = %e, "{name}: cannot watch for signals");
        return ExitCode::FAILURE;
    }
    // Plain stderr, whatever RUST_LOG says: tests and scripts read this line.
    eprintln!("{name}: listening on http://{}{path}", bound.local_addr());
    match bound.run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "{name} stopped");
            ExitCode::FAILURE
        }
    }
}
