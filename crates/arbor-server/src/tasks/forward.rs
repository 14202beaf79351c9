//! Forwarding: how `tasks/update` input and `tasks/cancel` reach a task whose run is on
//! another node, through a shared [`TaskStore`].
//!
//! Two halves meet here. The caller's half: a request on a node that does not run the
//! task asks its store to [`forward`](TaskStore::forward) a [`TaskSignal`] to the node that
//! does, and turns the [`Delivery`] (or the store's error) into the answer. The owner's
//! half: each server hands its store a [`TaskRuns`] ([`TaskStore::attach_runs`], done by
//! `Server::with_task_store`), and a store that carried a signal across calls
//! [`TaskRuns::deliver`] on the node running the task, which applies it exactly as a local
//! request would (`Entry::update` with its validation, or the local cancel). What this is
//! not: a transport. The default store has one node and forwards nothing
//! ([`TaskStoreError::CannotForward`], the same -32603 as before forwarding existed);
//! a store on Redis (arbor-cluster) carries signals by pub/sub.
//!
//! Invariant: a signal is applied on the owner by the same code as a local request, so a
//! forwarded answer of the wrong kind is the same -32602 and records nothing; the store
//! holds only a `Weak` to the runs, so a server that is gone delivers nothing.

use std::sync::Arc;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::ErrorObject;
use arbor_protocol::model::common::JsonObject;
use arbor_protocol::model::tasks::TaskStatus;
use futures::future::BoxFuture;

use super::local::Tasks;
use super::store::{TaskChange, TaskOwner, TaskRecord, TaskStoreError};

/// What a node asks of the node running a task.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TaskSignal {
    /// `tasks/update`: the `inputResponses`, by the keys the client sees.
    Input(JsonObject),
    /// `tasks/cancel`: cancel the task and stop its run.
    Cancel,
}

/// How the node a signal reached took it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Delivery {
    /// The run took it: the input was recorded (or ignored as the spec asks, for keys not
    /// outstanding), or the task was cancelled and its run stopped.
    Applied,
    /// Refused with this JSON-RPC error, nothing recorded: an answer of the wrong kind is
    /// -32602, as for a local `tasks/update`.
    Refused(ErrorObject),
    /// No run of this task goes on there (it ended meanwhile), or a cancel found the task
    /// already terminal: nothing done.
    NotRunning,
}

/// The runs of one server, as its store sees them: what applies a signal that a store
/// carried from another node. The server hands it to its store with
/// [`TaskStore::attach_runs`](super::TaskStore::attach_runs); stores never build one.
pub trait TaskRuns: Send + Sync + 'static {
    /// Applies `signal` to the run of task `id` on this server, as a local request would.
    fn deliver<'a>(&'a self, id: &'a str, signal: TaskSignal) -> BoxFuture<'a, Delivery>;
}

impl TaskRuns for Tasks {
    fn deliver<'a>(&'a self, id: &'a str, signal: TaskSignal) -> BoxFuture<'a, Delivery> {
        Box::pin(async move {
            let Some(entry) = self.local(id) else { return Delivery::NotRunning };
            match signal {
                TaskSignal::Input(responses) => {
                    // The record as the store has it now, read for the run's own owner:
                    // the caller checked its requester against it already.
                    let record = match self.store.get(&entry.owner(), id).await {
                        Ok(record) => record,
                        Err(error) => return Delivery::Refused(McpError::from(error).to_error_object()),
                    };
                    match entry.update(&record, responses).await {
                        Ok(()) => Delivery::Applied,
                        Err(error) => Delivery::Refused(error.to_error_object()),
                    }
                }
                TaskSignal::Cancel => match entry.apply(cancelled()).await {
                    Some(_) => {
                        entry.stop_run();
                        Delivery::Applied
                    }
                    None => Delivery::NotRunning,
                },
            }
        })
    }
}

/// The change a client's `tasks/cancel` makes, wherever it is applied.
pub(crate) fn cancelled() -> TaskChange {
    TaskChange::Cancelled(Some("Cancelled by the client".into()))
}

impl Tasks {
    /// `tasks/update` input for `record`, whose run is not on this node: forwarded to the
    /// node running it. -32603 when the store cannot forward (one node), or when that node
    /// is unreachable; the owner's -32602 for an answer of the wrong kind.
    pub(crate) async fn forward_input(
        &self,
        owner: &TaskOwner,
        record: &TaskRecord,
        responses: JsonObject,
    ) -> Result<(), McpError> {
        match self.store.forward(&record.id, TaskSignal::Input(responses)).await? {
            Delivery::Applied => Ok(()),
            Delivery::Refused(error) => Err(McpError::from(error)),
            // The run ended between our read and its node's: fine if the record says so.
            Delivery::NotRunning => match self.find(owner, &record.id).await? {
                now if now.status != TaskStatus::InputRequired => Ok(()),
                _ => Err(McpError::internal("Internal error: the node running the task no longer runs it")),
            },
        }
    }

    /// `tasks/cancel` of `record`, whose run is not on this node: the cancel is forwarded
    /// so its node stops the run at once; when no node takes it (one node, the node gone,
    /// the run already ended) the record alone is cancelled, as before forwarding existed.
    /// `Some` with the record after the cancel when this call cancelled it.
    pub(crate) async fn cancel_elsewhere(
        &self,
        owner: &TaskOwner,
        record: &TaskRecord,
    ) -> Result<Option<TaskRecord>, McpError> {
        if record.is_terminal() {
            return Ok(None);
        }
        match self.store.forward(&record.id, TaskSignal::Cancel).await {
            Ok(Delivery::Applied) => return Ok(Some(self.find(owner, &record.id).await?)),
            Ok(Delivery::Refused(error)) => return Err(McpError::from(error)),
            Ok(Delivery::NotRunning) | Err(TaskStoreError::CannotForward) | Err(TaskStoreError::Unreachable(_)) => {}
            Err(error) => return Err(error.into()),
        }
        let changed = self.store.change(&record.id, cancelled()).await?;
        if let Some(record) = &changed {
            self.published(record);
        }
        Ok(changed)
    }
}

/// The runs as a store holds them: a `Weak`, so a store never keeps a server alive.
pub(crate) fn weak(tasks: &Arc<Tasks>) -> std::sync::Weak<dyn TaskRuns> {
    let weak: std::sync::Weak<Tasks> = Arc::downgrade(tasks);
    weak
}
