//! Run-time child administration: start, terminate, restart, delete, `ignore`, and
//! start functions that misbehave.

use arbor_otp::{
    ChildCounts, ChildSpec, ChildStartError, DeleteChildError, Gauge, NodeStatus, Restart, RestartChildError,
    StartChildError, Started, SupervisorHandle, SupervisorSpec, TerminateChildError,
};

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn start_terminate_restart_and_delete_follow_otp() {
    let gauge = Gauge::new();
    let log = Log::default();
    let sup = SupervisorHandle::start(SupervisorSpec::new("sup").gauge(gauge.clone()).child(worker("a", &log)))
        .await
        .unwrap();

    let b = sup.start_child(worker("b", &log)).await.unwrap().expect("started");
    assert!(matches!(sup.start_child(worker("b", &log)).await, Err(StartChildError::AlreadyStarted(_))));
    assert_eq!(sup.count_children().await.unwrap(), ChildCounts { specs: 2, active: 2, supervisors: 0, workers: 2 });

    assert!(matches!(sup.delete_child("b").await, Err(DeleteChildError::Running(_))));
    sup.terminate_child("b").await.unwrap();
    assert!(log.entries().contains(&"stop b".to_owned()), "terminate is graceful");
    assert!(b.get_status() >= ractor::ActorStatus::Stopped);
    assert!(matches!(sup.start_child(worker("b", &log)).await, Err(StartChildError::AlreadyPresent(_))));
    let b2 = sup.restart_child("b").await.unwrap().expect("restarted");
    assert_ne!(b2.get_id(), b.get_id());
    assert!(matches!(sup.restart_child("b").await, Err(RestartChildError::Running(_))));
    sup.terminate_child("b").await.unwrap();
    sup.delete_child("b").await.unwrap();
    assert!(matches!(sup.terminate_child("b").await, Err(TerminateChildError::NotFound(_))));
    assert!(matches!(sup.delete_child("zz").await, Err(DeleteChildError::NotFound(_))));

    // A terminated temporary child's spec is gone at once.
    sup.start_child(worker("t", &log).restart(Restart::Temporary)).await.unwrap();
    sup.terminate_child("t").await.unwrap();
    let ids: Vec<String> = sup.which_children().await.unwrap().into_iter().map(|c| c.id).collect();
    assert_eq!(ids, ["a"]);

    sup.shutdown().await;
    assert!(matches!(sup.which_children().await, Err(arbor_otp::SupervisorGone)));
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn ignore_keeps_the_spec_unless_the_child_is_temporary() {
    let gauge = Gauge::new();
    let ignoring = |id: &str| ChildSpec::new(id, |_ctx| async { Ok(Started::ignore()) });
    let spec = SupervisorSpec::new("sup")
        .gauge(gauge.clone())
        .child(ignoring("kept"))
        .child(ignoring("gone").restart(Restart::Temporary));
    let sup = SupervisorHandle::start(spec).await.unwrap();
    let children = sup.which_children().await.unwrap();
    assert_eq!(children.len(), 1);
    assert_eq!((children[0].id.as_str(), children[0].status), ("kept", NodeStatus::NotRunning));
    assert_eq!(sup.start_child(ignoring("x")).await.unwrap().map(|c| c.get_id()), None);
    sup.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn a_start_function_that_does_not_link_or_panics_is_a_failed_start() {
    let gauge = Gauge::new();
    let log = Log::default();
    let sup = SupervisorHandle::start(SupervisorSpec::new("sup").gauge(gauge.clone())).await.unwrap();
    let unlinked = ChildSpec::new("u", |ctx| async move {
        let worker = Worker::new("u", Log::default());
        let (actor, _) = ractor::Actor::spawn(None, worker, ctx.gauge().clone()).await?;
        Ok(Started::actor(actor))
    });
    let err = sup.start_child(unlinked).await.unwrap_err();
    assert_eq!(err, StartChildError::StartFailed(ChildStartError::NotLinked("u".into())));
    assert!(err.to_string().contains("not linked"), "{err}");
    let source = std::error::Error::source(&err).expect("the start error is the source");
    assert!(source.downcast_ref::<ChildStartError>().is_some());
    let panicking = ChildSpec::new("p", |_ctx| async {
        if true {
            panic!("bad start fn");
        }
        Ok(Started::ignore())
    });
    assert!(matches!(
        sup.start_child(panicking).await,
        Err(StartChildError::StartFailed(ChildStartError::Panicked(m))) if m.contains("bad start fn")
    ));
    let _ = log;
    sup.shutdown().await;
    assert_no_leaks(&gauge).await;
}
