//! Tree snapshots: a serialisable picture of a whole supervision tree at one moment.
//!
//! Each supervisor answers for itself (its children, restart history, mailbox depth) and
//! hands back an [`Introspect`] probe for every child that is itself a supervisor; the
//! handle then asks those probes one after another, outside any actor, so taking a snapshot
//! never makes one supervisor wait on another. It is a diagnostic view, not a consistent
//! cut: nodes are read at slightly different instants.
//!
//! Invariant: a snapshot never blocks forever; a node that does not answer within
//! [`PROBE_TIMEOUT`] appears with status `unresponsive`.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Serialize;

use crate::supervisor::child_spec::Restart;
use crate::supervisor::strategy::Strategy;

/// How long a snapshot waits for one supervisor to answer.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What kind of node this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// A worker actor.
    Worker,
    /// A static [`crate::SupervisorHandle`] supervisor.
    Supervisor,
    /// A [`crate::DynamicSupervisorHandle`] supervisor.
    DynamicSupervisor,
    /// A [`crate::TaskSupervisor`].
    TaskSupervisor,
}

/// The state of a node as its parent sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    /// Alive.
    Running,
    /// Its restart failed and the supervisor will try again.
    Restarting,
    /// The spec is kept but no actor runs (start returned ignore, terminated, or a
    /// transient child that exited normally).
    NotRunning,
    /// Stopping or stopped.
    Stopped,
    /// A supervisor that did not answer the snapshot in time.
    Unresponsive,
}

/// One restart performed by a supervisor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestartRecord {
    /// Milliseconds since the supervisor started (monotonic, follows tokio's clock).
    pub at_ms: u64,
    /// The child whose exit (or failed restart) caused it.
    pub child: String,
    /// The exit reason or start failure, as text.
    pub reason: String,
}

/// Counters of a task supervisor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TaskStats {
    /// Tasks holding a concurrency slot right now (includes blocking work still running).
    pub in_flight: usize,
    /// The concurrency bound.
    pub max_concurrency: usize,
    /// Tasks accepted since start.
    pub spawned: u64,
    /// Spawns refused with `Overloaded`.
    pub refused: u64,
    /// Outcomes delivered, by kind.
    pub completed: u64,
    /// See [`TaskStats::completed`].
    pub failed: u64,
    /// See [`TaskStats::completed`].
    pub panicked: u64,
    /// See [`TaskStats::completed`].
    pub timed_out: u64,
    /// See [`TaskStats::completed`].
    pub cancelled: u64,
    /// See [`TaskStats::completed`].
    pub shutdown: u64,
}

/// One node of a tree snapshot; serialise it with `serde_json`.
#[derive(Debug, Clone, Serialize)]
pub struct NodeSnapshot {
    /// The child id inside its parent (the supervisor's name for a root).
    pub id: String,
    /// The supervisor's name or the worker's actor name, if any.
    pub name: Option<String>,
    /// ractor's actor id, when an actor runs.
    pub actor_id: Option<String>,
    /// Worker or one of the supervisor kinds.
    pub kind: NodeKind,
    /// The restart strategy, for static supervisors.
    pub strategy: Option<Strategy>,
    /// The restart type this node has inside its parent.
    pub restart: Option<Restart>,
    /// Running, restarting, not running, ...
    pub status: NodeStatus,
    /// Milliseconds since this supervisor started, for static and dynamic supervisors (a
    /// restarted supervisor is a new one and counts from 0 again); `None` for others.
    pub uptime_ms: Option<u64>,
    /// Restarts this supervisor performed since it started.
    pub restart_count: u64,
    /// The most recent restarts this supervisor performed, oldest first.
    pub recent_restarts: Vec<RestartRecord>,
    /// Number of children (or in-flight tasks for a task supervisor).
    pub child_count: usize,
    /// Messages waiting in the actor's mailbox, where known. ractor does not expose queue
    /// lengths, so this is counted only for our own supervisors' control messages.
    pub mailbox_depth: Option<usize>,
    /// Counters, for task supervisors.
    pub tasks: Option<TaskStats>,
    /// The children, in start order for static supervisors.
    pub children: Vec<NodeSnapshot>,
}

impl NodeSnapshot {
    /// The node and all its descendants, counted.
    pub fn node_count(&self) -> usize {
        1 + self.children.iter().map(NodeSnapshot::node_count).sum::<usize>()
    }

    /// Finds a descendant (or this node) by a path of child ids.
    pub fn find(&self, path: &[&str]) -> Option<&NodeSnapshot> {
        match path.split_first() {
            None => Some(self),
            Some((first, rest)) => self.children.iter().find(|c| c.id == *first)?.find(rest),
        }
    }

    /// A JSON value of the whole subtree.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("snapshots contain only serialisable data")
    }

    /// A node that did not answer in time.
    pub(crate) fn unresponsive(id: String, kind: NodeKind) -> Self {
        Self::blank(id, kind, NodeStatus::Unresponsive)
    }

    /// A node with nothing but its id, kind and status filled in, to build on.
    pub(crate) fn blank(id: String, kind: NodeKind, status: NodeStatus) -> Self {
        NodeSnapshot {
            id,
            name: None,
            actor_id: None,
            kind,
            strategy: None,
            restart: None,
            status,
            uptime_ms: None,
            restart_count: 0,
            recent_restarts: Vec::new(),
            child_count: 0,
            mailbox_depth: None,
            tasks: None,
            children: Vec::new(),
        }
    }
}

/// Something that can produce the snapshot of a supervisor subtree.
pub(crate) trait Introspect: Send + Sync {
    /// The subtree's snapshot, labelled with `id` (its child id in the parent).
    fn snapshot(&self, id: String) -> BoxFuture<'static, NodeSnapshot>;
}

pub(crate) type Probe = Arc<dyn Introspect>;

/// Replaces the placeholder nodes of supervisor children with their own subtrees, asking
/// each probe in turn (outside any actor).
pub(crate) async fn fill_probes(node: &mut NodeSnapshot, probes: Vec<(usize, Probe)>) {
    for (pos, probe) in probes {
        let slot = &mut node.children[pos];
        let restart = slot.restart;
        let mut sub = probe.snapshot(slot.id.clone()).await;
        sub.restart = restart;
        *slot = sub;
    }
}
