//! Legacy era: a server→client JSON-RPC request (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`, `ping`) answered from a supervised task.
//!
//! `serve_request` returns at once. Refusals that need no callback (unknown method,
//! undeclared capability, over budget, bad params, failed checks, a duplicate id, over
//! `max_server_requests`) are answered right away; the rest run on the runtime's
//! `arbor_otp::TaskSupervisor` with the kind's deadline, and the task's outcome becomes the
//! answer: a result, the handler's error, -32603 on a timeout or a panic, nothing when
//! the server cancelled it or the runtime shut down. Not here: what the checks are
//! (`safety/`, `dispatch.rs`).
//!
//! Invariant: `respond` is called at most once per request, and exactly once unless the
//! request was cancelled or the runtime shut down.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use arbor_otp::{SpawnError, TaskOptions, TaskOutcome, TaskSupervisor};
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::{Message, RequestId, Response};
use arbor_protocol::methods::MethodName;
use futures::future::BoxFuture;
use futures::FutureExt;
use parking_lot::Mutex;
use serde_json::{json, Value};

use super::dispatch::{decode, Prepared};
use super::error::{Failure, InputKind};
use super::runtime::Running;
use super::{CallLink, Era, HandlerRuntime};

/// Where the one answer of a request goes; taken by whichever side answers first.
pub(crate) type Responder = Arc<Mutex<Option<Box<dyn FnOnce(Vec<u8>) + Send>>>>;

pub(crate) fn send(responder: &Responder, frame: Vec<u8>) {
    let respond = responder.lock().take();
    if let Some(respond) = respond {
        respond(frame);
    }
}

fn result_frame(id: RequestId, result: Value) -> Vec<u8> {
    Message::Response(Response { id, result }).to_vec()
}

fn error_frame(id: RequestId, error: &McpError) -> Vec<u8> {
    error.to_response(Some(id)).to_vec()
}

impl HandlerRuntime {
    /// Serves a legacy server→client request; see the module docs. `call` is the in-flight
    /// call it belongs to (its related request id, or on stdio the single call in flight):
    /// its deadline is paused while the callback runs and the callback sees its assigns.
    /// `respond` gets the complete JSON-RPC response frame (with `id`).
    pub fn serve_request(
        &self,
        id: RequestId,
        method: &str,
        params: Option<Value>,
        call: Option<Arc<dyn CallLink>>,
        respond: Box<dyn FnOnce(Vec<u8>) + Send>,
    ) {
        let shared = &self.inner.shared;
        let code = shared.limits.sampling.rejection_code;
        if method == MethodName::Ping.as_str() {
            return respond(result_frame(id, json!({})));
        }
        if self.inner.running.lock().contains_key(&id) {
            let error = McpError::InvalidRequest { message: format!("Duplicate request id {id}"), data: None };
            return respond(error_frame(id, &error));
        }
        let task_method = MethodName::parse(method).filter(|m| {
            matches!(
                m,
                MethodName::GetTask | MethodName::GetTaskPayload | MethodName::ListTasks | MethodName::CancelTask
            )
        });
        if let (Some(store), Some(task_method)) = (self.hosted(), task_method) {
            let store = store.clone();
            return self.serve_task_method(&store, id, task_method, params, Arc::new(Mutex::new(Some(respond))));
        }
        let Some(kind) = InputKind::from_method(method) else {
            return respond(error_frame(id, &Failure::UnknownMethod(method.to_owned()).to_mcp_error(code)));
        };
        // Only sampling and elicitation may run as tasks (`capabilities.tasks.requests`).
        let task = match self.hosted() {
            Some(_) if kind != InputKind::Roots => super::hosted::requested(params.as_ref()),
            _ => None,
        };
        let idle = kind == InputKind::Sampling && shared.idle(call.is_some());
        let prepared = shared.admit(kind).and_then(|()| decode(kind, params)).and_then(|i| shared.prepare(i, idle));
        let prepared = match prepared {
            Ok(prepared) => prepared,
            Err(failure) => {
                tracing::debug!(server = %shared.server_id, %method, ?failure, "server request refused");
                return respond(error_frame(id, &failure.to_mcp_error(code)));
            }
        };
        if let (Some(store), Some(task)) = (self.hosted(), task) {
            let frame = match self.create_task(store, &task, prepared, call) {
                Ok(created) => result_frame(id, created),
                Err(error) => error_frame(id, &error),
            };
            return respond(frame);
        }
        self.spawn(id, prepared, call, Arc::new(Mutex::new(Some(respond))));
    }

    fn spawn(&self, id: RequestId, prepared: Prepared, call: Option<Arc<dyn CallLink>>, responder: Responder) {
        let shared = self.inner.shared.clone();
        let timeout = shared.timeout_for(prepared.kind());
        let ctx = shared.context(Era::Legacy, call.as_ref());
        let work = async move { shared.answer(prepared, ctx, call).await }.boxed();
        self.spawn_on(&self.inner.tasks, id, work, timeout, responder);
    }

    /// Runs `work` for request `id` on `tasks` with `timeout` as its deadline, recorded
    /// in the running table (so the server can cancel it); its outcome is the answer.
    pub(crate) fn spawn_on(
        &self,
        tasks: &TaskSupervisor,
        id: RequestId,
        work: BoxFuture<'static, Result<Value, Failure>>,
        timeout: std::time::Duration,
        responder: Responder,
    ) {
        let shared = &self.inner.shared;
        let code = shared.limits.sampling.rejection_code;
        let seq = self.inner.next_seq.fetch_add(1, Ordering::Relaxed);
        let report = {
            let (id, responder, running) = (id.clone(), responder.clone(), self.inner.running.clone());
            let server = shared.server_id.clone();
            move |outcome: TaskOutcome<Value, Failure>| {
                forget(&running, &id, seq);
                let frame = match outcome {
                    TaskOutcome::Completed(result) => result_frame(id, result),
                    TaskOutcome::Failed(failure) => error_frame(id, &failure.to_mcp_error(code)),
                    TaskOutcome::Panicked(message) => {
                        tracing::error!(%server, %id, %message, "client handler panicked");
                        error_frame(id, &Failure::Panicked(message).to_mcp_error(code))
                    }
                    TaskOutcome::TimedOut => {
                        tracing::warn!(%server, %id, ?timeout, "client handler timed out");
                        error_frame(id, &Failure::TimedOut(timeout).to_mcp_error(code))
                    }
                    // The server withdrew it, or the connection is closing: nothing to say.
                    TaskOutcome::Cancelled | TaskOutcome::Shutdown => return,
                };
                send(&responder, frame);
            }
        };
        match tasks.spawn_reporting(TaskOptions::deadline(timeout), work, report) {
            Ok(task) => {
                self.inner.running.lock().insert(id.clone(), (seq, task.clone()));
                // A task that finished before it was recorded has already reported: forget it now.
                if task.is_finished() {
                    forget(&self.inner.running, &id, seq);
                }
            }
            Err(SpawnError::Overloaded { max }) => {
                tracing::debug!(server = %shared.server_id, %id, max, "server request refused: busy");
                let error = McpError::Other {
                    code: -32000,
                    message: "Client busy".to_owned(),
                    data: Some(json!({"reason": "busy", "limit": max})),
                };
                send(&responder, error_frame(id, &error));
            }
            Err(SpawnError::ShuttingDown) => {
                send(&responder, error_frame(id, &McpError::internal("Client is shutting down")));
            }
        }
    }

    /// The server's `notifications/cancelled` for a request it sent: stops that task; the
    /// request is not answered. Unknown or finished ids are ignored.
    pub fn cancel(&self, id: &RequestId) {
        let task = self.inner.running.lock().get(id).map(|(_, t)| t.clone());
        if let Some(task) = task {
            let _ = task.cancel();
        }
    }
}

/// Removes `id` from the running table if it is still this task's entry.
fn forget(running: &Running, id: &RequestId, seq: u64) {
    let mut running = running.lock();
    if running.get(id).is_some_and(|(s, _)| *s == seq) {
        running.remove(id);
    }
}
