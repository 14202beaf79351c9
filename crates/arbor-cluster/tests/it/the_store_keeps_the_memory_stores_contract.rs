//! The store contract as `MemoryTaskStore`'s tests check it, on Redis: create, get,
//! change through the one status machine, list in creation order with cursors, the caps
//! with a retry hint, owner isolation (another owner's id and an unknown id are the same
//! "not found"), removal, and expiry by TTL.

use std::time::Duration;

use arbor_protocol::model::tasks::TaskStatus;
use arbor_server::tasks::{TaskCap, TaskChange};
use arbor_server::{TaskStore, TaskStoreError};
use tests::redis::RedisServer;

use crate::support::{options, owner, record, store};

const MINUTE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn records_are_created_changed_listed_and_capped_for_their_owner_only() {
    let redis = RedisServer::start();
    let store = store(&redis.url(), options().caps(4, 3)).await;
    let (alice, bob) = (owner("acme", "alice"), owner("acme", "bob"));
    let mine: Vec<_> = (0..3).map(|_| record(&alice, MINUTE)).collect();
    for r in &mine {
        store.create(r.clone()).await.unwrap();
    }
    let got = store.get(&alice, &mine[0].id).await.unwrap();
    assert_eq!(
        (got.id.as_str(), got.status, got.ttl, &got.owner),
        (mine[0].id.as_str(), TaskStatus::Working, MINUTE, &alice)
    );

    // Another owner's id and an unknown id: the same answer.
    assert!(matches!(store.get(&bob, &mine[0].id).await, Err(TaskStoreError::NotFound)));
    assert!(matches!(store.get(&alice, "no-such-task").await, Err(TaskStoreError::NotFound)));
    assert!(matches!(store.wait(&bob, &mine[0].id).await, Err(TaskStoreError::NotFound)));

    // The owner's cap, then the store's.
    match store.create(record(&alice, MINUTE)).await {
        Err(TaskStoreError::Full { cap: TaskCap::Owner, limit: 3, retry_after }) => assert!(retry_after <= MINUTE),
        other => panic!("expected the owner's cap, got {other:?}"),
    }
    let theirs = record(&bob, MINUTE);
    store.create(theirs.clone()).await.unwrap();
    match store.create(record(&bob, MINUTE)).await {
        Err(TaskStoreError::Full { cap: TaskCap::Store, limit: 4, retry_after }) => assert!(retry_after <= MINUTE),
        other => panic!("expected the store's cap, got {other:?}"),
    }

    // Changes go through `TaskRecord::apply`: forward only, one terminal status.
    let id = &mine[0].id;
    let asking = TaskChange::InputRequired { requests: None, message: Some("asking".into()) };
    assert_eq!(store.change(id, asking).await.unwrap().map(|r| r.status), Some(TaskStatus::InputRequired));
    assert_eq!(store.change(id, TaskChange::Resume).await.unwrap().map(|r| r.status), Some(TaskStatus::Working));
    assert_eq!(store.change(id, TaskChange::Resume).await.unwrap(), None, "nothing to resume");
    let result = serde_json::from_value(serde_json::json!({"content": []})).unwrap();
    let done = store.change(id, TaskChange::Completed(result)).await.unwrap().expect("completes");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(store.change(id, TaskChange::Cancelled(None)).await.unwrap(), None, "terminal is final");
    let waited = store.wait(&alice, id).await.unwrap();
    assert_eq!((waited.status, waited.result), (TaskStatus::Completed, done.result));
    assert!(matches!(store.change("no-such-task", TaskChange::Resume).await, Err(TaskStoreError::NotFound)));

    // Listed by owner, in creation order, two a page.
    let first = store.list(&alice, None, 2).await.unwrap();
    let ids = |page: &arbor_server::tasks::TaskPage| page.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&first), vec![mine[0].id.clone(), mine[1].id.clone()]);
    let second = store.list(&alice, first.next_cursor.as_deref(), 2).await.unwrap();
    assert_eq!((ids(&second), second.next_cursor), (vec![mine[2].id.clone()], None));
    assert_eq!(ids(&store.list(&bob, None, 10).await.unwrap()), vec![theirs.id.clone()]);
    assert!(matches!(store.list(&alice, Some("not-a-cursor"), 2).await, Err(TaskStoreError::InvalidCursor)));

    // A removed record is gone and frees its place under both caps.
    store.remove(&mine[1].id).await.unwrap();
    assert!(matches!(store.get(&alice, &mine[1].id).await, Err(TaskStoreError::NotFound)));
    assert_eq!(ids(&store.list(&alice, None, 10).await.unwrap()), vec![mine[0].id.clone(), mine[2].id.clone()]);
    store.create(record(&alice, MINUTE)).await.unwrap();
}

#[tokio::test]
async fn a_record_expires_at_its_ttl_and_gives_its_place_back() {
    let redis = RedisServer::start();
    let store = store(&redis.url(), options().caps(10, 1)).await;
    let alice = owner("acme", "alice");
    let brief = record(&alice, Duration::from_millis(300));
    store.create(brief.clone()).await.unwrap();
    assert!(matches!(
        store.create(record(&alice, MINUTE)).await,
        Err(TaskStoreError::Full { cap: TaskCap::Owner, .. })
    ));

    let mut gone = false;
    for _ in 0..100 {
        match store.get(&alice, &brief.id).await {
            Ok(r) => assert_eq!(r.status, TaskStatus::Working),
            Err(TaskStoreError::NotFound | TaskStoreError::Expired) => {
                gone = true;
                break;
            }
            Err(other) => panic!("{other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "the record outlived its TTL");
    let next = record(&alice, MINUTE);
    store.create(next.clone()).await.unwrap();
    let listed = store.list(&alice, None, 10).await.unwrap();
    assert_eq!(listed.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>(), vec![next.id]);
}
