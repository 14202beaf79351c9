//! `DynamicSupervisorHandle`: the client API of a dynamic supervisor, and its errors.
//!
//! Children are addressed by their `ActorCell` (they have no ids worth the name). Like the
//! static handle, every call is a message to the actor, whose message enum stays
//! crate-private.
//!
//! Invariant: `start_child` past `max_children` is refused immediately with
//! [`StartDynamicChildError::MaxChildren`]; nothing is queued.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use ractor::{Actor, ActorCell, ActorRef};

use crate::dynamic::{DynArgs, DynMsg, DynamicActor, DynamicSupervisorSpec};
use crate::exit::ExitReason;
use crate::gauge::Gauge;
use crate::node::NodeShared;
use crate::snapshot::{fill_probes, Introspect, NodeKind, NodeSnapshot, PROBE_TIMEOUT};
use crate::supervisor::child_spec::{ChildSpec, ChildStartError, SpecError, StartContext, Started};
use crate::supervisor::handle::{ChildCounts, ChildInfo, StartSupervisorError, SupervisorGone};

/// Why a dynamic supervisor's `start_child` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartDynamicChildError {
    /// The supervisor already has `max_children` children.
    #[error("max_children ({0}) reached")]
    MaxChildren(usize),
    /// The spec is not valid here.
    #[error("invalid child spec: {0}")]
    InvalidSpec(#[source] SpecError),
    /// The start function failed.
    #[error("child failed to start: {0}")]
    StartFailed(#[source] ChildStartError),
    /// The start function answered `ignore`; nothing was added.
    #[error("child start was ignored")]
    Ignored,
    /// See [`SupervisorGone`].
    #[error(transparent)]
    Gone(#[from] SupervisorGone),
}

/// Why a dynamic supervisor's `terminate_child` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TerminateDynamicChildError {
    /// That actor is not a current child.
    #[error("not a child of this supervisor")]
    NotFound,
    /// See [`SupervisorGone`].
    #[error(transparent)]
    Gone(#[from] SupervisorGone),
}

/// The client API of a running dynamic supervisor.
#[derive(Clone)]
pub struct DynamicSupervisorHandle {
    actor: ActorRef<DynMsg>,
    shared: Arc<NodeShared>,
    gauge: Gauge,
    name: Arc<str>,
}

impl std::fmt::Debug for DynamicSupervisorHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicSupervisorHandle")
            .field("name", &self.name)
            .field("actor", &self.actor.get_id())
            .finish()
    }
}

impl DynamicSupervisorHandle {
    /// Starts a root dynamic supervisor with no children.
    pub async fn start(spec: DynamicSupervisorSpec) -> Result<Self, StartSupervisorError> {
        Self::spawn(spec, None).await
    }

    pub(crate) async fn spawn(
        spec: DynamicSupervisorSpec,
        parent: Option<StartContext>,
    ) -> Result<Self, StartSupervisorError> {
        let gauge =
            spec.gauge.clone().or_else(|| parent.as_ref().map(|p| p.gauge.clone())).unwrap_or_else(Gauge::global);
        let shared = Arc::new(NodeShared::default());
        let name: Arc<str> = spec.name.clone().into();
        let args = DynArgs { spec, gauge: gauge.clone(), shared: shared.clone() };
        let spawned = match parent {
            None => Actor::spawn(None, DynamicActor, args).await,
            Some(ctx) => Actor::spawn_linked(None, DynamicActor, args, ctx.supervisor).await,
        };
        let (actor, _) = spawned.map_err(|e| StartSupervisorError::Spawn(e.to_string()))?;
        Ok(DynamicSupervisorHandle { actor, shared, gauge, name })
    }

    /// Starts one more child from `spec` (its id is only a label).
    pub async fn start_child(&self, spec: ChildSpec) -> Result<ActorCell, StartDynamicChildError> {
        self.shared.call(&self.actor, None, |r| DynMsg::StartChild(spec, r)).await.ok_or(SupervisorGone)?
    }

    /// Terminates a child per its shutdown rule and forgets it.
    pub async fn terminate_child(&self, child: &ActorCell) -> Result<(), TerminateDynamicChildError> {
        let id = child.get_id();
        self.shared.call(&self.actor, None, |r| DynMsg::TerminateChild(id, r)).await.ok_or(SupervisorGone)?
    }

    /// The children, oldest first.
    pub async fn which_children(&self) -> Result<Vec<ChildInfo>, SupervisorGone> {
        self.shared.call(&self.actor, None, DynMsg::WhichChildren).await.ok_or(SupervisorGone)
    }

    /// Counts of children.
    pub async fn count_children(&self) -> Result<ChildCounts, SupervisorGone> {
        self.shared.call(&self.actor, None, DynMsg::CountChildren).await.ok_or(SupervisorGone)
    }

    /// A snapshot of this supervisor and everything below it.
    pub async fn snapshot(&self) -> NodeSnapshot {
        self.snapshot_as(self.name.to_string()).await
    }

    fn snapshot_as(&self, id: String) -> BoxFuture<'static, NodeSnapshot> {
        let handle = self.clone();
        async move {
            let reply = handle.shared.call(&handle.actor, Some(PROBE_TIMEOUT), DynMsg::Snapshot).await;
            let Some((mut node, probes)) = reply else {
                return NodeSnapshot::unresponsive(id, NodeKind::DynamicSupervisor);
            };
            node.id = id;
            fill_probes(&mut node, probes).await;
            node
        }
        .boxed()
    }

    /// Shuts all children down (concurrently, each per its rule) and returns the exit reason.
    pub async fn shutdown(&self) -> ExitReason {
        self.shared.shutdown(&self.actor.get_cell()).await
    }

    /// Waits until the supervisor has exited and returns why.
    pub async fn wait(&self) -> ExitReason {
        self.shared.wait(&self.actor.get_cell()).await
    }

    /// Whether the supervisor actor is still alive.
    pub fn is_alive(&self) -> bool {
        self.actor.get_status() < ractor::ActorStatus::Stopping
    }

    /// The supervisor's actor cell.
    pub fn cell(&self) -> ActorCell {
        self.actor.get_cell()
    }

    /// The gauge this tree counts in.
    pub fn gauge(&self) -> &Gauge {
        &self.gauge
    }
}

impl Introspect for DynamicSupervisorHandle {
    fn snapshot(&self, id: String) -> BoxFuture<'static, NodeSnapshot> {
        self.snapshot_as(id)
    }
}

impl ChildSpec {
    /// A child that is a dynamic supervisor (kind supervisor, shutdown infinity, permanent).
    pub fn dynamic_supervisor(id: impl Into<String>, spec: DynamicSupervisorSpec) -> Self {
        ChildSpec::new(id, move |ctx: StartContext| {
            let spec = spec.clone();
            async move {
                let handle = DynamicSupervisorHandle::spawn(spec, Some(ctx)).await.map_err(ChildStartError::from)?;
                Ok(Started::supervisor(handle.cell(), handle))
            }
        })
        .as_supervisor()
    }
}
