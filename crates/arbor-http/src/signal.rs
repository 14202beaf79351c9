//! Hearing Ctrl-C and SIGTERM for a server process: [`Bound::shutdown_on_signal`] and
//! [`Bound::run_until_signal`].
//!
//! It is not the shutdown itself ([`ShutdownHandle::shutdown`] is); it waits for the
//! signal on a thread of its own, with a one-thread runtime, not on the server's workers:
//! a handler that keeps every worker busy must not keep the process from hearing SIGTERM.
//!
//! With [`HttpConfig::drain_on_signal`](crate::HttpConfig#structfield.drain_on_signal)
//! the signal starts a drain instead ([`ShutdownHandle::drain`], on the server's runtime),
//! and the process has the drain's deadline and [`STOP_SLACK`](crate::STOP_SLACK) more.
//!
//! Invariant: the handlers are installed before `shutdown_on_signal` returns (a signal
//! sent after it is never missed), and a process that heard one is gone within
//! `shutdown_grace` plus [`EXIT_SLACK`] (plus the drain, if any): past that, the thread
//! exits it with status 1 (a worker stuck in a handler cannot be stopped from outside, and
//! the runtime would wait for it forever).

use std::time::Duration;

use crate::server::{Bound, ShutdownHandle};

/// How long past the shutdown grace a process may take to exit after the signal before
/// [`Bound::shutdown_on_signal`] exits it anyway.
pub const EXIT_SLACK: Duration = Duration::from_secs(5);

impl Bound {
    /// Installs Ctrl-C and SIGTERM handlers (on a thread of their own) and returns once
    /// they are: on the first signal the server shuts down gracefully (as
    /// [`ShutdownHandle::shutdown`]), and if the process is still running
    /// `shutdown_grace` + [`EXIT_SLACK`] later, it is exited with status 1. For a process
    /// whose main purpose is this server; call [`Bound::run`] afterwards.
    pub async fn shutdown_on_signal(&self) -> std::io::Result<()> {
        let config = self.server().config();
        let drain = config.drain_on_signal;
        // The drain, then `run`'s shutdown: the streams' grace and the server's stop.
        let drained = drain.map(|d| d + crate::drain::STOP_SLACK + config.shutdown_grace).unwrap_or_default();
        let deadline = config.shutdown_grace + drained + EXIT_SLACK;
        watch_signals(self.shutdown_handle(), drain, deadline).await
    }

    /// [`Bound::shutdown_on_signal`], then [`Bound::run`]: serves until Ctrl-C or SIGTERM.
    pub async fn run_until_signal(self) -> std::io::Result<()> {
        self.shutdown_on_signal().await?;
        self.run().await
    }
}

/// Starts the signal thread and returns once its handlers are installed.
async fn watch_signals(stop: ShutdownHandle, drain: Option<Duration>, deadline: Duration) -> std::io::Result<()> {
    let (installed, ready) = tokio::sync::oneshot::channel();
    // The drain runs on the server's runtime: this thread's only hears signals.
    let server_runtime = tokio::runtime::Handle::current();
    std::thread::Builder::new().name("arbor-signals".to_owned()).spawn(move || {
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
        match drain {
            Some(deadline) => {
                tracing::info!(deadline_ms = deadline.as_millis() as u64, "shutdown signal: draining");
                server_runtime.spawn(async move { stop.drain(deadline).await });
            }
            None => stop.shutdown(),
        }
        // The process normally ends long before this sleep does.
        std::thread::sleep(deadline);
        tracing::error!(seconds = deadline.as_secs(), "still running after the shutdown signal; exiting");
        eprintln!("still running {} s after the shutdown signal; exiting", deadline.as_secs());
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
