//! Serving an example's [`Server`] over Streamable HTTP until Ctrl-C or SIGTERM, shared by
//! `demo_server` and `conformance_server` (each includes this file with `#[path]`).
//!
//! It is not the HTTP transport (`arbor_http` is); it binds, says where it listens and
//! waits for a signal. Invariant: the bound address is printed on stderr as
//! `<name>: listening on http://ADDR/PATH` before the first request can be served, so a
//! test that started the process on port 0 can read which port it got.

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
    // Plain stderr, whatever RUST_LOG says: tests and scripts read this line.
    eprintln!("{name}: listening on http://{}{path}", bound.local_addr());
    let stop = bound.shutdown_handle();
    tokio::spawn(async move {
        signal().await;
        stop.shutdown();
    });
    match bound.run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "{name} stopped");
            ExitCode::FAILURE
        }
    }
}

/// Ctrl-C, or SIGTERM on Unix (what test harnesses and process supervisors send).
async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
