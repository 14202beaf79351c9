//! Views for operators: the live supervision tree as the server sees it
//! ([`Server::observe`](crate::Server::observe)) and each tenant's load
//! ([`Server::tenant_loads`](crate::Server::tenant_loads)), JSON-ready.
//!
//! A [`ViewNode`] tree is the arbor-otp snapshot of the tree
//! ([`ViewNode::from_snapshot`], which works for any arbor-otp tree) with what the
//! snapshot cannot see filled in: each connection's in-flight requests (method, id, age,
//! the version of the tenant's handler it runs) and subscription streams (kind, age, bus queue depth), asked of the connection actor
//! itself, and the tasks extension's tasks (status, age) under the root's `tasks`
//! supervisor, where they run. It is a diagnostic view, not a consistent cut: nodes are
//! read at slightly different instants, and a connection that does not answer within
//! [`INSPECT_TIMEOUT`] shows as `unresponsive`.
//!
//! What it is not: a metrics exporter or a control surface; nothing here changes the tree.
//!
//! Invariant: a view never holds a secret. Tokens never reach the tree; task ids (which
//! let their owner poll them) are shown by their first 8 hex digits only, and a
//! requester by its principal's key (issuer and subject) or its peer address.

use std::time::Duration;

use arbor_otp::{NodeKind, NodeSnapshot, NodeStatus};
use serde::Serialize;

/// How long a view waits for one connection actor to describe itself.
pub const INSPECT_TIMEOUT: Duration = Duration::from_secs(1);

/// What a [`ViewNode`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ViewKind {
    /// A static supervisor (the root, a tenant).
    Supervisor,
    /// A dynamic supervisor (a tenant's connections).
    DynamicSupervisor,
    /// A task supervisor (the root's tasks, a connection's requests or streams).
    TaskSupervisor,
    /// A worker actor that is none of the below.
    Worker,
    /// A connection actor: a stdio peer, a legacy HTTP session or a modern endpoint.
    Connection,
    /// An in-flight request.
    Request,
    /// A subscription stream.
    Stream,
    /// A task of the tasks extension.
    Task,
}

/// The most bursts a byte-stream connection's reader queues at the connection
/// ([`ViewNode::inbox`]); each burst is at most 256 frames.
pub const MAX_INBOX_BURSTS: usize = crate::connection::inbound::MAX_BURSTS;

/// One node of the observed tree.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ViewNode {
    /// The child id in its parent (`tenant:acme`, `connections`, a request's method).
    pub id: String,
    /// What it is.
    pub kind: ViewKind,
    /// `running`, `restarting`, `not_running`, `stopped`, `unresponsive`; a task's status
    /// (`working`, `input_required`, `completed`, ...).
    pub state: String,
    /// Milliseconds since it started (its latest start, for a restarted supervisor), when
    /// known.
    pub age_ms: Option<u64>,
    /// Restarts this supervisor performed since it started.
    pub restarts: u64,
    /// The most recent restart's child and reason (`connections: panicked: ...`).
    pub last_crash: Option<String>,
    /// One line of kind-specific facts: a request's id, a stream's filter, a task
    /// supervisor's counters, a connection's era and requester.
    pub detail: Option<String>,
    /// Messages waiting: a stream's bus queues, a supervisor's mailbox where known.
    pub queue_depth: Option<usize>,
    /// A byte-stream connection's inbox: bursts of decoded input its reader has queued at
    /// the connection and the connection has not yet taken, at most
    /// [`MAX_INBOX_BURSTS`] (the reader waits beyond it,
    /// so a flood queues in the peer's pipe, not in this process). `None`, and left out of
    /// the JSON, on every other node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inbox: Option<usize>,
    /// The version of its tenant's handler an in-flight request runs on
    /// ([`Server::tenant_handler_version`](crate::Server::tenant_handler_version): 0 is
    /// the server's handler). `None`, and left out of the JSON, on every other node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handler_version: Option<u64>,
    /// The children, in start order where the tree keeps one.
    pub children: Vec<ViewNode>,
}

impl ViewNode {
    /// A node with nothing but its id, kind and state.
    pub fn new(id: impl Into<String>, kind: ViewKind, state: impl Into<String>) -> ViewNode {
        ViewNode {
            id: id.into(),
            kind,
            state: state.into(),
            age_ms: None,
            restarts: 0,
            last_crash: None,
            detail: None,
            queue_depth: None,
            inbox: None,
            handler_version: None,
            children: Vec::new(),
        }
    }

    /// The view of an arbor-otp snapshot (any tree, not only a server's).
    pub fn from_snapshot(node: &NodeSnapshot) -> ViewNode {
        let kind = match node.kind {
            NodeKind::Worker => ViewKind::Worker,
            NodeKind::Supervisor => ViewKind::Supervisor,
            NodeKind::DynamicSupervisor => ViewKind::DynamicSupervisor,
            NodeKind::TaskSupervisor => ViewKind::TaskSupervisor,
        };
        let mut view = ViewNode::new(node.id.clone(), kind, status_name(node.status));
        view.age_ms = node.uptime_ms;
        view.restarts = node.restart_count;
        view.last_crash = node.recent_restarts.last().map(|r| format!("{}: {}", r.child, r.reason));
        view.queue_depth = node.mailbox_depth;
        view.detail = match &node.tasks {
            Some(t) => Some(format!(
                "{}/{} in flight, {} completed, {} panicked, {} timed out, {} cancelled, {} refused",
                t.in_flight, t.max_concurrency, t.completed, t.panicked, t.timed_out, t.cancelled, t.refused
            )),
            None => node.strategy.map(|s| format!("{s:?}")),
        };
        view.children = node.children.iter().map(ViewNode::from_snapshot).collect();
        view
    }

    /// Finds a descendant (or this node) by a path of child ids.
    pub fn find(&self, path: &[&str]) -> Option<&ViewNode> {
        match path.split_first() {
            None => Some(self),
            Some((first, rest)) => self.children.iter().find(|c| c.id == *first)?.find(rest),
        }
    }

    /// This node and every descendant, counted.
    pub fn node_count(&self) -> usize {
        1 + self.children.iter().map(ViewNode::node_count).sum::<usize>()
    }

    /// The nodes of `kind` in this subtree.
    pub fn count(&self, kind: ViewKind) -> usize {
        usize::from(self.kind == kind) + self.children.iter().map(|c| c.count(kind)).sum::<usize>()
    }
}

fn status_name(status: NodeStatus) -> &'static str {
    match status {
        NodeStatus::Running => "running",
        NodeStatus::Restarting => "restarting",
        NodeStatus::NotRunning => "not_running",
        NodeStatus::Stopped => "stopped",
        NodeStatus::Unresponsive => "unresponsive",
    }
}

/// Requests and streams refused for a tenant since it started, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Refusals {
    /// A bound was full: the tenant's, a requester's share, a connection's (-32000).
    pub overloaded: u64,
    /// Refused by the tenant's or a principal's rate limit (`TenantQuota::rate`).
    pub rate_limited: u64,
    /// Refused because the tenant was quarantined after exceeding its restart budget.
    pub quarantined: u64,
    /// Refused for want of credentials (the HTTP layer refuses those before the tenant is
    /// known: always 0 here for now).
    pub unauthorized: u64,
}

/// One tenant's load at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TenantLoad {
    /// The tenant's name.
    pub tenant: String,
    /// Requests holding a tenant slot now.
    pub in_flight: usize,
    /// The tenant's bound (`TenantQuota::max_in_flight`, else
    /// `ServerConfig::max_in_flight_per_tenant`).
    pub max_in_flight: usize,
    /// Requests admitted since the tenant started (a counter: requests per second are
    /// its difference between two loads over their interval).
    pub admitted: u64,
    /// Refusals since the tenant started.
    pub refused: Refusals,
    /// Connections (stdio peers, legacy sessions, modern endpoints) open now.
    pub connections: usize,
    /// Legacy sessions counted against `TenantQuota::max_sessions` (0 when it is off).
    pub sessions: usize,
    /// Tasks running now for the tenant.
    pub tasks_running: usize,
    /// Times the tenant was escalated past its restart budget.
    pub escalations: u64,
    /// What is left of the tenant's quarantine, in ms; `None` when it is not quarantined.
    pub quarantined_ms: Option<u64>,
    /// Why it is quarantined.
    pub quarantine_reason: Option<String>,
    /// The version of the handler the tenant's requests admitted now run on
    /// ([`Server::tenant_handler_version`](crate::Server::tenant_handler_version)).
    pub handler_version: u64,
}

impl TenantLoad {
    /// Requests admitted per second between `earlier` (a load of the same tenant) and this
    /// one, `elapsed` apart.
    pub fn requests_per_s(&self, earlier: &TenantLoad, elapsed: Duration) -> f64 {
        let secs = elapsed.as_secs_f64();
        if secs <= 0.0 {
            return 0.0;
        }
        self.admitted.saturating_sub(earlier.admitted) as f64 / secs
    }
}

/// The whole view of a running server.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ServerView {
    /// The tree: root → tasks, tenants → connections → requests and streams.
    pub root: ViewNode,
    /// Every tenant's load, by name.
    pub tenants: Vec<TenantLoad>,
}
