//! An OTP reference model of a whole supervision tree, for the restart storms: what one
//! crash of a worker does, following the `supervisor` manual's rules level by level.
//!
//! Each crash is charged to the worker's supervisor (its window of restart stamps,
//! OTP's `intensity` and `period`); within it, the strategy decides which siblings stop
//! (reverse start order, a supervisor child stopping its own children first) and start
//! again (start order, a supervisor child afresh: empty window, its children in order);
//! past it, the supervisor stops all its children and fails, an exit its parent handles
//! in turn, up to the root. The model predicts the lifecycle log a tree of
//! `support::storm` workers writes (`start x` from `pre_start`, `stop x` from a graceful
//! `post_stop`, none for the worker that crashed, as ractor skips it), which supervisors
//! restarted or gave up, and what lives. It is pure: no actors, no clock of its own.
//!
//! Invariant: every child is permanent; a crash is only ever applied to a running worker
//! of a running tree.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use arbor_otp::Strategy;

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
}

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

impl Model {
    /// The log a tree of this shape writes as it starts.
    pub fn start_log(shape: &Shape) -> Vec<String> {
        let mut out = Outcome::default();
        Node::from_shape(shape).start(&mut out);
        out.log
    }
}
