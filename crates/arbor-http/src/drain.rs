//! The graceful drain of an [`HttpServer`]: [`HttpServer::shutdown_with_deadline`],
//! [`ShutdownHandle::drain`], and the ledger of admitted requests they wait for.
//!
//! Order: readiness turns 503 first (`/readyz`, `crate::health`); from then on a new
//! request or session is refused 503 with `Retry-After` (notifications and responses
//! still pass: they serve work already admitted, such as a cancel or an elicitation's
//! answer; so do resumptions with `Last-Event-ID`); every open 2026-07-28 listen ends with
//! its complete result (`Server::end_listens`); requests admitted before the drain run on
//! until the deadline, and those still running then are answered with the drain's -32603
//! (`Server::stop_requests`, the request task's own outcome, so never twice and never
//! not at all); once the ledger and the server's in-flight count are both zero, the
//! shutdown proper runs: the remaining SSE streams (legacy standalone streams, 2024-11-05
//! session streams) flush what they hold and close, sessions and endpoints close, the
//! server stops.
//!
//! It is not the shutdown itself (`server.rs`) nor the signal handling (`signal.rs`). The
//! ledger counts HTTP exchanges that carry an admitted request and have not yet handed
//! its answer on: a JSON answer returned, a 2026-07-28 SSE body that wrote its response,
//! a legacy POST stream's pump that put every answer in its buffer. A 2024-11-05 request,
//! answered on its session's stream, is counted by the server's in-flight count alone.
//!
//! Invariant: the phase only moves forward (serving → draining → drained), a request
//! admitted before `draining` is never refused, and the drain ends by its deadline plus
//! [`STOP_SLACK`] whatever a handler does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use axum::body::Body;
use axum::http::{header, HeaderValue, Response, StatusCode};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::guard::reject;
use crate::server::{HttpServer, Inner, ShutdownHandle};

/// How long past the deadline the drain waits for the stopped requests' answers to be
/// written (they are written in the poll that stops them; this bounds a starved runtime).
pub const STOP_SLACK: Duration = Duration::from_secs(1);

/// How often the drain looks whether everything admitted was answered. Answers go out as
/// each finishes; this only decides how soon after the last the shutdown proper starts.
const DRAIN_TICK: Duration = Duration::from_millis(10);

/// The `Retry-After` of a refusal during the drain: another instance is ready by then,
/// behind a balancer that read `/readyz`.
const RETRY_AFTER_SECS: u64 = 1;

/// Where a server is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    Serving,
    Draining,
    Drained,
}

/// The drain's state, shared by the handlers.
pub(crate) struct DrainState {
    phase: watch::Sender<Phase>,
    /// Admitted request exchanges whose answer has not been handed on (the ledger).
    admitted: Arc<AtomicUsize>,
}

impl DrainState {
    pub(crate) fn new() -> DrainState {
        DrainState { phase: watch::Sender::new(Phase::Serving), admitted: Arc::new(AtomicUsize::new(0)) }
    }

    /// Whether the drain has begun (readiness is 503, new work refused).
    pub(crate) fn is_draining(&self) -> bool {
        *self.phase.borrow() != Phase::Serving
    }

    /// Puts an admitted exchange in the ledger until the guard drops.
    pub(crate) fn admit(&self) -> Admitted {
        self.admitted.fetch_add(1, Ordering::AcqRel);
        Admitted(self.admitted.clone())
    }

    /// Exchanges in the ledger.
    pub(crate) fn admitted(&self) -> usize {
        self.admitted.load(Ordering::Acquire)
    }
}

/// One admitted exchange in the ledger; dropping it records that its answer was handed on
/// (or that there will be none: its client cancelled it).
pub(crate) struct Admitted(Arc<AtomicUsize>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// 503 with `Retry-After` for a request or session arriving during the drain, in the shape
/// of the runtime's other refusals (`data.reason` is `"draining"`).
pub(crate) fn refused(id: Option<RequestId>) -> Response<Body> {
    let err = McpError::Other {
        code: -32000,
        message: "Service Unavailable: the server is draining; retry on another instance".into(),
        data: Some(serde_json::json!({ "reason": "draining", "retryAfterMs": RETRY_AFTER_SECS * 1000 })),
    };
    let mut response = reject(StatusCode::SERVICE_UNAVAILABLE, &err, id);
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    response
}

/// Runs the drain (see the module): returns once everything admitted was answered, or by
/// `deadline` + [`STOP_SLACK`]. A second call waits for the first one's end.
pub(crate) async fn drain(inner: &Arc<Inner>, deadline: Duration) {
    let state = &inner.drain;
    let first = state.phase.send_if_modified(|phase| {
        let first = *phase == Phase::Serving;
        if first {
            *phase = Phase::Draining;
        }
        first
    });
    if !first {
        let mut phase = state.phase.subscribe();
        let _ = phase.wait_for(|phase| *phase == Phase::Drained).await;
        return;
    }
    let started = Instant::now();
    tracing::info!(deadline_ms = deadline.as_millis() as u64, admitted = state.admitted(), "draining");
    let server = &inner.server;
    server.end_listens();
    let stop_at = started + deadline;
    let give_up = stop_at + STOP_SLACK;
    loop {
        let now = Instant::now();
        if now >= stop_at && !server.requests_stopped() {
            server.stop_requests(deadline);
        }
        if state.admitted() == 0 && server.in_flight().await == 0 {
            break;
        }
        if now >= give_up {
            tracing::warn!(
                admitted = state.admitted(),
                "requests still unanswered past the drain deadline and its slack: shutting down anyway"
            );
            break;
        }
        let next = if now < stop_at { stop_at } else { give_up };
        tokio::time::sleep_until(next.min(now + DRAIN_TICK)).await;
    }
    tracing::info!(took_ms = started.elapsed().as_millis() as u64, "drained");
    state.phase.send_replace(Phase::Drained);
}

impl HttpServer {
    /// Drains, then shuts down (as [`HttpServer::shutdown`]): readiness turns 503, new
    /// requests and sessions are refused 503 with `Retry-After`, open 2026-07-28 listens
    /// end with their complete result, requests admitted before the call get until
    /// `deadline` and are then answered with a -32603 whose `data.reason` is `"drain"`;
    /// every admitted request gets exactly one answer. Returns once the server has
    /// stopped: within `deadline` + [`STOP_SLACK`] + twice `shutdown_grace` at most.
    /// Idempotent; a [`Bound::run`](crate::Bound::run) serving this server returns too.
    pub async fn shutdown_with_deadline(&self, deadline: Duration) {
        drain(&self.inner, deadline).await;
        self.shutdown().await;
    }

    /// Whether a drain has begun.
    pub fn is_draining(&self) -> bool {
        self.inner.drain.is_draining()
    }
}

impl ShutdownHandle {
    /// The drain of [`HttpServer::shutdown_with_deadline`], then
    /// [`ShutdownHandle::shutdown`]: [`Bound::run`](crate::Bound::run) keeps serving during
    /// the drain (answering, and refusing new work), then stops and returns. Resolves once
    /// the drain is over; spawn it to go on meanwhile.
    pub async fn drain(&self, deadline: Duration) {
        drain(&self.inner, deadline).await;
        self.shutdown();
    }
}
