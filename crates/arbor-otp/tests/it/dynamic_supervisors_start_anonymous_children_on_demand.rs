//! Dynamic supervisors: many anonymous children, `max_children`, restart rules and
//! intensity, and a dynamic supervisor inside a static tree.

use std::time::Duration;

use arbor_otp::{
    ChildSpec, DynamicSupervisorHandle, DynamicSupervisorSpec, Gauge, Restart, StartDynamicChildError,
    SupervisorHandle, SupervisorSpec, TerminateDynamicChildError,
};

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn thousands_of_anonymous_children_start_and_stop() {
    let gauge = Gauge::new();
    let log = Log::default();
    let dynsup =
        DynamicSupervisorHandle::start(DynamicSupervisorSpec::new("conns").gauge(gauge.clone())).await.unwrap();
    for _ in 0..2000 {
        // Every child has the same label; nothing is registered by name.
        dynsup.start_child(worker("conn", &log).restart(Restart::Temporary)).await.unwrap();
    }
    assert_eq!(dynsup.count_children().await.unwrap().active, 2000);
    assert_eq!(gauge.alive_actors(), 2001);
    dynsup.shutdown().await;
    assert_eq!(log.entries().iter().filter(|e| e.starts_with("stop")).count(), 2000);
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn max_children_is_refused_with_a_typed_error() {
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = DynamicSupervisorSpec::new("d").max_children(2).gauge(gauge.clone());
    let dynsup = DynamicSupervisorHandle::start(spec).await.unwrap();
    let first = dynsup.start_child(worker("w", &log).restart(Restart::Temporary)).await.unwrap();
    dynsup.start_child(worker("w", &log).restart(Restart::Temporary)).await.unwrap();
    let refused = dynsup.start_child(worker("w", &log)).await;
    assert_eq!(refused.unwrap_err(), StartDynamicChildError::MaxChildren(2));
    // Room frees up when a child goes.
    dynsup.terminate_child(&first).await.unwrap();
    assert_eq!(dynsup.terminate_child(&first).await.unwrap_err(), TerminateDynamicChildError::NotFound);
    dynsup.start_child(worker("w", &log)).await.unwrap();
    dynsup.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn restart_types_and_intensity_apply_as_for_static_supervisors() {
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = DynamicSupervisorSpec::new("d").intensity(2, Duration::from_secs(5)).gauge(gauge.clone());
    let dynsup = DynamicSupervisorHandle::start(spec).await.unwrap();
    let permanent = dynsup.start_child(worker("p", &log)).await.unwrap();
    let transient = dynsup.start_child(worker("t", &log).restart(Restart::Transient)).await.unwrap();
    let temporary = dynsup.start_child(worker("x", &log).restart(Restart::Temporary)).await.unwrap();
    send(&temporary, WorkerMsg::Panic);
    send(&transient, WorkerMsg::Exit(arbor_otp::ExitReason::Normal));
    settle().await;
    let ids: Vec<String> = dynsup.which_children().await.unwrap().into_iter().map(|c| c.id).collect();
    assert_eq!(ids, ["p"]);

    send(&permanent, WorkerMsg::Panic);
    settle().await;
    let p2 = dynsup.which_children().await.unwrap()[0].actor.clone().unwrap();
    assert_ne!(p2.get_id(), permanent.get_id());
    send(&p2, WorkerMsg::Panic);
    settle().await;
    let p3 = dynsup.which_children().await.unwrap()[0].actor.clone().unwrap();
    send(&p3, WorkerMsg::Panic);
    assert!(dynsup.wait().await.is_abnormal(), "third restart in 5 s exceeds intensity 2");
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn a_dynamic_supervisor_can_be_a_child_and_is_restarted_empty() {
    let gauge = Gauge::new();
    let log = Log::default();
    let root = SupervisorSpec::new("root").gauge(gauge.clone()).child(ChildSpec::dynamic_supervisor(
        "conns",
        DynamicSupervisorSpec::new("conns").intensity(0, Duration::from_secs(1)),
    ));
    let sup = SupervisorHandle::start(root).await.unwrap();
    let conns = sup.child_handle::<DynamicSupervisorHandle>("conns").await.unwrap();
    let w = conns.start_child(worker("w", &log)).await.unwrap();
    send(&w, WorkerMsg::Panic);
    settle().await;
    let conns2 = sup.child_handle::<DynamicSupervisorHandle>("conns").await.unwrap();
    assert_ne!(conns2.cell().get_id(), conns.cell().get_id());
    assert_eq!(conns2.count_children().await.unwrap().specs, 0);
    sup.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn failed_restarts_are_retried_and_charged_like_any_restart() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = DynamicSupervisorSpec::new("d").intensity(3, Duration::from_secs(5)).gauge(gauge.clone());
    let dynsup = DynamicSupervisorHandle::start(spec).await.unwrap();
    let failures = Arc::new(AtomicUsize::new(0));
    let cell = dynsup.start_child(flaky_worker("f", &log, failures.clone())).await.unwrap();
    failures.store(2, Ordering::SeqCst);
    send(&cell, WorkerMsg::Panic);
    settle().await;
    let snap = dynsup.snapshot().await;
    assert_eq!((snap.restart_count, snap.child_count), (3, 1), "{:?}", snap.recent_restarts);
    assert_eq!(dynsup.count_children().await.unwrap().active, 1);
    failures.store(usize::MAX, Ordering::SeqCst);
    tokio::time::advance(Duration::from_secs(10)).await;
    send(&dynsup.which_children().await.unwrap()[0].actor.clone().unwrap(), WorkerMsg::Panic);
    assert!(dynsup.wait().await.is_abnormal());
    assert_no_leaks(&gauge).await;
}
