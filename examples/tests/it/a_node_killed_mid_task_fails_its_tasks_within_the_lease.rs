//! A node SIGKILLed while it runs tasks (issue 18): three `demo_server --cluster` nodes
//! behind a round-robin HAProxy on one real Redis, twelve `slow_square` tasks created
//! through the balancer (four on each node), echo calls and polls flowing, then one node
//! killed. Its four tasks end `failed` with the lease-expired message once its lease
//! (`--lease-ms`, 3 s here against the 5 s default) has run out, polled through the
//! survivors; the other eight complete with their squares; and every request of the run got
//! exactly one answer: a result, or the balancer's clear error (502) for a request the dead
//! node was serving when it died, never nothing. (The balancer sends a request that finds
//! the dead node refusing connections to the next node, `tests::haproxy`.)
//!
//! Which node runs which task is known without asking the nodes: the balancer names the
//! backend of every answer (`tests::haproxy::BACKEND_HEADER`), and a task runs on the
//! node that created it. Every wait is bounded; the processes are killed when the test
//! ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_cluster::tasks::LEASE_EXPIRED;
use serde_json::Value;

use crate::cluster::{Cluster, Ledger, Outcome};
use crate::http::Client;

const NODES: usize = 3;
const TASKS: usize = 12;
/// Longer than the time from the creations to the kill and to the first polls after it,
/// so the victim's tasks are running when it dies and the survivors' are still working
/// when the victim's have failed.
const TASK_MS: u64 = 4000;
const VICTIM: usize = 1;
/// The bound on the whole wait for every task to end (lease 3 s, tasks 4 s).
const SETTLE: Duration = Duration::from_secs(40);

/// Echo calls and polls of the tasks until `stop`, each recorded in the ledger.
async fn traffic(ledger: Arc<Ledger>, client: Arc<Client>, tasks: Arc<Vec<String>>, stop: Arc<AtomicBool>, me: usize) {
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) {
        if n.is_multiple_of(2) {
            let message = format!("worker {me} call {n}");
            let outcome = ledger.echo(&client, &message).await;
            if let Some(result) = outcome.result() {
                assert_eq!(result["content"][0]["text"], message.as_str(), "{result}");
            }
        } else {
            ledger.get_task(&client, &tasks[(me + n) % tasks.len()]).await;
        }
        n += 1;
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Polls `task` through the balancer until it is terminal; its last `tasks/get` result.
async fn settle(ledger: Arc<Ledger>, client: Arc<Client>, task: String) -> Value {
    loop {
        if let Outcome::Result(result) = ledger.get_task(&client, &task).await {
            if matches!(result["status"].as_str(), Some("completed" | "failed" | "cancelled")) {
                return result;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_mid_task_fails_its_tasks_within_the_lease() {
    let mut cluster = Cluster::start(NODES, &["--lease-ms", "3000"]).await;
    let ledger = Arc::new(Ledger::default());
    let client = Arc::new(cluster.client_without_keep_alive());

    // Twelve creations through the balancer; each runs on the node that created it, which
    // the balancer names in its answer.
    let mut tasks = Vec::new();
    let mut runs_on = HashMap::new();
    for i in 0..TASKS {
        let (created, node) = ledger.create_task_on_some_node(&client, i as i64, TASK_MS).await;
        let id = created.task_id().unwrap_or_else(|| panic!("task {i} created: {created:?}"));
        runs_on.insert(id.clone(), node.expect("the balancer names the node"));
        tasks.push(id);
    }
    for node in 0..NODES {
        assert!(runs_on.values().any(|&n| n == node), "every node runs some tasks: {runs_on:?}");
    }
    let tasks = Arc::new(tasks);

    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..3)
        .map(|me| tokio::spawn(traffic(ledger.clone(), client.clone(), tasks.clone(), stop.clone(), me)))
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster.kill(VICTIM).await;
    let killed_at = std::time::Instant::now();

    let pollers: Vec<_> =
        tasks.iter().map(|id| tokio::spawn(settle(ledger.clone(), client.clone(), id.clone()))).collect();
    let ends = tokio::time::timeout(SETTLE, futures::future::join_all(pollers))
        .await
        .unwrap_or_else(|_| panic!("every task ended within {SETTLE:?} of the kill"));
    eprintln!("every task ended {:?} after the kill", killed_at.elapsed());
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        tokio::time::timeout(crate::cluster::CLIENT_TIMEOUT * 2, worker).await.expect("a worker stopped").unwrap();
    }

    for (i, (id, end)) in tasks.iter().zip(ends).enumerate() {
        let end = end.unwrap();
        if runs_on[id] == VICTIM {
            assert_eq!(end["status"], "failed", "task {i} of the killed node: {end}");
            assert_eq!(end["statusMessage"], LEASE_EXPIRED, "task {i} of the killed node: {end}");
        } else {
            assert_eq!(end["status"], "completed", "task {i} of a survivor: {end}");
            assert_eq!(end["result"]["content"][0]["text"], (i * i).to_string(), "task {i}: {end}");
        }
    }

    // Every request got one answer: a result, or the balancer's error for the dead node.
    let summary = ledger.summary("node killed");
    for (kind, outcome) in ledger.all() {
        if !matches!(outcome, Outcome::Result(_)) {
            eprintln!("{kind}: {outcome:?}");
        }
    }
    assert_eq!(summary.answered as u64, summary.sent, "{summary:?}");
    for (kind, outcome) in ledger.all() {
        match outcome {
            Outcome::Result(_) => {}
            // 503: a balancer that could reach no node for it (not expected with redispatch).
            Outcome::Http { status: 502 | 503, .. } => {}
            other => panic!("a {kind} request got {other:?}: neither a result nor the balancer's clear error"),
        }
    }
    cluster.stop().await;
}
