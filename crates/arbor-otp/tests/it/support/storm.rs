//! The restart-storm harness: a reference model of OTP's rules for a whole tree, and a
//! driver that crashes the real tree's workers one at a time and checks, crash by crash,
//! that the real start and stop events are exactly the ones the model predicts.
//!
//! The model ([`Model`]) knows nested supervisors: each crash is charged to the worker's
//! supervisor; past its intensity that supervisor stops its children (reverse order) and
//! fails, which is an exit its own parent handles in turn, up to the root. It predicts
//! the lifecycle log (`start x` from a worker's `pre_start`, `stop x` from its
//! `post_stop`, which ractor skips for the worker that crashed), which supervisors gave
//! up, and which actors are alive. The driver ([`Storm`]) runs the real tree on tokio's
//! paused clock with the same shape. It is not a scheduler: which worker crashes and when
//! the clock moves is the scenario's choice, made by seed.
//!
//! Invariant: after every crash the real log equals the model's prediction, or the run
//! fails naming the crash, the seed's step and both logs.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use arbor_otp::ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, ActorStatus};
use arbor_otp::{ChildSpec, Gauge, LiveToken, Started, Strategy, SupervisorHandle, SupervisorSpec};
use parking_lot::Mutex;
use tokio::time::Instant;

use super::{settle, Log};

/// The shape of a tree: what the real tree is built from and the model starts as.
#[derive(Debug, Clone)]
pub enum Shape {
    Worker(&'static str),
    Sup { name: &'static str, strategy: Strategy, max_restarts: u32, period: Duration, children: Vec<Shape> },
}

impl Shape {
    pub fn sup(
        name: &'static str,
        strategy: Strategy,
        max_restarts: u32,
        period: Duration,
        children: Vec<Shape>,
    ) -> Shape {
        Shape::Sup { name, strategy, max_restarts, period, children }
    }

    fn spec(&self, log: &Log, cells: &Cells) -> SupervisorSpec {
        let Shape::Sup { name, strategy, max_restarts, period, children } = self else {
            panic!("a root is a supervisor")
        };
        let mut spec = SupervisorSpec::new(*name).strategy(*strategy).intensity(*max_restarts, *period);
        for child in children {
            spec = spec.child(match child {
                Shape::Worker(id) => storm_worker(id, log, cells),
                Shape::Sup { name, .. } => ChildSpec::supervisor(*name, child.spec(log, cells)),
            });
        }
        spec
    }
}

/// Every worker incarnation ever started, to find orphans at the end.
type Cells = Arc<Mutex<Vec<(String, ActorCell)>>>;

/// One node of the model.
#[derive(Debug, Clone)]
enum Node {
    Worker { name: String, running: bool },
    Sup(Sup),
}

#[derive(Debug, Clone)]
struct Sup {
    name: String,
    strategy: Strategy,
    max_restarts: usize,
    period_ms: u64,
    /// Restart stamps of the current incarnation (ms since the storm began).
    stamps: VecDeque<u64>,
    /// Restarts performed by the current incarnation.
    restarts: u64,
    running: bool,
    children: Vec<Node>,
}

/// What one crash did, as the model predicts it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The lifecycle log, in order.
    pub log: Vec<String>,
    /// The supervisors that restarted a child, innermost first.
    pub restarted_by: Vec<String>,
    /// The supervisors that gave up (innermost first).
    pub gave_up: Vec<String>,
}

impl Node {
    fn from_shape(shape: &Shape) -> Node {
        match shape {
            Shape::Worker(name) => Node::Worker { name: (*name).to_owned(), running: true },
            Shape::Sup { name, strategy, max_restarts, period, children } => Node::Sup(Sup {
                name: (*name).to_owned(),
                strategy: *strategy,
                max_restarts: *max_restarts as usize,
                period_ms: period.as_millis() as u64,
                stamps: VecDeque::new(),
                restarts: 0,
                running: true,
                children: children.iter().map(Node::from_shape).collect(),
            }),
        }
    }

    fn name(&self) -> &str {
        match self {
            Node::Worker { name, .. } => name,
            Node::Sup(sup) => &sup.name,
        }
    }

    /// A graceful stop: a worker's `post_stop` logs; a supervisor stops its children first.
    fn terminate(&mut self, out: &mut Outcome) {
        match self {
            Node::Worker { name, running } => {
                if std::mem::replace(running, false) {
                    out.log.push(format!("stop {name}"));
                }
            }
            Node::Sup(sup) => {
                if sup.running {
                    sup.terminate_from(0, out);
                    sup.running = false;
                }
            }
        }
    }

    /// A fresh incarnation: a supervisor with an empty window, its children started in order.
    fn start(&mut self, out: &mut Outcome) {
        match self {
            Node::Worker { name, running } => {
                out.log.push(format!("start {name}"));
                *running = true;
            }
            Node::Sup(sup) => {
                sup.stamps.clear();
                sup.restarts = 0;
                sup.running = true;
                for child in &mut sup.children {
                    child.start(out);
                }
            }
        }
    }

    fn mark_exited(&mut self) {
        match self {
            Node::Worker { running, .. } => *running = false,
            Node::Sup(sup) => sup.running = false,
        }
    }
}

impl Sup {
    fn terminate_from(&mut self, from: usize, out: &mut Outcome) {
        for child in self.children[from..].iter_mut().rev() {
            child.terminate(out);
        }
    }

    /// The worker at `path` (child indices below this supervisor) crashed; returns whether
    /// this supervisor gave up (so its own parent must handle its exit).
    fn crash(&mut self, path: &[usize], now: u64, out: &mut Outcome) -> bool {
        let pos = path[0];
        if path.len() > 1 {
            let Node::Sup(child) = &mut self.children[pos] else { panic!("a worker has no children") };
            if !child.crash(&path[1..], now, out) {
                return false;
            }
        }
        self.children[pos].mark_exited();
        self.child_exited(pos, now, out)
    }

    /// OTP's rule for an abnormal exit of a permanent child: charge the window, then give
    /// up or restart per the strategy.
    fn child_exited(&mut self, pos: usize, now: u64, out: &mut Outcome) -> bool {
        self.stamps.push_back(now);
        while self.stamps.front().is_some_and(|at| now - at >= self.period_ms) {
            self.stamps.pop_front();
        }
        if self.stamps.len() > self.max_restarts {
            out.gave_up.push(self.name.clone());
            self.terminate_from(0, out);
            self.running = false;
            return true;
        }
        self.restarts += 1;
        out.restarted_by.push(self.name.clone());
        let from = match self.strategy {
            Strategy::OneForOne => {
                self.children[pos].start(out);
                return false;
            }
            Strategy::OneForAll => 0,
            Strategy::RestForOne => pos,
        };
        self.terminate_from(from, out);
        for child in &mut self.children[from..] {
            child.start(out);
        }
        false
    }

    fn walk<'a>(&'a self, path: &mut Vec<String>, f: &mut impl FnMut(&[String], &'a Node)) {
        for child in &self.children {
            path.push(child.name().to_owned());
            f(path, child);
            if let Node::Sup(sup) = child {
                sup.walk(path, f);
            }
            path.pop();
        }
    }
}

/// The reference model of the whole tree.
#[derive(Debug, Clone)]
pub struct Model {
    root: Sup,
}

impl Model {
    pub fn new(shape: &Shape) -> Model {
        let Node::Sup(root) = Node::from_shape(shape) else { panic!("a root is a supervisor") };
        Model { root }
    }

    /// The name paths (below the root) of every worker, in start order.
    pub fn workers(&self) -> Vec<Vec<String>> {
        let mut all = Vec::new();
        self.root.walk(&mut Vec::new(), &mut |path, node| {
            if matches!(node, Node::Worker { .. }) {
                all.push(path.to_vec());
            }
        });
        all
    }

    /// Applies a crash of the worker at `path` at `now_ms`.
    pub fn crash(&mut self, path: &[String], now_ms: u64) -> Outcome {
        let mut out = Outcome::default();
        let mut indices = Vec::new();
        let mut at = &self.root;
        for name in path {
            let i = at.children.iter().position(|c| c.name() == name).expect("a path of the shape");
            indices.push(i);
            if let Node::Sup(sup) = &at.children[i] {
                at = sup;
            }
        }
        if self.root.crash(&indices, now_ms, &mut out) {
            // The root's own exit has no parent to handle it.
            self.root.running = false;
        }
        out
    }

    pub fn alive(&self) -> bool {
        self.root.running
    }

    /// Live actors: running supervisors (the root included) and workers.
    pub fn live_actors(&self) -> usize {
        if !self.root.running {
            return 0;
        }
        let mut n = 1;
        self.root.walk(&mut Vec::new(), &mut |_, node| {
            n += usize::from(match node {
                Node::Worker { running, .. } => *running,
                Node::Sup(sup) => sup.running,
            })
        });
        n
    }

    /// Restarts performed by each running supervisor's current incarnation, by path.
    pub fn restart_counts(&self) -> BTreeMap<Vec<String>, u64> {
        let mut counts = BTreeMap::from([(Vec::new(), self.root.restarts)]);
        self.root.walk(&mut Vec::new(), &mut |path, node| {
            if let Node::Sup(sup) = node {
                counts.insert(path.to_vec(), sup.restarts);
            }
        });
        counts
    }

    /// Whether a restart stamp of any supervisor is within `margin_ms` of leaving its
    /// window at `now_ms`: there, a millisecond of scheduling would change the answer,
    /// so a storm moves the clock on first.
    pub fn on_an_edge(&self, now_ms: u64, margin_ms: u64) -> bool {
        let mut edge = self.root.stamps.iter().any(|t| (now_ms - t).abs_diff(self.root.period_ms) <= margin_ms);
        self.root.walk(&mut Vec::new(), &mut |_, node| {
            if let Node::Sup(sup) = node {
                edge |= sup.stamps.iter().any(|t| (now_ms - t).abs_diff(sup.period_ms) <= margin_ms);
            }
        });
        edge
    }
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
        let root = SupervisorHandle::start(shape.spec(&log, &cells).gauge(gauge.clone())).await.unwrap();
        let model = Model::new(shape);
        let mut expected = Outcome::default();
        let mut shadow = Node::from_shape(shape);
        shadow.start(&mut expected);
        assert_eq!(log.take(), expected.log, "the tree started in order");
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
