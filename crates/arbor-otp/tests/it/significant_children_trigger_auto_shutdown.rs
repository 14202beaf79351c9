//! Significant children and `auto_shutdown` (OTP 24+ semantics).

use arbor_otp::{
    AutoShutdown, ChildSpec, ExitReason, Gauge, Restart, SpecError, StartChildError, StartSupervisorError,
    SupervisorHandle, SupervisorSpec,
};

use crate::support::*;

fn auto_shutdown() -> ExitReason {
    ExitReason::Shutdown(Some("auto_shutdown".into()))
}

#[tokio::test(start_paused = true)]
async fn any_significant_shuts_down_when_a_significant_transient_child_exits_normally() {
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = SupervisorSpec::new("unit")
        .auto_shutdown(AutoShutdown::AnySignificant)
        .gauge(gauge.clone())
        .child(worker("bystander", &log))
        .child(worker("main", &log).restart(Restart::Transient).significant(true));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    // An abnormal exit is restarted as usual and does not shut the supervisor down.
    send(&child(&sup, "main").await, WorkerMsg::Panic);
    settle().await;
    assert!(sup.is_alive());
    send(&child(&sup, "main").await, WorkerMsg::Exit(ExitReason::Normal));
    assert_eq!(sup.wait().await, auto_shutdown());
    assert!(log.entries().contains(&"stop bystander".to_owned()));
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn all_significant_waits_for_the_last_significant_child() {
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = SupervisorSpec::new("unit")
        .auto_shutdown(AutoShutdown::AllSignificant)
        .gauge(gauge.clone())
        .child(worker("s1", &log).restart(Restart::Temporary).significant(true))
        .child(worker("s2", &log).restart(Restart::Temporary).significant(true))
        .child(worker("other", &log));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    // A temporary significant child counts whatever its exit reason.
    send(&child(&sup, "s1").await, WorkerMsg::Panic);
    settle().await;
    assert!(sup.is_alive());
    send(&child(&sup, "s2").await, WorkerMsg::Exit(ExitReason::Normal));
    assert_eq!(sup.wait().await, auto_shutdown());
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn terminations_by_the_supervisor_itself_never_trigger_auto_shutdown() {
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = SupervisorSpec::new("unit")
        .auto_shutdown(AutoShutdown::AnySignificant)
        .gauge(gauge.clone())
        .child(worker("main", &log).restart(Restart::Transient).significant(true));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    sup.terminate_child("main").await.unwrap();
    settle().await;
    assert!(sup.is_alive());
    sup.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn significant_children_must_not_be_permanent_and_need_auto_shutdown() {
    let log = Log::default();
    let permanent =
        SupervisorSpec::new("s").auto_shutdown(AutoShutdown::AnySignificant).child(worker("p", &log).significant(true));
    assert!(matches!(
        SupervisorHandle::start(permanent).await,
        Err(StartSupervisorError::InvalidSpec(SpecError::SignificantPermanent(_)))
    ));
    let never = SupervisorSpec::new("s").child(worker("t", &log).restart(Restart::Transient).significant(true));
    assert!(matches!(
        SupervisorHandle::start(never).await,
        Err(StartSupervisorError::InvalidSpec(SpecError::SignificantWithoutAutoShutdown(_)))
    ));

    let gauge = Gauge::new();
    let sup = SupervisorHandle::start(SupervisorSpec::new("s").gauge(gauge.clone())).await.unwrap();
    let spec = worker("t", &log).restart(Restart::Temporary).significant(true);
    assert!(matches!(sup.start_child(spec).await, Err(StartChildError::InvalidSpec(_))));
    sup.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn an_auto_shutdown_unit_under_a_parent_goes_away_without_being_restarted() {
    let gauge = Gauge::new();
    let log = Log::default();
    let unit = SupervisorSpec::new("unit")
        .auto_shutdown(AutoShutdown::AnySignificant)
        .child(worker("main", &log).restart(Restart::Transient).significant(true));
    let root = SupervisorSpec::new("root")
        .gauge(gauge.clone())
        .child(ChildSpec::supervisor("unit", unit).restart(Restart::Transient));
    let sup = SupervisorHandle::start(root).await.unwrap();
    let unit = sup.child_handle::<SupervisorHandle>("unit").await.unwrap();
    send(&child(&unit, "main").await, WorkerMsg::Exit(ExitReason::Normal));
    settle().await;
    // The unit exited with shutdown (a normal reason), so its transient spec stays down.
    let children = sup.which_children().await.unwrap();
    assert_eq!(children[0].status, arbor_otp::NodeStatus::NotRunning);
    assert_eq!(sup.snapshot().await.restart_count, 0);
    sup.shutdown().await;
    assert_no_leaks(&gauge).await;
}
