//! Restart intensity: tolerated bursts, the sliding window, and escalation through
//! nested supervisors until the root gives up.

use std::time::Duration;

use arbor_otp::{
    ChildSpec, ExitReason, Gauge, Strategy, SupervisorHandle, SupervisorSpec, REACHED_MAX_RESTART_INTENSITY,
};

use crate::support::*;

async fn crash(sup: &SupervisorHandle, path: &[&str]) {
    // Walk down child supervisors by id, then crash the worker at the end of the path.
    let mut current = sup.clone();
    for id in &path[..path.len() - 1] {
        current = current.child_handle::<SupervisorHandle>(id).await.expect("child supervisor");
    }
    send(&child(&current, path[path.len() - 1]).await, WorkerMsg::Panic);
    settle().await;
}

#[tokio::test(start_paused = true)]
async fn restarts_within_the_period_are_tolerated_up_to_the_intensity() {
    let gauge = Gauge::new();
    let log = Log::default();
    let spec =
        SupervisorSpec::new("sup").intensity(2, Duration::from_secs(5)).gauge(gauge.clone()).child(worker("w", &log));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    crash(&sup, &["w"]).await;
    crash(&sup, &["w"]).await;
    assert!(sup.is_alive());
    // Outside the period the old restarts no longer count.
    tokio::time::advance(Duration::from_secs(5)).await;
    crash(&sup, &["w"]).await;
    crash(&sup, &["w"]).await;
    assert!(sup.is_alive());
    crash(&sup, &["w"]).await;
    let reason = sup.wait().await;
    assert!(matches!(&reason, ExitReason::Failure(c) if c.starts_with(REACHED_MAX_RESTART_INTENSITY)), "{reason}");
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn intensity_exceeded_shuts_children_down_in_reverse_order_before_exiting() {
    let gauge = Gauge::new();
    let log = Log::default();
    let spec = SupervisorSpec::new("sup")
        .intensity(0, Duration::from_secs(5))
        .gauge(gauge.clone())
        .child(worker("a", &log))
        .child(worker("b", &log))
        .child(worker("c", &log));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    log.take();
    crash(&sup, &["b"]).await;
    assert!(sup.wait().await.is_abnormal());
    assert_eq!(log.take(), ["stop c", "stop a"]);
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn escalation_climbs_two_levels_until_the_root_gives_up() {
    let gauge = Gauge::new();
    let log = Log::default();
    let leaf = SupervisorSpec::new("leaf").intensity(1, Duration::from_secs(5)).child(worker("w", &log));
    let mid = SupervisorSpec::new("mid")
        .intensity(1, Duration::from_secs(5))
        .child(worker("m", &log))
        .child(ChildSpec::supervisor("leaf", leaf));
    let root = SupervisorSpec::new("root")
        .strategy(Strategy::OneForOne)
        .intensity(1, Duration::from_secs(60))
        .gauge(gauge.clone())
        .child(worker("r", &log))
        .child(ChildSpec::supervisor("mid", mid));
    let sup = SupervisorHandle::start(root).await.unwrap();
    let r_before = child(&sup, "r").await.get_id();

    // Two crashes in the leaf exceed its intensity (1): leaf fails; mid restarts it (1st).
    crash(&sup, &["mid", "leaf", "w"]).await;
    crash(&sup, &["mid", "leaf", "w"]).await;
    let mid_snap = sup.snapshot().await;
    assert_eq!(mid_snap.find(&["mid"]).unwrap().restart_count, 1);
    assert_eq!(sup.snapshot().await.restart_count, 0, "the root saw nothing yet");

    // Exceed the leaf twice more: mid's second restart within 5 s exceeds mid's intensity,
    // so mid fails and the root restarts it.
    for _ in 0..2 {
        crash(&sup, &["mid", "leaf", "w"]).await;
    }
    let snap = sup.snapshot().await;
    assert_eq!(snap.restart_count, 1, "root restarted mid once: {:#?}", snap.recent_restarts);
    assert!(snap.recent_restarts[0].reason.contains(REACHED_MAX_RESTART_INTENSITY));
    assert_eq!(child(&sup, "r").await.get_id(), r_before, "one_for_one left the root's worker alone");

    // Do it again: the root's second restart within 60 s exceeds its intensity.
    for _ in 0..4 {
        crash(&sup, &["mid", "leaf", "w"]).await;
    }
    let reason = sup.wait().await;
    assert!(reason.to_string().contains(REACHED_MAX_RESTART_INTENSITY), "{reason}");
    // Everything was shut down on the way, gracefully where the child was alive.
    assert!(log.entries().contains(&"stop r".to_owned()));
    assert_no_leaks(&gauge).await;
}
