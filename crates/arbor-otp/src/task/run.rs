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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::FutureExt;
use tokio::time::{sleep_until, Instant};

use crate::task::handle::TaskCell;
use crate::task::outcome::TaskOutcome;
use crate::task::TaskShared;

/// Holds one concurrency slot and counts one running wrapper until dropped.
pub(crate) struct RunGuard {
    pub(crate) shared: Arc<TaskShared>,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.shared.wrapper_ended();
    }
}

/// Keeps the slot of blocking work taken after its wrapper ended, until the closure
/// returns. The two halves share a flag; whichever side ends second settles the count.
pub(crate) struct SlotGuard {
    shared: Arc<TaskShared>,
    other_done: Arc<AtomicBool>,
    wrapper: bool,
}

impl SlotGuard {
    /// The closure's half and the wrapper's half.
    pub(crate) fn pair(shared: Arc<TaskShared>) -> (SlotGuard, SlotGuard) {
        let flag = Arc::new(AtomicBool::new(false));
        let closure = SlotGuard { shared: shared.clone(), other_done: flag.clone(), wrapper: false };
        (closure, SlotGuard { shared, other_done: flag, wrapper: true })
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if self.wrapper {
            // The wrapper's slot is about to be released; if the closure still runs, the
            // overhang takes the slot over. Count first, then check, so the closure's
            // decrement can never come before this increment.
            self.shared.overhang.fetch_add(1, Ordering::AcqRel);
            if self.other_done.swap(true, Ordering::AcqRel) {
                self.shared.overhang.fetch_sub(1, Ordering::AcqRel);
            }
        } else if self.other_done.swap(true, Ordering::AcqRel) {
            self.shared.overhang.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

pub(crate) struct Wiring<T, E> {
    pub(crate) cell: Arc<TaskCell<T, E>>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) guard: RunGuard,
}

/// Reports "no outcome" if the wrapper is dropped before it reported (runtime shutdown),
/// so the awaiter still resolves (to `Shutdown`).
struct Reporter<T, E> {
    cell: Arc<TaskCell<T, E>>,
    reported: bool,
}

impl<T, E> Drop for Reporter<T, E> {
    fn drop(&mut self) {
        if !self.reported {
            self.cell.deliver(None);
        }
    }
}

pub(crate) async fn run<F, T, E>(work: F, wiring: Wiring<T, E>)
where
    F: Future<Output = Result<T, E>>,
{
    let Wiring { cell, deadline, guard } = wiring;
    let mut reporter = Reporter { cell, reported: false };
    let cell = reporter.cell.clone();
    // The inner block owns the pinned work, so it is dropped when the block returns,
    // before the outcome is reported.
    let shared = &guard.shared;
    let outcome = async {
        // Created before reading `stopping`: either this future sees the broadcast or
        // the flag is already set (it is set before the notification is sent).
        let stop = shared.stop.notified();
        if shared.stopping.load(Ordering::SeqCst) {
            return TaskOutcome::Shutdown;
        }
        let work = AssertUnwindSafe(work).catch_unwind();
        let timer = async move {
            match deadline {
                Some(at) => sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(work, timer, stop);
        // The work is polled first: a task that is ready never pays for registering with
        // the timer or the shutdown broadcast, and a finished result is never thrown away.
        tokio::select! {
            biased;
            result = &mut work => match result {
                Ok(Ok(value)) => TaskOutcome::Completed(value),
                Ok(Err(err)) => TaskOutcome::Failed(err),
                Err(panic) => TaskOutcome::Panicked(crate::panic_message(&panic)),
            },
            () = std::future::poll_fn(|cx| cell.poll_cancel(cx)) => TaskOutcome::Cancelled,
            () = &mut stop => TaskOutcome::Shutdown,
            () = &mut timer => TaskOutcome::TimedOut,
        }
    }
    .await;
    shared.record(&outcome);
    drop(guard);
    reporter.reported = true;
    reporter.cell.deliver(Some(outcome));
}
