//! A `requestState` key rotated while MRTR round trips run (issue 18): three `demo_server
//! --cluster` nodes behind a round-robin HAProxy (each round trip's ask and answer land on
//! different nodes), and the test, as an operator's tool would, stages a new key in the
//! shared keyring (`arbor_cluster::RedisKeyring` on the same Redis), promotes it and
//! retires the old one. Promote and retire are refused (`Lagging`) until every live node
//! has read the ring (the demo's nodes read it every second), so the test retries them.
//!
//! No round trip is refused because of the change; a state sealed before the rotation
//! still opens after the promotion (the old key is still accepted), and only once the old
//! key is retired (and every node has read that) is such a state refused: the rotation
//! really happened.
//!
//! The one window the staged protocol leaves open is a state sealed with the old key by a
//! node just before it read the promotion, answered on a node that has already read the
//! retirement: the retirement needs the first node's acknowledgement of the promotion, so
//! that round trip would have to span a whole keyring poll. Ours take milliseconds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_cluster::{KeyringError, RedisKeyring};
use serde_json::{json, Value};

use crate::cluster::{Cluster, Ledger, Outcome};
use crate::http::Client;

/// How long a step may be refused for lagging nodes (they read the ring every second).
const STEP: Duration = Duration::from_secs(20);

/// MRTR round trips until `stop`; each must end `Deleted`.
async fn round_trips(ledger: Arc<Ledger>, client: Arc<Client>, stop: Arc<AtomicBool>, me: usize) -> usize {
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) {
        if let Err(outcome) = ledger.round_trip(&client, &format!("/tmp/{me}-{n}")).await {
            panic!("round trip {n} of worker {me} was not completed: {outcome:?}");
        }
        n += 1;
        // A bounded run: about a hundred round trips a second per worker.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    n
}

/// Runs a keyring step until no live node lags, bounded; its generation.
async fn until_accepted<F, Fut>(what: &str, mut step: F) -> u64
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<u64, KeyringError>>,
{
    let mut refusals = 0;
    let generation = tokio::time::timeout(STEP, async {
        loop {
            match step().await {
                Ok(generation) => return generation,
                Err(KeyringError::Lagging { .. }) => refusals += 1,
                Err(other) => panic!("{what}: {other}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} accepted within {STEP:?}"));
    eprintln!("{what}: generation {generation}, after {refusals} lagging refusal(s)");
    generation
}

/// An old state, sealed before the rotation, answered now.
async fn answer_old(ledger: &Ledger, client: &Client, path: &str, state: &Value) -> Outcome {
    ledger.answer(client, path, state).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_rotation_mid_run_refuses_no_request_state() {
    let cluster = Cluster::start(3, &[]).await;
    let ledger = Arc::new(Ledger::default());
    let client = Arc::new(cluster.client());
    let admin = RedisKeyring::attach(
        &cluster.redis.url(),
        "arbor:",
        "rotation-test",
        arbor_server::StateKey::random(),
        Duration::from_secs(1),
    )
    .await
    .expect("the operator's view of the keyring");
    let before = admin.generation();
    assert!(before >= 1, "the nodes wrote the keyring");

    // States sealed with the key in force before the rotation.
    let mut old = Vec::new();
    for name in ["/tmp/old-promoted", "/tmp/old-retired"] {
        let (asked, state) = ledger.ask(&client, name).await;
        old.push((name, state.unwrap_or_else(|| panic!("input required: {asked:?}"))));
    }

    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> =
        (0..3).map(|me| tokio::spawn(round_trips(ledger.clone(), client.clone(), stop.clone(), me))).collect();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let new_key = [7u8; 32];
    let staged = admin.stage(&new_key).await.expect("staging needs no node to have caught up");
    let promoted = until_accepted("promote", || admin.promote()).await;
    // Promoted: the new key seals, the old one still opens.
    let (path, state) = &old[0];
    let opened = answer_old(&ledger, &client, path, state).await;
    assert_eq!(opened.result().map(|r| r["content"][0]["text"].clone()), Some(json!(format!("Deleted {path}"))));
    let retired = until_accepted("retire", || admin.retire()).await;
    assert_eq!((staged, promoted, retired), (before + 1, before + 2, before + 3));
    // Round trips go on under the new key alone for a while, until every node has read
    // the retirement: a second retire is refused until then, like any step after one.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    until_accepted("retire again (every node read the retirement)", || admin.retire()).await;
    stop.store(true, Ordering::Relaxed);
    let mut trips = 0;
    for worker in workers {
        trips += tokio::time::timeout(crate::cluster::CLIENT_TIMEOUT * 2, worker)
            .await
            .expect("a worker stopped")
            .expect("every round trip completed");
    }

    // A state sealed with the old key is refused now, on every node.
    let (path, state) = &old[1];
    for _ in 0..3 {
        let refused = answer_old(&ledger, &client, path, state).await;
        assert!(refused.is_error(-32602, "Invalid requestState"), "the retired key opens nothing: {refused:?}");
    }
    let summary = ledger.summary("key rotation");
    eprintln!("{trips} round trips across the rotation");
    assert!(trips > 0, "round trips ran across the rotation");
    assert_eq!(summary.answered as u64, summary.sent, "{summary:?}");
    assert_eq!(summary.rpc_errors, 3, "only the three answers with the retired key were refused: {summary:?}");
    assert_eq!(summary.results as u64, summary.sent - 3, "{summary:?}");
    cluster.stop().await;
}
