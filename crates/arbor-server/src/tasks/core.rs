//! The 2025-11-25 core tasks, served from the same store and runs as the extension:
//! task-augmented `tools/call` (`params.task`), `tasks/get`, `tasks/result`,
//! `tasks/list` and `tasks/cancel` on a legacy session.
//!
//! What differs from the extension is only the wire and the negotiation, and both live
//! here: the client asks for a task with `params.task` (the extension lets the server
//! decide), a tool's `execution.taskSupport` is enforced (-32601 when violated, as the
//! 2025-11-25 text says), the `CreateTaskResult` nests the task under `task`, the task
//! carries `ttl` and `pollInterval` (not `ttlMs`, `pollIntervalMs`), its result is fetched
//! with the blocking `tasks/result` (with the `related-task` `_meta`), and `tasks/cancel`
//! of a terminal task is -32602. A tool result with `isError: true` makes the task
//! `failed`, and `tasks/result` still returns that result (the extension keeps such a task
//! `completed`). The run is the extension's `drive` under the root `tasks` supervisor, so
//! a task outlives its request and its session, with one terminal status; it is stopped
//! shortly before its TTL (`local.rs`), failing with -32603, so the failure can be read.
//! Each status change is sent to the creating session as `notifications/tasks/status`
//! (the full task in this wire's shape, without related-task `_meta`) while it is open.
//!
//! Input during a legacy task is the legacy driver of a direct call, run by the task
//! (`legacy_input.rs`): the server→client requests carry the `related-task` `_meta`, go on
//! the stream of a `tasks/result` blocked on the task if one is open, else to the session
//! that created it, and the task is `input_required` while they wait. This module only
//! files each blocked `tasks/result` for that purpose.
//!
//! Invariant: a legacy task is created only for a request that asked for one with
//! `params.task`, on a revision with core tasks, for a tool whose policy allows tasks;
//! its TTL is the requested one clamped to [`MIN_TTL`] … [`TaskConfig::ttl`], and the
//! `CreateTaskResult` reports the TTL in force.

use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta::relate_result;
use arbor_protocol::method::encode_response;
use arbor_protocol::methods::ClientRequest;
use arbor_protocol::model::capabilities::TasksCapability;
use arbor_protocol::model::common::JsonObject;
use arbor_protocol::model::tasks::{
    CancelTaskResult, ExperimentalCreateTaskResult, GetTaskResult, ListTasksResult, Task, TaskMetadata, TaskStatus,
};
use arbor_protocol::model::tools::{CallToolRequestParams, Tool};
use arbor_protocol::version::{Feature, ProtocolVersion};
use serde_json::{json, Value};

use super::run::{drive_task, policy_of, RunInput};
use super::store::{TaskOwner, TaskRecord};
use super::TaskSupport;
use crate::connection::ConnectionHandle;
use crate::context::RequestContext;
use crate::dyn_handler::DynServerHandler;
use crate::serve::Shared;

/// The shortest TTL a task is given, whatever the client asked (a `ttl` of 0 would make
/// a task that is gone before its creator can poll it).
pub const MIN_TTL: Duration = Duration::from_secs(1);

/// Tasks per `tasks/list` page.
pub(crate) const PAGE: usize = 50;

/// Whether a legacy `tools/call` of `tool` runs as a task, from its `params.task` and the
/// tool's policy: `Ok(None)` inline, `Ok(Some(ttl))` as a task kept for `ttl` (clamped),
/// -32601 when the call violates the tool's `taskSupport`.
pub(crate) fn route_legacy_call(
    shared: &Shared,
    handler: &dyn DynServerHandler,
    tool: &str,
    task: Option<&TaskMetadata>,
    version: ProtocolVersion,
) -> Result<Option<Duration>, McpError> {
    if !version.supports(Feature::CoreTasks) || !shared.tasks.offered {
        return Ok(None);
    }
    let support = policy_of(handler, tool).support;
    match (support, task) {
        (TaskSupport::Forbidden, None) | (TaskSupport::Optional, None) => Ok(None),
        (TaskSupport::Forbidden, Some(_)) => Err(not_supported(format!(
            "Method not found: tool `{tool}` does not support task-augmented execution (execution.taskSupport is \"forbidden\")"
        ))),
        (TaskSupport::Required, None) => Err(not_supported(format!(
            "Method not found: tool `{tool}` must be called as a task (execution.taskSupport is \"required\"): send params.task"
        ))),
        (_, Some(meta)) => Ok(Some(clamp_ttl(meta.ttl, shared.tasks.config.ttl))),
    }
}

/// The `tasks` capability a 2025-11-25 session is shown when the server offers tasks:
/// `tasks/list`, `tasks/cancel`, and task-augmented `tools/call`.
pub(crate) fn core_tasks_capability() -> TasksCapability {
    let object = |v: Value| match v {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    };
    TasksCapability::default()
        .with_list(JsonObject::new())
        .with_cancel(JsonObject::new())
        .with_requests(object(json!({ "tools": { "call": {} } })))
}

/// Shows each tool's policy as `execution.taskSupport` on a 2025-11-25 `tools/list`,
/// where the handler did not set it itself.
pub(crate) fn annotate_tools(handler: &dyn DynServerHandler, tools: &mut [Tool]) {
    for tool in tools {
        if tool.execution.as_ref().is_some_and(|e| e.task_support.is_some()) {
            continue;
        }
        let support = policy_of(handler, &tool.name).support;
        if support != TaskSupport::Forbidden {
            let mut execution = tool.execution.take().unwrap_or_default();
            execution.task_support = Some(support);
            tool.execution = Some(execution);
        }
    }
}

fn not_supported(message: String) -> McpError {
    McpError::MethodNotFound { message, data: None }
}

/// The TTL a task gets for a requested `ttl` in milliseconds: absent or above `max` is
/// `max`, below [`MIN_TTL`] (0, negative) is [`MIN_TTL`].
pub(crate) fn clamp_ttl(requested: Option<i64>, max: Duration) -> Duration {
    let Some(ms) = requested else { return max };
    let asked = Duration::from_millis(ms.max(0) as u64);
    asked.clamp(MIN_TTL.min(max), max)
}

/// Creates the task for a legacy call and starts its run on `handler` (the request's):
/// the `CreateTaskResult`.
/// `session`: the requester of the `tools/call`, whose session the task's input requests
/// go to once the call has been answered.
pub(crate) async fn call_as_legacy_task(
    shared: &Arc<Shared>,
    handler: Arc<dyn DynServerHandler>,
    params: CallToolRequestParams,
    cx: &RequestContext,
    version: ProtocolVersion,
    ttl: Duration,
    session: ConnectionHandle,
) -> Result<ExperimentalCreateTaskResult, McpError> {
    let input = RunInput::Legacy(session.session());
    let entry = drive_task(shared, handler, params, cx, version, ttl, input).await?;
    Ok(ExperimentalCreateTaskResult::new(legacy(entry.view())))
}

/// The task as 2025-11-25 shows it: `ttl` and `pollInterval`, no extension members.
pub(crate) fn legacy(mut task: Task) -> Task {
    task.ttl = task.ttl_ms.take();
    task.poll_interval = task.poll_interval_ms.take();
    task.input_requests = None;
    task.result = None;
    task.error = None;
    task
}

fn owner(cx: &RequestContext) -> TaskOwner {
    TaskOwner::of(cx.connection())
}

/// `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` of a legacy session, as
/// encoded response frames. -32602 for a task this requester cannot see (unknown,
/// expired and another owner's alike), for `tasks/cancel` of a terminal task and for
/// `tasks/result` of a cancelled one; a failed task's `tasks/result` is its error.
pub(crate) async fn serve_legacy_task_method(
    shared: &Shared,
    id: &RequestId,
    request: ClientRequest,
    cx: &RequestContext,
    requester: &ConnectionHandle,
) -> Result<Vec<u8>, McpError> {
    let (tasks, owner) = (&shared.tasks, owner(cx));
    match request {
        ClientRequest::GetTask(p) => {
            let record = tasks.find(&owner, &p.task_id).await?;
            Ok(encode_response(id, &GetTaskResult::from_task(legacy(record.to_task()))))
        }
        ClientRequest::CancelTask(p) => match tasks.cancel(&owner, &p.task_id).await? {
            Ok(record) => Ok(encode_response(id, &CancelTaskResult::from_task(legacy(record.to_task())))),
            Err(terminal) => {
                let status = serde_json::to_value(terminal.status).unwrap_or(Value::Null);
                Err(McpError::invalid_params(format!("Cannot cancel task: it is already in terminal status {status}")))
            }
        },
        ClientRequest::GetTaskPayload(p) => {
            // While it waits, the task's input requests go on this request's stream (the
            // task is looked up first: only its owner's tasks/result is filed).
            tasks.find(&owner, &p.task_id).await?;
            let _waiting = shared.result_waiters.wait_on(&p.task_id, requester.clone());
            let record = tasks.store.wait(&owner, &p.task_id).await?;
            Ok(encode_response(id, &payload(record)?))
        }
        ClientRequest::ListTasks(p) => {
            let page = tasks.store.list(&owner, p.cursor.as_deref(), PAGE).await?;
            let mut result = ListTasksResult::new(page.tasks.iter().map(|r| legacy(r.to_task())).collect());
            result.next_cursor = page.next_cursor;
            Ok(encode_response(id, &result))
        }
        other => Err(McpError::method_not_found(other.method().as_str())),
    }
}

/// `tasks/result` of a terminal record: the tool's result with the `related-task`
/// `_meta` (a completed task, or one failed by `isError`), or the task's error.
fn payload(record: TaskRecord) -> Result<JsonObject, McpError> {
    let TaskRecord { id, status, result, error, .. } = record;
    match (status, result) {
        (TaskStatus::Completed, result) | (TaskStatus::Failed, result @ Some(_)) => {
            let mut result = result.unwrap_or_default();
            relate_result(&mut result, &id);
            Ok(result)
        }
        (TaskStatus::Failed, None) => {
            Err(error.map(McpError::from).unwrap_or_else(|| McpError::internal("Internal error: the task failed")))
        }
        _ => Err(McpError::invalid_params("Task was cancelled: it has no result")),
    }
}

#[cfg(test)]
mod tests {
    use super::{clamp_ttl, MIN_TTL};
    use std::time::Duration;

    #[test]
    fn ttls_are_clamped_to_the_bounds() {
        let max = Duration::from_secs(600);
        assert_eq!(clamp_ttl(None, max), max);
        assert_eq!(clamp_ttl(Some(0), max), MIN_TTL);
        assert_eq!(clamp_ttl(Some(-5), max), MIN_TTL);
        assert_eq!(clamp_ttl(Some(1_000_000_000_000), max), max);
        assert_eq!(clamp_ttl(Some(30_000), max), Duration::from_secs(30));
    }
}
