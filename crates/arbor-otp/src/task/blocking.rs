//! Blocking or CPU-bound work: how it runs without holding a deadline hostage.
//!
//! A future that never yields cannot be stopped by anything in tokio: the deadline timer,
//! a cancel and the shutdown broadcast all act at `.await` points, and on a
//! current-thread runtime such a future stalls everything else too. So blocking work must
//! go through [`crate::TaskSupervisor::spawn_blocking`]: the closure runs on tokio's
//! blocking pool, and the task's async wrapper waits for it *alongside* the deadline and
//! the control mailbox. When the deadline passes (or a cancel or shutdown arrives) the
//! awaiter gets its outcome at once and the closure's [`CancellationToken`] is cancelled;
//! the closure should check it between units of work and return early. This is not
//! preemption: a closure that ignores the token runs to its end, its result is discarded,
//! and it keeps its concurrency slot until then, so runaway work still counts against the
//! bound. The token is tokio-util's, the one cancellation type of the whole API, so the
//! closure can hand it on to code that takes one.
//!
//! Invariant: the token is cancelled whenever the wrapper drops the work for any reason
//! other than completion (a tokio-util `DropGuard` held by the future that awaits the
//! closure, disarmed once the closure returned), and the slot is released only when the
//! closure has returned.

pub use tokio_util::sync::CancellationToken;
