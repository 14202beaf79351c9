//! `SupervisorHandle`: the client API of a static supervisor, and its errors.
//!
//! Every operation is a message to the supervisor actor (the message enum stays
//! crate-private), so requests are serialised with exit handling exactly as in OTP. The
//! handle is cheap to clone and holds no ractor types in its signatures except the
//! `ActorCell`s of children, which are how users talk to their own actors (ractor is
//! re-exported as `arbor_otp::ractor` for them).
//!
//! Invariant: each operation returns a typed error named after it, and
//! [`SupervisorGone`] whenever the supervisor is no longer running.

use std::any::Any;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use ractor::{Actor, ActorCell, ActorRef};

use crate::exit::ExitReason;
use crate::gauge::Gauge;
use crate::node::NodeShared;
use crate::snapshot::{fill_probes, Introspect, NodeKind, NodeSnapshot, NodeStatus, PROBE_TIMEOUT};
use crate::supervisor::child_spec::{ChildKind, ChildSpec, ChildStartError, Restart, SpecError, StartContext, Started};
use crate::supervisor::strategy::SupervisorSpec;
use crate::supervisor::{SupervisorActor, SupervisorArgs, SupervisorMsg};

/// The supervisor is not running (any more).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("supervisor is not running")]
pub struct SupervisorGone;

/// Why a supervisor could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartSupervisorError {
    /// The spec breaks a rule (duplicate ids, significant permanent child, ...).
    #[error("invalid supervisor spec: {0}")]
    InvalidSpec(#[from] SpecError),
    /// A static child failed to start; those already started were shut down again.
    #[error("child {id:?} failed to start: {source}")]
    ChildFailed {
        /// The child's id.
        id: String,
        /// Why it did not start.
        #[source]
        source: ChildStartError,
    },
    /// ractor refused the spawn (its `SpawnErr` as text: it is neither `Clone` nor `Eq`).
    #[error("supervisor failed to spawn: {0}")]
    Spawn(String),
}

/// Why `start_child` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartChildError {
    /// A child with this id is running.
    #[error("child {0:?} is already started")]
    AlreadyStarted(String),
    /// A spec with this id exists but is not running.
    #[error("child {0:?} is already present")]
    AlreadyPresent(String),
    /// The spec is not valid for this supervisor.
    #[error("invalid child spec: {0}")]
    InvalidSpec(#[source] SpecError),
    /// The start function failed; the spec was not added.
    #[error("child failed to start: {0}")]
    StartFailed(#[source] ChildStartError),
    /// See [`SupervisorGone`].
    #[error(transparent)]
    Gone(#[from] SupervisorGone),
}

/// Why `terminate_child` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TerminateChildError {
    /// No child with this id.
    #[error("no child {0:?}")]
    NotFound(String),
    /// See [`SupervisorGone`].
    #[error(transparent)]
    Gone(#[from] SupervisorGone),
}

/// Why `restart_child` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RestartChildError {
    /// No child with this id.
    #[error("no child {0:?}")]
    NotFound(String),
    /// The child is running; terminate it first.
    #[error("child {0:?} is running")]
    Running(String),
    /// The supervisor is already retrying this child.
    #[error("child {0:?} is restarting")]
    Restarting(String),
    /// The start function failed.
    #[error("child failed to start: {0}")]
    StartFailed(#[source] ChildStartError),
    /// See [`SupervisorGone`].
    #[error(transparent)]
    Gone(#[from] SupervisorGone),
}

/// Why `delete_child` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeleteChildError {
    /// No child with this id.
    #[error("no child {0:?}")]
    NotFound(String),
    /// The child is running; terminate it first.
    #[error("child {0:?} is running")]
    Running(String),
    /// The supervisor is retrying this child; terminate it first.
    #[error("child {0:?} is restarting")]
    Restarting(String),
    /// See [`SupervisorGone`].
    #[error(transparent)]
    Gone(#[from] SupervisorGone),
}

/// One row of `which_children`.
#[derive(Clone)]
pub struct ChildInfo {
    /// The child id.
    pub id: String,
    /// The running actor, if any.
    pub actor: Option<ActorCell>,
    /// Running, restarting or not running.
    pub status: NodeStatus,
    /// Worker or supervisor.
    pub kind: ChildKind,
    /// Restart type.
    pub restart: Restart,
    /// The significant flag.
    pub significant: bool,
    pub(crate) handle: Option<Arc<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for ChildInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildInfo")
            .field("id", &self.id)
            .field("actor", &self.actor.as_ref().map(|a| a.get_id()))
            .field("status", &self.status)
            .field("kind", &self.kind)
            .field("restart", &self.restart)
            .field("significant", &self.significant)
            .finish()
    }
}

impl ChildInfo {
    /// The typed handle of a child started by one of the `ChildSpec::*supervisor`
    /// constructors (e.g. `info.handle::<TaskSupervisor>()`).
    pub fn handle<H: Clone + 'static>(&self) -> Option<H> {
        self.handle.as_ref()?.downcast_ref::<H>().cloned()
    }
}

/// `count_children`'s answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ChildCounts {
    /// All specs, running or not.
    pub specs: usize,
    /// Children with a running actor.
    pub active: usize,
    /// Specs of kind supervisor.
    pub supervisors: usize,
    /// Specs of kind worker.
    pub workers: usize,
}

/// The client API of a running static supervisor.
#[derive(Clone)]
pub struct SupervisorHandle {
    actor: ActorRef<SupervisorMsg>,
    shared: Arc<NodeShared>,
    gauge: Gauge,
    name: Arc<str>,
}

impl std::fmt::Debug for SupervisorHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SupervisorHandle").field("name", &self.name).field("actor", &self.actor.get_id()).finish()
    }
}

impl SupervisorHandle {
    /// Starts a root supervisor and its static children, in order; returns once all
    /// are started.
    pub async fn start(spec: SupervisorSpec) -> Result<Self, StartSupervisorError> {
        Self::spawn(spec, None).await
    }

    pub(crate) async fn spawn(
        spec: SupervisorSpec,
        parent: Option<StartContext>,
    ) -> Result<Self, StartSupervisorError> {
        spec.validate()?;
        let gauge =
            spec.gauge.clone().or_else(|| parent.as_ref().map(|p| p.gauge.clone())).unwrap_or_else(Gauge::global);
        let shared = Arc::new(NodeShared::default());
        let name: Arc<str> = spec.name.clone().into();
        let args = SupervisorArgs { spec, gauge: gauge.clone(), shared: shared.clone() };
        let spawned = match parent {
            None => Actor::spawn(None, SupervisorActor, args).await,
            Some(ctx) => Actor::spawn_linked(None, SupervisorActor, args, ctx.supervisor).await,
        };
        match spawned {
            Ok((actor, _)) => Ok(SupervisorHandle { actor, shared, gauge, name }),
            Err(err) => Err(match shared.take_start_error() {
                Some((id, source)) => StartSupervisorError::ChildFailed { id, source },
                None => StartSupervisorError::Spawn(err.to_string()),
            }),
        }
    }

    /// Adds and starts a child; `Ok(None)` if its start function answered `ignore`.
    pub async fn start_child(&self, spec: ChildSpec) -> Result<Option<ActorCell>, StartChildError> {
        self.shared.call(&self.actor, None, |r| SupervisorMsg::StartChild(spec, r)).await.ok_or(SupervisorGone)?
    }

    /// Terminates a child per its shutdown rule; its spec is kept unless it is temporary.
    pub async fn terminate_child(&self, id: &str) -> Result<(), TerminateChildError> {
        let id = id.to_owned();
        self.shared.call(&self.actor, None, |r| SupervisorMsg::TerminateChild(id, r)).await.ok_or(SupervisorGone)?
    }

    /// Starts a child whose spec is present but not running.
    pub async fn restart_child(&self, id: &str) -> Result<Option<ActorCell>, RestartChildError> {
        let id = id.to_owned();
        self.shared.call(&self.actor, None, |r| SupervisorMsg::RestartChild(id, r)).await.ok_or(SupervisorGone)?
    }

    /// Removes the spec of a child that is not running.
    pub async fn delete_child(&self, id: &str) -> Result<(), DeleteChildError> {
        let id = id.to_owned();
        self.shared.call(&self.actor, None, |r| SupervisorMsg::DeleteChild(id, r)).await.ok_or(SupervisorGone)?
    }

    /// The children in start order.
    pub async fn which_children(&self) -> Result<Vec<ChildInfo>, SupervisorGone> {
        self.shared.call(&self.actor, None, SupervisorMsg::WhichChildren).await.ok_or(SupervisorGone)
    }

    /// Counts of specs, running children, workers and supervisors.
    pub async fn count_children(&self) -> Result<ChildCounts, SupervisorGone> {
        self.shared.call(&self.actor, None, SupervisorMsg::CountChildren).await.ok_or(SupervisorGone)
    }

    /// The typed handle of child supervisor `id` (see [`ChildInfo::handle`]).
    pub async fn child_handle<H: Clone + 'static>(&self, id: &str) -> Option<H> {
        self.which_children().await.ok()?.into_iter().find(|c| c.id == id)?.handle()
    }

    /// A snapshot of the whole tree below (and including) this supervisor.
    pub async fn snapshot(&self) -> NodeSnapshot {
        self.snapshot_as(self.name.to_string()).await
    }

    fn snapshot_as(&self, id: String) -> BoxFuture<'static, NodeSnapshot> {
        let handle = self.clone();
        async move {
            let reply = handle.shared.call(&handle.actor, Some(PROBE_TIMEOUT), SupervisorMsg::Snapshot).await;
            let Some((mut node, probes)) = reply else { return NodeSnapshot::unresponsive(id, NodeKind::Supervisor) };
            node.id = id;
            fill_probes(&mut node, probes).await;
            node
        }
        .boxed()
    }

    /// Shuts the tree down in order (children in reverse start order, each per its
    /// shutdown rule) and returns the supervisor's exit reason. Meant for roots: a
    /// supervisor inside a tree that stops this way is restarted by its parent if it is
    /// permanent, exactly as in OTP; use the parent's `terminate_child` instead.
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

    /// The supervisor's actor cell, e.g. to link or monitor it.
    pub fn cell(&self) -> ActorCell {
        self.actor.get_cell()
    }

    /// The gauge this tree counts its actors and tasks in.
    pub fn gauge(&self) -> &Gauge {
        &self.gauge
    }
}

impl Introspect for SupervisorHandle {
    fn snapshot(&self, id: String) -> BoxFuture<'static, NodeSnapshot> {
        self.snapshot_as(id)
    }
}

impl ChildSpec {
    /// A child that is itself a static supervisor (kind supervisor, shutdown infinity,
    /// permanent). A restart builds it afresh from `spec`.
    pub fn supervisor(id: impl Into<String>, spec: SupervisorSpec) -> Self {
        ChildSpec::new(id, move |ctx: StartContext| {
            let spec = spec.clone();
            async move {
                let handle = SupervisorHandle::spawn(spec, Some(ctx)).await?;
                Ok(Started::supervisor(handle.cell(), handle))
            }
        })
        .as_supervisor()
    }
}
