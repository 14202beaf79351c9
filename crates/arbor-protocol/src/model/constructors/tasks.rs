//! Constructors for tasks: the 2025-11-25 experimental core tasks and the
//! `io.modelcontextprotocol/tasks` extension (see the parent module).
//!
//! [`Task`] is built with `new` and the task setters; the three shapes that repeat a
//! task's members (`GetTaskResult`, `TaskStatusNotificationParams`, `CreateTaskResult`)
//! are built from a `Task` with `from_task`, which moves its members (no clone). The
//! nullable retention members take an `Option`: `with_ttl_ms(60_000)` is a limit,
//! `with_ttl_ms(None)` is `null` (unlimited).
//!
//! ```
//! use arbor_protocol::model::tasks::{CreateTaskResult, Task, TaskStatus};
//!
//! let task = Task::new("t-1", TaskStatus::Working, "2025-01-12T15:00:58Z", "2025-01-12T15:00:58Z")
//!     .with_ttl_ms(None)
//!     .with_poll_interval_ms(1000);
//! let created = CreateTaskResult::from_task(task);
//! let json = serde_json::to_value(&created).unwrap();
//! assert_eq!(json["resultType"], "task");
//! assert!(json["ttlMs"].is_null());
//! ```

use crate::jsonrpc::ErrorObject;
use crate::meta::Meta;
use crate::model::common::{Cursor, JsonObject, ResultType};
use crate::model::mrtr::InputRequests;
use crate::model::tasks::{
    CancelTaskResult, CreateTaskResult, ExperimentalCreateTaskResult, GetTaskPayloadResult, GetTaskResult,
    ListTasksResult, Task, TaskIdParams, TaskMetadata, TaskStatus, TaskStatusNotificationParams,
    UpdateTaskRequestParams,
};

setters!(TaskMetadata {
    /// How long to keep the task after it finishes, in milliseconds.
    with_ttl => ttl: i64,
});

/// The setters of the members every task shape shares.
macro_rules! task_setters {
    ($($ty:ty),*) => {$(
        setters!($ty {
            /// A human-readable status.
            with_status_message => status_message: String,
            /// Retention in milliseconds, or `None` for `null` (unlimited) (2025-11-25).
            with_ttl => ttl: Option<i64>,
            /// Retention in milliseconds, or `None` for `null` (unlimited) (extension).
            with_ttl_ms => ttl_ms: Option<i64>,
            /// Suggested polling interval in milliseconds (2025-11-25).
            with_poll_interval => poll_interval: i64,
            /// Suggested polling interval in milliseconds (extension).
            with_poll_interval_ms => poll_interval_ms: i64,
            /// Outstanding input requests, when `input_required` (extension).
            with_input_requests => input_requests: InputRequests,
            /// The result, when `completed` (extension).
            with_result => result: JsonObject,
            /// The JSON-RPC error, when `failed` (extension).
            with_error => error: ErrorObject,
        });
    )*};
}

task_setters!(Task, GetTaskResult, TaskStatusNotificationParams, CreateTaskResult);

impl Task {
    /// The task `task_id`, now `status`, created and last changed at these ISO 8601 times.
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        last_updated_at: impl Into<String>,
    ) -> Self {
        Task {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: created_at.into(),
            last_updated_at: last_updated_at.into(),
            ttl: None,
            ttl_ms: None,
            poll_interval: None,
            poll_interval_ms: None,
            input_requests: None,
            result: None,
            error: None,
            extra: Default::default(),
        }
    }
}

/// `from_task` for a shape that repeats a task's members, with its own members set.
macro_rules! from_task {
    ($ty:ident { $($own:ident: $value:expr),* }) => {
        impl $ty {
            /// This shape of `task`, whose members (and unknown members) it takes over.
            pub fn from_task(task: Task) -> Self {
                $ty {
                    $($own: $value,)*
                    task_id: task.task_id,
                    status: task.status,
                    status_message: task.status_message,
                    created_at: task.created_at,
                    last_updated_at: task.last_updated_at,
                    ttl: task.ttl,
                    ttl_ms: task.ttl_ms,
                    poll_interval: task.poll_interval,
                    poll_interval_ms: task.poll_interval_ms,
                    input_requests: task.input_requests,
                    result: task.result,
                    error: task.error,
                    extra: task.extra,
                }
            }
        }
    };
}

from_task!(GetTaskResult { meta: None, result_type: None });
from_task!(TaskStatusNotificationParams { meta: None });
from_task!(CreateTaskResult { meta: None, result_type: ResultType::Task });

setters!(GetTaskResult {
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` in the extension; absent in 2025-11-25.
    with_result_type => result_type: ResultType,
});

setters!(TaskStatusNotificationParams {
    /// Notification metadata.
    with_meta => meta: Meta,
});

setters!(CreateTaskResult {
    /// Result metadata.
    with_meta => meta: Meta,
});

impl ExperimentalCreateTaskResult {
    /// A request that became `task` (2025-11-25).
    pub fn new(task: Task) -> Self {
        ExperimentalCreateTaskResult { meta: None, task, extra: Default::default() }
    }
}

setters!(ExperimentalCreateTaskResult {
    /// Result metadata.
    with_meta => meta: Meta,
});

impl TaskIdParams {
    /// The params naming the task `task_id`.
    pub fn new(task_id: impl Into<String>) -> Self {
        TaskIdParams { task_id: task_id.into(), ..Default::default() }
    }
}

setters!(TaskIdParams {
    /// Request metadata.
    with_meta => meta: Meta,
});

impl UpdateTaskRequestParams {
    /// Answers `input_responses` (by input request key) to the task `task_id` (extension).
    pub fn new(task_id: impl Into<String>, input_responses: JsonObject) -> Self {
        UpdateTaskRequestParams { task_id: task_id.into(), input_responses, ..Default::default() }
    }
}

setters!(UpdateTaskRequestParams {
    /// Request metadata.
    with_meta => meta: Meta,
});

impl CancelTaskResult {
    /// The extension's acknowledgement: no task members, `resultType: "complete"`.
    pub fn complete() -> Self {
        CancelTaskResult { result_type: Some(ResultType::Complete), ..Default::default() }
    }

    /// The 2025-11-25 answer: `task` as it now is, with the members that revision has.
    pub fn from_task(task: Task) -> Self {
        CancelTaskResult {
            meta: None,
            result_type: None,
            task_id: Some(task.task_id),
            status: Some(task.status),
            status_message: task.status_message,
            created_at: Some(task.created_at),
            last_updated_at: Some(task.last_updated_at),
            ttl: task.ttl,
            poll_interval: task.poll_interval,
            extra: Default::default(),
        }
    }
}

setters!(CancelTaskResult {
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` in the extension.
    with_result_type => result_type: ResultType,
});

impl ListTasksResult {
    /// One page of tasks, the last one (2025-11-25).
    pub fn new(tasks: Vec<Task>) -> Self {
        ListTasksResult { tasks, ..Default::default() }
    }
}

setters!(ListTasksResult {
    /// Where the next page starts.
    with_next_cursor => next_cursor: Cursor,
    /// Result metadata.
    with_meta => meta: Meta,
});

impl GetTaskPayloadResult {
    /// The result of `tasks/result` carrying `payload`, the members the task's request
    /// would have returned, kept as they are (in `extra`).
    pub fn new(payload: JsonObject) -> Self {
        GetTaskPayloadResult { meta: None, result_type: None, extra: payload }
    }
}

setters!(GetTaskPayloadResult {
    /// Result metadata.
    with_meta => meta: Meta,
    /// The payload's own `resultType`.
    with_result_type => result_type: ResultType,
});
