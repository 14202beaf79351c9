//! Input during a 2025-11-25 task: the handler's `Reply::InputRequired` answered by the
//! same legacy driver as a direct call (`input::legacy::drive`), through a
//! [`TaskRequester`] that reaches the client after the `tools/call` has been answered.
//!
//! Each server→client request (`elicitation/create`, `sampling/createMessage`,
//! `roots/list`) carries `_meta["io.modelcontextprotocol/related-task"] = {taskId}`, and
//! while any is outstanding the task is `input_required` (`tasks/get`), `working` again
//! once all are answered. Where a request is written: on the stream of a `tasks/result`
//! blocked on this task if one is open (the spec's requestor calls `tasks/result` on
//! seeing `input_required`; over Streamable HTTP that is the POST's SSE stream, and the
//! answer matched by id wherever it is POSTed), else on the creating session's own output
//! if a client reads it (a byte stream always; over HTTP the standalone route while a GET
//! stream is open: `Endpoint::standalone_reader`). Otherwise the request waits, the task
//! `input_required`, until either opens: queued on the unread standalone route, it would
//! be lost to the client the spec describes, which opens `tasks/result` on seeing
//! `input_required`. The capability checks against `initialize` and the round limit are
//! the driver's, exactly as in a direct call.
//!
//! It is not the modern `tasks/update` path (`run.rs`), and holds no timer: the run's TTL
//! drops it, and dropping it forgets the requests still waiting.
//!
//! Invariant: a run never waits on a client it cannot reach: with its session closed and
//! no `tasks/result` open, the request fails at once with -32603 saying so, and a session
//! that closes while a request waits fails it the same way (its pending table is dropped).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use arbor_protocol::error::McpError;
use arbor_protocol::meta::Meta;
use arbor_protocol::model::elicitation::ElicitRequestParams;
use arbor_protocol::model::mrtr::{InputRequest, InputResponse};
use arbor_protocol::model::tools::{CallToolRequestParams, CallToolResult};
use arbor_protocol::version::ProtocolVersion;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::local::Entry;
use crate::connection::ConnectionHandle;
use crate::context::RequestContext;
use crate::dyn_handler::DynServerHandler;
use crate::input::needs::Kind;
use crate::input::{self, ClientRequester};
use crate::serve::Shared;

/// The `tasks/result` requests blocked on each task, by task id, with the handle of the
/// request that made each (its stream): where the task's input requests go first.
#[derive(Debug, Default)]
pub(crate) struct ResultWaiters {
    map: Mutex<HashMap<String, Vec<(u64, ConnectionHandle)>>>,
    next: AtomicU64,
    /// Woken (every waiter) when a `tasks/result` is filed: a parked request may go.
    filed: Notify,
}

impl ResultWaiters {
    /// Files a `tasks/result` of `task_id` reaching the client through `handle`, until the
    /// returned guard drops (the result was answered, or the request was stopped).
    pub(crate) fn wait_on(&self, task_id: &str, handle: ConnectionHandle) -> Waiting<'_> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.map.lock().entry(task_id.to_owned()).or_default().push((n, handle));
        self.filed.notify_waiters();
        Waiting { waiters: self, task_id: task_id.to_owned(), n }
    }

    /// The newest waiter of `task_id` that still reaches its client.
    fn pick(&self, task_id: &str) -> Option<ConnectionHandle> {
        let map = self.map.lock();
        map.get(task_id)?.iter().rev().find(|(_, h)| h.reaches_client()).map(|(_, h)| h.clone())
    }
}

/// A filed `tasks/result`; unfiled on drop.
pub(crate) struct Waiting<'a> {
    waiters: &'a ResultWaiters,
    task_id: String,
    n: u64,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut map = self.waiters.map.lock();
        if let Some(list) = map.get_mut(&self.task_id) {
            list.retain(|(n, _)| *n != self.n);
            if list.is_empty() {
                map.remove(&self.task_id);
            }
        }
    }
}

/// How a 2025-11-25 task's run reaches its client.
pub(crate) struct TaskRequester {
    entry: Arc<Entry>,
    /// The session that created the task, on its own output (not the finished request's).
    session: ConnectionHandle,
    waiters: Arc<ResultWaiters>,
    /// Requests sent and not yet answered (or abandoned): `input_required` while above 0.
    outstanding: AtomicUsize,
}

impl TaskRequester {
    pub(crate) fn new(entry: Arc<Entry>, session: ConnectionHandle, waiters: Arc<ResultWaiters>) -> TaskRequester {
        TaskRequester { entry, session, waiters, outstanding: AtomicUsize::new(0) }
    }

    /// Where the next request goes: a `tasks/result` stream of this task, else the
    /// session's own output if a client reads it (a byte stream always is; an endpoint's
    /// standalone route while a GET stream is open). Otherwise the request waits, with
    /// the task `input_required`, until one of those opens: a client that saw the status
    /// and opened `tasks/result` after it must not find the request queued elsewhere.
    async fn route(&self) -> Result<ConnectionHandle, McpError> {
        loop {
            let filed = self.waiters.filed.notified();
            tokio::pin!(filed);
            // Registered before looking, so a tasks/result filed in between still wakes us.
            filed.as_mut().enable();
            if let Some(waiter) = self.waiters.pick(&self.entry.id) {
                return Ok(waiter);
            }
            if !self.session.is_alive() {
                return Err(unreachable_client());
            }
            let Some(read) = self.session.standalone_read() else {
                return Ok(self.session.clone());
            };
            let changed = read.changed();
            tokio::pin!(changed);
            // Registered before looking, like `filed`.
            changed.as_mut().enable();
            if read.get() {
                return Ok(self.session.clone());
            }
            // The endpoint stopping: the liveness check above says so next.
            tokio::select! {
                _ = filed => {}
                _ = changed => {}
                _ = self.session.wait() => {}
            }
        }
    }
}

/// -32603 for input a task needs from a client it can no longer reach.
fn unreachable_client() -> McpError {
    McpError::internal(
        "Internal error: the client cannot be reached: the session that created the task is closed and no tasks/result is open",
    )
}

/// Ties `request` to `task_id` with the `related-task` `_meta`.
fn relate(mut request: InputRequest, task_id: &str) -> InputRequest {
    let meta = match &mut request {
        InputRequest::Elicit(r) => match &mut r.params {
            ElicitRequestParams::Form(p) => &mut p.meta,
            ElicitRequestParams::Url(p) => &mut p.meta,
        },
        InputRequest::CreateMessage(r) => &mut r.params.meta,
        InputRequest::ListRoots(r) => &mut r.params.get_or_insert_with(Default::default).meta,
    };
    meta.get_or_insert_with(Meta::new).set_related_task(task_id);
    request
}

impl ClientRequester for TaskRequester {
    async fn request(&self, request: InputRequest) -> Result<InputResponse, McpError> {
        let method = Kind::of_request(&request).method();
        let request = relate(request, &self.entry.id);
        // The first request outstanding makes the task `input_required`, the last one
        // answered `working` again. A request dropped unanswered (another of its round
        // failed, the run was stopped) leaves the count: the task ends right after.
        if self.outstanding.fetch_add(1, Ordering::AcqRel) == 0 {
            self.entry.set_input_required(Some(format!("Waiting for the client to answer {method}"))).await;
        }
        let answered = match self.route().await {
            Ok(handle) => match handle.request(request).await {
                // The session closed under the request: say why, not just "closed".
                Err(_) if !handle.reaches_client() && !self.session.is_alive() => Err(unreachable_client()),
                other => other,
            },
            Err(error) => Err(error),
        };
        if self.outstanding.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.entry.resume().await;
        }
        answered
    }
}

/// The legacy run of a task: `handler` (the creating request's) called as a direct call would be, its input
/// gathered through `requester`; the handler's final result, or the error that fails the
/// task.
pub(crate) async fn run(
    shared: &Shared,
    handler: &dyn DynServerHandler,
    params: CallToolRequestParams,
    cx: &RequestContext,
    version: ProtocolVersion,
    requester: &TaskRequester,
) -> Result<CallToolResult, McpError> {
    let invoke = |responses, state| {
        let call_cx = match (&responses, &state) {
            (None, None) => cx.clone(),
            _ => cx.with_input(responses, state),
        };
        handler.call_tool(Box::new(params.clone()), call_cx)
    };
    let caps = cx.client_capabilities();
    input::legacy::drive(invoke, requester, caps, version, shared.config.max_input_rounds).await
}
