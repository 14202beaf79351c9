//! The server's supervision tree, and the only place its top-level actors are spawned.
//!
//! ```text
//! root                     one_for_one, permanent children
//! ├─ tasks                 task supervisor: one task per running task of the tasks
//! │                        extension (`crate::tasks`), which outlives its request
//! └─ tenant:<name>         supervisor, one per tenant ("default" when nothing names one)
//!    └─ connections        dynamic supervisor, children temporary
//!       └─ connection      temporary: one actor per peer
//!          ├─ requests     task supervisor owned by the connection (no actor of its own,
//!          │               stopped in the connection's post_stop): one supervised task
//!          │               per in-flight request, bounded
//!          └─ subscriptions task supervisor (owned likewise): one light task per
//!                          subscription stream (`subscription::unit`), bounded
//! ```
//!
//! Tenants are started on demand, the first time a connection names them, and each keeps
//! an in-flight counter shared by its connections ([`TenantLimits`]). Connections are
//! temporary: restarting one would invent a session the peer never agreed to. This module
//! does not route or serve anything; `connection` does.
//!
//! Invariant: when [`Tree::shutdown`] returns, every connection, request task and worker
//! of the server has stopped (each supervisor stops its children before it exits).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use arbor_otp::{
    ChildSpec, ChildStartError, DynamicSupervisorHandle, DynamicSupervisorSpec, Gauge, NodeSnapshot, Restart, Shutdown,
    StartContext, Started, Strategy, SupervisorHandle, SupervisorSpec, TaskSupervisor, TaskSupervisorSpec,
};
use parking_lot::Mutex;
use ractor::{Actor, ActorRef};

use tokio::time::Instant;

use crate::connection::{inspect, ConnMsg, ConnectionActor, ConnectionArgs, ConnectionHandle};
use crate::error::{ConnectError, StartError};
use crate::observe::{Refusals, ServerView, TenantLoad, ViewNode};
use crate::requester::RequesterSlots;
use crate::tasks::Tasks;

/// The tenant every connection belongs to when nothing identifies tenants.
pub const DEFAULT_TENANT: &str = "default";

/// The bounds every tenant is started with (from `ServerConfig`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TenantBounds {
    pub(crate) in_flight: usize,
    pub(crate) in_flight_per_requester: usize,
    pub(crate) streams_per_requester: usize,
}

/// A tenant's shared bounds: its in-flight count, and each requester's share of it and of
/// its subscription streams, across all the tenant's connections (so one client cannot
/// starve the others however many connections or sessions it opens).
#[derive(Debug)]
pub(crate) struct TenantLimits {
    name: String,
    /// The name as a metrics label, made once.
    label: metrics::SharedString,
    in_flight: AtomicUsize,
    max: usize,
    /// In-flight requests per requester.
    pub(crate) requests: Arc<RequesterSlots>,
    /// Open subscription streams (listens, legacy resource subscriptions) per requester.
    pub(crate) streams: Arc<RequesterSlots>,
    /// Requests admitted and refused for a full bound, since the tenant started: relaxed
    /// counters for `Server::tenant_loads`, one add per request next to `in_flight`'s.
    admitted: AtomicU64,
    overloaded: AtomicU64,
}

impl TenantLimits {
    pub(crate) fn new(name: &str, bounds: TenantBounds) -> TenantLimits {
        TenantLimits {
            name: name.to_owned(),
            label: crate::metrics::tenant_label(name),
            in_flight: AtomicUsize::new(0),
            max: bounds.in_flight,
            requests: RequesterSlots::new(bounds.in_flight_per_requester),
            streams: RequesterSlots::new(bounds.streams_per_requester),
            admitted: AtomicU64::new(0),
            overloaded: AtomicU64::new(0),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// The tenant's metrics label.
    pub(crate) fn label(&self) -> &metrics::SharedString {
        &self.label
    }

    /// Takes one slot; refused at once when all are taken.
    pub(crate) fn try_acquire(&self) -> bool {
        if self.in_flight.fetch_add(1, Ordering::AcqRel) >= self.max {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            self.refused_overloaded();
            return false;
        }
        crate::metrics::in_flight(&self.label, 1.0);
        true
    }

    /// Counts a request admitted (its task spawned).
    pub(crate) fn admitted(&self) {
        self.admitted.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a request refused for a full bound other than the tenant's own (a
    /// requester's share, a connection's).
    pub(crate) fn refused_overloaded(&self) {
        self.overloaded.fetch_add(1, Ordering::Relaxed);
    }

    /// The tenant's load now (its connection count is the caller's to fill in).
    pub(crate) fn load(&self) -> TenantLoad {
        let mut load = TenantLoad {
            tenant: self.name.clone(),
            in_flight: self.in_flight.load(Ordering::Relaxed).min(self.max),
            max_in_flight: self.max,
            admitted: self.admitted.load(Ordering::Relaxed),
            refused: Refusals::default(),
            connections: 0,
            handler_version: 0,
        };
        load.refused.overloaded = self.overloaded.load(Ordering::Relaxed);
        load
    }

    pub(crate) fn release(&self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
        crate::metrics::in_flight(&self.label, -1.0);
    }

    /// Slots taken now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }
}

#[derive(Clone)]
struct Tenant {
    supervisor: SupervisorHandle,
    /// The tenant supervisor's `connections` child as last fetched: after it was
    /// restarted, fetched again from `supervisor`.
    connections: DynamicSupervisorHandle,
    limits: Arc<TenantLimits>,
    started: Instant,
}

/// The tenant supervisor's `connections` child, if it runs.
async fn live_connections(supervisor: &SupervisorHandle) -> Option<DynamicSupervisorHandle> {
    let connections: DynamicSupervisorHandle = supervisor.child_handle("connections").await?;
    connections.is_alive().then_some(connections)
}

/// The running tree of one server.
pub(crate) struct Tree {
    root: SupervisorHandle,
    started: Instant,
    tasks: TaskSupervisor,
    tenants: tokio::sync::Mutex<HashMap<String, Tenant>>,
    bounds: TenantBounds,
    gauge: Gauge,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree").field("gauge", &self.gauge).finish_non_exhaustive()
    }
}

impl Tree {
    /// Starts the root supervisor.
    pub(crate) async fn start(gauge: Gauge, bounds: TenantBounds, max_tasks: usize) -> Result<Tree, StartError> {
        let tasks_spec = TaskSupervisorSpec::new("tasks").max_concurrency(max_tasks).gauge(gauge.clone());
        let spec = SupervisorSpec::new("arbor-server")
            .strategy(Strategy::OneForOne)
            .intensity(10, std::time::Duration::from_secs(10))
            .gauge(gauge.clone())
            .child(ChildSpec::task_supervisor("tasks", tasks_spec));
        let root = SupervisorHandle::start(spec).await.map_err(StartError::Supervisor)?;
        let tasks = root.child_handle::<TaskSupervisor>("tasks").await.ok_or(StartError::Missing("tasks"))?;
        Ok(Tree { root, started: Instant::now(), tasks, tenants: Default::default(), bounds, gauge })
    }

    /// The task supervisor the tasks extension's runs go under.
    pub(crate) fn tasks(&self) -> &TaskSupervisor {
        &self.tasks
    }

    pub(crate) fn gauge(&self) -> &Gauge {
        &self.gauge
    }

    /// The tenant's supervisor, started if this is its first connection.
    async fn tenant(&self, name: &str) -> Result<Tenant, ConnectError> {
        let mut tenants = self.tenants.lock().await;
        if let Some(tenant) = tenants.get_mut(name) {
            if tenant.connections.is_alive() {
                return Ok(tenant.clone());
            }
            // Its connections supervisor was restarted by the tenant's: use the new one,
            // so the tenant keeps its bounds, counters and restart history.
            if let Some(fresh) = live_connections(&tenant.supervisor).await {
                tenant.connections = fresh;
                return Ok(tenant.clone());
            }
        }
        let id = format!("tenant:{name}");
        let spec = SupervisorSpec::new(id.clone())
            .strategy(Strategy::OneForOne)
            .child(ChildSpec::dynamic_supervisor("connections", DynamicSupervisorSpec::new("connections")));
        // A tenant that stopped (its supervisor gave up) is replaced by a fresh one.
        let _ = self.root.terminate_child(&id).await;
        let _ = self.root.delete_child(&id).await;
        self.root.start_child(ChildSpec::supervisor(id.clone(), spec)).await.map_err(|e| match e {
            arbor_otp::StartChildError::Gone(_) => ConnectError::ShuttingDown,
            other => ConnectError::Tenant { tenant: name.to_owned(), source: other },
        })?;
        let missing = || ConnectError::TenantIncomplete { tenant: name.to_owned() };
        let tenant_sup: SupervisorHandle = self.root.child_handle(&id).await.ok_or_else(missing)?;
        let connections: DynamicSupervisorHandle = tenant_sup.child_handle("connections").await.ok_or_else(missing)?;
        let limits = Arc::new(TenantLimits::new(name, self.bounds));
        let tenant = Tenant { supervisor: tenant_sup, connections, limits, started: Instant::now() };
        tenants.insert(name.to_owned(), tenant.clone());
        Ok(tenant)
    }

    /// Starts a connection actor under its tenant's connections supervisor.
    pub(crate) async fn start_connection(
        &self,
        tenant: &str,
        make_args: impl FnOnce(Arc<TenantLimits>, Gauge) -> ConnectionArgs,
    ) -> Result<ConnectionHandle, ConnectError> {
        let tenant = self.tenant(tenant).await?;
        let args = make_args(tenant.limits.clone(), self.gauge.clone());
        // The start function is `Fn` (a supervisor may call it again to restart), but a
        // temporary child is started once: the arguments are taken on that one call.
        let slot = Arc::new(Mutex::new(Some(args)));
        let spec = ChildSpec::new("connection", move |ctx: StartContext| {
            let args = slot.lock().take();
            async move {
                let args = args.ok_or_else(|| ChildStartError::failed("a connection is never restarted"))?;
                let (actor, _) = Actor::spawn_linked(None, ConnectionActor, args, ctx.supervisor()).await?;
                Ok(Started::actor(actor))
            }
        })
        .restart(Restart::Temporary)
        .shutdown(Shutdown::Timeout(std::time::Duration::from_secs(5)));
        let cell = tenant.connections.start_child(spec).await.map_err(|e| match e {
            arbor_otp::StartDynamicChildError::Gone(_) => ConnectError::ShuttingDown,
            other => ConnectError::Supervisor(other),
        })?;
        Ok(ConnectionHandle::new(ActorRef::<ConnMsg>::from(cell)))
    }

    /// Whether the root supervisor runs.
    pub(crate) fn is_alive(&self) -> bool {
        self.root.is_alive()
    }

    /// Requests in flight over every tenant.
    pub(crate) async fn in_flight(&self) -> usize {
        self.tenants.lock().await.values().map(|t| t.limits.in_flight()).sum()
    }

    /// A JSON-ready view of the whole tree.
    pub(crate) async fn snapshot(&self) -> NodeSnapshot {
        self.root.snapshot().await
    }

    /// The tree as operators see it: the snapshot, with each tenant's connections asked
    /// for their requests and streams, and the task runs going on this node.
    pub(crate) async fn observe(&self, tasks: &Tasks) -> ServerView {
        let mut root = ViewNode::from_snapshot(&self.root.snapshot().await);
        root.age_ms = Some(self.started.elapsed().as_millis() as u64);
        if let Some(node) = root.children.iter_mut().find(|c| c.id == "tasks") {
            node.children = tasks.observe();
        }
        let tenants: Vec<Tenant> = self.tenants.lock().await.values().cloned().collect();
        let mut loads = Vec::with_capacity(tenants.len());
        for tenant in tenants {
            let mut load = tenant.limits.load();
            let id = format!("tenant:{}", tenant.limits.name());
            let Some(node) = root.children.iter_mut().find(|c| c.id == id) else { continue };
            node.age_ms = Some(tenant.started.elapsed().as_millis() as u64);
            let connections = match live_connections(&tenant.supervisor).await {
                Some(connections) => connections,
                None => tenant.connections.clone(),
            };
            let cells = connections.which_children().await.unwrap_or_default();
            load.connections = cells.len();
            if let Some(node) = node.children.iter_mut().find(|c| c.id == "connections") {
                let listed = if cells.len() > inspect::MAX_LISTED {
                    format!(", the first {} listed", inspect::MAX_LISTED)
                } else {
                    String::new()
                };
                let plural = if cells.len() == 1 { "" } else { "s" };
                node.detail = Some(format!("{} connection{plural}{listed}", cells.len()));
                node.children = inspect::connections(cells).await;
            }
            loads.push(load);
        }
        loads.sort_by(|a, b| a.tenant.cmp(&b.tenant));
        ServerView { root, tenants: loads }
    }

    /// Every tenant's load.
    pub(crate) async fn tenant_loads(&self) -> Vec<TenantLoad> {
        let tenants: Vec<Tenant> = self.tenants.lock().await.values().cloned().collect();
        let mut loads = Vec::with_capacity(tenants.len());
        for tenant in tenants {
            let mut load = tenant.limits.load();
            let connections = live_connections(&tenant.supervisor).await.unwrap_or(tenant.connections);
            load.connections = connections.count_children().await.map_or(0, |c| c.active);
            loads.push(load);
        }
        loads.sort_by(|a, b| a.tenant.cmp(&b.tenant));
        loads
    }

    /// Fault injection: stops the tenant's `connections` supervisor as a crash would
    /// (its connections stop with it), so the tenant supervisor restarts it. `false` when
    /// the tenant is unknown or has no live connections supervisor.
    pub(crate) async fn crash_connections(&self, tenant: &str, reason: &str) -> bool {
        let Some(tenant) = self.tenants.lock().await.get(tenant).cloned() else { return false };
        let Some(connections) = live_connections(&tenant.supervisor).await else { return false };
        arbor_otp::ExitReason::Failure(reason.to_owned()).stop(&connections.cell());
        true
    }

    /// Stops every tenant, connection and request, in order, and waits for them.
    pub(crate) async fn shutdown(&self) {
        self.root.shutdown().await;
        self.tenants.lock().await.clear();
    }
}
