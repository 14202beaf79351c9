//! OTP-style supervision on top of `ractor`: supervisors, dynamic supervisors, a task
//! supervisor for per-request work, and serialisable tree snapshots.
//!
//! ractor gives actors, links and supervision events, but not OTP: its default handler
//! stops a parent when any child exits, it has no restart strategies or intensity, no
//! ordered graceful shutdown, and it kills descendants without `post_stop` when an actor
//! dies. This crate adds those rules and nothing about MCP, so it can be used on its own.
//!
//! - [`SupervisorHandle`]: OTP `supervisor` (one_for_one, one_for_all, rest_for_one,
//!   restart intensity with escalation, ordered shutdown, significant children and
//!   auto-shutdown, run-time child administration).
//! - [`DynamicSupervisorHandle`]: Elixir's `DynamicSupervisor` (anonymous children on
//!   demand, `max_children`).
//! - [`TaskSupervisor`]: Elixir's `Task.Supervisor` with `async_nolink` semantics,
//!   a concurrency bound, per-task deadlines and cancellation; each task is a light
//!   supervised tokio task rather than a ractor actor (see the `task` module for why).
//! - [`NodeSnapshot`] and [`Gauge`]: a JSON view of a tree and live counts for leak checks.
//!
//! A tree in a few lines:
//!
//! ```
//! use std::time::Duration;
//! use arbor_otp::*;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let spec = SupervisorSpec::new("root")
//!     .strategy(Strategy::OneForOne)
//!     .intensity(3, Duration::from_secs(5))
//!     .child(ChildSpec::task_supervisor("requests", TaskSupervisorSpec::new("requests").max_concurrency(64)));
//! let root = SupervisorHandle::start(spec).await.unwrap();
//! let requests: TaskSupervisor = root.child_handle("requests").await.unwrap();
//! let outcome = requests
//!     .spawn_with(TaskOptions::deadline(Duration::from_secs(1)), async { Ok::<_, String>(42) })
//!     .unwrap()
//!     .await;
//! assert_eq!(outcome, TaskOutcome::Completed(42));
//! println!("{}", root.snapshot().await.to_json());
//! assert_eq!(root.shutdown().await, ExitReason::Shutdown(None));
//! # }
//! ```
//!
//! Invariant kept throughout: a supervisor of ours never finishes exiting while one of its
//! children is still running, and every exit is classified by one convention,
//! [`ExitReason`].

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]
#![forbid(unsafe_code)]

mod dynamic;
mod exit;
mod gauge;
pub mod metrics;
mod node;
mod shutdown;
mod snapshot;
mod supervisor;
mod task;

/// The ractor this crate is built on, re-exported so a tree's own workers (`ChildSpec::actor`,
/// `Started::actor`, the `ActorCell`s that `start_child` and `which_children` hand back) use
/// exactly the version arbor-otp links, without a `ractor` line of their own to keep in step.
/// Children are the user's ractor actors, so hiding ractor behind handles of ours would only
/// rename its `Actor` trait; the re-export is the one supported way to name it.
pub use ractor;

pub use dynamic::handle::{DynamicSupervisorHandle, StartDynamicChildError, TerminateDynamicChildError};
pub use dynamic::DynamicSupervisorSpec;
pub use exit::{ExitReason, NORMAL, SHUTDOWN};
pub use gauge::{Gauge, LiveToken};
pub use snapshot::{NodeKind, NodeSnapshot, NodeStatus, RestartRecord, TaskStats, PROBE_TIMEOUT};
pub use supervisor::child_spec::{
    ChildKind, ChildSpec, ChildStartError, Restart, Shutdown, SpecError, StartContext, Started, DEFAULT_WORKER_SHUTDOWN,
};
pub use supervisor::handle::{
    ChildCounts, ChildInfo, DeleteChildError, RestartChildError, StartChildError, StartSupervisorError, SupervisorGone,
    SupervisorHandle, TerminateChildError,
};
pub use supervisor::restart::REACHED_MAX_RESTART_INTENSITY;
pub use supervisor::strategy::{AutoShutdown, RestartIntensity, Strategy, SupervisorSpec};
/// The one cancellation type of the API (tokio-util's), re-exported so users need no
/// `tokio-util` line of their own: blocking work gets one, client calls and requests use it.
pub use task::blocking::CancellationToken;
pub use task::outcome::{CancelError, SpawnError, TaskOutcome};
pub use task::{
    pin_in_place, OwnedTaskSupervisor, TaskHandle, TaskOptions, TaskRef, TaskSupervisor, TaskSupervisorSpec,
};

/// The text of a caught panic payload.
pub(crate) fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
