//! The wrapper every supervised task runs inside: it races the work against its control
//! mailbox, the supervisor's shutdown broadcast and the deadline, and reports exactly one
//! outcome.
//!
//! This is the "light supervised task-actor": a plain tokio task with a bounded mailbox
//! for control messages, counted and stoppable by its supervisor. It is not a ractor
//! actor (see the `task` module docs for the cost argument), and it does not retry.
//!
//! Invariant: the outcome is sent after the work's future has been dropped and after the
//! task's slot has been released, so an awaiter that spawns again on receipt never sees a
//! spurious `Overloaded`.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures::FutureExt;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::{sleep_until, Instant};

use crate::task::handle::Control;
use crate::task::outcome::TaskOutcome;
use crate::task::TaskShared;

/// Counts a running wrapper (and, for async work, its concurrency slot) until dropped.
pub(crate) struct RunGuard {
    pub(crate) shared: Arc<TaskShared>,
    pub(crate) holds_slot: bool,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if self.holds_slot {
            self.shared.in_flight.fetch_sub(1, Ordering::AcqRel);
        }
        self.shared.gauge.task_ended();
        if self.shared.running.fetch_sub(1, Ordering::AcqRel) == 1 && self.shared.closed.load(Ordering::SeqCst) {
            self.shared.idle.notify_waiters();
        }
    }
}

/// Holds a concurrency slot on behalf of blocking work, which may outlive its wrapper.
pub(crate) struct SlotGuard(pub(crate) Arc<TaskShared>);

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

pub(crate) struct Wiring<T, E> {
    pub(crate) control: mpsc::Receiver<Control>,
    pub(crate) shutdown: watch::Receiver<bool>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) guard: RunGuard,
    pub(crate) reply: oneshot::Sender<TaskOutcome<T, E>>,
}

pub(crate) async fn run<F, T, E>(work: F, wiring: Wiring<T, E>)
where
    F: Future<Output = Result<T, E>>,
{
    let Wiring { mut control, mut shutdown, deadline, guard, reply } = wiring;
    // The inner block owns the pinned work, so it is dropped when the block returns,
    // before the outcome is reported.
    let outcome = async {
        let work = AssertUnwindSafe(work).catch_unwind();
        let timer = async move {
            match deadline {
                Some(at) => sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(work, timer);
        let (mut control_open, mut shutdown_open) = (true, true);
        loop {
            // The work is polled first: a task that is ready never pays for registering
            // with the timer or the mailboxes, and a finished result is never thrown away.
            tokio::select! {
                biased;
                result = &mut work => break match result {
                    Ok(Ok(value)) => TaskOutcome::Completed(value),
                    Ok(Err(err)) => TaskOutcome::Failed(err),
                    Err(panic) => TaskOutcome::Panicked(crate::panic_message(&panic)),
                },
                msg = control.recv(), if control_open => match msg {
                    Some(Control::Cancel) => break TaskOutcome::Cancelled,
                    // Every handle was dropped: the task is not linked to its caller, so
                    // it simply carries on without a mailbox.
                    None => control_open = false,
                },
                changed = shutdown.changed(), if shutdown_open => match changed {
                    Ok(()) => break TaskOutcome::Shutdown,
                    Err(_) => shutdown_open = false,
                },
                () = &mut timer => break TaskOutcome::TimedOut,
            }
        }
    }
    .await;
    guard.shared.record(&outcome);
    drop(guard);
    let _ = reply.send(outcome);
}
