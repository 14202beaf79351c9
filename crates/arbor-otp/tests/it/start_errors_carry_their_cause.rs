//! Start errors are typed all the way down: a handle's error has the child's
//! `ChildStartError` as its `source()`, and a child supervisor's own refusal is that
//! error's source in turn, so a caller matches on variants instead of parsing text.

use std::error::Error as _;

use arbor_otp::{
    ChildSpec, ChildStartError, DynamicSupervisorHandle, DynamicSupervisorSpec, Gauge, Restart, SpecError,
    StartChildError, StartDynamicChildError, StartSupervisorError, SupervisorHandle, SupervisorSpec,
};

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn a_child_supervisor_that_refuses_its_spec_is_the_source_of_the_start_error() {
    let gauge = Gauge::new();
    let log = Log::default();
    let root = SupervisorHandle::start(SupervisorSpec::new("root").gauge(gauge.clone())).await.unwrap();
    let twice = SupervisorSpec::new("inner").child(worker("a", &log)).child(worker("a", &log));
    let err = root.start_child(ChildSpec::supervisor("inner", twice)).await.unwrap_err();

    let StartChildError::StartFailed(ChildStartError::Supervisor(inner)) = &err else {
        panic!("expected the child supervisor's refusal, got {err:?}");
    };
    assert_eq!(**inner, StartSupervisorError::InvalidSpec(SpecError::DuplicateId("a".into())));
    assert!(err.to_string().contains("duplicate child id \"a\""), "{err}");
    // The chain, as an error reporter walks it: handle error -> child error -> supervisor
    // error -> spec error.
    let child = err.source().expect("child error");
    let supervisor = child.source().expect("supervisor error");
    let spec = supervisor.source().expect("spec error");
    assert_eq!(spec.downcast_ref::<SpecError>(), Some(&SpecError::DuplicateId("a".into())));
    assert_eq!(root.count_children().await.unwrap().specs, 0, "a failed start adds no spec");
    root.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn a_start_function_says_why_in_its_own_words() {
    let gauge = Gauge::new();
    let root = SupervisorHandle::start(SupervisorSpec::new("root").gauge(gauge.clone())).await.unwrap();
    let refusing = ChildSpec::new("r", |_ctx| async { Err(ChildStartError::failed("no database")) });
    let err = root.start_child(refusing).await.unwrap_err();
    assert_eq!(err, StartChildError::StartFailed(ChildStartError::Failed("no database".into())));
    assert_eq!(err.to_string(), "child failed to start: no database");
    root.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn a_significant_child_of_a_dynamic_supervisor_is_an_invalid_spec() {
    let gauge = Gauge::new();
    let log = Log::default();
    let dynsup = DynamicSupervisorHandle::start(DynamicSupervisorSpec::new("d").gauge(gauge.clone())).await.unwrap();
    let significant = worker("s", &log).restart(Restart::Transient).significant(true);
    let err = dynsup.start_child(significant).await.unwrap_err();
    assert_eq!(err, StartDynamicChildError::InvalidSpec(SpecError::SignificantInDynamic("s".into())));
    assert!(err.source().and_then(|s| s.downcast_ref::<SpecError>()).is_some());
    dynsup.shutdown().await;
    assert_no_leaks(&gauge).await;
}
