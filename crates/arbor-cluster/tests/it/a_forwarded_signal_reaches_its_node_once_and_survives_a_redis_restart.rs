//! Forwarding at the store level, on a real Redis: a signal forwarded from one store
//! reaches the runs attached to the store whose node holds the task's lease, once per
//! forward, and its delivery comes back; a lease naming a node nobody listens for, or one
//! that never answers, is `Unreachable`; with Redis down a forward is `Unavailable` within a bound (the timeout
//! around it is a hang guard); after Redis restarts, both nodes' channels are subscribed
//! again by themselves and forwarding works without rebuilding a store.

use std::sync::{Arc, Weak};
use std::time::Duration;

use arbor_server::tasks::{Delivery, TaskRuns, TaskSignal};
use arbor_server::{TaskStore, TaskStoreError};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tests::redis::RedisServer;
use tokio::time::timeout;

use crate::support::{options, owner, record, store};

/// Runs that record every signal delivered to them and take each.
#[derive(Default)]
struct Recorded(Mutex<Vec<(String, TaskSignal)>>);

impl TaskRuns for Recorded {
    fn deliver<'a>(&'a self, id: &'a str, signal: TaskSignal) -> BoxFuture<'a, Delivery> {
        self.0.lock().push((id.to_owned(), signal));
        Box::pin(async { Delivery::Applied })
    }
}

fn attach(store: &dyn TaskStore, runs: &Arc<Recorded>) {
    let weak: Weak<Recorded> = Arc::downgrade(runs);
    store.attach_runs(weak);
}

const GUARD: Duration = Duration::from_secs(20);

#[tokio::test]
async fn signals_reach_the_leaseholder_once_and_routing_heals_after_a_redis_restart() {
    let mut redis = RedisServer::start();
    let quick = || options().response_timeout(Duration::from_millis(500)).forward_timeout(Duration::from_secs(2));
    let (a, b) = (store(&redis.url(), quick()).await, store(&redis.url(), quick()).await);
    assert_ne!(a.node_id(), b.node_id());
    let (on_a, on_b) = (Arc::new(Recorded::default()), Arc::new(Recorded::default()));
    attach(&a, &on_a);
    attach(&b, &on_b);
    let alice = owner("acme", "alice");
    let task = record(&alice, Duration::from_secs(60));
    a.create(task.clone()).await.unwrap();

    let answers: serde_json::Map<String, serde_json::Value> = serde_json::from_str(r#"{"k": {"x": 1}}"#).unwrap();
    let input = TaskSignal::Input(answers);
    assert_eq!(b.forward(&task.id, input.clone()).await.unwrap(), Delivery::Applied);
    assert_eq!(b.forward(&task.id, TaskSignal::Cancel).await.unwrap(), Delivery::Applied);
    assert_eq!(*on_a.0.lock(), vec![(task.id.clone(), input.clone()), (task.id.clone(), TaskSignal::Cancel)]);
    assert!(on_b.0.lock().is_empty(), "only the leaseholder's runs see a signal");

    // The leases below are written by hand on an id no store created: `a`'s renewer
    // rewrites the lease of every task it runs each lease/3 (100 ms here), and would race
    // a hand-written lease on `task`. A forward reads only the lease.
    let unleased = "task-no-store-runs-this";
    let lease = format!("arbor:lease:{unleased}");
    let mut raw = redis::Client::open(redis.url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    // A lease naming a node that does not listen: nobody receives the PUBLISH.
    let () = redis::cmd("SET").arg(&lease).arg("gone").query_async(&mut raw).await.unwrap();
    match b.forward(unleased, TaskSignal::Cancel).await {
        Err(TaskStoreError::Unreachable(detail)) => assert!(detail.contains("gone"), "{detail}"),
        other => panic!("expected Unreachable, got {other:?}"),
    }
    // A node that listens but never answers: no ack within the bound.
    let mut silent = redis::Client::open(redis.url()).unwrap().get_async_pubsub().await.unwrap();
    silent.subscribe("arbor:node:silent").await.unwrap();
    let () = redis::cmd("SET").arg(&lease).arg("silent").query_async(&mut raw).await.unwrap();
    match timeout(GUARD, b.forward(unleased, TaskSignal::Cancel)).await.expect("a forward hung") {
        Err(TaskStoreError::Unreachable(detail)) => assert!(detail.contains("did not answer"), "{detail}"),
        other => panic!("expected Unreachable, got {other:?}"),
    }
    drop(silent);
    // No lease at all: the node that ran it stopped.
    let () = redis::cmd("DEL").arg(&lease).query_async(&mut raw).await.unwrap();
    match b.forward(unleased, TaskSignal::Cancel).await {
        Err(TaskStoreError::Unreachable(detail)) => assert!(detail.contains("expired"), "{detail}"),
        other => panic!("expected Unreachable for no lease, got {other:?}"),
    }
    assert_eq!(on_a.0.lock().len(), 2, "no hand-written lease reached a's runs");

    redis.kill();
    match timeout(GUARD, b.forward(&task.id, TaskSignal::Cancel)).await.expect("a forward hung while Redis was down") {
        Err(TaskStoreError::Unavailable(_)) => {}
        other => panic!("expected Unavailable, got {other:?}"),
    }

    // Redis back, empty: a new task on a; forwarding works again once both channels are
    // subscribed again (until then a forward says why it cannot, within its bound).
    redis.restart();
    let after = record(&alice, Duration::from_secs(60));
    let mut delivered = None;
    for _ in 0..100 {
        if a.get(&alice, &after.id).await.is_err() && a.create(after.clone()).await.is_err() {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        match timeout(GUARD, b.forward(&after.id, TaskSignal::Cancel)).await.expect("a forward hung") {
            Ok(delivery) => {
                delivered = Some(delivery);
                break;
            }
            Err(TaskStoreError::Unavailable(_) | TaskStoreError::Unreachable(_)) => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(delivered, Some(Delivery::Applied), "routing never healed");
    let seen = on_a.0.lock().clone();
    assert_eq!(seen.len(), 3, "each forward applied once: {seen:?}");
    assert_eq!(seen[2], (after.id.clone(), TaskSignal::Cancel));
}
