//! The server's drain: [`Server::end_listens`] and [`Server::stop_requests_after`], the two
//! steps a transport takes (after it stops admitting work) so that everything admitted
//! ends with exactly one answer.
//!
//! What it is: one shared signal per server, read by every request task and every
//! subscription stream. Ending the listens makes each 2026-07-28 listen end as a handler's
//! `Stop` would: its complete result, the handlers' `handle_close`. Stopping the requests
//! makes each request task still running at the deadline complete with the drain error
//! instead of its handler's result: the error is the task's own outcome, written by its
//! report like any answer, so a request cannot be answered twice (by its handler and by
//! the drain) nor not at all. What it is not: admission control (the transport refuses new
//! work; a request submitted during the drain is served and, past the deadline, stopped
//! at once) nor the shutdown (`Server::shutdown` still stops the tree afterwards).
//!
//! Invariant: each signal flips once and never back; a request or stream started after a
//! flip sees it at its first poll.

use std::future::Future;
use std::time::Duration;

use arbor_protocol::error::McpError;
use tokio::sync::watch;

use crate::serve::Server;

/// The drain's two flips, shared by a server's request tasks and streams.
#[derive(Debug)]
pub(crate) struct DrainSignal {
    /// `true` once listens are to end with their complete result.
    listens: watch::Sender<bool>,
    /// The drain's length once its deadline has passed: requests still running stop.
    stopped: watch::Sender<Option<Duration>>,
}

impl DrainSignal {
    pub(crate) fn new() -> DrainSignal {
        DrainSignal { listens: watch::Sender::new(false), stopped: watch::Sender::new(None) }
    }

    /// Resolves once listens are to end; never before.
    pub(crate) fn listens_ended(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.listens.subscribe();
        async move {
            let ended = rx.wait_for(|ended| *ended).await.is_ok();
            if !ended {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Resolves with the error a request still running at the drain deadline is answered
    /// with; never before the deadline.
    pub(crate) fn requests_stopped(&self) -> impl Future<Output = McpError> + Send + 'static {
        let mut rx = self.stopped.subscribe();
        async move {
            // The `Ref` is dropped before any await: it holds the channel's lock.
            let timeout = rx.wait_for(Option::is_some).await.ok().map(|timeout| timeout.unwrap_or_default());
            match timeout {
                Some(timeout) => drain_stopped(timeout),
                None => std::future::pending().await,
            }
        }
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopped.borrow().is_some()
    }
}

/// -32603 for a request still running when the drain deadline passed: the server is going
/// away; the data says why, so the client can retry elsewhere, knowing the work may have
/// been partly done.
pub(crate) fn drain_stopped(timeout: Duration) -> McpError {
    let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    McpError::Internal {
        message: format!(
            "Server draining: this request was still running when the {ms} ms drain deadline passed; it was \
             stopped and may have been partly done; retry on another instance"
        ),
        data: Some(serde_json::json!({ "reason": "drain", "drainTimeoutMs": ms })),
    }
}

impl Server {
    /// Ends every open 2026-07-28 listen (and every one opened from now on, right after
    /// its acknowledgement) with its complete result, as a handler's `Stop` would: the
    /// client learns the stream ended on purpose and may listen again elsewhere. Legacy
    /// resource subscriptions are not touched (they end with their session). Idempotent.
    pub fn end_listens(&self) {
        self.shared.drain.listens.send_replace(true);
    }

    /// The drain's deadline: every request still running now (and any started later) is
    /// stopped and answered with a -32603 whose `data.reason` is `"drain"`
    /// (`drainTimeoutMs` is `drain`, the length the message names). Requests that finished
    /// were answered by their handlers; none is answered twice. Idempotent: the first
    /// call's length is kept.
    pub fn stop_requests(&self, drain: Duration) {
        self.shared.drain.stopped.send_if_modified(|stopped| {
            let first = stopped.is_none();
            if first {
                *stopped = Some(drain);
            }
            first
        });
    }

    /// [`Server::end_listens`] now, then [`Server::stop_requests`] once `deadline` has
    /// passed (on a task of its own), the drain of a server whose transport has stopped
    /// admitting work. Returns at once.
    pub fn start_drain(&self, deadline: Duration) {
        self.end_listens();
        let server = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(deadline).await;
            server.stop_requests(deadline);
        });
    }

    /// Whether [`Server::stop_requests`] was called.
    pub fn requests_stopped(&self) -> bool {
        self.shared.drain.is_stopping()
    }

    /// Requests running now, over every tenant (tasks of the tasks extension excluded):
    /// a drain is complete when this is zero.
    pub async fn in_flight(&self) -> usize {
        match self.tree.get() {
            Some(tree) => tree.in_flight().await,
            None => 0,
        }
    }

    /// Live: the supervision tree is up (or not started yet: it starts with the first
    /// connection). `false` once the root supervisor has stopped, after
    /// [`Server::shutdown`] or because it gave up.
    pub fn is_live(&self) -> bool {
        self.tree.get().is_none_or(|tree| tree.is_alive())
    }
}
