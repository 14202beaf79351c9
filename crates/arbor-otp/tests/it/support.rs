//! Test fixtures: a scriptable worker actor, an event log, and leak checks; the restart
//! storms' OTP reference model of a whole tree (`otp_model`) and driver (`storm`).

pub mod otp_model;
pub mod storm;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_otp::{ChildSpec, ExitReason, Gauge, LiveToken, Started, SupervisorHandle};
// Through arbor-otp's re-export: a tree's workers need no ractor dependency of their own.
use arbor_otp::ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef};
use parking_lot::Mutex;

/// An ordered log of lifecycle events ("start a", "stop a"), shared by all workers of a test.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, entry: String) {
        self.0.lock().push(entry);
    }

    pub fn entries(&self) -> Vec<String> {
        self.0.lock().clone()
    }

    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock())
    }
}

pub enum WorkerMsg {
    /// Panic inside the handler (abnormal exit).
    Panic,
    /// Return an error from the handler (abnormal exit).
    Fail,
    /// Stop with the given reason.
    Exit(ExitReason),
    /// Start a handler that never finishes, so a graceful stop is never processed.
    Hang,
}

pub struct Worker {
    name: String,
    log: Log,
}

impl Worker {
    pub fn new(name: &str, log: Log) -> Self {
        Worker { name: name.to_owned(), log }
    }
}

pub struct WorkerState {
    _live: LiveToken,
}

impl Actor for Worker {
    type Msg = WorkerMsg;
    type State = WorkerState;
    type Arguments = Gauge;

    async fn pre_start(&self, _me: ActorRef<WorkerMsg>, gauge: Gauge) -> Result<WorkerState, ActorProcessingErr> {
        self.log.push(format!("start {}", self.name));
        Ok(WorkerState { _live: gauge.actor_token() })
    }

    async fn post_stop(&self, _me: ActorRef<WorkerMsg>, _s: &mut WorkerState) -> Result<(), ActorProcessingErr> {
        self.log.push(format!("stop {}", self.name));
        Ok(())
    }

    async fn handle(
        &self,
        me: ActorRef<WorkerMsg>,
        msg: WorkerMsg,
        _s: &mut WorkerState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            WorkerMsg::Panic => panic!("worker {} panicked", self.name),
            WorkerMsg::Fail => return Err(format!("worker {} failed", self.name).into()),
            WorkerMsg::Exit(reason) => reason.stop(&me.get_cell()),
            WorkerMsg::Hang => tokio::time::sleep(Duration::from_secs(24 * 3600)).await,
        }
        Ok(())
    }
}

/// A permanent worker child named `id` that logs its start and graceful stop.
pub fn worker(id: &str, log: &Log) -> ChildSpec {
    let (name, log) = (id.to_owned(), log.clone());
    ChildSpec::new(id, move |ctx| {
        let worker = Worker { name: name.clone(), log: log.clone() };
        async move {
            let (actor, _) = Actor::spawn_linked(None, worker, ctx.gauge().clone(), ctx.supervisor()).await?;
            Ok(Started::actor(actor))
        }
    })
}

/// A worker whose start fails while `failures_left` is above zero (each failure uses one).
pub fn flaky_worker(id: &str, log: &Log, failures_left: Arc<AtomicUsize>) -> ChildSpec {
    let (name, log) = (id.to_owned(), log.clone());
    ChildSpec::new(id, move |ctx| {
        let worker = Worker { name: name.clone(), log: log.clone() };
        let failures_left = failures_left.clone();
        async move {
            if failures_left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
                return Err("refusing to start".into());
            }
            let (actor, _) = Actor::spawn_linked(None, worker, ctx.gauge().clone(), ctx.supervisor()).await?;
            Ok(Started::actor(actor))
        }
    })
}

/// Lets every ready task run (the paused clock only advances once the runtime is idle).
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

/// The running actor of child `id`.
pub async fn child(sup: &SupervisorHandle, id: &str) -> ActorCell {
    try_child(sup, id).await.unwrap_or_else(|| panic!("child {id} is not running"))
}

pub async fn try_child(sup: &SupervisorHandle, id: &str) -> Option<ActorCell> {
    sup.which_children().await.ok()?.into_iter().find(|c| c.id == id)?.actor
}

pub fn send(cell: &ActorCell, msg: WorkerMsg) {
    cell.send_message(msg).expect("worker alive");
}

/// Asserts that the gauge and the runtime are back to zero live actors and tasks.
pub async fn assert_no_leaks(gauge: &Gauge) {
    for _ in 0..10 {
        settle().await;
    }
    assert_eq!(gauge.alive_actors(), 0, "leaked actors");
    assert_eq!(gauge.alive_tasks(), 0, "leaked supervised tasks");
    let metrics = tokio::runtime::Handle::current().metrics();
    assert_eq!(metrics.num_alive_tasks(), 0, "leaked tokio tasks");
}

/// Runs another spec's start function (to wrap it with extra behaviour).
pub async fn start_via(spec: &ChildSpec, ctx: arbor_otp::StartContext) -> Result<Started, arbor_otp::ChildStartError> {
    spec.start_with(ctx).await
}
