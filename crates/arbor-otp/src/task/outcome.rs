//! What a supervised task ends with, and why a spawn can be refused.
//!
//! A task has exactly one [`TaskOutcome`], delivered to its awaiter once. The variants are
//! the complete list of ways a task can end, so an awaiter that matches on them handles
//! every case (including the supervisor going away). These are values, not errors: a
//! `Failed` task is a normal, reported result of the work.
//!
//! Invariant: the outcome is decided in one place (the task's wrapper), after the work's
//! future has been dropped, so nothing of the work still runs on the async runtime when
//! the awaiter sees a non-`Completed` outcome (blocking work is handled in `blocking.rs`).

/// How a supervised task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskOutcome<T, E> {
    /// The work returned `Ok`.
    Completed(T),
    /// The work returned `Err`.
    Failed(E),
    /// The work panicked; the panic was caught and this is its message.
    Panicked(String),
    /// The deadline passed first; the work was stopped.
    TimedOut,
    /// Someone holding the task's handle cancelled it; the work was stopped.
    Cancelled,
    /// The task supervisor shut down (or the runtime dropped the task) first.
    Shutdown,
}

impl<T, E> TaskOutcome<T, E> {
    /// The value of a `Completed` outcome.
    pub fn completed(self) -> Option<T> {
        match self {
            TaskOutcome::Completed(value) => Some(value),
            _ => None,
        }
    }

    /// Whether the work ran to completion with `Ok`.
    pub fn is_completed(&self) -> bool {
        matches!(self, TaskOutcome::Completed(_))
    }

    /// The variant's name, for logs and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            TaskOutcome::Completed(_) => "completed",
            TaskOutcome::Failed(_) => "failed",
            TaskOutcome::Panicked(_) => "panicked",
            TaskOutcome::TimedOut => "timed_out",
            TaskOutcome::Cancelled => "cancelled",
            TaskOutcome::Shutdown => "shutdown",
        }
    }
}

/// Why [`crate::TaskSupervisor::spawn`] refused a task. Refusal is immediate; there is no
/// queue to wait in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SpawnError {
    /// `max` tasks are already in flight.
    #[error("task supervisor overloaded: {max} tasks already in flight")]
    Overloaded {
        /// The concurrency bound.
        max: usize,
    },
    /// The supervisor is shutting down or gone.
    #[error("task supervisor is shutting down")]
    ShuttingDown,
}

/// Why [`crate::TaskRef::cancel`] did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("task already finished")]
pub struct CancelError;
