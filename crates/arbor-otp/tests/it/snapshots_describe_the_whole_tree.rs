//! Tree snapshots across every supervisor kind, and their JSON form.

use arbor_otp::{
    ChildSpec, DynamicSupervisorHandle, DynamicSupervisorSpec, Gauge, NodeKind, NodeStatus, Restart, Strategy,
    SupervisorHandle, SupervisorSpec, TaskSupervisor, TaskSupervisorSpec,
};

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn a_snapshot_covers_every_level_and_serialises_to_json() {
    let gauge = Gauge::new();
    let log = Log::default();
    let inner = SupervisorSpec::new("inner").strategy(Strategy::RestForOne).child(worker("i1", &log));
    let root = SupervisorSpec::new("root")
        .gauge(gauge.clone())
        .child(worker("w", &log))
        .child(ChildSpec::supervisor("inner", inner))
        .child(ChildSpec::dynamic_supervisor("conns", DynamicSupervisorSpec::new("conns")))
        .child(ChildSpec::task_supervisor("requests", TaskSupervisorSpec::new("requests").max_concurrency(8)));
    let sup = SupervisorHandle::start(root).await.unwrap();
    let conns = sup.child_handle::<DynamicSupervisorHandle>("conns").await.unwrap();
    conns.start_child(worker("c", &log).restart(Restart::Temporary)).await.unwrap();
    let tasks = sup.child_handle::<TaskSupervisor>("requests").await.unwrap();
    let _t = tasks.spawn(std::future::pending::<Result<(), ()>>()).unwrap();
    send(&child(&sup, "w").await, WorkerMsg::Panic);
    settle().await;

    let snap = sup.snapshot().await;
    assert_eq!(snap.node_count(), 7, "{snap:#?}");
    assert_eq!((snap.kind, snap.strategy, snap.child_count), (NodeKind::Supervisor, Some(Strategy::OneForOne), 4));
    assert_eq!(snap.restart_count, 1);
    assert_eq!(snap.recent_restarts[0].child, "w");
    assert!(snap.recent_restarts[0].reason.contains("worker w panicked"));
    assert_eq!(snap.mailbox_depth, Some(0));
    let inner = snap.find(&["inner"]).unwrap();
    assert_eq!(
        (inner.kind, inner.strategy, inner.restart),
        (NodeKind::Supervisor, Some(Strategy::RestForOne), Some(Restart::Permanent))
    );
    assert_eq!(snap.find(&["inner", "i1"]).unwrap().status, NodeStatus::Running);
    assert_eq!(snap.find(&["conns"]).unwrap().kind, NodeKind::DynamicSupervisor);
    assert_eq!(snap.find(&["conns"]).unwrap().child_count, 1);
    let requests = snap.find(&["requests"]).unwrap();
    let stats = requests.tasks.as_ref().unwrap();
    assert_eq!((requests.kind, stats.in_flight, stats.max_concurrency), (NodeKind::TaskSupervisor, 1, 8));

    let json = snap.to_json();
    assert_eq!(json["children"][1]["strategy"], "rest_for_one");
    assert_eq!(json["children"][0]["restart"], "permanent");
    assert_eq!(json["recent_restarts"][0]["child"], "w");
    assert!(json["children"][0]["actor_id"].is_string());

    sup.shutdown().await;
    assert_no_leaks(&gauge).await;
}
