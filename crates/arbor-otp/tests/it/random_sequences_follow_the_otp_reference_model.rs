//! A model-based test: random sequences of exits, administrative operations and clock
//! advances are applied both to a real supervisor and to a small pure model of OTP's
//! rules; after every step the two must agree on which children exist, which are
//! running, which got a new incarnation, and whether the supervisor is still alive.

use std::collections::HashMap;
use std::time::Duration;

use arbor_otp::{ExitReason, Gauge, NodeStatus, Restart, Strategy, SupervisorHandle, SupervisorSpec};
use proptest::prelude::*;
use proptest::strategy::Strategy as Gen;
use ractor::ActorId;

use crate::support::*;

const MAX_RESTARTS: u32 = 3;
const PERIOD: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
enum Op {
    /// Child at this index (modulo the current count) exits normally or abnormally.
    Exit(usize, bool),
    Terminate(usize),
    Restart(usize),
    /// Add a child with this restart type at run time.
    Start(Restart),
    Advance(u64),
}

fn op() -> impl Gen<Value = Op> {
    prop_oneof![
        4 => (0..8usize, any::<bool>()).prop_map(|(i, abnormal)| Op::Exit(i, abnormal)),
        1 => (0..8usize).prop_map(Op::Terminate),
        1 => (0..8usize).prop_map(Op::Restart),
        1 => restart_type().prop_map(Op::Start),
        1 => (1..12u64).prop_map(Op::Advance),
    ]
}

fn restart_type() -> impl Gen<Value = Restart> {
    prop_oneof![Just(Restart::Permanent), Just(Restart::Transient), Just(Restart::Temporary)]
}

fn strategy() -> impl Gen<Value = arbor_otp::Strategy> {
    prop_oneof![Just(Strategy::OneForOne), Just(Strategy::OneForAll), Just(Strategy::RestForOne)]
}

/// The reference model: children in start order, restart stamps, and liveness.
#[derive(Debug, Clone)]
struct Model {
    strategy: Strategy,
    children: Vec<(String, Restart, bool)>,
    stamps: Vec<u64>,
    now_ms: u64,
    alive: bool,
}

impl Model {
    /// Applies an exit of child `pos`; returns the ids that get a new incarnation.
    fn exit(&mut self, pos: usize, abnormal: bool) -> Vec<String> {
        self.children[pos].2 = false;
        let restart = match self.children[pos].1 {
            Restart::Permanent => true,
            Restart::Transient => abnormal,
            Restart::Temporary => false,
        };
        if !restart {
            if self.children[pos].1 == Restart::Temporary {
                self.children.remove(pos);
            }
            return Vec::new();
        }
        self.stamps.push(self.now_ms);
        let now = self.now_ms;
        self.stamps.retain(|t| now - t < PERIOD.as_millis() as u64);
        if self.stamps.len() > MAX_RESTARTS as usize {
            self.alive = false;
            self.children.clear();
            return Vec::new();
        }
        let from = match self.strategy {
            Strategy::OneForOne => {
                self.children[pos].2 = true;
                return vec![self.children[pos].0.clone()];
            }
            Strategy::OneForAll => 0,
            Strategy::RestForOne => pos,
        };
        let mut i = from;
        while i < self.children.len() {
            if self.children[i].1 == Restart::Temporary {
                self.children.remove(i);
            } else {
                i += 1;
            }
        }
        // Every non-temporary spec in the range is started again, running or not.
        self.children[from..]
            .iter_mut()
            .map(|c| {
                c.2 = true;
                c.0.clone()
            })
            .collect()
    }
}

async fn observe(sup: &SupervisorHandle) -> Vec<(String, bool, Option<ActorId>)> {
    sup.which_children()
        .await
        .unwrap()
        .into_iter()
        .map(|c| (c.id, c.status == NodeStatus::Running, c.actor.map(|a| a.get_id())))
        .collect()
}

async fn run_case(strategy: Strategy, restarts: Vec<Restart>, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let gauge = Gauge::new();
    let log = Log::default();
    let mut spec = SupervisorSpec::new("sup").strategy(strategy).intensity(MAX_RESTARTS, PERIOD).gauge(gauge.clone());
    let mut model = Model { strategy, children: Vec::new(), stamps: Vec::new(), now_ms: 0, alive: true };
    for (i, r) in restarts.iter().enumerate() {
        let id = format!("c{i}");
        spec = spec.child(worker(&id, &log).restart(*r));
        model.children.push((id, *r, true));
    }
    let sup = SupervisorHandle::start(spec).await.unwrap();
    let mut next_child = restarts.len();
    for op in ops {
        if !model.alive || model.children.is_empty() {
            break;
        }
        let before: HashMap<String, Option<ActorId>> =
            observe(&sup).await.into_iter().map(|(id, _, a)| (id, a)).collect();
        let mut renewed = Vec::new();
        let n = model.children.len();
        match op {
            Op::Exit(i, abnormal) => {
                let pos = i % n;
                if !model.children[pos].2 {
                    continue;
                }
                let cell = child(&sup, &model.children[pos].0).await;
                send(&cell, if abnormal { WorkerMsg::Panic } else { WorkerMsg::Exit(ExitReason::Normal) });
                renewed = model.exit(pos, abnormal);
            }
            Op::Terminate(i) => {
                let pos = i % n;
                sup.terminate_child(&model.children[pos].0.clone()).await.unwrap();
                model.children[pos].2 = false;
                if model.children[pos].1 == Restart::Temporary {
                    model.children.remove(pos);
                }
            }
            Op::Restart(i) => {
                let pos = i % n;
                let result = sup.restart_child(&model.children[pos].0.clone()).await;
                prop_assert_eq!(result.is_ok(), !model.children[pos].2, "restart_child of running/stopped child");
                if !model.children[pos].2 {
                    model.children[pos].2 = true;
                    renewed.push(model.children[pos].0.clone());
                }
            }
            Op::Start(restart) => {
                let id = format!("c{next_child}");
                next_child += 1;
                sup.start_child(worker(&id, &log).restart(restart)).await.unwrap();
                model.children.push((id.clone(), restart, true));
                renewed.push(id);
            }
            Op::Advance(secs) => {
                tokio::time::advance(Duration::from_secs(secs)).await;
                model.now_ms += secs * 1000;
            }
        }
        settle().await;
        model.now_ms += 1; // settle() moves the paused clock by a millisecond
        prop_assert_eq!(sup.is_alive(), model.alive, "liveness; model {:?}", model);
        if !model.alive {
            break;
        }
        let after = observe(&sup).await;
        let ids: Vec<(String, bool)> = after.iter().map(|(id, running, _)| (id.clone(), *running)).collect();
        let expected: Vec<(String, bool)> =
            model.children.iter().map(|(id, _, running)| (id.clone(), *running)).collect();
        prop_assert_eq!(ids, expected);
        for (id, _, actor) in &after {
            // A new incarnation is a running actor that differs from the one before the step.
            let changed = actor.is_some() && before.get(id).map(|a| a != actor).unwrap_or(true);
            prop_assert_eq!(changed, renewed.contains(id), "incarnation of {} (renewed {:?})", id, renewed);
        }
    }
    if model.alive {
        sup.shutdown().await;
    } else {
        assert!(sup.wait().await.is_abnormal());
    }
    assert_no_leaks(&gauge).await;
    Ok(())
}

proptest! {
    // 64 cases keep the suite fast on a 2-core CI machine; set ARBOR_OTP_CASES for a soak.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("ARBOR_OTP_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_exits_and_operations_match_the_model(
        strategy in strategy(),
        restarts in proptest::collection::vec(restart_type(), 1..5),
        ops in proptest::collection::vec(op(), 1..24),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
        rt.block_on(run_case(strategy, restarts, ops))?;
    }
}
