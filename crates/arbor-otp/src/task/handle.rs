//! The awaiter side of a task: [`TaskHandle`] (a future of the outcome) and [`TaskRef`]
//! (a cloneable address for control messages).
//!
//! The task is monitored, not linked: dropping either of these never stops the task, and
//! the task ending never affects the caller except through the outcome. A cancel is a
//! message into the task's bounded control mailbox, not a flag poked from outside.
//!
//! Invariant: awaiting a `TaskHandle` always resolves, with the task's one outcome or
//! `Shutdown` if the runtime dropped the task before it could report.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::{mpsc, oneshot};

use crate::task::outcome::{CancelError, TaskOutcome};

/// Messages a running task accepts.
#[derive(Debug)]
pub(crate) enum Control {
    Cancel,
}

/// A cloneable address of a running task, for cancelling it.
#[derive(Debug, Clone)]
pub struct TaskRef {
    pub(crate) id: u64,
    pub(crate) control: mpsc::Sender<Control>,
}

impl TaskRef {
    /// The task's id, unique within its supervisor.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Asks the task to stop; its awaiter gets `Cancelled` (unless it finished first).
    pub fn cancel(&self) -> Result<(), CancelError> {
        match self.control.try_send(Control::Cancel) {
            // A full mailbox already holds a cancel; the request is in.
            Ok(()) | Err(mpsc::error::TrySendError::Full(_)) => Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(CancelError),
        }
    }

    /// Whether the task has ended.
    pub fn is_finished(&self) -> bool {
        self.control.is_closed()
    }
}

/// Awaits a task's outcome; also a [`TaskRef`] for cancelling it.
#[derive(Debug)]
pub struct TaskHandle<T, E> {
    pub(crate) task: TaskRef,
    pub(crate) outcome: oneshot::Receiver<TaskOutcome<T, E>>,
}

impl<T, E> TaskHandle<T, E> {
    /// A cloneable reference for cancelling the task from elsewhere.
    pub fn task_ref(&self) -> TaskRef {
        self.task.clone()
    }

    /// The task's id.
    pub fn id(&self) -> u64 {
        self.task.id
    }

    /// Asks the task to stop; see [`TaskRef::cancel`].
    pub fn cancel(&self) -> Result<(), CancelError> {
        self.task.cancel()
    }
}

impl<T, E> Future for TaskHandle<T, E> {
    type Output = TaskOutcome<T, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.outcome).poll(cx).map(|r| r.unwrap_or(TaskOutcome::Shutdown))
    }
}
