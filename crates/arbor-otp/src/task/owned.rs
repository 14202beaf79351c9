//! A task supervisor owned by one value (an actor's state) instead of sitting in the tree
//! as an actor of its own.
//!
//! Everything a task gets from its supervisor lives in the shared state, not in the actor:
//! admission and the concurrency bound, the deadline, cancel, the exactly-one outcome, the
//! shutdown broadcast. The actor only gives the supervisor a place in a tree (snapshots, an
//! ordered stop by a parent). An owner that already has that place (a connection actor,
//! which stops its supervisors in its own `post_stop`) can save the actor: on our machine
//! an idle ractor actor is about 7.9 KB of heap (its task and four channels), a third of an
//! idle connection.
//!
//! What it is not: a node of the tree. It shows up in no snapshot and is not counted as an
//! actor by its [`Gauge`](crate::Gauge) (its tasks are).
//!
//! Invariant: when it is dropped, however its owner ends (a kill included), its running
//! tasks are told to stop with `Shutdown`, as a killed task supervisor's actor state does;
//! [`TaskSupervisor::shutdown`] is the ordered stop (grace, then `Shutdown`, then wait).

use std::ops::Deref;

use super::{TaskSupervisor, TaskSupervisorSpec};
use crate::gauge::Gauge;

/// A task supervisor without an actor, stopped by its owner; derefs to the
/// [`TaskSupervisor`] API (spawning, stats, `shutdown`; not `cell`, which panics).
pub struct OwnedTaskSupervisor {
    inner: TaskSupervisor,
}

impl std::fmt::Debug for OwnedTaskSupervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("OwnedTaskSupervisor").field(&self.inner).finish()
    }
}

impl OwnedTaskSupervisor {
    /// A supervisor ready at once (no actor to start); the spec's gauge, or the global
    /// one, counts its tasks.
    pub fn new(spec: TaskSupervisorSpec) -> Self {
        let gauge = spec.gauge.clone().unwrap_or_else(Gauge::global);
        let shared = TaskSupervisor::shared(spec, gauge);
        shared.gauge.register_tasks(std::sync::Arc::downgrade(&shared) as _);
        OwnedTaskSupervisor { inner: TaskSupervisor { shared, actor: None } }
    }
}

impl Deref for OwnedTaskSupervisor {
    type Target = TaskSupervisor;

    fn deref(&self) -> &TaskSupervisor {
        &self.inner
    }
}

impl Drop for OwnedTaskSupervisor {
    fn drop(&mut self) {
        self.inner.shared.broadcast_shutdown();
    }
}
