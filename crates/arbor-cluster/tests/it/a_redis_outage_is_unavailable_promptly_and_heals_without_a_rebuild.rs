//! Redis killed: every method answers `Unavailable` (the timeout around each call is a hang
//! guard, not a measurement); Redis restarted on the same port (empty): the same store
//! works again, its connection re-established by itself.

use std::time::Duration;

use arbor_server::tasks::TaskChange;
use arbor_server::{TaskStore, TaskStoreError};
use tests::redis::RedisServer;
use tokio::time::timeout;

use crate::support::{options, owner, record, store};

fn unavailable<T: std::fmt::Debug>(answer: Result<Result<T, TaskStoreError>, tokio::time::error::Elapsed>) {
    match answer.expect("a store call hung while Redis was down") {
        Err(TaskStoreError::Unavailable(_)) => {}
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[tokio::test]
async fn every_method_is_unavailable_while_redis_is_down_and_works_again_after() {
    let mut redis = RedisServer::start();
    let store = store(&redis.url(), options().response_timeout(Duration::from_millis(500))).await;
    let alice = owner("acme", "alice");
    let before = record(&alice, Duration::from_secs(60));
    store.create(before.clone()).await.unwrap();
    // A second task, which no call below touches: only the sweep can forget its lease.
    store.create(record(&alice, Duration::from_secs(60))).await.unwrap();

    redis.kill();
    let guard = Duration::from_secs(10);
    unavailable(timeout(guard, store.create(record(&alice, Duration::from_secs(60)))).await);
    unavailable(timeout(guard, store.get(&alice, &before.id)).await);
    unavailable(timeout(guard, store.wait(&alice, &before.id)).await);
    unavailable(timeout(guard, store.list(&alice, None, 10)).await);
    unavailable(timeout(guard, store.change(&before.id, TaskChange::Cancelled(None))).await);
    unavailable(timeout(guard, store.remove(&before.id)).await);
    timeout(guard, store.expire()).await.expect("the sweep hung while Redis was down");

    redis.restart();
    let after = record(&alice, Duration::from_secs(60));
    let mut created = false;
    for _ in 0..50 {
        match timeout(guard, store.create(after.clone())).await.expect("hung") {
            Ok(()) => {
                created = true;
                break;
            }
            Err(TaskStoreError::Unavailable(_)) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(other) => panic!("{other:?}"),
        }
    }
    assert!(created, "the store never reconnected");
    assert_eq!(store.get(&alice, &after.id).await.unwrap().id, after.id);
    // The restarted Redis is empty: the record from before is gone, not an error, and the
    // sweep stops renewing its lease.
    assert!(matches!(store.get(&alice, &before.id).await, Err(TaskStoreError::NotFound)));
    assert_eq!(store.leases_held(), 2);
    store.expire().await;
    assert_eq!(store.leases_held(), 1, "only the task created after the restart");
}
