//! The task supervisor: Elixir's `Task.Supervisor` (`async_nolink`), the unit every
//! in-flight request runs on.
//!
//! A [`TaskSupervisor`] is a ractor actor (so it sits in a supervision tree, is shut down
//! in order and shows up in snapshots) plus state shared with its handles. Spawning does
//! *not* go through the actor's mailbox and a task is *not* a ractor actor: it is a tokio
//! task running the wrapper in `run.rs`, with a one-slot control mailbox (for cancel, see
//! `handle.rs`), a deadline, a slot in the concurrency bound, and a place in the supervisor's
//! shutdown broadcast. Why not one ractor actor per request: an actor is a tokio task
//! plus four channels, a lifecycle guard and a lock on the global supervision tree, and a
//! supervised one adds a mailbox hop to its supervisor for every start and exit. On our
//! 2-core machine a bare ractor spawn+stop measured 3.6 µs (current-thread) and 25 µs
//! (multi-thread, driven from outside the runtime) when this was designed, and
//! `benches/otp.rs` measures a supervised temporary child at about 4 µs (current-thread)
//! and 4.5 µs (multi-thread, driven from a worker) against 1.3 µs bare; a request's whole
//! budget is 5 µs and at most 2× a bare `tokio::spawn` + oneshot (about 0.2 µs). What a
//! request needs from an actor (monitoring, cancel as a message, a hard deadline, being
//! stopped with its supervisor) fits in a task, whose round trip measures about 0.37 µs,
//! 1.6–1.7× the bare tokio round trip.
//!
//! What it is not: a queue. Past `max_concurrency` a spawn is refused at once with
//! [`SpawnError::Overloaded`]. Tasks are never restarted (they are temporary, as in
//! Elixir, because the caller holds a direct reference to the outcome).
//!
//! Invariants: every accepted task delivers exactly one [`TaskOutcome`]; when the
//! supervisor's actor has finished stopping, no task wrapper is running (blocking
//! closures that ignore their [`CancellationToken`] may still be finishing, holding their slot).

pub(crate) mod blocking;
pub(crate) mod handle;
pub(crate) mod outcome;
mod owned;
mod run;
mod shared;
mod spec;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef};
use tokio::sync::Notify;
use tokio::time::Instant;

use handle::TaskCell;
pub use handle::{TaskHandle, TaskRef};
pub use owned::OwnedTaskSupervisor;

use crate::exit::ExitReason;
use crate::gauge::{Gauge, LiveToken};

use crate::snapshot::{Introspect, NodeKind, NodeSnapshot, NodeStatus, TaskStats};
use crate::supervisor::child_spec::{ChildSpec, ChildStartError, StartContext, Started};
use crate::supervisor::handle::StartSupervisorError;
use blocking::CancellationToken;
use outcome::SpawnError;
use run::{run, RunGuard, SlotGuard, Wiring};
use shared::Stats;
pub(crate) use shared::TaskShared;
pub use spec::{TaskOptions, TaskSupervisorSpec};

/// `Box::pin(make())`, with the box allocated before the future is made, so the future is
/// written into it in place. `Box::pin(future)` makes the future on the stack first (the
/// allocation comes after it) and then copies all of it: its whole size, however little of
/// it a future that has not started uses. For the large futures handed to a supervisor (a
/// request's work is kilobytes), that copy, into memory just allocated, is the cost.
///
/// ```
/// let work = arbor_otp::pin_in_place(|| async { 20 + 22 });
/// assert_eq!(futures::executor::block_on(work), 42);
/// ```
#[inline(always)]
pub fn pin_in_place<F>(make: impl FnOnce() -> F) -> std::pin::Pin<Box<F>> {
    Box::into_pin(Box::write(Box::new_uninit(), make()))
}

/// An accepted task: the awaiter's handle and the wrapper's wiring.
type Admitted<T, E> = (TaskHandle<T, E>, Wiring<T, E>);

/// The ractor actor that gives a task supervisor its place in a tree. It has no
/// messages: its whole job is to run the ordered shutdown of its tasks in `post_stop`.
pub(crate) struct TaskSupActor;

pub(crate) enum TaskSupMsg {}

pub(crate) struct TaskSupState {
    shared: Arc<TaskShared>,
    _live: LiveToken,
}

impl Drop for TaskSupState {
    /// Also covers a kill, where `post_stop` does not run: tasks still get `Shutdown`.
    fn drop(&mut self) {
        self.shared.broadcast_shutdown();
    }
}

impl Actor for TaskSupActor {
    type Msg = TaskSupMsg;
    type State = TaskSupState;
    type Arguments = Arc<TaskShared>;

    async fn pre_start(
        &self,
        _myself: ActorRef<TaskSupMsg>,
        shared: Arc<TaskShared>,
    ) -> Result<TaskSupState, ActorProcessingErr> {
        shared.gauge.register_tasks(Arc::downgrade(&shared) as _);
        Ok(TaskSupState { _live: shared.gauge.actor_token(), shared })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<TaskSupMsg>,
        state: &mut TaskSupState,
    ) -> Result<(), ActorProcessingErr> {
        state.shared.stop_all().await;
        Ok(())
    }
}

/// The client API of a task supervisor; cheap to clone, spawning needs no message hop.
#[derive(Clone)]
pub struct TaskSupervisor {
    shared: Arc<TaskShared>,
    /// `None` for an [`OwnedTaskSupervisor`]'s, which has no actor.
    actor: Option<ActorRef<TaskSupMsg>>,
}

impl std::fmt::Debug for TaskSupervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskSupervisor").field("name", &self.shared.name).field("stats", &self.shared.stats()).finish()
    }
}

impl TaskSupervisor {
    /// Starts a root task supervisor.
    pub async fn start(spec: TaskSupervisorSpec) -> Result<Self, StartSupervisorError> {
        Self::spawn_actor(spec, None).await
    }

    /// Starts a task supervisor linked to `parent`, an actor that is not one of our
    /// supervisors (for example a connection actor that owns its requests). `parent` gets
    /// ractor's supervision events for it and must stop it (`shutdown`) in its own
    /// `post_stop`; the spec's gauge, or the global one, counts it.
    pub async fn start_linked(spec: TaskSupervisorSpec, parent: ActorCell) -> Result<Self, StartSupervisorError> {
        let gauge = spec.gauge.clone().unwrap_or_else(Gauge::global);
        Self::spawn_actor(spec, Some(StartContext { supervisor: parent, gauge })).await
    }

    async fn spawn_actor(spec: TaskSupervisorSpec, parent: Option<StartContext>) -> Result<Self, StartSupervisorError> {
        let gauge =
            spec.gauge.clone().or_else(|| parent.as_ref().map(|p| p.gauge.clone())).unwrap_or_else(Gauge::global);
        let shared = Self::shared(spec, gauge);
        let spawned = match parent {
            None => Actor::spawn(None, TaskSupActor, shared.clone()).await,
            Some(ctx) => Actor::spawn_linked(None, TaskSupActor, shared.clone(), ctx.supervisor).await,
        };
        let (actor, _) = spawned.map_err(|e| StartSupervisorError::Spawn(e.to_string()))?;
        Ok(TaskSupervisor { shared, actor: Some(actor) })
    }

    fn shared(spec: TaskSupervisorSpec, gauge: Gauge) -> Arc<TaskShared> {
        Arc::new(TaskShared {
            name: spec.name,
            max: spec.max_concurrency,
            default_deadline: spec.default_deadline,
            shutdown_grace: spec.shutdown_grace,
            running: AtomicUsize::new(0),
            overhang: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            stop: Notify::new(),
            idle: Notify::new(),
            next_id: AtomicU64::new(0),
            stats: Stats::default(),
            gauge,
        })
    }

    /// Spawns `work` with the supervisor's default deadline. Must be called inside a tokio
    /// runtime; never waits (refusals are immediate).
    pub fn spawn<F, T, E>(&self, work: F) -> Result<TaskHandle<T, E>, SpawnError>
    where
        F: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
    {
        self.spawn_with(TaskOptions::default(), work)
    }

    /// Spawns `work` with `options`; refused at once if the bound is reached.
    pub fn spawn_with<F, T, E>(&self, options: TaskOptions, work: F) -> Result<TaskHandle<T, E>, SpawnError>
    where
        F: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
    {
        let (handle, wiring) = self.admit(options)?;
        tokio::spawn(run(work, wiring));
        Ok(handle)
    }

    /// Spawns `work` with `options` and calls `report` with its outcome instead of handing
    /// back an awaitable handle: the caller keeps only a [`TaskRef`] for cancelling, and
    /// nothing has to wait on the task. `report` runs on the task, after the work's future
    /// was dropped and its slot released (and after [`TaskRef::is_finished`] turned true),
    /// exactly once: with [`TaskOutcome::Shutdown`](outcome::TaskOutcome::Shutdown) if the
    /// runtime drops the task first. It must be quick and must not panic.
    pub fn spawn_reporting<F, T, E, R>(&self, options: TaskOptions, work: F, report: R) -> Result<TaskRef, SpawnError>
    where
        F: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
        R: FnOnce(outcome::TaskOutcome<T, E>) + Send + 'static,
    {
        let (handle, wiring) = self.admit(options)?;
        let task_ref = handle.task_ref();
        let mut report = ReportOnce(Some(report), std::marker::PhantomData);
        tokio::spawn(async move {
            run(work, wiring).await;
            // The wrapper has deposited the outcome, so this is ready at once.
            let outcome = handle.await;
            if let Some(report) = report.0.take() {
                report(outcome);
            }
        });
        Ok(task_ref)
    }

    /// [`TaskSupervisor::spawn_reporting`], with the work's first poll run here, on the
    /// caller's task. Work that is ready at once (most request handlers are) is reported
    /// before this returns and never costs a tokio task, a schedule or a wake-up of the
    /// caller; work that is not is spawned as usual and polled again there (a future
    /// registers its waker at every poll, so nothing the first poll registered is lost).
    /// Nothing else differs: the slot is taken first and refusals are immediate, a panic in
    /// the first poll is reported `Panicked`, and the deadline, cancel and shutdown apply
    /// from the first poll on. For callers whose own task has nothing better to do than
    /// wait for this work (a transport's request handler), never for an actor, which would
    /// run the work's first poll inside its turn.
    ///
    /// The work is made by `make`, given the task's own [`TaskRef`] once it is admitted (and
    /// never called on a refusal): work that must be able to cancel itself holds it without
    /// a channel to hand it over after the start.
    pub fn start_reporting<M, F, T, E, R>(
        &self,
        options: TaskOptions,
        make: M,
        report: R,
    ) -> Result<TaskRef, SpawnError>
    where
        M: FnOnce(&TaskRef) -> F,
        F: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
        R: FnOnce(outcome::TaskOutcome<T, E>) + Send + 'static,
    {
        let (handle, wiring) = self.admit(options)?;
        let task_ref = handle.task_ref();
        // Boxed where it is made: the wrapper's future then holds a pointer, and moving it
        // through the wrapper, its pinning and a spawn copies less (about 180 instructions
        // of memcpy per HTTP request by callgrind, for one more small allocation).
        // Written out rather than through `pin_in_place`, whose closure would take `make`
        // (the caller's whole request) by value: one more copy of it.
        let work = Box::into_pin(Box::write(Box::new_uninit(), make(&task_ref)));
        let mut report = ReportOnce(Some(report), std::marker::PhantomData);
        // The wrapper is made in its box too: `Box::pin` built it on the stack (the report
        // closure and the wiring, hundreds of bytes) and copied it.
        let mut task = Box::into_pin(Box::write(Box::new_uninit(), async move {
            run(work, wiring).await;
            // The wrapper has deposited the outcome, so this is ready at once.
            let outcome = handle.await;
            if let Some(report) = report.0.take() {
                report(outcome);
            }
        }));
        // A waker that does nothing: were the work pending, the spawned task's first poll
        // registers its own.
        let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
        if task.as_mut().poll(&mut cx).is_pending() {
            tokio::spawn(task);
        }
        Ok(task_ref)
    }

    /// Spawns blocking or CPU-bound `work` on tokio's blocking pool; see the `blocking`
    /// module docs. The closure gets a [`CancellationToken`] to poll between units of work,
    /// cancelled when its result is no longer wanted (deadline, cancel or shutdown).
    pub fn spawn_blocking<F, T, E>(&self, options: TaskOptions, work: F) -> Result<TaskHandle<T, E>, SpawnError>
    where
        F: FnOnce(CancellationToken) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
    {
        let (handle, wiring) = self.admit(options)?;
        let token = CancellationToken::new();
        // Cancels the token when the wrapper drops this future before it returned.
        let hook = token.clone().drop_guard();
        let (slot, wrapper_side) = SlotGuard::pair(self.shared.clone());
        let wait = async move {
            let hook = hook;
            let _wrapper_side = wrapper_side;
            let joined = tokio::task::spawn_blocking(move || {
                let _slot = slot;
                work(token)
            })
            .await;
            // The closure returned (or panicked): the work was not dropped, so the token
            // stays as it is for anything the closure handed it to.
            drop(hook.disarm());
            match joined {
                Ok(result) => result,
                // Re-raise inside the wrapper so it is reported as `Panicked`.
                Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
                Err(_) => panic!("blocking work was cancelled by the runtime"),
            }
        };
        tokio::spawn(run(wait, wiring));
        Ok(handle)
    }

    /// Admission control and wiring shared by both spawn paths.
    fn admit<T: Send + 'static, E: Send + 'static>(&self, options: TaskOptions) -> Result<Admitted<T, E>, SpawnError> {
        let shared = &self.shared;
        if shared.closed.load(Ordering::SeqCst) {
            return Err(SpawnError::ShuttingDown);
        }
        // Taking the slot first and giving it back on refusal keeps admission to one
        // atomic add in the common case; a refused spawn never waits.
        let taken = shared.running.fetch_add(1, Ordering::AcqRel) + shared.overhang.load(Ordering::Acquire);
        if taken >= shared.max {
            shared.wrapper_ended();
            shared.stats.refused.fetch_add(1, Ordering::Relaxed);
            return Err(SpawnError::Overloaded { max: shared.max });
        }
        let guard = RunGuard { shared: shared.clone() };
        let cell = TaskCell::new();
        let deadline = options.deadline.or(shared.default_deadline).map(|d| Instant::now() + d);
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        Ok((TaskHandle::new(id, cell.clone()), Wiring { cell, deadline, guard }))
    }

    /// Concurrency slots in use (running tasks plus blocking work that outlived its task).
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight()
    }

    /// Counters since start.
    pub fn stats(&self) -> TaskStats {
        self.shared.stats()
    }

    /// This supervisor as a snapshot node (tasks are counted, not listed).
    pub async fn snapshot(&self) -> NodeSnapshot {
        self.node(self.shared.name.clone())
    }

    fn node(&self, id: String) -> NodeSnapshot {
        let alive = match &self.actor {
            Some(actor) => actor.get_status() < ractor::ActorStatus::Stopping,
            None => !self.shared.closed.load(Ordering::Acquire),
        };
        NodeSnapshot {
            name: Some(self.shared.name.clone()),
            actor_id: self.actor.as_ref().map(|a| a.get_id().to_string()),
            status: if alive { NodeStatus::Running } else { NodeStatus::Stopped },
            child_count: self.shared.running.load(Ordering::Relaxed),
            // Tasks are reached directly, never through this actor's mailbox.
            mailbox_depth: Some(0),
            tasks: Some(self.shared.stats()),
            ..NodeSnapshot::blank(id, NodeKind::TaskSupervisor, NodeStatus::Running)
        }
    }

    /// Refuses new tasks, lets in-flight ones run for the shutdown grace, stops the rest
    /// with `Shutdown`, and returns once no task wrapper runs.
    pub async fn shutdown(&self) -> ExitReason {
        match &self.actor {
            Some(actor) => {
                ExitReason::Shutdown(None).stop(&actor.get_cell());
                let _ = actor.get_cell().wait(None).await;
            }
            None => self.shared.stop_all().await,
        }
        ExitReason::Shutdown(None)
    }

    /// The supervisor's actor cell.
    ///
    /// # Panics
    ///
    /// For the supervisor behind an [`OwnedTaskSupervisor`], which has no actor.
    pub fn cell(&self) -> ActorCell {
        self.actor.as_ref().expect("an owned task supervisor has no actor cell").get_cell()
    }
}

impl Introspect for TaskSupervisor {
    fn snapshot(&self, id: String) -> BoxFuture<'static, NodeSnapshot> {
        let node = self.node(id);
        async move { node }.boxed()
    }
}

impl ChildSpec {
    /// A child that is a task supervisor (kind supervisor, shutdown infinity, permanent).
    /// Get its handle with `SupervisorHandle::child_handle::<TaskSupervisor>(id)`.
    pub fn task_supervisor(id: impl Into<String>, spec: TaskSupervisorSpec) -> Self {
        ChildSpec::new(id, move |ctx: StartContext| {
            let spec = spec.clone();
            async move {
                let handle = TaskSupervisor::spawn_actor(spec, Some(ctx)).await.map_err(ChildStartError::from)?;
                Ok(Started::supervisor(handle.cell(), handle))
            }
        })
        .as_supervisor()
    }
}

/// Calls the report closure with `Shutdown` if the task is dropped before it reported
/// (the runtime shut down), so every accepted task reports exactly once.
struct ReportOnce<R: FnOnce(outcome::TaskOutcome<T, E>), T, E>(Option<R>, std::marker::PhantomData<fn(T, E)>);

impl<R: FnOnce(outcome::TaskOutcome<T, E>), T, E> Drop for ReportOnce<R, T, E> {
    fn drop(&mut self) {
        if let Some(report) = self.0.take() {
            report(outcome::TaskOutcome::Shutdown);
        }
    }
}
