//! Configuration values for task supervisors and single tasks.
//!
//! Plain data read once at start (the spec) or at spawn (the options); nothing here acts.
//!
//! Invariant: every limit has a safe default (a finite concurrency bound; no deadline and
//! no grace unless asked for), so a default task supervisor can never queue work.

use std::time::Duration;

use crate::gauge::Gauge;

/// Everything needed to start a task supervisor.
#[derive(Debug, Clone)]
pub struct TaskSupervisorSpec {
    pub(crate) name: String,
    pub(crate) max_concurrency: usize,
    pub(crate) default_deadline: Option<Duration>,
    pub(crate) shutdown_grace: Duration,
    pub(crate) gauge: Option<Gauge>,
}

impl TaskSupervisorSpec {
    /// At most 1024 tasks in flight, no default deadline, no shutdown grace.
    pub fn new(name: impl Into<String>) -> Self {
        TaskSupervisorSpec {
            name: name.into(),
            max_concurrency: 1024,
            default_deadline: None,
            shutdown_grace: Duration::ZERO,
            gauge: None,
        }
    }

    /// The concurrency bound; spawns beyond it are refused with `Overloaded`.
    pub fn max_concurrency(mut self, max: usize) -> Self {
        self.max_concurrency = max;
        self
    }

    /// The deadline for tasks spawned without one.
    pub fn default_deadline(mut self, deadline: Duration) -> Self {
        self.default_deadline = Some(deadline);
        self
    }

    /// On shutdown, how long in-flight tasks may run on before they are stopped with
    /// `Shutdown` (new spawns are refused from the start of the shutdown).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Uses `gauge` for this supervisor and its tasks.
    pub fn gauge(mut self, gauge: Gauge) -> Self {
        self.gauge = Some(gauge);
        self
    }
}

/// Per-task options.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskOptions {
    /// Stop the task and report `TimedOut` after this long (overrides the default).
    pub deadline: Option<Duration>,
}

impl TaskOptions {
    /// Options with a deadline.
    pub fn deadline(deadline: Duration) -> Self {
        TaskOptions { deadline: Some(deadline) }
    }
}
