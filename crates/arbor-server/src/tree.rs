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
use std::sync::Arc;
use std::time::Duration;

use arbor_otp::{
    ChildSpec, ChildStartError, DynamicSupervisorHandle, DynamicSupervisorSpec, Gauge, NodeSnapshot, Restart, Shutdown,
    StartContext, Started, Strategy, SupervisorHandle, SupervisorSpec, TaskSupervisor, TaskSupervisorSpec,
};
use parking_lot::Mutex;
use ractor::{Actor, ActorRef};

use tokio::time::Instant;

use crate::connection::{inspect, ConnMsg, ConnectionActor, ConnectionArgs, ConnectionHandle};
use crate::error::{ConnectError, StartError};
use crate::observe::{ServerView, TenantLoad, ViewNode};
use crate::tasks::Tasks;
pub(crate) use crate::tenant::TenantLimits;
use crate::tenant::TenantRegistry;

/// The tenant every connection belongs to when nothing identifies tenants.
pub const DEFAULT_TENANT: &str = "default";

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
    registry: Arc<TenantRegistry>,
    gauge: Gauge,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree").field("gauge", &self.gauge).finish_non_exhaustive()
    }
}

impl Tree {
    /// Starts the root supervisor.
    pub(crate) async fn start(
        gauge: Gauge,
        registry: Arc<TenantRegistry>,
        max_tasks: usize,
    ) -> Result<Tree, StartError> {
        let tasks_spec = TaskSupervisorSpec::new("tasks").max_concurrency(max_tasks).gauge(gauge.clone());
        let spec = SupervisorSpec::new("arbor-server")
            .strategy(Strategy::OneForOne)
            .intensity(10, std::time::Duration::from_secs(10))
            .gauge(gauge.clone())
            .child(ChildSpec::task_supervisor("tasks", tasks_spec));
        let root = SupervisorHandle::start(spec).await.map_err(StartError::Supervisor)?;
        let tasks = root.child_handle::<TaskSupervisor>("tasks").await.ok_or(StartError::Missing("tasks"))?;
        Ok(Tree { root, started: Instant::now(), tasks, tenants: Default::default(), registry, gauge })
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
        let id = format!("tenant:{name}");
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
            // The tenant supervisor itself was stopped (an escalation) and the root is
            // restarting it: wait (bounded) for its new incarnation, which keeps the same
            // limits (and quarantine). Starting another one meanwhile would race the root's.
            for _ in 0..200 {
                if let Some(sup) = self.root.child_handle::<SupervisorHandle>(&id).await.filter(|s| s.is_alive()) {
                    if let Some(fresh) = live_connections(&sup).await {
                        tenant.supervisor = sup;
                        tenant.connections = fresh;
                        return Ok(tenant.clone());
                    }
                }
                if !self.root.is_alive() {
                    return Err(ConnectError::ShuttingDown);
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        let limits = self.registry.get(name).map_err(ConnectError::Refused)?;
        // The tenant's own restart intensity, when its policy sets one: a tenant whose
        // connections supervisor keeps failing gives up as OTP's would, and the root
        // restarts it (quarantined: `escalate`).
        let mut spec = SupervisorSpec::new(id.clone()).strategy(Strategy::OneForOne);
        // One above the budget: the budget's own escalation (`escalate`), which first lets
        // the running requests answer, comes first; this is the backstop.
        if let Some(budget) = self.registry.policy().quota(name).restart_budget {
            spec = spec.intensity(budget.max_restarts.saturating_add(1), budget.window());
        }
        let spec = spec.child(ChildSpec::dynamic_supervisor("connections", DynamicSupervisorSpec::new("connections")));
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
        let tenant = Tenant { supervisor: tenant_sup, connections, limits, started: Instant::now() };
        tenants.insert(name.to_owned(), tenant.clone());
        Ok(tenant)
    }

    /// Escalates `tenant` past its restart budget, as an OTP supervisor past its
    /// intensity does: its running requests are stopped first (each answered -32603 by
    /// its own task, so none is lost), then, once they have answered (within a second),
    /// its supervisor is stopped with `reason`, taking its connections with it, and the
    /// root restarts it. The quarantine is already in force (`TenantLimits::crashed`).
    pub(crate) async fn escalate(&self, tenant: &str, reason: &str) {
        let Some(entry) = self.tenants.lock().await.get(tenant).cloned() else { return };
        entry.limits.stop_requests();
        let waited = tokio::time::timeout(Duration::from_secs(1), async {
            while entry.limits.in_flight() > 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        if waited.await.is_err() {
            tracing::warn!(tenant, "an escalated tenant's requests did not all answer within 1 s");
        }
        tracing::error!(tenant, reason, "tenant escalated past its restart budget: restarted and quarantined");
        let quarantine = entry.limits.quarantine().map(|q| q.retry_after()).unwrap_or_default();
        crate::metrics::escalated(entry.limits.label(), quarantine);
        let id = format!("tenant:{tenant}");
        match self.root.child_handle::<SupervisorHandle>(&id).await {
            Some(sup) => arbor_otp::ExitReason::Failure(format!("restart budget exceeded: {reason}")).stop(&sup.cell()),
            None => tracing::warn!(tenant, "an escalated tenant had no running supervisor"),
        }
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
        // Boxed: the supervisor keeps the spec, and so this slot, for the connection's
        // life, and the arguments inline would keep about 200 empty bytes per connection.
        let slot = Arc::new(Mutex::new(Some(Box::new(args))));
        let spec = ChildSpec::new("connection", move |ctx: StartContext| {
            let args = slot.lock().take();
            async move {
                let args = args.ok_or_else(|| ChildStartError::failed("a connection is never restarted"))?;
                let (actor, _) = Actor::spawn_linked(None, ConnectionActor, *args, ctx.supervisor()).await?;
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
            if let (Some(left), Some(reason)) = (load.quarantined_ms, &load.quarantine_reason) {
                node.state = "quarantined".to_owned();
                node.detail = Some(format!("quarantined: {reason}; {left} ms left"));
            }
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
        let Some(entry) = self.tenants.lock().await.get(tenant).cloned() else { return false };
        let supervisor = match self.root.child_handle::<SupervisorHandle>(&format!("tenant:{tenant}")).await {
            Some(sup) if sup.is_alive() => sup,
            _ => entry.supervisor.clone(),
        };
        let Some(connections) = live_connections(&supervisor).await else { return false };
        arbor_otp::ExitReason::Failure(reason.to_owned()).stop(&connections.cell());
        // A crash of the tenant's subtree is charged to its restart budget too.
        entry.limits.crashed();
        true
    }

    /// Stops every tenant, connection and request, in order, and waits for them.
    pub(crate) async fn shutdown(&self) {
        self.root.shutdown().await;
        self.tenants.lock().await.clear();
    }
}
