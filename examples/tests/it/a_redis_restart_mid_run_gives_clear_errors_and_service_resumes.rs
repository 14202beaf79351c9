//! Redis killed and started again on its port mid-run (issue 18): three `demo_server
//! --cluster` nodes behind a round-robin HAProxy while echo calls, MRTR round trips, task
//! creations and polls flow through it.
//!
//! - During the outage a request that needs Redis (a task creation, a poll) answers with a
//!   clear JSON-RPC error (-32603 "the task store is unavailable"), none hangs (each is
//!   bounded by the client's timeout, and one that reaches it fails the test); a request
//!   that needs no Redis (echo, an MRTR round trip: the keys are in each node's memory)
//!   succeeds throughout.
//! - Redis runs without persistence, as `tests::redis` starts it, so the restart loses its
//!   data: the records of the tasks in flight are gone, and a poll of one answers -32602
//!   (unknown task), whichever node it lands on, though their nodes still run them.
//! - Without restarting any node, new task creations and polls work again once the
//!   stores have reconnected.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::cluster::{Cluster, Ledger, Outcome};
use crate::http::Client;

const UNAVAILABLE: &str = "the task store is unavailable";
const UNKNOWN: &str = "Task not found";
/// How long Redis stays down: several rounds of every kind of request.
const OUTAGE: Duration = Duration::from_millis(1500);
/// The bound on the stores reconnecting after the restart.
const RESUME: Duration = Duration::from_secs(20);

/// Requests of every kind in turn until `stop`: echo, an MRTR round trip, a task created
/// and polled until it ends or its record is unreachable or gone.
async fn traffic(ledger: Arc<Ledger>, client: Arc<Client>, stop: Arc<AtomicBool>, me: usize) {
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) {
        match n % 3 {
            0 => {
                ledger.echo(&client, &format!("worker {me} call {n}")).await;
            }
            1 => {
                if let Err(outcome) = ledger.round_trip(&client, &format!("/tmp/{me}-{n}")).await {
                    panic!("an MRTR round trip needs no Redis, yet got {outcome:?}");
                }
            }
            _ => {
                if let Some(task) = ledger.create_task(&client, n as i64, 50).await.task_id() {
                    for _ in 0..20 {
                        let polled = ledger.get_task(&client, &task).await;
                        if polled.status() == Some("completed") || polled.is_error(-32602, UNKNOWN) {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(25)).await;
                    }
                }
            }
        }
        n += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Retries a creation (recorded every time) until Redis answers it, bounded; its task.
async fn create_once_resumed(ledger: &Ledger, client: &Client, n: i64) -> String {
    let created = tokio::time::timeout(RESUME, async {
        loop {
            let created = ledger.create_task(client, n, 50).await;
            if !created.is_error(-32603, UNAVAILABLE) {
                return created;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("task creations work again after the restart");
    created.task_id().unwrap_or_else(|| panic!("a task after the restart: {created:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_mid_run_gives_clear_errors_and_service_resumes() {
    let mut cluster = Cluster::start(3, &[]).await;
    let ledger = Arc::new(Ledger::default());
    let client = Arc::new(cluster.client());

    // Tasks in flight across the restart: seen working before it, still running after it.
    let mut in_flight = Vec::new();
    for i in 0..6 {
        let created = ledger.create_task(&client, i, 6000).await;
        let task = created.task_id().unwrap_or_else(|| panic!("task {i} created: {created:?}"));
        let polled = ledger.get_task(&client, &task).await;
        assert_eq!(polled.status(), Some("working"), "{polled:?}");
        in_flight.push(task);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> =
        (0..3).map(|me| tokio::spawn(traffic(ledger.clone(), client.clone(), stop.clone(), me))).collect();
    tokio::time::sleep(Duration::from_millis(300)).await;

    cluster.redis.kill();
    // Through each node in turn, while Redis is down: a creation and a poll each answer
    // with the store's clear error.
    for round in 0..3 {
        let created = ledger.create_task(&client, 100 + round, 50).await;
        assert!(created.is_error(-32603, UNAVAILABLE), "a creation during the outage: {created:?}");
        let polled = ledger.get_task(&client, &in_flight[round as usize]).await;
        assert!(polled.is_error(-32603, UNAVAILABLE), "a poll during the outage: {polled:?}");
    }
    tokio::time::sleep(OUTAGE).await;
    cluster.redis.restart();

    // Service resumes without restarting a node: a creation through each node, polled to
    // its result through the others.
    for n in 0..3 {
        let task = create_once_resumed(&ledger, &client, 200 + n).await;
        let done = tokio::time::timeout(RESUME, async {
            loop {
                let polled = ledger.get_task(&client, &task).await;
                if polled.status() == Some("completed") {
                    return polled;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        })
        .await
        .expect("a task created after the restart completes");
        let square = ((200 + n) * (200 + n)).to_string();
        assert_eq!(done.result().unwrap()["result"]["content"][0]["text"], square.as_str(), "{done:?}");
    }
    // The records of the tasks in flight went with Redis's data: unknown on every node.
    for task in &in_flight {
        for _ in 0..3 {
            let polled = ledger.get_task(&client, task).await;
            assert!(polled.is_error(-32602, UNKNOWN), "a task in flight at the restart: {polled:?}");
        }
    }

    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        tokio::time::timeout(crate::cluster::CLIENT_TIMEOUT * 2, worker).await.expect("a worker stopped").unwrap();
    }
    let summary = ledger.summary("redis restart");
    assert_eq!(summary.answered as u64, summary.sent, "{summary:?}");
    let mut clear = 0;
    for (kind, outcome) in ledger.all() {
        match (kind, &outcome) {
            (_, Outcome::Result(_)) => {}
            ("create" | "poll", o) if o.is_error(-32603, UNAVAILABLE) => clear += 1,
            ("poll", o) if o.is_error(-32602, UNKNOWN) => {}
            (kind, other) => panic!("a {kind} request got {other:?}: neither a result nor a clear error"),
        }
    }
    assert!(clear >= 6, "the outage was seen: {clear} clear errors");
    cluster.stop().await;
}
