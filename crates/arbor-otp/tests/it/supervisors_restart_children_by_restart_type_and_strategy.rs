//! supervisor_SUITE's restart-type and strategy groups: which children a supervisor
//! restarts after which exits, and in what order siblings are stopped and started.

use arbor_otp::{ExitReason, Gauge, NodeStatus, Restart, Strategy, SupervisorHandle, SupervisorSpec};

use crate::support::*;

const STRATEGIES: [Strategy; 3] = [Strategy::OneForOne, Strategy::OneForAll, Strategy::RestForOne];

/// How a child is made to exit.
#[derive(Clone, Copy, Debug)]
enum Exit {
    Normal,
    Shutdown,
    Panic,
    Error,
}

impl Exit {
    fn msg(self) -> WorkerMsg {
        match self {
            Exit::Normal => WorkerMsg::Exit(ExitReason::Normal),
            Exit::Shutdown => WorkerMsg::Exit(ExitReason::Shutdown(Some("done".into()))),
            Exit::Panic => WorkerMsg::Panic,
            Exit::Error => WorkerMsg::Fail,
        }
    }

    fn abnormal(self) -> bool {
        matches!(self, Exit::Panic | Exit::Error)
    }
}

/// Starts a, b, c (b with `restart`), makes b exit, and checks which children were
/// restarted and what happened to b's spec, for every strategy.
async fn check(strategy: Strategy, restart: Restart, exit: Exit) {
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = SupervisorSpec::new("sup")
        .strategy(strategy)
        .gauge(gauge.clone())
        .child(worker("a", &log))
        .child(worker("b", &log).restart(restart))
        .child(worker("c", &log));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    let before = [child(&sup, "a").await, child(&sup, "b").await, child(&sup, "c").await];
    send(&before[1], exit.msg());
    settle().await;

    let restarted = match restart {
        Restart::Permanent => true,
        Restart::Transient => exit.abnormal(),
        Restart::Temporary => false,
    };
    let children = sup.which_children().await.unwrap();
    let ids: Vec<&str> = children.iter().map(|c| c.id.as_str()).collect();
    let ctx = format!("{strategy:?} {restart:?} {exit:?}");
    if restart == Restart::Temporary {
        assert_eq!(ids, ["a", "c"], "{ctx}: a temporary child's spec is discarded");
    } else {
        assert_eq!(ids, ["a", "b", "c"], "{ctx}");
        let b = &children[1];
        let expected = if restarted { NodeStatus::Running } else { NodeStatus::NotRunning };
        assert_eq!(b.status, expected, "{ctx}: b's status");
        if restarted {
            assert_ne!(b.actor.as_ref().unwrap().get_id(), before[1].get_id(), "{ctx}: b is a new actor");
        }
    }
    // Siblings are touched only when b was restarted, and then per strategy.
    let sibling_restarted = |id: &str, pos: usize| {
        let now = children.iter().find(|c| c.id == id).unwrap().actor.as_ref().unwrap().get_id();
        now != before[pos].get_id()
    };
    let (a_expected, c_expected) = match (restarted, strategy) {
        (false, _) | (true, Strategy::OneForOne) => (false, false),
        (true, Strategy::OneForAll) => (true, true),
        (true, Strategy::RestForOne) => (false, true),
    };
    assert_eq!(sibling_restarted("a", 0), a_expected, "{ctx}: a restarted?");
    assert_eq!(sibling_restarted("c", 2), c_expected, "{ctx}: c restarted?");
    if c_expected {
        // A sibling restarted by the strategy was stopped gracefully first.
        assert!(log.entries().contains(&"stop c".to_owned()), "{ctx}: {:?}", log.entries());
    }

    assert_eq!(sup.shutdown().await, ExitReason::Shutdown(None));
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn permanent_children_are_restarted_after_any_exit_under_every_strategy() {
    for strategy in STRATEGIES {
        for exit in [Exit::Normal, Exit::Shutdown, Exit::Panic, Exit::Error] {
            check(strategy, Restart::Permanent, exit).await;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn transient_children_are_restarted_only_after_abnormal_exits_under_every_strategy() {
    for strategy in STRATEGIES {
        for exit in [Exit::Normal, Exit::Shutdown, Exit::Panic, Exit::Error] {
            check(strategy, Restart::Transient, exit).await;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn temporary_children_are_never_restarted_and_their_spec_is_discarded() {
    for strategy in STRATEGIES {
        for exit in [Exit::Normal, Exit::Panic] {
            check(strategy, Restart::Temporary, exit).await;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn temporary_siblings_terminated_by_one_for_all_are_not_restarted() {
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = SupervisorSpec::new("sup")
        .strategy(Strategy::OneForAll)
        .gauge(gauge.clone())
        .child(worker("a", &log))
        .child(worker("t", &log).restart(Restart::Temporary))
        .child(worker("c", &log));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    send(&child(&sup, "a").await, WorkerMsg::Panic);
    settle().await;
    let ids: Vec<String> = sup.which_children().await.unwrap().into_iter().map(|c| c.id).collect();
    assert_eq!(ids, ["a", "c"]);
    // c and t were stopped in reverse start order, then a and c started again in order.
    let entries = log.take();
    assert_eq!(entries[3..], ["stop c", "stop t", "start a", "start c"]);
    sup.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn rest_for_one_restarts_the_later_children_in_start_order() {
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = SupervisorSpec::new("sup")
        .strategy(Strategy::RestForOne)
        .gauge(gauge.clone())
        .child(worker("a", &log))
        .child(worker("b", &log))
        .child(worker("c", &log))
        .child(worker("d", &log));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    log.take();
    send(&child(&sup, "b").await, WorkerMsg::Fail);
    settle().await;
    assert_eq!(log.take(), ["stop d", "stop c", "start b", "start c", "start d"]);
    sup.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn a_failed_restart_is_retried_and_counts_against_the_intensity() {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    let gauge = Gauge::new();
    let log = Log::default();
    let failures = Arc::new(AtomicUsize::new(0));
    let spec = SupervisorSpec::new("sup")
        .intensity(3, std::time::Duration::from_secs(5))
        .gauge(gauge.clone())
        .child(flaky_worker("f", &log, failures.clone()));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    // The next two starts fail, the third works: three restarts charged, within 3.
    failures.store(2, std::sync::atomic::Ordering::SeqCst);
    send(&child(&sup, "f").await, WorkerMsg::Panic);
    settle().await;
    assert!(sup.is_alive());
    let snap = sup.snapshot().await;
    assert_eq!(snap.restart_count, 3);
    assert!(snap.recent_restarts[1].reason.starts_with("restart failed"), "{:?}", snap.recent_restarts);
    assert_eq!(snap.children[0].status, NodeStatus::Running);

    // A child that can never start again trips the limit instead of spinning forever.
    failures.store(usize::MAX, std::sync::atomic::Ordering::SeqCst);
    tokio::time::advance(std::time::Duration::from_secs(10)).await;
    send(&child(&sup, "f").await, WorkerMsg::Panic);
    let reason = sup.wait().await;
    assert!(reason.is_abnormal(), "{reason}");
    assert!(reason.to_string().contains(arbor_otp::REACHED_MAX_RESTART_INTENSITY));
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn another_child_failing_during_a_one_for_all_restart_costs_one_restart() {
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = SupervisorSpec::new("sup")
        .strategy(Strategy::OneForAll)
        .intensity(1, std::time::Duration::from_secs(5))
        .gauge(gauge.clone())
        .child(worker("a", &log))
        .child(worker("b", &log))
        .child(worker("c", &log));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    let (a, c) = (child(&sup, "a").await, child(&sup, "c").await);
    send(&a, WorkerMsg::Panic);
    send(&c, WorkerMsg::Panic);
    settle().await;
    // c's exit belongs to an incarnation the restart already replaced, so it is ignored.
    assert!(sup.is_alive());
    assert_eq!(sup.snapshot().await.restart_count, 1);
    assert_eq!(sup.count_children().await.unwrap().active, 3);
    sup.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn a_child_stuck_in_a_restart_loop_shows_as_restarting_and_the_supervisor_still_shuts_down() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let gauge = Gauge::new();
    let log = Log::default();
    let started_once = Arc::new(AtomicBool::new(false));
    let inner = worker("w", &log);
    let hanging = arbor_otp::ChildSpec::new("w", move |ctx| {
        let (inner, started_once) = (inner.clone(), started_once.clone());
        async move {
            if started_once.swap(true, Ordering::SeqCst) {
                // Every restart takes a (virtual) second and then fails.
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                return Err("still broken".into());
            }
            start_via(&inner, ctx).await
        }
    });
    let spec = SupervisorSpec::new("sup")
        .intensity(1000, std::time::Duration::from_secs(3600))
        .gauge(gauge.clone())
        .child(hanging);
    let sup = SupervisorHandle::start(spec).await.unwrap();
    send(&child(&sup, "w").await, WorkerMsg::Panic);
    settle().await;
    let children = sup.which_children().await.unwrap();
    assert_eq!(children[0].status, NodeStatus::Restarting);
    assert_eq!(sup.count_children().await.unwrap().active, 0);
    assert_eq!(sup.shutdown().await, ExitReason::Shutdown(None));
    assert_no_leaks(&gauge).await;
}
