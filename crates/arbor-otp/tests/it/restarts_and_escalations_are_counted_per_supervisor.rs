//! The supervisors' metrics, read from a debugging recorder installed for the test's thread
//! (a current-thread runtime, so every supervisor of the test records into it): one restart
//! counted per restart charged to a supervisor, one escalation per supervisor that gave
//! up, each labelled with the supervisor's name.

use std::collections::BTreeMap;
use std::time::Duration;

use arbor_otp::{metrics as names, ChildSpec, SupervisorHandle, SupervisorSpec};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn restarts_and_escalations_are_counted_with_the_supervisors_name() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let log = Log::default();
    let leaf = SupervisorSpec::new("leaf").intensity(1, Duration::from_secs(5)).child(worker("w", &log));
    let spec =
        SupervisorSpec::new("top").intensity(5, Duration::from_secs(5)).child(ChildSpec::supervisor("leaf", leaf));
    let top = SupervisorHandle::start(spec).await.unwrap();

    // The first crash is restarted by the leaf; the second exceeds its intensity (1), so the
    // leaf gives up and the top supervisor restarts it.
    for _ in 0..2 {
        let leaf = top.child_handle::<SupervisorHandle>("leaf").await.expect("the leaf");
        send(&child(&leaf, "w").await, WorkerMsg::Panic);
        settle().await;
    }
    assert!(top.is_alive());

    let mut counts = BTreeMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let (_, key) = key.into_parts();
        if let DebugValue::Counter(n) = value {
            let labels: Vec<_> = key.labels().map(|l| (l.key().to_owned(), l.value().to_owned())).collect();
            counts.insert((key.name().to_owned(), labels), n);
        }
    }
    let by = |name: &str| vec![(names::SUPERVISOR.to_owned(), name.to_owned())];
    let expected = BTreeMap::from([
        ((names::RESTARTS.to_owned(), by("leaf")), 1),
        ((names::ESCALATIONS.to_owned(), by("leaf")), 1),
        ((names::RESTARTS.to_owned(), by("top")), 1),
    ]);
    assert_eq!(counts, expected);
    top.shutdown().await;
}
