//! The awaiter side of a task: [`TaskHandle`] (a future of the outcome) and [`TaskRef`]
//! (a cloneable address for control messages), both backed by one shared task cell.
//!
//! The cell is the task's one-slot control mailbox and its outcome slot in a single
//! allocation: a control message (today only cancel) sets a bit and wakes the task, so the
//! mailbox is bounded by construction (a second cancel coalesces with the first), and the
//! wrapper deposits the outcome once and wakes the awaiter. Together this replaces a tokio
//! mpsc channel plus a oneshot and keeps a supervised round trip within 2× a bare
//! `tokio::spawn` + oneshot. The task is monitored, not linked: dropping either handle
//! never stops the task.
//!
//! Invariant: the outcome slot is written at most once, and awaiting a `TaskHandle` always
//! resolves: if the wrapper is dropped without reporting (the runtime shut down), its
//! reporter guard deposits "no outcome", which the awaiter reads as `Shutdown`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::task::AtomicWaker;
use parking_lot::Mutex;

use crate::task::outcome::{CancelError, TaskOutcome};

const CANCEL: u8 = 1;
const DONE: u8 = 2;

/// A task's control mailbox and outcome slot.
pub(crate) struct TaskCell<T, E> {
    state: AtomicU8,
    outcome: Mutex<Option<TaskOutcome<T, E>>>,
    awaiter: AtomicWaker,
    task: AtomicWaker,
}

impl<T, E> TaskCell<T, E> {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(TaskCell {
            state: AtomicU8::new(0),
            outcome: Mutex::new(None),
            awaiter: AtomicWaker::new(),
            task: AtomicWaker::new(),
        })
    }

    /// Deposits the outcome (`None`: the task was dropped without one) and wakes the awaiter.
    pub(crate) fn deliver(&self, outcome: Option<TaskOutcome<T, E>>) {
        *self.outcome.lock() = outcome;
        self.state.fetch_or(DONE, Ordering::AcqRel);
        self.awaiter.wake();
    }

    /// Ready once a cancel message has arrived.
    pub(crate) fn poll_cancel(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.state.load(Ordering::Acquire) & CANCEL != 0 {
            return Poll::Ready(());
        }
        self.task.register(cx.waker());
        if self.state.load(Ordering::Acquire) & CANCEL != 0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    fn poll_outcome(&self, cx: &mut Context<'_>) -> Poll<TaskOutcome<T, E>> {
        if self.state.load(Ordering::Acquire) & DONE == 0 {
            self.awaiter.register(cx.waker());
            if self.state.load(Ordering::Acquire) & DONE == 0 {
                return Poll::Pending;
            }
        }
        let outcome = self.outcome.lock().take();
        Poll::Ready(outcome.unwrap_or(TaskOutcome::Shutdown))
    }
}

/// The untyped control side of a task cell, so [`TaskRef`] needs no type parameters.
trait Control: Send + Sync {
    fn cancel(&self) -> Result<(), CancelError>;
    fn is_finished(&self) -> bool;
}

impl<T: Send, E: Send> Control for TaskCell<T, E> {
    fn cancel(&self) -> Result<(), CancelError> {
        if self.state.fetch_or(CANCEL, Ordering::AcqRel) & DONE != 0 {
            return Err(CancelError);
        }
        self.task.wake();
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.state.load(Ordering::Acquire) & DONE != 0
    }
}

/// A cloneable address of a running task, for cancelling it.
#[derive(Clone)]
pub struct TaskRef {
    id: u64,
    control: Arc<dyn Control>,
}

impl std::fmt::Debug for TaskRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRef").field("id", &self.id).field("finished", &self.is_finished()).finish()
    }
}

impl TaskRef {
    /// The task's id, unique within its supervisor.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Sends the task a cancel message; its awaiter gets `Cancelled` unless the task had
    /// already finished, in which case this returns [`CancelError`].
    pub fn cancel(&self) -> Result<(), CancelError> {
        self.control.cancel()
    }

    /// Whether the task has delivered its outcome.
    pub fn is_finished(&self) -> bool {
        self.control.is_finished()
    }
}

/// Awaits a task's outcome; also a [`TaskRef`] for cancelling it.
pub struct TaskHandle<T, E> {
    id: u64,
    cell: Arc<TaskCell<T, E>>,
}

impl<T, E> std::fmt::Debug for TaskHandle<T, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHandle").field("id", &self.id).finish()
    }
}

impl<T: Send + 'static, E: Send + 'static> TaskHandle<T, E> {
    pub(crate) fn new(id: u64, cell: Arc<TaskCell<T, E>>) -> Self {
        TaskHandle { id, cell }
    }

    /// A cloneable reference for cancelling the task from elsewhere.
    pub fn task_ref(&self) -> TaskRef {
        TaskRef { id: self.id, control: self.cell.clone() }
    }

    /// The task's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Sends the task a cancel message; see [`TaskRef::cancel`].
    pub fn cancel(&self) -> Result<(), CancelError> {
        self.cell.cancel()
    }
}

impl<T, E> Future for TaskHandle<T, E> {
    type Output = TaskOutcome<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.cell.poll_outcome(cx)
    }
}
