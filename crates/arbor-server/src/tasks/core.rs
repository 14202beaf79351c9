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
//! of a terminal task is -32602. The run is the extension's `drive` under the root `tasks`
//! supervisor, so a task outlives its request and its session, with one terminal status.
//!
//! Input during a legacy task is the legacy driver of a direct call, run by the task
//! (`legacy_input.rs`): the server→client requests carry the `related-task` `_meta`, go on
//! the stream of a `tasks/result` blocked on the task if one is open, else to the session
//! that created it, and the task is `input_required` while they wait. This module only
//! files each blocked `tasks/result` for that purpose. `notifications/tasks/status` are
//! not sent: they are optional; clients poll.
//!
//! Invariant: a legacy task is created only for a request that asked for one with
//! `params.task`, on a revision with core tasks, for a tool whose policy allows tasks;
//! its TTL is the requested one clamped to [`MIN_TTL`] … [`TaskConfig::ttl`], and the
//! `CreateTaskResult` reports the TTL in force.

use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta::RELATED_TASK;
use arbor_protocol::method::encode_response;
use arbor_protocol::methods::ClientRequest;
use arbor_protocol::model::capabilities::TasksCapability;
use arbor_protocol::model::common::{Cursor, JsonObject};
use arbor_protocol::model::tasks::{
    CancelTaskResult, ExperimentalCreateTaskResult, GetTaskResult, ListTasksResult, Task, TaskMetadata, TaskStatus,
};
use arbor_protocol::model::tools::{CallToolRequestParams, Tool};
use arbor_protocol::version::{Feature, ProtocolVersion};
use serde_json::{json, Value};

use super::run::{drive_task, policy_of, RunInput};
use super::store::{Entry, Owner};
use super::TaskSupport;
use crate::connection::ConnectionHandle;
use crate::context::RequestContext;
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
    tool: &str,
    task: Option<&TaskMetadata>,
    version: ProtocolVersion,
) -> Result<Option<Duration>, McpError> {
    if !version.supports(Feature::CoreTasks) || !shared.tasks.offered {
        return Ok(None);
    }
    let support = policy_of(shared, tool).support;
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
pub(crate) fn annotate_tools(shared: &Shared, tools: &mut [Tool]) {
    for tool in tools {
        if tool.execution.as_ref().is_some_and(|e| e.task_support.is_some()) {
            continue;
        }
        let support = policy_of(shared, &tool.name).support;
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

/// Creates the task for a legacy call and starts its run: the `CreateTaskResult`.
/// `session`: the requester of the `tools/call`, whose session the task's input requests
/// go to once the call has been answered.
pub(crate) fn call_as_legacy_task(
    shared: &Arc<Shared>,
    params: CallToolRequestParams,
    cx: &RequestContext,
    version: ProtocolVersion,
    ttl: Duration,
    session: ConnectionHandle,
) -> Result<ExperimentalCreateTaskResult, McpError> {
    let entry = drive_task(shared, params, cx, version, ttl, RunInput::Legacy(session.session()))?;
    Ok(ExperimentalCreateTaskResult::new(legacy(entry.view())))
}

/// The task as 2025-11-25 shows it: `ttl` and `pollInterval`, no extension members.
fn legacy(mut task: Task) -> Task {
    task.ttl = task.ttl_ms.take();
    task.poll_interval = task.poll_interval_ms.take();
    task.input_requests = None;
    task.result = None;
    task.error = None;
    task
}

fn owner(cx: &RequestContext) -> Owner {
    Owner::of(cx.connection())
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
    let (store, owner) = (&shared.tasks, owner(cx));
    match request {
        ClientRequest::GetTask(p) => {
            let entry = store.find(&owner, &p.task_id)?;
            Ok(encode_response(id, &GetTaskResult::from_task(legacy(entry.view()))))
        }
        ClientRequest::CancelTask(p) => {
            let entry = store.find(&owner, &p.task_id)?;
            if !entry.cancel() {
                let status = serde_json::to_value(entry.status()).unwrap_or(Value::Null);
                return Err(McpError::invalid_params(format!(
                    "Cannot cancel task: it is already in terminal status {status}"
                )));
            }
            Ok(encode_response(id, &CancelTaskResult::from_task(legacy(entry.view()))))
        }
        ClientRequest::GetTaskPayload(p) => {
            let entry = store.find(&owner, &p.task_id)?;
            // While it waits, the task's input requests go on this request's stream.
            let _waiting = shared.result_waiters.wait_on(&entry.id, requester.clone());
            Ok(encode_response(id, &payload(&entry).await?))
        }
        ClientRequest::ListTasks(p) => {
            let after = match p.cursor.as_deref() {
                None => None,
                Some(c) => Some(c.parse::<u64>().map_err(|_| McpError::invalid_params("Invalid cursor"))?),
            };
            let (page, next) = store.list(&owner, after, PAGE);
            let mut result = ListTasksResult::new(page.iter().map(|e| legacy(e.view())).collect());
            result.next_cursor = next.map(|n| Cursor::from(n.to_string()));
            Ok(encode_response(id, &result))
        }
        other => Err(McpError::method_not_found(other.method().as_str())),
    }
}

/// `tasks/result`: waits for the terminal status, then the tool's result with the
/// `related-task` `_meta`, or the task's error.
async fn payload(entry: &Entry) -> Result<JsonObject, McpError> {
    let (status, result, error) = entry.settled().await;
    match status {
        TaskStatus::Completed => {
            let mut result = result.unwrap_or_default();
            let meta = result.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(meta) = meta {
                meta.insert(RELATED_TASK.into(), json!({ "taskId": entry.id }));
            }
            Ok(result)
        }
        TaskStatus::Failed => {
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
