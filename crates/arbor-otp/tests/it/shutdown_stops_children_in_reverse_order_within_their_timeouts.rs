//! Ordered shutdown: reverse start order, graceful with `post_stop` first, killed after
//! the timeout, brutal kill, start failures undone, and no child outliving its supervisor.

use std::time::Duration;

use arbor_otp::{
    ChildSpec, DynamicSupervisorHandle, DynamicSupervisorSpec, ExitReason, Gauge, Restart, Shutdown,
    StartSupervisorError, SupervisorHandle, SupervisorSpec,
};
use tokio::time::Instant;

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn children_start_in_order_and_stop_in_reverse_order_running_post_stop() {
    let gauge = Gauge::new();
    let log = Log::default();
    let inner = SupervisorSpec::new("inner").child(worker("i1", &log)).child(worker("i2", &log));
    let spec = SupervisorSpec::new("sup")
        .gauge(gauge.clone())
        .child(worker("a", &log))
        .child(ChildSpec::supervisor("inner", inner))
        .child(worker("c", &log));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    assert_eq!(log.take(), ["start a", "start i1", "start i2", "start c"]);
    assert_eq!(sup.shutdown().await, ExitReason::Shutdown(None));
    // The child supervisor (shutdown infinity) finished its own ordered shutdown before
    // the parent moved on to the earlier sibling.
    assert_eq!(log.take(), ["stop c", "stop i2", "stop i1", "stop a"]);
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn a_child_that_ignores_stop_is_killed_after_its_shutdown_timeout() {
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = SupervisorSpec::new("sup")
        .gauge(gauge.clone())
        .child(worker("a", &log))
        .child(worker("stuck", &log).shutdown(Shutdown::Timeout(Duration::from_secs(2))))
        .child(worker("c", &log));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    send(&child(&sup, "stuck").await, WorkerMsg::Hang);
    settle().await;
    log.take();
    let began = Instant::now();
    sup.shutdown().await;
    // Virtual time: the supervisor waited the stuck child's full timeout, then killed it
    // (no post_stop), and still stopped the earlier sibling afterwards.
    assert!(Instant::now() - began >= Duration::from_secs(2));
    assert_eq!(log.take(), ["stop c", "stop a"]);
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn brutal_kill_skips_post_stop_and_does_not_wait() {
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = SupervisorSpec::new("sup")
        .gauge(gauge.clone())
        .child(worker("a", &log))
        .child(worker("b", &log).shutdown(Shutdown::BrutalKill));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    send(&child(&sup, "b").await, WorkerMsg::Hang);
    settle().await;
    log.take();
    let began = Instant::now();
    sup.shutdown().await;
    assert!(Instant::now() - began < Duration::from_secs(1));
    assert_eq!(log.take(), ["stop a"]);
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn a_static_child_failing_to_start_fails_the_supervisor_and_undoes_earlier_children() {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = SupervisorSpec::new("sup")
        .gauge(gauge.clone())
        .child(worker("a", &log))
        .child(flaky_worker("b", &log, Arc::new(AtomicUsize::new(1))))
        .child(worker("c", &log));
    let err = SupervisorHandle::start(spec).await.unwrap_err();
    assert!(matches!(&err, StartSupervisorError::ChildFailed { id, .. } if id == "b"), "{err:?}");
    assert!(err.to_string().contains("\"b\""), "{err}");
    // The child's own error is the source, reachable without parsing the text.
    let source = std::error::Error::source(&err).and_then(|s| s.downcast_ref::<arbor_otp::ChildStartError>());
    assert!(source.is_some(), "{err:?}");
    assert_eq!(log.take(), ["start a", "stop a"]);
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn killing_a_supervisor_leaves_no_child_running() {
    let gauge = Gauge::new();
    let log = Log::default();
    let inner = SupervisorSpec::new("inner").child(worker("i1", &log));
    let spec = SupervisorSpec::new("sup")
        .gauge(gauge.clone())
        .child(worker("a", &log))
        .child(ChildSpec::supervisor("inner", inner));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    sup.cell().kill();
    assert_eq!(sup.wait().await, ExitReason::Failure("killed".into()));
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn a_dynamic_supervisor_stops_all_children_at_once_each_within_its_timeout() {
    let gauge = Gauge::new();
    let log = Log::default();
    let dynsup = DynamicSupervisorHandle::start(DynamicSupervisorSpec::new("dyn").gauge(gauge.clone())).await.unwrap();
    let mut stuck = Vec::new();
    for i in 0..5 {
        let spec = worker(&format!("w{i}"), &log)
            .restart(Restart::Temporary)
            .shutdown(Shutdown::Timeout(Duration::from_secs(3)));
        let cell = dynsup.start_child(spec).await.unwrap();
        if i % 2 == 0 {
            send(&cell, WorkerMsg::Hang);
            stuck.push(cell);
        }
    }
    settle().await;
    log.take();
    let began = Instant::now();
    dynsup.shutdown().await;
    let took = Instant::now() - began;
    // Concurrent: three stuck children cost one timeout, not three.
    assert!(took >= Duration::from_secs(3) && took < Duration::from_secs(6), "{took:?}");
    let mut stopped = log.take();
    stopped.sort();
    assert_eq!(stopped, ["stop w1", "stop w3"]);
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn children_exiting_on_their_own_during_shutdown_do_not_disturb_it() {
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = SupervisorSpec::new("sup")
        .gauge(gauge.clone())
        .child(worker("a", &log))
        .child(worker("b", &log).restart(Restart::Transient))
        .child(worker("c", &log).shutdown(Shutdown::Timeout(Duration::from_secs(1))));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    let (a, b) = (child(&sup, "a").await, child(&sup, "b").await);
    send(&child(&sup, "c").await, WorkerMsg::Hang);
    settle().await;
    // While the supervisor waits for c, a crashes and b exits: nothing is restarted and
    // the shutdown still completes.
    let shutdown = tokio::spawn({
        let sup = sup.clone();
        async move { sup.shutdown().await }
    });
    settle().await;
    send(&a, WorkerMsg::Panic);
    send(&b, WorkerMsg::Exit(ExitReason::Normal));
    assert_eq!(shutdown.await.unwrap(), ExitReason::Shutdown(None));
    assert_eq!(sup.snapshot().await.status, arbor_otp::NodeStatus::Unresponsive);
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn child_spec_actor_builds_a_linked_worker_from_a_factory() {
    let gauge = Gauge::new();
    let log = Log::default();
    let g = gauge.clone();
    let l = log.clone();
    let spec = SupervisorSpec::new("sup")
        .gauge(gauge.clone())
        .child(ChildSpec::actor("w", move || (Worker::new("w", l.clone()), g.clone())));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    send(&child(&sup, "w").await, WorkerMsg::Fail);
    settle().await;
    assert_eq!(log.take(), ["start w", "start w"]);
    sup.shutdown().await;
    assert_no_leaks(&gauge).await;
}
