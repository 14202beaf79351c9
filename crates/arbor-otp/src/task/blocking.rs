//! Blocking or CPU-bound work: how it runs without holding a deadline hostage.
//!
//! A future that never yields cannot be stopped by anything in tokio: the deadline timer,
//! a cancel and the shutdown broadcast all act at `.await` points, and on a
//! current-thread runtime such a future stalls everything else too. So blocking work must
//! go through [`crate::TaskSupervisor::spawn_blocking`]: the closure runs on tokio's
//! blocking pool, and the task's async wrapper waits for it *alongside* the deadline and
//! the control mailbox. When the deadline passes (or a cancel or shutdown arrives) the
//! awaiter gets its outcome at once and the closure's [`CancelToken`] is set; the closure
//! should check it between units of work and return early. This is not preemption: a
//! closure that ignores the token runs to its end, its result is discarded, and it keeps
//! its concurrency slot until then, so runaway work still counts against the bound.
//!
//! Invariant: the token is set whenever the wrapper drops the work for any reason other
//! than completion, and the slot is released only when the closure has returned.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Tells blocking work that its result is no longer wanted (deadline, cancel or shutdown).
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
}

impl CancelToken {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Whether the work should stop now.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    pub(crate) fn cancel(&self) {
        self.flag.store(true, Ordering::Release);
    }
}

/// Sets the token when the wrapper drops the future that awaits the blocking closure.
pub(crate) struct CancelOnDrop(pub(crate) CancelToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}
