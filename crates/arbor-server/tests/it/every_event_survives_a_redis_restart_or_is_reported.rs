//! A Redis restart under the streams of a server whose bus is Redis: another node
//! publishes 3,000 numbered events through Redis, one every millisecond or so, and Redis
//! is killed and started again (empty, same port) after the first thousand, while four
//! subscribers of the server read (two 2026-07-28 listens, two legacy
//! `resources/subscribe`s), sending requests on their connections all along.
//!
//! Checked at the MCP level, on what the clients read: every event reached each
//! subscriber once and in order, or was lost where the subscriber was told of a gap (the
//! runtime hands the bus's reconnection gap to the stream's handlers); the last event,
//! published once both nodes are back, reached everyone: never silence. Each request got
//! one answer, and afterwards the bus subscriptions and the live counts are back to their
//! baseline. Real sockets and a real `redis-server`, so on the real clock; every wait is
//! bounded.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_bus::{Bus, PublishError, RedisBus, RedisBusOptions, SubscribeOptions};
use arbor_server::{Server, ServerConfig};
use futures::future::join_all;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::ledger::{Cancel, Kind};
use tests::kit::notifications::{NotificationLedger, Policy};
use tests::kit::peer::SlowReads;
use tests::kit::Seed;
use tests::redis::RedisServer;

use crate::kit::{Era, Fleet};
use crate::kit_streams::{numbered, open_stream, Consumer, Numbered, FEED};
use crate::support::TestHandler;

const EVENTS: u64 = 3_000;
/// Redis restarts after this event.
const RESTART_AFTER: u64 = 1_000;
const KEYS: u64 = 1_000;

fn options() -> RedisBusOptions {
    RedisBusOptions {
        reconnect_min: Duration::from_millis(20),
        reconnect_max: Duration::from_millis(200),
        ..RedisBusOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_under_listens_and_subscriptions_is_a_gap_never_a_silent_loss() {
    let test = "a_redis_restart_under_listens_and_subscriptions_is_a_gap_never_a_silent_loss";
    let seed = Seed::for_test(test);
    let redis = RedisServer::start();
    let publisher = RedisBus::connect(&redis.url(), options()).await.unwrap();
    let node = RedisBus::connect(&redis.url(), options()).await.unwrap();
    // Drop-oldest, so a queue that fills while the node catches up reports its loss too.
    let queues = SubscribeOptions::drop_oldest();
    let eras = [Era::Modern, Era::Modern, Era::Legacy, Era::Legacy];
    let bus = node.clone();
    let (fleet, mut peers) = Fleet::start_eras(test, ServerConfig::default(), &eras, |config| {
        Server::with_config(TestHandler::new(), config)
            .with_bus(Arc::new(bus))
            .subscription_handler(Numbered { options: queues })
    })
    .await;
    let subscribers = node.subscriber_count();
    let id = json!("stream");
    let notes = Mutex::new(NotificationLedger::new(test, Policy::DropOldest));
    let published_all = Arc::new(AtomicBool::new(false));
    let mut consumers = Vec::new();
    for (conn, peer) in peers.iter_mut().enumerate() {
        // The stream is acknowledged once Redis has its subscription (`Bus::settled`).
        open_stream(peer, eras[conn], conn, &id, &fleet.ledger).await;
        let name = format!("{:?} {conn}", eras[conn]);
        notes.lock().subscriber(&name);
        let mut pace = SlowReads::pick(&mut seed.rng(conn as u64));
        pace.pause = pace.pause.min(Duration::from_millis(2));
        consumers.push(Consumer {
            name,
            era: eras[conn],
            conn,
            listen: (eras[conn] == Era::Modern).then(|| id.clone()),
            pace,
            echo_every: 3,
            delay_ms: None,
            published_all: published_all.clone(),
            until_signalled: false,
        });
    }
    let pad = Value::from("x".repeat(64));
    let publish = async {
        let mut redis = redis;
        let mut refused = 0;
        for seq in 1..=EVENTS {
            let (message, key) = numbered(seq, KEYS, &pad);
            notes.lock().published(seq, Some(&key));
            match publisher.publish(message) {
                Ok(()) => {}
                Err(PublishError::Backlogged { .. }) => {
                    notes.lock().refused(seq);
                    refused += 1;
                }
                Err(other) => panic!("{other}"),
            }
            if seq == RESTART_AFTER {
                redis = tokio::task::spawn_blocking(move || {
                    redis.restart();
                    redis
                })
                .await
                .unwrap();
            }
            if seq == EVENTS - 100 {
                // The last hundred go out once both nodes are back (bounded wait).
                let back = || node.stats().reconnects >= 1 && node.health() == arbor_bus::BusHealth::Up;
                tests::poll::until("the server's node reconnected", Duration::from_secs(20), back).await;
                node.settled().await;
            }
            if seq % 5 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        published_all.store(true, Ordering::SeqCst);
        (redis, refused)
    };
    let reads = consumers.iter().zip(peers).map(|(consumer, peer)| consumer.run(peer, &notes, &fleet.ledger));
    let ((redis, refused), ran) = tokio::join!(publish, join_all(reads));
    let mut peers = Vec::new();
    let mut requests = 0;
    for ((peer, sent), consumer) in ran.into_iter().zip(&consumers) {
        requests += sent;
        let leave = json!("leave");
        match consumer.era {
            Era::Modern => {
                peer.send(tests::kit::peer::cancel(&id));
                fleet.ledger.lock().cancelled(consumer.conn, &id, Cancel::Accepted);
            }
            Era::Legacy => {
                peer.send(
                    json!({"jsonrpc": "2.0", "id": leave, "method": "resources/unsubscribe", "params": {"uri": FEED}}),
                );
                fleet.ledger.lock().sent(consumer.conn, &leave, &[Kind::Result]);
            }
        }
        peers.push(Fleet::drain(fleet.ledger.clone(), consumer.conn, peer).await);
    }
    let stats = (publisher.stats(), node.stats());
    println!("[kit] {test}: {requests} requests sent while reading, {refused} publishes refused; publisher {:?}, server node {:?}", stats.0, stats.1);
    let summary = notes.into_inner().finish();
    assert!(
        summary.subscribers.values().all(|a| a.gaps >= 1),
        "every subscriber was told of the restart's gap: {summary}"
    );
    tests::poll::until("the streams' bus subscriptions are dropped", Duration::from_secs(10), || {
        node.subscriber_count() == subscribers
    })
    .await;
    fleet.finish(peers).await;
    drop(redis);
}
