//! Tasks: the 2025-11-25 experimental core tasks (`tasks/get`, `tasks/result`,
//! `tasks/list`, `tasks/cancel`, `notifications/tasks/status`) and the
//! `io.modelcontextprotocol/tasks` extension (`tasks/get`, `tasks/update`,
//! `tasks/cancel`, `notifications/tasks`, `CreateTaskResult` with `resultType: "task"`).
//!
//! One neutral type serves both where the method is shared: the 2025-11-25 members
//! (`ttl`, `pollInterval`) and the extension's (`ttlMs`, `pollIntervalMs`) are all
//! optional, and a value built with one set validates against that schema. This
//! module does not run tasks or check status transitions.
//! Invariant: `ttl`/`ttlMs` distinguish absent (`None`) from `null` (`Some(None)`).

use crate::jsonrpc::ErrorObject;
use crate::meta::Meta;
use crate::model::common::{Cursor, JsonObject, ResultType};
use crate::model::mrtr::InputRequests;
use serde::{Deserialize, Serialize};

/// A task's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for input.
    InputRequired,
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled.
    Cancelled,
}

wire_struct! {
    /// Asks for a request to run as a task (the `task` param, 2025-11-25).
    #[derive(Default)]
    pub struct TaskMetadata {
        /// How long to keep the task after it finishes, in milliseconds.
        opt ttl: i64 = "ttl",
    }
}

/// Declares a struct with the members every task shape shares, then `$rest`.
macro_rules! task_struct {
    ($(#[$attr:meta])* pub struct $name:ident { $($rest:tt)* }) => {
        wire_struct! {
            $(#[$attr])*
            pub struct $name {
                $($rest)*
                /// The task's id; unguessable.
                req task_id: String = "taskId",
                /// The task's state.
                req status: TaskStatus = "status",
                /// A human-readable status.
                opt status_message: String = "statusMessage",
                /// When the task was created (ISO 8601).
                req created_at: String = "createdAt",
                /// When the task last changed (ISO 8601).
                req last_updated_at: String = "lastUpdatedAt",
                /// Retention in milliseconds, or `null` for unlimited (2025-11-25, required there).
                nul ttl: i64 = "ttl",
                /// Retention in milliseconds, or `null` for unlimited (extension, required there).
                nul ttl_ms: i64 = "ttlMs",
                /// Suggested polling interval in milliseconds (2025-11-25).
                opt poll_interval: i64 = "pollInterval",
                /// Suggested polling interval in milliseconds (extension).
                opt poll_interval_ms: i64 = "pollIntervalMs",
                /// Outstanding input requests, when `input_required` (extension).
                opt input_requests: InputRequests = "inputRequests",
                /// The result, when `completed` (extension).
                opt result: JsonObject = "result",
                /// The JSON-RPC error, when `failed` (extension).
                opt error: ErrorObject = "error",
            }
        }
    };
}

task_struct! {
    /// A task (`Task` in 2025-11-25, `DetailedTask` in the extension).
    pub struct Task {}
}

task_struct! {
    /// The result of `tasks/get`: the task, as a result.
    pub struct GetTaskResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"complete"` in the extension; absent in 2025-11-25.
        opt result_type: ResultType = "resultType",
    }
}

task_struct! {
    /// The params of `notifications/tasks` (extension) and `notifications/tasks/status` (2025-11-25).
    pub struct TaskStatusNotificationParams {
        /// Notification metadata.
        opt meta: Meta = "_meta",
    }
}

task_struct! {
    /// A request that became a task (extension): flat, with `resultType: "task"`.
    pub struct CreateTaskResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"task"`.
        req result_type: ResultType = "resultType",
    }
}

wire_struct! {
    /// A request that became a task (2025-11-25): the task nested under `task`.
    pub struct ExperimentalCreateTaskResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// The new task.
        req task: Task = "task",
    }
}

wire_struct! {
    /// The params of `tasks/get`, `tasks/result` and `tasks/cancel`.
    #[derive(Default)]
    pub struct TaskIdParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// The task.
        req task_id: String = "taskId",
    }
}

wire_struct! {
    /// The params of `tasks/update` (extension): answers to a task's input requests.
    #[derive(Default)]
    pub struct UpdateTaskRequestParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// The task.
        req task_id: String = "taskId",
        /// Answers, by input request key; partial answers are allowed. Kept as raw JSON:
        /// the spec has servers ignore unknown and already-answered keys, so an entry
        /// that is not a valid answer must not make the whole request unreadable; the
        /// server reads the entries of the keys it asked with
        /// [`InputResponse`](crate::model::mrtr::InputResponse)'s decoder.
        req input_responses: JsonObject = "inputResponses",
    }
}

wire_struct! {
    /// The result of `tasks/cancel`: the task as it now is (2025-11-25), or an empty
    /// acknowledgement with `resultType: "complete"` (extension). The task members
    /// are therefore all optional here.
    #[derive(Default)]
    pub struct CancelTaskResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"complete"` in the extension.
        opt result_type: ResultType = "resultType",
        /// The task's id (2025-11-25).
        opt task_id: String = "taskId",
        /// The task's state (2025-11-25).
        opt status: TaskStatus = "status",
        /// A human-readable status (2025-11-25).
        opt status_message: String = "statusMessage",
        /// When the task was created (2025-11-25).
        opt created_at: String = "createdAt",
        /// When the task last changed (2025-11-25).
        opt last_updated_at: String = "lastUpdatedAt",
        /// Retention in milliseconds or `null` (2025-11-25).
        nul ttl: i64 = "ttl",
        /// Suggested polling interval (2025-11-25).
        opt poll_interval: i64 = "pollInterval",
    }
}

wire_struct! {
    /// The result of `tasks/list` (2025-11-25).
    #[derive(Default)]
    pub struct ListTasksResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// Never sent by 2025-11-25; kept for symmetry.
        opt result_type: ResultType = "resultType",
        /// The tasks on this page.
        req tasks: Vec<Task> = "tasks",
        /// Where the next page starts.
        opt next_cursor: Cursor = "nextCursor",
    }
}

wire_struct! {
    /// The result of `tasks/result` (2025-11-25): whatever the task's request would
    /// have returned, kept in `extra`.
    #[derive(Default)]
    pub struct GetTaskPayloadResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// The payload's own `resultType`, if any.
        opt result_type: ResultType = "resultType",
    }
}
