//! Leases: a task created through a store that is then dropped (its node stopped, its
//! renewals with it) is failed by the next read through another store once the lease has
//! passed, with the lease message and -32603, and keeps that one terminal status; a live
//! node's task outlives many leases; changes racing from two nodes settle exactly once.

use std::time::Duration;

use arbor_cluster::tasks::LEASE_EXPIRED;
use arbor_protocol::model::tasks::TaskStatus;
use arbor_server::tasks::TaskChange;
use arbor_server::TaskStore;
use tests::redis::RedisServer;

use crate::support::{options, owner, record, store, LEASE};

#[tokio::test]
async fn a_dropped_nodes_task_is_failed_by_the_next_read_after_its_lease() {
    let redis = RedisServer::start();
    let (a, b) = (store(&redis.url(), options()).await, store(&redis.url(), options()).await);
    let alice = owner("acme", "alice");
    let orphan = record(&alice, Duration::from_secs(60));
    a.create(orphan.clone()).await.unwrap();
    let alive = record(&alice, Duration::from_secs(60));
    b.create(alive.clone()).await.unwrap();
    drop(a);

    let mut seen = None;
    for _ in 0..100 {
        let got = b.get(&alice, &orphan.id).await.unwrap();
        if got.status != TaskStatus::Working {
            seen = Some(got);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let failed = seen.expect("the orphan was never failed");
    assert_eq!(failed.status, TaskStatus::Failed);
    assert_eq!(failed.status_message.as_deref(), Some(LEASE_EXPIRED));
    assert_eq!(failed.error.as_ref().map(|e| (e.code, e.message.as_str())), Some((-32603, LEASE_EXPIRED)));

    // Exactly one terminal status: a late completion (the dead node's run) changes nothing.
    let late = TaskChange::Completed(Default::default());
    assert_eq!(b.change(&orphan.id, late).await.unwrap(), None);
    assert_eq!(b.get(&alice, &orphan.id).await.unwrap().status, TaskStatus::Failed);

    // B is alive: its task, renewed, is still working after several leases, seen by a new node.
    tokio::time::sleep(LEASE * 4).await;
    let c = store(&redis.url(), options()).await;
    assert_eq!(c.get(&alice, &alive.id).await.unwrap().status, TaskStatus::Working);
    let listed = c.list(&alice, None, 10).await.unwrap();
    let statuses: Vec<_> = listed.tasks.iter().map(|t| t.status).collect();
    assert_eq!(statuses, vec![TaskStatus::Failed, TaskStatus::Working]);
}

#[tokio::test]
async fn the_sweep_fails_lease_less_tasks_and_racing_changes_settle_once() {
    let redis = RedisServer::start();
    let (a, b) = (store(&redis.url(), options()).await, store(&redis.url(), options()).await);
    let alice = owner("acme", "alice");
    let orphans: Vec<_> = (0..3).map(|_| record(&alice, Duration::from_secs(60))).collect();
    for r in &orphans {
        a.create(r.clone()).await.unwrap();
    }
    drop(a);
    tokio::time::sleep(LEASE * 2).await;
    b.expire().await;
    // Read the raw records: `get` and `list` would fail them themselves.
    let mut raw = redis::Client::open(redis.url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    for r in &orphans {
        let text: String = redis::cmd("GET").arg(format!("arbor:task:{}", r.id)).query_async(&mut raw).await.unwrap();
        let stored: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(stored["status"], "failed", "{stored}");
    }
    let c = store(&redis.url(), options()).await;

    // Eight changes from two nodes race to settle one task: exactly one applies.
    let contested = record(&alice, Duration::from_secs(60));
    b.create(contested.clone()).await.unwrap();
    assert_eq!(b.leases_held(), 1);
    let changes = (0..8).map(|n| {
        let (store, id) = (if n % 2 == 0 { &b } else { &c }, contested.id.as_str());
        let change = if n % 3 == 0 { TaskChange::Cancelled(None) } else { TaskChange::Completed(Default::default()) };
        store.change(id, change)
    });
    let applied = futures::future::join_all(changes).await.into_iter().filter(|r| matches!(r, Ok(Some(_)))).count();
    assert_eq!(applied, 1);
    b.expire().await;
    assert_eq!(b.leases_held(), 0, "a settled task (here by another node) is no longer renewed");

    // A task settled or removed on its own node leaves the renewals at once.
    let (done, refused) = (record(&alice, Duration::from_secs(60)), record(&alice, Duration::from_secs(60)));
    b.create(done.clone()).await.unwrap();
    b.create(refused.clone()).await.unwrap();
    assert_eq!(b.leases_held(), 2);
    b.change(&done.id, TaskChange::Completed(Default::default())).await.unwrap().expect("completes");
    b.remove(&refused.id).await.unwrap();
    assert_eq!(b.leases_held(), 0);
}
