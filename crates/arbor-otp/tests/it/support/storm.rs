//! The restart-storm driver: a real tree built from a [`Shape`], crashed one worker at a
//! time, each crash checked against the OTP reference model (`support::otp_model`): the
//! real start and stop events must be exactly the ones the model predicts.
//!
//! The tree runs on tokio's paused clock; its workers log their start and graceful stop,
//! count themselves in the tree's gauge and record every incarnation, so that after a
//! storm the live actors can be compared with the spec and any earlier incarnation still
//! alive (an orphan) is found. It is not a scheduler: which worker crashes and when the
//! clock moves is the scenario's choice, made by seed.
//!
//! Invariant: after every crash the real log equals the model's prediction, or the run
//! fails naming the step, the crash and both logs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arbor_otp::ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, ActorStatus};
use arbor_otp::{ChildSpec, Gauge, LiveToken, Started, SupervisorHandle, SupervisorSpec};
use parking_lot::Mutex;
use tokio::time::Instant;

pub use super::otp_model::{Model, Outcome, Shape};
use super::{settle, Log};

/// Every worker incarnation ever started, to find orphans at the end.
type Cells = Arc<Mutex<Vec<(String, ActorCell)>>>;

/// The real tree of `shape`, its workers logging into `log`.
fn build(shape: &Shape, log: &Log, cells: &Cells) -> SupervisorSpec {
    let Shape::Sup { name, strategy, max_restarts, period, children } = shape else { panic!("a root is a supervisor") };
    let mut spec = SupervisorSpec::new(*name).strategy(*strategy).intensity(*max_restarts, *period);
    for child in children {
        spec = spec.child(match child {
            Shape::Worker(id) => storm_worker(id, log, cells),
            Shape::Sup { name, .. } => ChildSpec::supervisor(*name, build(child, log, cells)),
        });
    }
    spec
}

/// A worker that logs its start and graceful stop, counts itself in the tree's gauge and
/// records its incarnation; told to, it panics or fails (both abnormal exits).
struct StormWorker {
    name: String,
    log: Log,
    cells: Cells,
}

pub enum Crash {
    Panic,
    Fail,
}

impl Actor for StormWorker {
    type Msg = Crash;
    type State = LiveToken;
    type Arguments = Gauge;

    async fn pre_start(&self, me: ActorRef<Crash>, gauge: Gauge) -> Result<LiveToken, ActorProcessingErr> {
        self.log.push(format!("start {}", self.name));
        self.cells.lock().push((self.name.clone(), me.get_cell()));
        Ok(gauge.actor_token())
    }

    async fn post_stop(&self, _me: ActorRef<Crash>, _live: &mut LiveToken) -> Result<(), ActorProcessingErr> {
        self.log.push(format!("stop {}", self.name));
        Ok(())
    }

    async fn handle(&self, _me: ActorRef<Crash>, msg: Crash, _live: &mut LiveToken) -> Result<(), ActorProcessingErr> {
        match msg {
            Crash::Panic => panic!("storm: worker {} panicked", self.name),
            Crash::Fail => Err(format!("storm: worker {} failed", self.name).into()),
        }
    }
}

fn storm_worker(id: &'static str, log: &Log, cells: &Cells) -> ChildSpec {
    let (log, cells) = (log.clone(), cells.clone());
    ChildSpec::new(id, move |ctx| {
        let worker = StormWorker { name: id.to_owned(), log: log.clone(), cells: cells.clone() };
        async move {
            let (actor, _) = Actor::spawn_linked(None, worker, ctx.gauge().clone(), ctx.supervisor()).await?;
            Ok(Started::actor(actor))
        }
    })
}

/// Counts over a whole storm, printed at its end.
#[derive(Debug, Default)]
pub struct Tally {
    pub crashes: usize,
    pub starts: usize,
    pub stops: usize,
    pub restarts: BTreeMap<String, u64>,
    pub gave_up: BTreeMap<String, u64>,
    pub clock_moves: usize,
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} crashes, {} starts, {} graceful stops, restarts by supervisor {:?}, gave up {:?}, {} clock moves",
            self.crashes, self.starts, self.stops, self.restarts, self.gave_up, self.clock_moves
        )
    }
}

/// The real tree, its model, and what the storm did so far.
pub struct Storm {
    pub root: SupervisorHandle,
    pub model: Model,
    pub gauge: Gauge,
    pub tally: Tally,
    log: Log,
    cells: Cells,
    began: Instant,
}

impl Storm {
    pub async fn start(shape: &Shape) -> Storm {
        let (gauge, log, cells) = (Gauge::new(), Log::default(), Cells::default());
        let root = SupervisorHandle::start(build(shape, &log, &cells).gauge(gauge.clone())).await.unwrap();
        let model = Model::new(shape);
        assert_eq!(log.take(), Model::start_log(shape), "the tree started in order");
        assert_eq!(gauge.alive_actors(), model.live_actors());
        Storm { root, model, gauge, tally: Tally::default(), log, cells, began: Instant::now() }
    }

    /// Milliseconds of the paused clock since the storm began.
    pub fn now_ms(&self) -> u64 {
        self.began.elapsed().as_millis() as u64
    }

    pub async fn advance(&mut self, by: Duration) {
        tokio::time::advance(by).await;
        self.tally.clock_moves += 1;
    }

    /// What crashing `path` now would do, without doing it.
    pub fn predict(&self, path: &[String]) -> Outcome {
        self.model.clone().crash(path, self.now_ms())
    }

    /// Crashes the worker at `path` (a panic or an error) and checks the real lifecycle
    /// log against the model's; returns the outcome.
    pub async fn crash(&mut self, step: usize, path: &[String], how: Crash) -> Outcome {
        while self.model.on_an_edge(self.now_ms(), 3) {
            self.advance(Duration::from_millis(5)).await;
        }
        let mut sup = self.root.clone();
        for name in &path[..path.len() - 1] {
            sup = sup.child_handle::<SupervisorHandle>(name).await.expect("a running child supervisor");
        }
        let leaf = &path[path.len() - 1];
        let children = sup.which_children().await.expect("the supervisor runs");
        let cell = children.into_iter().find(|c| &c.id == leaf).and_then(|c| c.actor).expect("a running worker");
        let expected = self.model.crash(path, self.now_ms());
        cell.send_message(how).expect("the worker takes messages");
        settle().await;
        let real = self.log.take();
        assert_eq!(real, expected.log, "step {step}: crash of {path:?} at {} ms; model {expected:?}", self.now_ms());
        self.tally.crashes += 1;
        self.tally.starts += real.iter().filter(|e| e.starts_with("start")).count();
        self.tally.stops += real.iter().filter(|e| e.starts_with("stop")).count();
        for name in &expected.restarted_by {
            *self.tally.restarts.entry(name.clone()).or_default() += 1;
        }
        for name in &expected.gave_up {
            *self.tally.gave_up.entry(name.clone()).or_default() += 1;
        }
        expected
    }

    /// Checks the live tree against the model: the root's liveness, each running
    /// supervisor's restart count, the gauge, and no worker incarnation alive but the
    /// current ones (no orphans).
    pub async fn check_alive(&self) {
        assert_eq!(self.root.is_alive(), self.model.alive(), "the root's liveness");
        let mut current = Vec::new();
        if self.model.alive() {
            let snapshot = self.root.snapshot().await;
            for (path, restarts) in self.model.restart_counts() {
                let path: Vec<&str> = path.iter().map(String::as_str).collect();
                let node = snapshot.find(&path).unwrap_or_else(|| panic!("{path:?} in the snapshot"));
                assert_eq!(node.restart_count, restarts, "restarts of {path:?}'s current incarnation");
            }
            collect_workers(&snapshot, &mut current);
            assert_eq!(current.len(), self.model.workers().len(), "every worker of the spec runs: {current:?}");
        }
        for _ in 0..10 {
            settle().await;
        }
        assert_eq!(self.gauge.alive_actors(), self.model.live_actors(), "live actors: exactly the spec's");
        let cells = self.cells.lock();
        for (name, cell) in cells.iter() {
            let id = cell.get_id().to_string();
            let live = cell.get_status() != ActorStatus::Stopped;
            assert_eq!(
                live,
                current.contains(&id),
                "worker {name} incarnation {id}: alive {live}, current {current:?}"
            );
        }
    }

    pub fn incarnations(&self) -> usize {
        self.cells.lock().len()
    }
}

fn collect_workers(node: &arbor_otp::NodeSnapshot, into: &mut Vec<String>) {
    for child in &node.children {
        if child.kind == arbor_otp::NodeKind::Worker {
            into.extend(child.actor_id.clone());
        }
        collect_workers(child, into);
    }
}
