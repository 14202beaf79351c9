//! Tasks: the `io.modelcontextprotocol/tasks` extension (SEP-2663) served for `tools/call`.
//!
//! A tool opts in through its [`TaskPolicy`]
//! ([`ServerHandler::tool_task_policy`](crate::ServerHandler::tool_task_policy), or
//! `ToolRoute::task_support` on a [`Router`](crate::Router)); the runtime does the rest.
//! When a 2026-07-28 request declares the extension in its client capabilities and the
//! tool supports tasks, the call is answered at once with a flat `CreateTaskResult`
//! (`resultType: "task"`) and the handler runs as a supervised task under the server's
//! own `tasks` task supervisor (a child of the root, not of the connection: a task outlives
//! the request and the connection that created it). The client then polls `tasks/get`,
//! answers input requests with `tasks/update` and may `tasks/cancel`. The handler is the
//! same code as for a direct call: a `Reply::InputRequired` inside a task parks it in
//! `input_required` with its requests listed on `tasks/get`, and it is called again with
//! the answers once every outstanding request is answered.
//!
//! The 2025-11-25 core tasks (`params.task`, `tasks/result`, `tasks/list`) are served
//! from the same store and runs on legacy sessions of that revision (`core.rs`), under the
//! `tasks` capability the server then advertises; there the handler's input is asked of
//! the client with server→client requests carrying the `related-task` `_meta`, the task
//! `input_required` while they wait (`legacy_input.rs`). Status changes reach listens that
//! name the task in `taskIds` as `notifications/tasks` (`notify.rs`), and the 2025-11-25
//! session that created a task as `notifications/tasks/status` (`local.rs`).
//!
//! Records live in a [`TaskStore`] (`store.rs`; [`MemoryTaskStore`] by default, another
//! with `Server::with_task_store`); runs, their wakeups and input answers stay in the
//! node-local table of the server that started them (`local.rs`). Servers sharing a store
//! serve each other's `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`; the
//! input (`tasks/update`) and the cancel of a task whose run is on another node are
//! forwarded by the store to that node, which applies them as a local request would
//! (`forward.rs`: [`TaskStore::forward`], [`TaskRuns`]; the default store has one node and
//! nothing to forward to). The answer to a 2025-11-25 task's server→client request is not
//! a task signal: it is a client answer on its session, routed (if at all) by the
//! transport, like any other.
//!
//! Invariants: a task is visible to `tasks/get` before its `CreateTaskResult` is written;
//! a task is only ever seen by requests of the tenant and requester that created it (the
//! principal, else the peer's address: [`Requester`](crate::Requester); any other gets the
//! same -32602 as for an id that never existed); a task's record and its
//! run both end by its TTL (the run is stopped shortly before, failing the task, and the
//! record is dropped once expired); the default store holds at most
//! [`TaskConfig::max_tasks`] records, at most [`TaskConfig::max_tasks_per_owner`] of them
//! for one owner (a store of one's own enforces caps of its own, refusing with
//! [`TaskStoreError::Full`]).

mod core;
mod forward;
mod legacy_input;
mod local;
mod memory;
mod notify;
mod run;
mod store;

use std::time::Duration;

pub use arbor_protocol::model::tools::TaskSupport;

pub use self::core::MIN_TTL;
pub(crate) use self::core::{
    annotate_tools, call_as_legacy_task, core_tasks_capability, route_legacy_call, serve_legacy_task_method,
};
pub(crate) use forward::weak as weak_runs;
pub use forward::{Delivery, TaskRuns, TaskSignal};
pub(crate) use legacy_input::ResultWaiters;
pub(crate) use local::Tasks;
pub use memory::MemoryTaskStore;
pub(crate) use notify::TaskStreams;
pub(crate) use run::{call_as_task, route_call, serve_task_method, CallRoute};
pub use store::{TaskCap, TaskChange, TaskOwner, TaskPage, TaskRecord, TaskStore, TaskStoreError};

/// The extension's identifier, as declared in `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// When a task-supporting tool's call becomes a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TaskStart {
    /// As soon as the call arrives: the client gets the `CreateTaskResult` before the
    /// handler has run at all.
    #[default]
    Immediately,
    /// Only once the client has answered the handler's input requests: a fresh call runs
    /// inline, so input the handler asks for first is gathered by ordinary MRTR rounds
    /// (the spec's "MRTR before the task exists"), and the call that carries the answers
    /// (its `requestState`) becomes the task. A fresh call that asks for nothing simply
    /// completes inline.
    AfterInput,
}

/// How a tool takes part in tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskPolicy {
    /// `Forbidden`: never a task. `Optional`: a task when the request declares the
    /// extension, inline otherwise. `Required`: a task, and -32021 naming the extension
    /// when the request does not declare it.
    pub support: TaskSupport,
    /// When the call becomes a task.
    pub start: TaskStart,
}

impl Default for TaskPolicy {
    fn default() -> Self {
        TaskPolicy::FORBIDDEN
    }
}

impl TaskPolicy {
    /// Never a task (the default).
    pub const FORBIDDEN: TaskPolicy = TaskPolicy { support: TaskSupport::Forbidden, start: TaskStart::Immediately };

    /// A policy with `support`, starting immediately.
    pub const fn new(support: TaskSupport) -> TaskPolicy {
        TaskPolicy { support, start: TaskStart::Immediately }
    }

    /// The same policy, starting as `start` says.
    pub const fn start(self, start: TaskStart) -> TaskPolicy {
        TaskPolicy { start, ..self }
    }

    /// Whether calls may ever become tasks.
    pub fn allows_tasks(self) -> bool {
        self.support != TaskSupport::Forbidden
    }
}

/// Limits and timings of the task store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskConfig {
    /// How long a task is kept from its creation (`ttlMs`); its run is stopped shortly
    /// before (one polling interval, at most a tenth of the TTL) if it has not finished,
    /// failing the task, so the failure can still be read. Default: 10 minutes.
    pub ttl: Duration,
    /// The polling interval suggested to clients (`pollIntervalMs`). Default: 500 ms.
    pub poll_interval: Duration,
    /// The most task records kept at once, running or finished; a call that would
    /// create one more, once expired records are dropped, is refused with the overload
    /// error (-32000). Default: 10,000. The caps are the default store's
    /// ([`MemoryTaskStore::new`]); a store given to `Server::with_task_store` has its own.
    pub max_tasks: usize,
    /// The most task records one owner (tenant and requester: the principal, else the
    /// peer's address) may hold at once; beyond it the overload error names the scope
    /// `owner`, so one anonymous client cannot block task creation for the others.
    /// Default: 1,000.
    pub max_tasks_per_owner: usize,
    /// The most tasks running at once, server-wide (the task supervisor's bound).
    /// Default: 1,024.
    pub max_running: usize,
}

impl Default for TaskConfig {
    fn default() -> Self {
        TaskConfig {
            ttl: Duration::from_secs(600),
            poll_interval: Duration::from_millis(500),
            max_tasks: 10_000,
            max_tasks_per_owner: 1000,
            max_running: 1024,
        }
    }
}
