//! Child specifications: how a supervisor starts, restarts and stops one child.
//!
//! A [`ChildSpec`] mirrors OTP's child spec map: an id, a start function, a restart type, a
//! shutdown rule, a kind and the `significant` flag. The start function receives a
//! [`StartContext`] and must spawn the child *linked* to `ctx.supervisor()` (ractor's
//! `spawn_linked`), because linking at spawn is the only way not to miss an early failure.
//! It is not a builder of actors: what the child does is entirely the start function's
//! business. The start function runs inside the supervisor (as OTP's `init` does), so it
//! must be short and must not call its own supervisor, which would wait on itself.
//!
//! Invariant: a spec is immutable once given to a supervisor and cheap to clone (the start
//! function is shared), so a restart always runs exactly the same start function.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use ractor::{Actor, ActorCell, ActorRef, SpawnErr};
use serde::Serialize;

use crate::gauge::Gauge;
use crate::snapshot::Probe;
use crate::supervisor::handle::StartSupervisorError;

/// Default graceful-shutdown timeout for workers, as in OTP.
pub const DEFAULT_WORKER_SHUTDOWN: Duration = Duration::from_secs(5);

/// When a child is restarted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Restart {
    /// Always restarted.
    Permanent,
    /// Restarted only after an abnormal exit ([`crate::ExitReason::is_abnormal`]).
    Transient,
    /// Never restarted; its spec is discarded when it exits.
    Temporary,
}

/// How a child is stopped when its supervisor terminates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shutdown {
    /// Killed at once; `post_stop` does not run.
    BrutalKill,
    /// Asked to stop with reason `shutdown`, then killed if still alive after the timeout.
    Timeout(Duration),
    /// Asked to stop and waited for without limit; the default for supervisors, so that a
    /// subtree always finishes its own ordered shutdown.
    Infinity,
}

/// Whether a child is a worker or a supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildKind {
    /// A worker actor.
    Worker,
    /// A supervisor of any kind.
    Supervisor,
}

/// What a start function gets: the supervisor to link to and the tree's gauge.
#[derive(Debug, Clone)]
pub struct StartContext {
    pub(crate) supervisor: ActorCell,
    pub(crate) gauge: Gauge,
}

impl StartContext {
    /// The supervisor the child must be spawned linked to.
    pub fn supervisor(&self) -> ActorCell {
        self.supervisor.clone()
    }

    /// The tree's live-count gauge; a worker may keep `gauge().actor_token()` in its state.
    pub fn gauge(&self) -> &Gauge {
        &self.gauge
    }
}

/// What a start function returns on success: a started child or OTP's `ignore`.
pub struct Started {
    pub(crate) inner: Option<StartedChild>,
}

pub(crate) struct StartedChild {
    pub(crate) cell: ActorCell,
    pub(crate) probe: Option<Probe>,
    /// The typed handle of a child supervisor, for `ChildInfo::handle`.
    pub(crate) handle: Option<Arc<dyn Any + Send + Sync>>,
}

impl Started {
    /// A started actor, given by its reference.
    pub fn actor<M>(actor: ActorRef<M>) -> Self {
        Self::cell(actor.get_cell())
    }

    /// A started actor, given by its cell.
    pub fn cell(cell: ActorCell) -> Self {
        Started { inner: Some(StartedChild { cell, probe: None, handle: None }) }
    }

    /// OTP's `ignore`: nothing was started; the spec is kept unless the child is temporary.
    pub fn ignore() -> Self {
        Started { inner: None }
    }

    /// A started supervisor of ours: its handle doubles as the snapshot probe.
    pub(crate) fn supervisor<H>(cell: ActorCell, handle: H) -> Self
    where
        H: crate::snapshot::Introspect + Clone + Any + 'static,
    {
        let probe: Probe = Arc::new(handle.clone());
        Started { inner: Some(StartedChild { cell, probe: Some(probe), handle: Some(Arc::new(handle)) }) }
    }
}

impl fmt::Debug for Started {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Some(child) => f.debug_tuple("Started").field(&child.cell.get_id()).finish(),
            None => f.write_str("Ignored"),
        }
    }
}

/// Why a child's start function did not start it: what a start function returns on
/// failure, and the `source()` of every "child failed to start" error of the handles.
///
/// A start function says why in its own words with [`ChildStartError::failed`] (or `?` on a
/// `String`, a `&str` or ractor's `SpawnErr`); the other variants are the supervisor's own
/// findings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChildStartError {
    /// The start function failed, for the reason it gave.
    #[error("{0}")]
    Failed(String),
    /// ractor refused to spawn the child's actor. Its `SpawnErr` is kept as text: it is
    /// neither `Clone` nor `Eq`, and a restart record keeps the last error.
    #[error("spawning the child's actor failed: {0}")]
    Spawn(String),
    /// The start function panicked, with this message.
    #[error("start function panicked: {0}")]
    Panicked(String),
    /// The child was not spawned linked to `ctx.supervisor()`, so it was killed: an
    /// unlinked child would never report its exit.
    #[error("child {0:?} was not linked to its supervisor; spawn it with ctx.supervisor()")]
    NotLinked(String),
    /// A child supervisor of ours did not start.
    #[error("the child supervisor did not start: {0}")]
    Supervisor(#[source] Box<StartSupervisorError>),
}

impl ChildStartError {
    /// The start function failed for `reason`.
    pub fn failed(reason: impl fmt::Display) -> Self {
        ChildStartError::Failed(reason.to_string())
    }
}

impl From<SpawnErr> for ChildStartError {
    fn from(err: SpawnErr) -> Self {
        ChildStartError::Spawn(err.to_string())
    }
}

impl From<StartSupervisorError> for ChildStartError {
    fn from(err: StartSupervisorError) -> Self {
        ChildStartError::Supervisor(Box::new(err))
    }
}

impl From<String> for ChildStartError {
    fn from(err: String) -> Self {
        ChildStartError::Failed(err)
    }
}

impl From<&str> for ChildStartError {
    fn from(err: &str) -> Self {
        ChildStartError::Failed(err.to_owned())
    }
}

/// A child spec (or a supervisor spec's set of children) that breaks one of OTP's rules;
/// the `source()` of the handles' `InvalidSpec` errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// Two children of one supervisor spec share this id.
    #[error("duplicate child id {0:?}")]
    DuplicateId(String),
    /// A significant child must be transient or temporary.
    #[error("child {0:?}: a permanent child cannot be significant")]
    SignificantPermanent(String),
    /// A significant child needs its supervisor's `auto_shutdown` other than `never`.
    #[error("child {0:?}: significant children need auto_shutdown other than never")]
    SignificantWithoutAutoShutdown(String),
    /// Dynamic supervisors have no significant children.
    #[error("child {0:?}: dynamic supervisors have no significant children")]
    SignificantInDynamic(String),
}

type StartFn = Arc<dyn Fn(StartContext) -> BoxFuture<'static, Result<Started, ChildStartError>> + Send + Sync>;

/// How to start, restart and stop one child.
#[derive(Clone)]
pub struct ChildSpec {
    pub(crate) id: String,
    pub(crate) start: StartFn,
    pub(crate) restart: Restart,
    pub(crate) shutdown: Shutdown,
    pub(crate) kind: ChildKind,
    pub(crate) significant: bool,
}

impl fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpec")
            .field("id", &self.id)
            .field("restart", &self.restart)
            .field("shutdown", &self.shutdown)
            .field("kind", &self.kind)
            .field("significant", &self.significant)
            .finish_non_exhaustive()
    }
}

impl ChildSpec {
    /// A permanent worker started by `start`, with a 5 s graceful shutdown.
    pub fn new<F, Fut>(id: impl Into<String>, start: F) -> Self
    where
        F: Fn(StartContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Started, ChildStartError>> + Send + 'static,
    {
        ChildSpec {
            id: id.into(),
            start: Arc::new(move |ctx| start(ctx).boxed()),
            restart: Restart::Permanent,
            shutdown: Shutdown::Timeout(DEFAULT_WORKER_SHUTDOWN),
            kind: ChildKind::Worker,
            significant: false,
        }
    }

    /// A permanent worker running ractor actor `A`; `make` builds the handler and its
    /// arguments afresh for every (re)start.
    pub fn actor<A, F>(id: impl Into<String>, make: F) -> Self
    where
        A: Actor,
        F: Fn() -> (A, A::Arguments) + Send + Sync + 'static,
    {
        let make = Arc::new(make);
        ChildSpec::new(id, move |ctx: StartContext| {
            let make = make.clone();
            async move {
                let (handler, args) = make();
                let (actor, _) = A::spawn_linked(None, handler, args, ctx.supervisor()).await?;
                Ok(Started::actor(actor))
            }
        })
    }

    /// Sets the restart type.
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// Sets the shutdown rule.
    pub fn shutdown(mut self, shutdown: Shutdown) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// Marks the child significant for `auto_shutdown` (not allowed for permanent children).
    pub fn significant(mut self, significant: bool) -> Self {
        self.significant = significant;
        self
    }

    /// Declares the child a supervisor (also sets shutdown to `Infinity`); the
    /// `ChildSpec::supervisor`-style constructors do this already.
    pub fn as_supervisor(mut self) -> Self {
        self.kind = ChildKind::Supervisor;
        self.shutdown = Shutdown::Infinity;
        self
    }

    /// The child id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The restart type.
    pub fn restart_type(&self) -> Restart {
        self.restart
    }

    /// The kind.
    pub fn kind(&self) -> ChildKind {
        self.kind
    }

    /// Runs this spec's start function directly, e.g. from another spec's start function
    /// that wraps it with extra behaviour.
    pub async fn start_with(&self, ctx: StartContext) -> Result<Started, ChildStartError> {
        self.run_start(ctx).await
    }

    /// Runs the start function, turning a panic into a start error so a buggy start
    /// function counts as a failed (re)start instead of crashing the supervisor.
    pub(crate) async fn run_start(&self, ctx: StartContext) -> Result<Started, ChildStartError> {
        match AssertUnwindSafe((self.start)(ctx)).catch_unwind().await {
            Ok(result) => result,
            Err(panic) => Err(ChildStartError::Panicked(crate::panic_message(&panic))),
        }
    }

    /// Checks the rules OTP enforces on a spec: significant children must not be permanent
    /// and need an `auto_shutdown` other than `never`.
    pub(crate) fn validate(&self, auto_shutdown_enabled: bool) -> Result<(), SpecError> {
        if self.significant && self.restart == Restart::Permanent {
            return Err(SpecError::SignificantPermanent(self.id.clone()));
        }
        if self.significant && !auto_shutdown_enabled {
            return Err(SpecError::SignificantWithoutAutoShutdown(self.id.clone()));
        }
        Ok(())
    }
}

impl ChildSpec {
    /// Starts the child and checks it was linked to the supervisor in `ctx`; `None` for
    /// `ignore`. An unlinked child would never report its exit, so it is killed and the
    /// start counts as failed.
    pub(crate) async fn start_linked(&self, ctx: StartContext) -> Result<Option<StartedChild>, ChildStartError> {
        let supervisor = ctx.supervisor.get_id();
        let Some(child) = self.run_start(ctx).await?.inner else { return Ok(None) };
        let linked = child.cell.try_get_supervisor().map(|s| s.get_id()) == Some(supervisor);
        // A child that already stopped has been unlinked by ractor after reporting its exit
        // to us; that exit event is on its way, so treat it as started.
        let exited = child.cell.get_status() >= ractor::ActorStatus::Stopping;
        if linked || exited {
            Ok(Some(child))
        } else {
            child.cell.kill();
            Err(ChildStartError::NotLinked(self.id.clone()))
        }
    }
}
