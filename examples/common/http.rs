//! Serving an example's [`Server`] over Streamable HTTP until Ctrl-C or SIGTERM, shared by
//! `demo_server` and `conformance_server` (each includes this file with `#[path]`).
//!
//! It is not the HTTP transport (`arbor_http` is); it binds, says where it listens and
//! waits for a signal. The signal is awaited on a thread of its own (with a one-thread
//! runtime), not on the server's workers: a handler that keeps every worker busy must not
//! keep the process from hearing SIGTERM, and if the graceful shutdown has not ended the
//! process within [`HttpConfig::shutdown_grace`] plus [`EXIT_SLACK`] of the signal, that
//! thread exits the process with status 1 (a worker stuck in a handler cannot be stopped
//! from outside, and the runtime would wait for it forever).
//!
//! Invariant: the bound address is printed on stderr as `<name>: listening on
//! http://ADDR/PATH` before the first request can be served and after the signal handlers
//! are installed, so a test that started the process on port 0 can read which port it
//! got and stop it with SIGTERM at once.

use std::process::ExitCode;
use std::time::Duration;

use arbor_http::{HttpConfig, HttpServer, ShutdownHandle};
use arbor_server::Server;

/// How long past the shutdown grace a process may take to exit after the signal before it
/// is exited anyway.
pub const EXIT_SLACK: Duration = Duration::from_secs(5);

/// Binds `config.bind`, prints the endpoint's URL on stderr and serves until Ctrl-C or
/// SIGTERM, then shuts down gracefully (streams end, sessions close, the server stops).
pub async fn serve(name: &str, server: Server, config: HttpConfig) -> ExitCode {
    let path = config.path.clone();
    let deadline = config.shutdown_grace + EXIT_SLACK;
    let bound = match HttpServer::with_config(server, config).bind().await {
        Ok(bound) => bound,
        Err(e) => {
            tracing::error!(error = %e, "{name}: cannot listen");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = watch_signals(name, bound.shutdown_handle(), deadline).await {
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

/// Starts the signal thread and returns once its handlers are installed: on Ctrl-C or
/// SIGTERM it asks `stop` for a graceful shutdown, and exits the process with status 1 if
/// it is still running `deadline` later.
async fn watch_signals(name: &str, stop: ShutdownHandle, deadline: Duration) -> std::io::Result<()> {
    let (installed, ready) = tokio::sync::oneshot::channel();
    let name = name.to_owned();
    std::thread::Builder::new().name("signals".to_owned()).spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime,
            Err(e) => {
                let _ = installed.send(Err(e));
                return;
            }
        };
        let heard = runtime.block_on(async move {
            match Signals::install() {
                Ok(mut signals) => {
                    let _ = installed.send(Ok(()));
                    signals.next().await;
                    true
                }
                Err(e) => {
                    let _ = installed.send(Err(e));
                    false
                }
            }
        });
        if !heard {
            return;
        }
        stop.shutdown();
        // The process normally ends long before this sleep does.
        std::thread::sleep(deadline);
        eprintln!("{name}: still running {} s after the signal; exiting", deadline.as_secs());
        std::process::exit(1);
    })?;
    ready.await.unwrap_or_else(|_| Err(std::io::Error::other("the signal thread ended")))
}

/// Ctrl-C, and SIGTERM on Unix (what test harnesses and process supervisors send),
/// installed before the first one can arrive.
struct Signals {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Signals { terminate: signal(SignalKind::terminate())?, interrupt: signal(SignalKind::interrupt())? })
        }
        #[cfg(not(unix))]
        {
            Ok(Signals {})
        }
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.terminate.recv() => {}
                _ = self.interrupt.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
