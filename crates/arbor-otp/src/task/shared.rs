//! The state a task supervisor shares with its handles and its running tasks.
//!
//! Counters, the shutdown broadcast and the idle notification live here, outside the
//! actor, because spawning a task must not cost a message hop. It holds no tasks: tasks
//! find it, it never looks for them.
//!
//! Invariant: `running` is incremented exactly once per admitted task (in admission) and
//! decremented exactly once (when the wrapper ends or the admission is refused), so the
//! concurrency bound and the shutdown wait agree on what is running.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use crate::gauge::Gauge;
use crate::snapshot::TaskStats;
use crate::task::outcome::TaskOutcome;

#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) refused: AtomicU64,
    pub(crate) completed: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) panicked: AtomicU64,
    pub(crate) timed_out: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) shutdown: AtomicU64,
}

/// State shared by the supervisor actor, its handles and its tasks.
///
/// The per-task hot path touches as few shared atomics as possible: one counter is both
/// the concurrency slot and the "wrappers alive" count, shutdown is a `Notify` the wrapper
/// only registers with if its work is not ready at once, and the gauge reads the counter
/// instead of keeping its own copy.
#[derive(Debug)]
pub(crate) struct TaskShared {
    pub(crate) name: String,
    pub(crate) max: usize,
    pub(crate) default_deadline: Option<Duration>,
    pub(crate) shutdown_grace: Duration,
    /// Task wrappers alive; each holds one concurrency slot.
    pub(crate) running: AtomicUsize,
    /// Blocking closures still running after their wrapper ended (deadline, cancel,
    /// shutdown); each keeps holding a slot until it returns.
    pub(crate) overhang: AtomicUsize,
    /// Set when shutdown begins: no new tasks are admitted.
    pub(crate) closed: AtomicBool,
    /// Set right before `stop` is notified: tasks must end now.
    pub(crate) stopping: AtomicBool,
    pub(crate) stop: Notify,
    pub(crate) idle: Notify,
    pub(crate) next_id: AtomicU64,
    pub(crate) stats: Stats,
    pub(crate) gauge: Gauge,
}

impl TaskShared {
    pub(crate) fn record<T, E>(&self, outcome: &TaskOutcome<T, E>) {
        let counter = match outcome {
            TaskOutcome::Completed(_) => &self.stats.completed,
            TaskOutcome::Failed(_) => &self.stats.failed,
            TaskOutcome::Panicked(_) => &self.stats.panicked,
            TaskOutcome::TimedOut => &self.stats.timed_out,
            TaskOutcome::Cancelled => &self.stats.cancelled,
            TaskOutcome::Shutdown => &self.stats.shutdown,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A wrapper ended.
    pub(crate) fn wrapper_ended(&self) {
        if self.running.fetch_sub(1, Ordering::AcqRel) == 1 && self.closed.load(Ordering::SeqCst) {
            self.idle.notify_waiters();
        }
    }

    /// Stops accepting tasks.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Tells every running task to stop. `stopping` is set before the notification, so a
    /// wrapper that creates its `Notified` after it still sees the flag.
    pub(crate) fn broadcast_shutdown(&self) {
        self.close();
        self.stopping.store(true, Ordering::SeqCst);
        self.stop.notify_waiters();
    }

    /// The ordered stop: refuse new tasks, let running ones finish within the grace, tell
    /// the rest to stop, and wait until no wrapper runs.
    pub(crate) async fn stop_all(&self) {
        self.close();
        if !self.shutdown_grace.is_zero() {
            let _ = tokio::time::timeout(self.shutdown_grace, self.wait_idle()).await;
        }
        self.broadcast_shutdown();
        self.wait_idle().await;
    }

    /// Waits until no task wrapper runs.
    pub(crate) async fn wait_idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.running.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.running.load(Ordering::Acquire) + self.overhang.load(Ordering::Acquire)
    }

    pub(crate) fn stats(&self) -> TaskStats {
        let s = &self.stats;
        TaskStats {
            in_flight: self.in_flight(),
            max_concurrency: self.max,
            // Ids are handed out once per accepted task, so the next id is the count.
            spawned: self.next_id.load(Ordering::Relaxed),
            refused: s.refused.load(Ordering::Relaxed),
            completed: s.completed.load(Ordering::Relaxed),
            failed: s.failed.load(Ordering::Relaxed),
            panicked: s.panicked.load(Ordering::Relaxed),
            timed_out: s.timed_out.load(Ordering::Relaxed),
            cancelled: s.cancelled.load(Ordering::Relaxed),
            shutdown: s.shutdown.load(Ordering::Relaxed),
        }
    }
}

impl Drop for TaskShared {
    /// The gauge's list prunes dead entries once enough have ended, so their memory goes.
    fn drop(&mut self) {
        self.gauge.task_source_ended();
    }
}

impl crate::gauge::TaskCount for TaskShared {
    fn alive_tasks(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }
}
