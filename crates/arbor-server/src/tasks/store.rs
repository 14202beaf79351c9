//! The [`TaskStore`] trait: where task records live, pluggable.
//!
//! A record ([`TaskRecord`]) is the persistable part of a task: its id, its owner
//! ([`TaskOwner`]: tenant and requester), status and message, timestamps, TTL, polling
//! interval, result, error and outstanding input requests. The store creates records
//! (enforcing its caps), finds them for their owner only, moves their status
//! ([`TaskChange`], applied by [`TaskRecord::apply`] so every store keeps the same state
//! machine), waits until one is terminal (`tasks/result`), lists an owner's records with
//! opaque cursors, and drops them once their TTL has passed. [`MemoryTaskStore`](super::MemoryTaskStore)
//! is the default; a store on another node (Redis, a cluster) serves `tasks/get`,
//! `tasks/result` and `tasks/list` of a task created through another server by
//! implementing the same trait (its `wait` on pub/sub rather than a `Notify`).
//!
//! What a store is not: it holds no run. The run's handle, its local wakeups and the
//! input answers on their way to the handler are node-local (`local.rs`); a store only
//! ever sees records, and (a shared store) carries signals to the node whose runs apply
//! them (`forward.rs`). Nor does it make JSON-RPC errors: it answers [`TaskStoreError`],
//! turned into the wire error in one place (`From<TaskStoreError> for McpError`).
//!
//! Invariant: a record's status moves only forward: `working` ⇄ `input_required`, then
//! exactly one terminal status (`completed`, `failed`, `cancelled`), never changed after;
//! an unknown, expired or foreign id is the same "not found".

use std::sync::Weak;
use std::time::{Duration, SystemTime};

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::ErrorObject;
use arbor_protocol::model::common::JsonObject;
use arbor_protocol::model::mrtr::InputRequests;
use arbor_protocol::model::tasks::{Task, TaskStatus};
use futures::future::BoxFuture;

use super::forward::{Delivery, TaskRuns, TaskSignal};
use crate::context::ConnectionInfo;
use crate::error::{tasks_overloaded, TaskBound};
use crate::requester::Requester;
use arbor_protocol::model::timestamp::iso8601;

/// Who may see a task, and whose cap it counts against: the tenant and the requester of
/// the request that created it ([`Requester`]: the authenticated principal, else the
/// peer's address, else the one unknown requester). In 2026-07-28 a connection is not a
/// session, so the connection is not part of it: a client may poll from any connection.
/// Without authentication, two clients behind one address are one requester, which is
/// why task ids stay unguessable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TaskOwner {
    /// The tenant of the creating connection.
    pub tenant: String,
    /// The requester of the creating request.
    pub requester: Requester,
}

impl TaskOwner {
    /// The owner of what a request of `connection` creates or may see.
    pub fn of(connection: &ConnectionInfo) -> TaskOwner {
        TaskOwner { tenant: connection.tenant.clone(), requester: connection.requester.clone() }
    }
}

/// One task's persistable record.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRecord {
    /// Unguessable (128 random bits), made by the runtime before the record is created.
    pub id: String,
    /// Only requests of this owner find the record.
    pub owner: TaskOwner,
    /// Where the task is.
    pub status: TaskStatus,
    /// Why (the error's message for a failed task, a cancel's reason).
    pub status_message: Option<String>,
    /// When the task was created.
    pub created_at: SystemTime,
    /// When its status last changed.
    pub updated_at: SystemTime,
    /// How long the record is kept from its creation, and how long its run may take.
    pub ttl: Duration,
    /// The polling interval suggested to the client.
    pub poll_interval: Duration,
    /// The tool's result: a completed task's, or a 2025-11-25 task failed by `isError`.
    pub result: Option<JsonObject>,
    /// A failed task's JSON-RPC error.
    pub error: Option<ErrorObject>,
    /// Outstanding input requests of an `input_required` extension task, by the key the
    /// client sees; `None` for a 2025-11-25 task waiting on a request of its own.
    pub input_requests: Option<InputRequests>,
}

/// A change of a record's status, as the runtime asks it of the store.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskChange {
    /// `input_required`: with the requests listed on `tasks/get` (the extension), or
    /// `None` when the input travels as server→client requests (2025-11-25).
    InputRequired {
        /// The requests by the key the client sees.
        requests: Option<InputRequests>,
        /// The status message, if any.
        message: Option<String>,
    },
    /// These outstanding input requests (client keys) are answered; once none is left
    /// the task is `working` again.
    Answered(Vec<String>),
    /// Back to `working` from `input_required` (2025-11-25 input answered).
    Resume,
    /// `completed` with the tool's result.
    Completed(JsonObject),
    /// `failed`, with a JSON-RPC error or (2025-11-25, `isError: true`) the tool's result.
    Failed {
        /// The JSON-RPC error, if the failure is one.
        error: Option<ErrorObject>,
        /// The tool's result, if it answered one with `isError`.
        result: Option<JsonObject>,
        /// The status message.
        message: Option<String>,
    },
    /// `cancelled`, with the reason.
    Cancelled(Option<String>),
}

fn terminal(status: TaskStatus) -> bool {
    matches!(status, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
}

impl TaskRecord {
    /// A new `working` record, created now.
    pub fn new(id: String, owner: TaskOwner, ttl: Duration, poll_interval: Duration) -> TaskRecord {
        let now = SystemTime::now();
        TaskRecord {
            id,
            owner,
            status: TaskStatus::Working,
            status_message: None,
            created_at: now,
            updated_at: now,
            ttl,
            poll_interval,
            result: None,
            error: None,
            input_requests: None,
        }
    }

    /// Whether the status is terminal.
    pub fn is_terminal(&self) -> bool {
        terminal(self.status)
    }

    /// Applies `change` if the state machine allows it; false (and nothing changed) when
    /// the record is already terminal, or the change does not apply to its status (a
    /// resume or an answer of a task not waiting for input). Every store applies changes
    /// with this, so the invariant is kept in one place.
    pub fn apply(&mut self, change: TaskChange) -> bool {
        if self.is_terminal() {
            return false;
        }
        let waiting = self.status == TaskStatus::InputRequired;
        match change {
            TaskChange::InputRequired { requests, message } => {
                self.status = TaskStatus::InputRequired;
                self.input_requests = requests;
                self.status_message = message;
            }
            TaskChange::Answered(keys) => {
                let Some(requests) = self.input_requests.as_mut().filter(|_| waiting) else { return false };
                let before = requests.len();
                requests.retain(|k, _| !keys.contains(k));
                if requests.len() == before {
                    return false;
                }
                if requests.is_empty() {
                    self.input_requests = None;
                    self.status = TaskStatus::Working;
                    self.status_message = None;
                }
            }
            TaskChange::Resume if waiting => {
                self.status = TaskStatus::Working;
                self.input_requests = None;
                self.status_message = None;
            }
            TaskChange::Resume => return false,
            TaskChange::Completed(result) => {
                self.status = TaskStatus::Completed;
                self.result = Some(result);
            }
            TaskChange::Failed { error, result, message } => {
                self.status = TaskStatus::Failed;
                self.status_message = message.or_else(|| error.as_ref().map(|e| e.message.clone()));
                self.error = error;
                self.result = result;
            }
            TaskChange::Cancelled(message) => {
                self.status = TaskStatus::Cancelled;
                self.status_message = message;
            }
        }
        if self.is_terminal() {
            self.input_requests = None;
        }
        self.updated_at = SystemTime::now();
        true
    }

    /// The task as the extension's `tasks/get` shows it (`ttlMs`, `pollIntervalMs`,
    /// `inputRequests`, `result`, `error`); the 2025-11-25 wire trims it (`core.rs`).
    pub fn to_task(&self) -> Task {
        let mut task = Task::new(self.id.clone(), self.status, iso8601(self.created_at), iso8601(self.updated_at))
            .with_ttl_ms(self.ttl.as_millis() as i64)
            .with_poll_interval_ms(self.poll_interval.as_millis().max(1) as i64);
        task.status_message = self.status_message.clone();
        task.input_requests = self.input_requests.clone().filter(|_| self.status == TaskStatus::InputRequired);
        task.result = self.result.clone();
        task.error = self.error.clone();
        task
    }
}

/// Which cap refused a new record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskCap {
    /// The most records the store holds.
    Store,
    /// The most records one owner holds.
    Owner,
}

/// What a store answers instead of a record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// Unknown, or another owner's: the same for both, so a client learns nothing about
    /// tasks it may not see.
    #[error("Task not found")]
    NotFound,
    /// The record's TTL has passed.
    #[error("Task has expired")]
    Expired,
    /// A cap is reached: `limit` records, one may expire in `retry_after`.
    #[error("the task store is full ({cap:?}, {limit})")]
    Full {
        /// Which cap.
        cap: TaskCap,
        /// Its value.
        limit: usize,
        /// When a record may have expired and made room.
        retry_after: Duration,
    },
    /// A `tasks/list` cursor the store did not make.
    #[error("Invalid cursor")]
    InvalidCursor,
    /// The store could not be reached or failed.
    #[error("the task store is unavailable: {0}")]
    Unavailable(String),
    /// The store cannot carry a signal to another node ([`TaskStore::forward`]'s default:
    /// one node, or a store that does not route).
    #[error("the task's run is not on this server")]
    CannotForward,
    /// The node running the task did not take a forwarded signal: it is gone (nobody
    /// listens on its channel, its lease has expired) or did not answer in time.
    #[error("the node running the task is unreachable: {0}")]
    Unreachable(String),
}

impl From<TaskStoreError> for McpError {
    fn from(error: TaskStoreError) -> McpError {
        match error {
            TaskStoreError::NotFound | TaskStoreError::Expired => {
                McpError::invalid_params(format!("Failed to retrieve task: {error}"))
            }
            TaskStoreError::Full { cap, limit, retry_after } => {
                let bound = match cap {
                    TaskCap::Store => TaskBound::Held,
                    TaskCap::Owner => TaskBound::PerRequester,
                };
                tasks_overloaded(bound, limit, retry_after)
            }
            TaskStoreError::InvalidCursor => McpError::invalid_params("Invalid cursor"),
            TaskStoreError::Unavailable(detail) => {
                McpError::internal(format!("Internal error: the task store is unavailable: {detail}"))
            }
            TaskStoreError::CannotForward | TaskStoreError::Unreachable(_) => {
                McpError::internal(format!("Internal error: {error}"))
            }
        }
    }
}

/// One page of an owner's records, in creation order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskPage {
    /// The records.
    pub tasks: Vec<TaskRecord>,
    /// Where the next page starts, if there is one: opaque to the client.
    pub next_cursor: Option<String>,
}

/// Where task records live. Object-safe: a server holds an `Arc<dyn TaskStore>`
/// ([`Server::with_task_store`](crate::Server::with_task_store)). Every method is one
/// round trip to the store; none is called while a lock is held. Records expire by their
/// TTL: a store never returns an expired record. `get`, `wait` and `list` check the owner;
/// `change` and `remove` are the runtime's own, made once it has.
///
/// A store of one's own, here a wrapper that counts look-ups:
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// use arbor_server::tasks::{MemoryTaskStore, TaskChange, TaskConfig, TaskOwner, TaskPage};
/// use arbor_server::{Router, Server, TaskRecord, TaskStore, TaskStoreError};
/// use futures::future::BoxFuture;
///
/// struct Counted {
///     inner: MemoryTaskStore,
///     gets: AtomicUsize,
/// }
///
/// impl TaskStore for Counted {
///     fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
///         self.inner.create(record)
///     }
///     fn get<'a>(&'a self, owner: &'a TaskOwner, id: &'a str) -> BoxFuture<'a, Result<TaskRecord, TaskStoreError>> {
///         self.gets.fetch_add(1, Ordering::Relaxed);
///         self.inner.get(owner, id)
///     }
///     fn change<'a>(&'a self, id: &'a str, change: TaskChange)
///         -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
///         self.inner.change(id, change)
///     }
///     fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), TaskStoreError>> {
///         self.inner.remove(id)
///     }
///     fn wait<'a>(&'a self, owner: &'a TaskOwner, id: &'a str) -> BoxFuture<'a, Result<TaskRecord, TaskStoreError>> {
///         self.inner.wait(owner, id)
///     }
///     fn list<'a>(&'a self, owner: &'a TaskOwner, cursor: Option<&'a str>, limit: usize)
///         -> BoxFuture<'a, Result<TaskPage, TaskStoreError>> {
///         self.inner.list(owner, cursor, limit)
///     }
/// }
///
/// let store = Counted { inner: MemoryTaskStore::new(&TaskConfig::default()), gets: AtomicUsize::new(0) };
/// let server = Server::new(Router::new("counted", "1.0.0")).with_task_store(Arc::new(store));
/// # drop(server);
/// ```
pub trait TaskStore: Send + Sync + 'static {
    /// Creates `record` (`working`, with a fresh id) for its owner, kept for its TTL from
    /// now; refused with [`TaskStoreError::Full`] when a cap is reached.
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>>;

    /// The record `id`, if `owner` may see it and it has not expired.
    fn get<'a>(&'a self, owner: &'a TaskOwner, id: &'a str) -> BoxFuture<'a, Result<TaskRecord, TaskStoreError>>;

    /// Applies `change` to the record `id` ([`TaskRecord::apply`]): the record after it,
    /// or `None` when it did not apply (already terminal, or nothing to resume).
    fn change<'a>(
        &'a self,
        id: &'a str,
        change: TaskChange,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>>;

    /// Drops the record `id` at once: a task refused before its run started, whose id no
    /// client was told, so it does not count against the caps until its TTL.
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), TaskStoreError>>;

    /// Waits until the record `id` of `owner` is terminal, and returns it; not found if
    /// it expires first.
    fn wait<'a>(&'a self, owner: &'a TaskOwner, id: &'a str) -> BoxFuture<'a, Result<TaskRecord, TaskStoreError>>;

    /// `owner`'s records not yet expired, in creation order, from `cursor` (one this store
    /// returned), at most `limit`.
    fn list<'a>(
        &'a self,
        owner: &'a TaskOwner,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<TaskPage, TaskStoreError>>;

    /// Drops every record whose TTL has passed. The server calls it periodically
    /// (`TaskConfig::ttl` / 10, between 1 s and 60 s), so the memory of expired tasks comes
    /// back on a server no request touches. The default does nothing: a store whose
    /// backend expires records itself (a Redis key's TTL) needs no sweep.
    fn expire(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// Carries `signal` (`tasks/update` input, `tasks/cancel`) to the node running task
    /// `id`, whose [`TaskRuns`] applies it, and answers how that node took it. Called only
    /// for a task whose run is not on the calling server. A store shared by several nodes
    /// implements it to route by the task's owner node; it must answer within a bounded
    /// time: [`TaskStoreError::Unreachable`] when that node is gone or silent,
    /// [`TaskStoreError::Unavailable`] when the store itself is. The default cannot
    /// forward ([`TaskStoreError::CannotForward`]): with one node there is nothing to
    /// forward to.
    fn forward<'a>(&'a self, id: &'a str, signal: TaskSignal) -> BoxFuture<'a, Result<Delivery, TaskStoreError>> {
        let _ = (id, signal);
        Box::pin(async { Err(TaskStoreError::CannotForward) })
    }

    /// Hands the store the runs of a server it serves, to apply signals forwarded to this
    /// node ([`Server::with_task_store`](crate::Server::with_task_store) calls it, once for
    /// each server built on the store). A `Weak`: the store must not keep the server alive,
    /// and a dead one delivers nothing. The default ignores it (nothing is forwarded).
    fn attach_runs(&self, runs: Weak<dyn TaskRuns>) {
        let _ = runs;
    }
}

#[cfg(test)]
mod tests {
    use super::{TaskChange, TaskOwner, TaskRecord};
    use crate::requester::Requester;
    use arbor_protocol::model::mrtr::InputRequests;
    use arbor_protocol::model::tasks::TaskStatus;
    use std::time::Duration;

    fn record() -> TaskRecord {
        let owner = TaskOwner { tenant: "t".into(), requester: Requester::Unknown };
        TaskRecord::new("id".into(), owner, Duration::from_secs(60), Duration::from_millis(500))
    }

    #[test]
    fn a_record_moves_forward_and_has_one_terminal_status() {
        let mut r = record();
        assert!(!r.apply(TaskChange::Resume), "nothing to resume while working");
        assert!(r.apply(TaskChange::InputRequired { requests: None, message: Some("asking".into()) }));
        assert_eq!((r.status, r.input_requests.clone()), (TaskStatus::InputRequired, None));
        assert!(r.apply(TaskChange::Resume));
        assert_eq!(r.status, TaskStatus::Working);
        assert!(r.apply(TaskChange::Completed(Default::default())));
        for late in [TaskChange::Cancelled(None), TaskChange::Resume, TaskChange::Completed(Default::default())] {
            assert!(!r.apply(late), "terminal is final");
        }
        assert_eq!(r.status, TaskStatus::Completed);
    }

    #[test]
    fn answering_every_outstanding_request_resumes_the_task() {
        let mut r = record();
        let asked = serde_json::json!({"a": {"method": "roots/list"}, "b": {"method": "roots/list"}});
        let requests: InputRequests = serde_json::from_value(asked).unwrap();
        assert!(r.apply(TaskChange::InputRequired { requests: Some(requests), message: None }));
        assert!(r.apply(TaskChange::Answered(vec!["a".into(), "zz".into()])));
        assert_eq!(r.status, TaskStatus::InputRequired);
        assert_eq!(r.to_task().input_requests.map(|m| m.len()), Some(1), "b is still outstanding");
        assert!(!r.apply(TaskChange::Answered(vec!["a".into()])), "already answered");
        assert!(r.apply(TaskChange::Answered(vec!["b".into()])));
        assert_eq!((r.status, r.input_requests.clone()), (TaskStatus::Working, None));
    }
}
