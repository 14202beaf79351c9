//! Client-hosted tasks (2025-11-25): a server may ask this client to run a sampling or
//! elicitation request as a task, when the client declared it (`capabilities.tasks`).
//!
//! Off by default: enabled by [`HostedTasks`] in [`ClientLimits::tasks`](super::ClientLimits::tasks)
//! (or [`ClientOptions::host_tasks`](crate::ClientOptions::host_tasks)), and then declared
//! only for the request kinds the handler serves. A request with `params.task` passes
//! the same admission and checks as any other (a refusal is still a JSON-RPC error, not a
//! task); it is then answered at once with a `CreateTaskResult` (`working`, an
//! unguessable id, the TTL clamped to [`HostedTasks::MIN_TTL`] … [`HostedTasks::max_ttl`] and
//! reported) while the handler runs in the background, its deadline the TTL. The server
//! follows it with `tasks/get`, the blocking `tasks/result` (the handler's answer with
//! the `related-task` `_meta`, or its JSON-RPC error), `tasks/list` (cursor-paged) and
//! `tasks/cancel` (the run stopped; -32602 for a terminal task), and may be told of each
//! change by `notifications/tasks/status`. A request without `params.task` is answered
//! as before. The 2026-07-28 era has no server→client requests, so nothing here applies
//! to it. Not here: the records themselves (`store.rs`).
//!
//! Invariant: with hosting off, the client neither declares `tasks` nor answers `tasks/*`
//! (-32601), and `params.task` is ignored (the request is answered inline).

mod store;

use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::{Message, RequestId, Response};
use arbor_protocol::methods::MethodName;
use arbor_protocol::model::capabilities::TasksCapability;
use arbor_protocol::model::common::JsonObject;
use arbor_protocol::model::tasks::{
    CancelTaskResult, ExperimentalCreateTaskResult, GetTaskResult, ListTasksResult, TaskMetadata,
};
use futures::FutureExt;
use serde_json::{json, Value};

use super::dispatch::{Declared, Prepared};
use super::error::Failure;
use super::requests::Responder;
use super::{CallLink, Era, HandlerRuntime};

pub(crate) use store::{clamp_ttl, Outbound, Store};

/// Client-hosted tasks' settings; see the module docs. Present in
/// [`ClientLimits::tasks`](super::ClientLimits::tasks) means enabled.
#[derive(Clone, Debug)]
pub struct HostedTasks {
    /// Tasks held at once, running or finished and not yet expired; beyond it a
    /// task-augmented request is refused with -32000 busy. (16)
    pub max_tasks: usize,
    /// The longest TTL granted (and the TTL when the server asks none); longer requests
    /// are clamped, and the TTL in force is reported. (1 h)
    pub max_ttl: Duration,
    /// The polling interval suggested to the server (`pollInterval`). (1 s)
    pub poll_interval: Duration,
    /// Tasks per `tasks/list` page. (50)
    pub page_size: usize,
    /// Send `notifications/tasks/status` on each change of a task. (true)
    pub notify_status: bool,
}

impl HostedTasks {
    /// The shortest TTL a hosted task is given, whatever the server asked (a `ttl` of 0
    /// would make a task gone before the server can poll it).
    pub const MIN_TTL: Duration = Duration::from_secs(1);
}

impl Default for HostedTasks {
    fn default() -> Self {
        HostedTasks {
            max_tasks: 16,
            max_ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_secs(1),
            page_size: 50,
            notify_status: true,
        }
    }
}

/// The `tasks` capability for what the handler declared: `list`, `cancel`, and the
/// request kinds it serves; `None` when it serves neither sampling nor elicitation.
pub(crate) fn capability(declared: &Declared) -> Option<TasksCapability> {
    let mut requests = JsonObject::new();
    if declared.sampling {
        requests.insert("sampling".into(), json!({ "createMessage": {} }));
    }
    if declared.elicitation.as_ref().is_some_and(|m| !m.is_empty()) {
        requests.insert("elicitation".into(), json!({ "create": {} }));
    }
    (!requests.is_empty()).then(|| {
        TasksCapability::default().with_list(JsonObject::new()).with_cancel(JsonObject::new()).with_requests(requests)
    })
}

/// The `task` a request's params ask for, if any (a `task` that is not an object of the
/// right shape is left to the params' own decoding, which refuses it).
pub(crate) fn requested(params: Option<&Value>) -> Option<TaskMetadata> {
    serde_json::from_value(params?.get("task")?.clone()).ok()
}

fn result_frame(id: RequestId, result: Value) -> Vec<u8> {
    Message::Response(Response { id, result }).to_vec()
}

fn encode<T: serde::Serialize>(value: &T) -> Result<Value, McpError> {
    serde_json::to_value(value).map_err(|e| McpError::internal(format!("Internal error: {e}")))
}

impl HandlerRuntime {
    /// The hosted-task store, when hosting is on and the handler serves something to host.
    pub(crate) fn hosted(&self) -> Option<&Arc<Store>> {
        self.inner.hosted.as_ref()
    }

    /// Runs a checked request as a task: the `CreateTaskResult`, or why not (busy).
    pub(crate) fn create_task(
        &self,
        store: &Store,
        meta: &TaskMetadata,
        prepared: Prepared,
        call: Option<Arc<dyn CallLink>>,
    ) -> Result<Value, McpError> {
        let shared = self.inner.shared.clone();
        let code = shared.limits.sampling.rejection_code;
        let entry = store.create(clamp_ttl(meta.ttl, store.config.max_ttl))?;
        // The callback sees the related call's assigns, but a task does not hold that
        // call's deadline: the server asked not to wait for the answer.
        let ctx = shared.context(Era::Legacy, call.as_ref());
        let work = async move { shared.answer(prepared, ctx, None).await }.boxed();
        let created = encode(&ExperimentalCreateTaskResult::new(entry.view()))?;
        store.spawn(&entry, work, code)?;
        Ok(created)
    }

    /// Serves the server's `tasks/get`, `tasks/result`, `tasks/list` or `tasks/cancel`
    /// about a hosted task; `tasks/result` waits on a supervised task of its own, which a
    /// `notifications/cancelled` for `id` stops.
    pub(crate) fn serve_task_method(
        &self,
        store: &Arc<Store>,
        id: RequestId,
        method: MethodName,
        params: Option<Value>,
        responder: Responder,
    ) {
        let answer = match method {
            MethodName::GetTaskPayload => match task_id(params.as_ref()).and_then(|t| store.find(&t)) {
                Ok(entry) => {
                    let wait = entry.remaining() + Duration::from_secs(1);
                    let work = entry.payload().map(|r| r.map_err(Failure::Handler)).boxed();
                    return self.spawn_on(&store.waiters, id, work, wait, responder);
                }
                Err(e) => Err(e),
            },
            MethodName::GetTask => task_id(params.as_ref())
                .and_then(|t| store.find(&t))
                .and_then(|e| encode(&GetTaskResult::from_task(e.view()))),
            MethodName::CancelTask => task_id(params.as_ref()).and_then(|t| store.find(&t)).and_then(|entry| {
                if !entry.cancel() {
                    let status = serde_json::to_value(entry.status()).unwrap_or(Value::Null);
                    return Err(McpError::invalid_params(format!(
                        "Cannot cancel task: it is already in terminal status {status}"
                    )));
                }
                encode(&CancelTaskResult::from_task(entry.view()))
            }),
            _ => list(store, params.as_ref()),
        };
        let frame = match answer {
            Ok(result) => result_frame(id, result),
            Err(error) => error.to_response(Some(id)).to_vec(),
        };
        super::requests::send(&responder, frame);
    }

    /// Where the client's own frames to the server go (task status notifications).
    pub fn set_outbound(&self, outbound: Arc<dyn Fn(Vec<u8>) + Send + Sync>) {
        if let Some(store) = self.hosted() {
            *store.announcer.outbound.write() = Some(outbound as Outbound);
        }
    }
}

fn task_id(params: Option<&Value>) -> Result<String, McpError> {
    let id = params.and_then(|p| p.get("taskId")).and_then(Value::as_str);
    id.map(str::to_owned).ok_or_else(|| McpError::invalid_params("Invalid params: taskId is required"))
}

/// `tasks/list`: one page, the cursor the creation number to continue after.
fn list(store: &Store, params: Option<&Value>) -> Result<Value, McpError> {
    let after = match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => None,
        Some(c) => Some(
            c.as_str().and_then(|c| c.parse::<u64>().ok()).ok_or_else(|| McpError::invalid_params("Invalid cursor"))?,
        ),
    };
    let (page, next) = store.list(after);
    let mut result = ListTasksResult::new(page.iter().map(|e| e.view()).collect());
    result.next_cursor = next.map(|n| n.to_string());
    encode(&result)
}
