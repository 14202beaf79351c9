//! The request context every handler receives.
//!
//! A [`RequestContext`] carries what a handler may know about its request and may do
//! while it runs: the request's `_meta`, who the client is and what it can do, the tenant
//! and auth identity, progress reporting, logging at the client's chosen level, a
//! cancellation signal (also as tokio-util's `CancellationToken`), the remaining
//! deadline, and (after "input required") the client's answers and the handler's own
//! state.
//!
//! It is the same type in both protocol eras: the runtime builds it from negotiated
//! session terms (legacy) or from the request's own `_meta` (2026-07-28). It is not a way
//! to send arbitrary messages: only notifications tied to this request go out through it.
//!
//! Invariant: a context can only be built by the runtime from checked terms (or detached,
//! for tests), so no handler runs before the terms of its request are known.

use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta::Meta;
use arbor_protocol::model::capabilities::ClientCapabilities;
use arbor_protocol::model::common::{Implementation, ProgressToken};
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::model::mrtr::InputResponses;
use arbor_protocol::version::{Feature, ProtocolVersion};
use parking_lot::Mutex;
use serde_json::Value;
use std::sync::atomic::{fence, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::principal::Principal;
use crate::request::sink::TaskStatusSink;
use crate::requester::Requester;

/// What is known about the connection a request arrived on.
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectionInfo {
    /// The tenant the connection belongs to (`"default"` when nothing identifies tenants).
    pub tenant: String,
    /// The authenticated identity, if the transport established one.
    pub auth: Option<String>,
    /// The verified principal of the request, when the transport verified a token: its
    /// issuer, subject, client, scopes and claims (never the token).
    pub principal: Option<Arc<Principal>>,
    /// Who sent the request, for the bounds one client may not exceed and the owner of
    /// its tasks: the principal (`auth`) when there is one, else the peer's address when
    /// the transport knows it (2026-07-28 over HTTP), else [`Requester::Unknown`].
    pub requester: Requester,
    /// The client's name and version, when the client said (`initialize` or `_meta`).
    pub client_info: Option<Implementation>,
    /// The client's capabilities for this request.
    pub client_capabilities: ClientCapabilities,
    /// The protocol revision in force. Handlers rarely need it: the runtime already
    /// adapts everything era-specific.
    pub protocol_version: ProtocolVersion,
}

/// Where a request's progress and log notifications go. Implemented by the runtime's
/// connection; a detached context sends nowhere.
pub(crate) trait RequestSink: Send + Sync + std::fmt::Debug {
    /// Sends `notifications/progress` for this request's token.
    fn progress(&self, token: &ProgressToken, progress: f64, total: Option<f64>, message: Option<String>);
    /// Sends `notifications/message`.
    fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value);
    /// Where a task this request creates sends `notifications/tasks/status` (2025-11-25):
    /// the connection's standalone output, as the task outlives the request's route.
    fn task_status_sink(&self) -> Option<TaskStatusSink>;
}

/// Whether a request is still running, shared by every context built for it and by the
/// runtime's guard in the request task. The runtime stops a request by dropping its
/// future, so the signal only has to reach clones of the context that outlive it
/// (spawned helpers, blocking work, libraries handed its token). Two parts, because a
/// request ends in one of two ways: `state` says which (one atomic, read on every
/// progress or log send), and `stopped` is tokio-util's token, cancelled on a stop and
/// never on a finish, so what waits on it wakes only when the work is no longer wanted.
/// The token is made the first time something asks for it: most requests never do, and
/// making and dropping one costs about 300 instructions and an allocation per request
/// (callgrind, `docs/benchmarks.md`). Per request: this allocation, no channel.
///
/// It also carries the request's span from a job stopped unfinished to the task's report
/// (`kept`): the report records there why the request failed (a panic, the deadline),
/// after the work, which owned the span, was dropped. A report holding a handle of its
/// own instead cost a clone and a close of the span, about 250 instructions per request
/// with a subscriber, for the rare request that needs it.
#[derive(Debug, Default)]
pub(crate) struct RequestSignal {
    state: AtomicU8,
    stopped: OnceLock<CancellationToken>,
    /// Whether the request has a span a subscriber wants: only then is one kept.
    traced: bool,
    kept: Mutex<Option<tracing::Span>>,
}

const RUNNING: u8 = 0;
const FINISHED: u8 = 1;
const STOPPED: u8 = 2;

impl RequestSignal {
    /// The signal of a request whose span is `span`.
    pub(crate) fn for_span(span: &tracing::Span) -> RequestSignal {
        RequestSignal { traced: !span.is_disabled(), ..RequestSignal::default() }
    }

    /// The request answered: nothing more may be sent for it, and it is not cancelled.
    pub(crate) fn finish(&self) {
        let _ = self.state.compare_exchange(RUNNING, FINISHED, Ordering::AcqRel, Ordering::Acquire);
    }

    /// The request was stopped before it answered (cancelled, timed out, shut down).
    pub(crate) fn stop(&self) {
        if self.state.compare_exchange(RUNNING, STOPPED, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            // Pairs with the fence in `token`: of a stop and a first use racing, at least
            // one sees the other, so a token made during the stop is still cancelled.
            fence(Ordering::SeqCst);
            if let Some(token) = self.stopped.get() {
                token.cancel();
            }
        }
    }

    /// The request's token, made on first use; cancelled if the request already stopped.
    fn token(&self) -> &CancellationToken {
        let token = self.stopped.get_or_init(CancellationToken::new);
        fence(Ordering::SeqCst);
        if self.state.load(Ordering::SeqCst) == STOPPED {
            // The stop may have run before the token existed; cancelling twice is harmless.
            token.cancel();
        }
        token
    }

    fn is_running(&self) -> bool {
        self.state.load(Ordering::Acquire) == RUNNING
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.state.load(Ordering::Acquire) == STOPPED
    }

    /// Whether the request has a span a subscriber wants (see `kept`).
    pub(crate) fn is_traced(&self) -> bool {
        self.traced
    }

    /// Keeps the current span, the request's for a job stopped unfinished inside it, for
    /// the task's report; nothing if the request's span is not wanted (the current one is
    /// then another's, its connection's).
    pub(crate) fn keep_current_span(&self) {
        if self.traced {
            *self.kept.lock() = Some(tracing::Span::current());
        }
    }

    /// The span a stopped job kept, if any; the span ends when the caller drops it.
    pub(crate) fn take_span(&self) -> Option<tracing::Span> {
        self.kept.lock().take()
    }
}

/// The context of one request. Cheap to clone.
#[derive(Clone, Debug)]
pub struct RequestContext {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    id: RequestId,
    meta: Meta,
    connection: Arc<ConnectionInfo>,
    progress_token: Option<ProgressToken>,
    log_level: Option<LoggingLevel>,
    deadline: Option<Instant>,
    signal: Arc<RequestSignal>,
    input_responses: Option<InputResponses>,
    input_state: Option<Value>,
    sink: Option<Arc<dyn RequestSink>>,
}

/// The parts the runtime fills in to build a [`RequestContext`].
#[derive(Debug)]
pub(crate) struct ContextParts {
    pub(crate) id: RequestId,
    /// The request's `_meta`, moved out of its params (so `params.meta` is `None` in
    /// what the handler gets; this is where it reads `_meta`).
    pub(crate) meta: Meta,
    /// Shared by every request of a legacy session.
    pub(crate) connection: Arc<ConnectionInfo>,
    pub(crate) progress_token: Option<ProgressToken>,
    /// The lowest level the client wants to see; `None` means send no logs.
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) signal: Arc<RequestSignal>,
    pub(crate) input_responses: Option<InputResponses>,
    pub(crate) input_state: Option<Value>,
    pub(crate) sink: Option<Arc<dyn RequestSink>>,
}

impl RequestContext {
    /// Built by the runtime once a request's terms are checked.
    pub(crate) fn from_parts(parts: ContextParts) -> Self {
        let ContextParts {
            id,
            meta,
            connection,
            progress_token,
            log_level,
            deadline,
            signal,
            input_responses,
            input_state,
            sink,
        } = parts;
        RequestContext {
            inner: Arc::new(Inner {
                id,
                meta,
                connection,
                progress_token,
                log_level,
                deadline,
                signal,
                input_responses,
                input_state,
                sink,
            }),
        }
    }

    /// A context attached to no connection, for calling handlers directly in tests:
    /// progress and logs go nowhere, it is never cancelled and has no deadline.
    pub fn detached(connection: ConnectionInfo) -> Self {
        RequestContext::from_parts(ContextParts {
            id: RequestId::from(0),
            meta: Meta::new(),
            connection: Arc::new(connection),
            progress_token: None,
            log_level: None,
            deadline: None,
            signal: Arc::default(),
            input_responses: None,
            input_state: None,
            sink: None,
        })
    }

    /// The request's id (scoped to its connection).
    pub fn request_id(&self) -> &RequestId {
        &self.inner.id
    }

    /// The request's `_meta`, with every key the client sent.
    pub fn meta(&self) -> &Meta {
        &self.inner.meta
    }

    /// The connection: tenant, auth identity, client info and capabilities.
    pub fn connection(&self) -> &ConnectionInfo {
        &self.inner.connection
    }

    /// Who sent the request, when the transport verified an access token (OAuth over
    /// HTTP): issuer, subject, client, scopes and claims. Never the token itself: a
    /// handler that calls another service gets its own token for it. `None` on stdio
    /// and on HTTP without authentication.
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.connection.principal.as_deref()
    }

    /// The client's capabilities for this request.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.connection.client_capabilities
    }

    /// Reports progress, if the client asked for it (a `progressToken` in `_meta`);
    /// otherwise does nothing. Nothing is sent once the request has answered or was
    /// stopped: the spec allows progress only for active requests.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let (Some(token), Some(sink)) = (&self.inner.progress_token, &self.inner.sink) {
            if self.inner.signal.is_running() {
                // 2024-11-05 has no progress message.
                let version = self.inner.connection.protocol_version;
                let message = message.filter(|_| version.supports(Feature::ProgressMessage));
                sink.progress(token, progress, total, message);
            }
        }
    }

    /// Whether progress notifications reach the client.
    pub fn wants_progress(&self) -> bool {
        self.inner.progress_token.is_some()
    }

    /// Sends a log message if `level` is at or above the level the client chose
    /// (legacy `logging/setLevel`, or the request's `logLevel` in 2026-07-28).
    pub fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        if let (Some(min), Some(sink)) = (self.inner.log_level, &self.inner.sink) {
            if level >= min && self.inner.signal.is_running() {
                sink.log(level, logger, data);
            }
        }
    }

    /// Whether the request was stopped before it answered: cancelled by the client, past
    /// its deadline, or its connection closed. The runtime also drops the handler's future
    /// then; this is for work the handler handed elsewhere (spawned tasks, blocking code).
    pub fn is_cancelled(&self) -> bool {
        self.inner.signal.is_stopped()
    }

    /// Resolves when the request is stopped (see [`RequestContext::is_cancelled`]); never
    /// resolves for a request that answers normally.
    pub async fn cancelled(&self) {
        self.inner.signal.token().cancelled().await
    }

    /// The request's cancellation as tokio-util's [`CancellationToken`], for code that
    /// takes one (`token.run_until_cancelled(fut)`, `tokio::select!` on
    /// `token.cancelled()`, a library's cancel parameter). It is cancelled exactly when
    /// [`RequestContext::cancelled`] resolves: when the request is stopped, never after a
    /// normal answer. It is a child of the request's own token, so cancelling it stops only
    /// what it was given to, not the request.
    ///
    /// ```
    /// # async fn handler(cx: arbor_server::RequestContext) -> Option<u64> {
    /// // Work handed elsewhere stops with the request, and yields `None` then.
    /// let token = cx.cancellation_token();
    /// tokio::spawn(async move { token.run_until_cancelled(async { 42 }).await }).await.ok()?
    /// # }
    /// ```
    pub fn cancellation_token(&self) -> CancellationToken {
        self.inner.signal.token().child_token()
    }

    /// The request's signal: the task's guard marks it finished or stopped.
    pub(crate) fn signal(&self) -> &Arc<RequestSignal> {
        &self.inner.signal
    }

    /// A context for calling the same handler again with the client's answers to its
    /// input requests (legacy era): same request, same signal, new input.
    pub(crate) fn with_input(&self, responses: Option<InputResponses>, state: Option<Value>) -> RequestContext {
        let i = &self.inner;
        RequestContext::from_parts(ContextParts {
            id: i.id.clone(),
            meta: i.meta.clone(),
            connection: i.connection.clone(),
            progress_token: i.progress_token.clone(),
            log_level: i.log_level,
            deadline: i.deadline,
            signal: i.signal.clone(),
            input_responses: responses,
            input_state: state,
            sink: i.sink.clone(),
        })
    }

    /// A context for the same call run as a task (`crate::tasks`): same request, client
    /// and `_meta`, but the task's own signal and deadline, and no progress or log
    /// notifications (the tasks extension sends none for tasks).
    pub(crate) fn for_task(&self, deadline: Instant, signal: Arc<RequestSignal>) -> RequestContext {
        let i = &self.inner;
        RequestContext::from_parts(ContextParts {
            id: i.id.clone(),
            meta: i.meta.clone(),
            connection: i.connection.clone(),
            progress_token: None,
            log_level: None,
            deadline: Some(deadline),
            signal,
            input_responses: None,
            input_state: None,
            sink: None,
        })
    }

    /// Where a task this request creates tells its session of status changes.
    pub(crate) fn task_status_sink(&self) -> Option<TaskStatusSink> {
        self.inner.sink.as_ref().and_then(|s| s.task_status_sink())
    }

    /// The instant the request will be stopped, if it has a deadline.
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.deadline
    }

    /// Time left before the deadline, if there is one.
    pub fn remaining(&self) -> Option<Duration> {
        self.inner.deadline.map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// The client's answers to this handler's earlier input requests, by key.
    pub fn input_responses(&self) -> Option<&InputResponses> {
        self.inner.input_responses.as_ref()
    }

    /// The state this handler returned with its input requests, verified untampered.
    pub fn input_state(&self) -> Option<&Value> {
        self.inner.input_state.as_ref()
    }
}

#[cfg(test)]
mod tests {
    //! The lazily made token: cancelled whether it is first asked for before or after the
    //! stop, never after a finish.
    use super::RequestSignal;

    #[test]
    fn a_token_made_after_the_stop_is_cancelled() {
        let signal = RequestSignal::default();
        signal.stop();
        assert!(signal.token().is_cancelled());
    }

    #[test]
    fn a_token_made_before_the_stop_is_cancelled_by_it() {
        let signal = RequestSignal::default();
        let child = signal.token().child_token();
        assert!(!child.is_cancelled());
        signal.stop();
        assert!(child.is_cancelled());
    }

    #[test]
    fn a_finished_request_is_never_cancelled() {
        let signal = RequestSignal::default();
        signal.finish();
        signal.stop();
        assert!(!signal.token().is_cancelled());
        assert!(!signal.is_stopped());
    }

    #[test]
    fn a_stop_racing_the_first_use_always_reaches_the_token() {
        for _ in 0..2_000 {
            let signal = std::sync::Arc::new(RequestSignal::default());
            let stopper = {
                let signal = signal.clone();
                std::thread::spawn(move || signal.stop())
            };
            let token = signal.token().clone();
            stopper.join().unwrap();
            assert!(token.is_cancelled());
        }
    }

    #[test]
    fn only_a_traced_requests_signal_keeps_the_current_span_and_once() {
        tracing::subscriber::with_default(tracing_subscriber::registry(), || {
            let outer = tracing::info_span!("outer");
            let _entered = outer.enter();
            // A request whose own span is not wanted: the current span is someone else's.
            let untraced = RequestSignal::for_span(&tracing::Span::none());
            untraced.keep_current_span();
            assert!(untraced.take_span().is_none());
            let traced = RequestSignal::for_span(&outer);
            traced.keep_current_span();
            assert_eq!(traced.take_span().and_then(|span| span.id()), outer.id());
            assert!(traced.take_span().is_none(), "taken once");
        });
    }
}
