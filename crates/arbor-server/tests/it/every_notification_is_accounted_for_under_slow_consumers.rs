//! A slow consumer of a stream of 10,000 notifications, in both eras (a 2026-07-28
//! `subscriptions/listen`, a legacy `resources/subscribe`), under each overflow policy
//! (the default `coalesce`, `drop_oldest`, `end_stream`), over the in-memory transport on
//! the paused clock.
//!
//! Each notification carries 2 KiB, so that well before the 10,000th the connection's
//! unread output reaches its bound and the stream backs up into its bounded bus queue,
//! where the policy decides. The notification ledger then proves that every event was
//! delivered once and in order (per key under `coalesce`, which replaces in place), or
//! superseded by a later one of its key, or lost at a gap the client was told of, or cut
//! by the stream's graceful end; never lost in silence. Meanwhile the queue depth the
//! server's tree view shows never passes the queue's capacity, the echo requests the
//! consumer sends on the same connection (about 1,000) are each answered once (the
//! request ledger), and once the consumer leaves, the bus subscriptions and the live
//! counts are back to their baseline.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_bus::{Bus, LocalBus, SubscribeOptions};
use arbor_server::{Server, ServerConfig};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::ledger::{Cancel, Kind};
use tests::kit::notifications::{NotificationLedger, Policy};
use tests::kit::peer::SlowReads;
use tests::kit::Seed;

use crate::kit::{Era, Fleet};
use crate::kit_streams::{deepest_stream_queue, numbered, open_stream, Consumer, Numbered};
use crate::support::TestHandler;

/// Events published per run.
const EVENTS: u64 = 10_000;
/// Bytes of padding per event: 10,000 events are about 20 MiB of notifications, past
/// the 8 MiB a connection may leave unread.
const PAD: usize = 2048;
/// Distinct coalescing keys among the events.
const KEYS: u64 = 1000;
/// The consumer sends an echo request every this many messages it reads.
const ECHO_EVERY: usize = 4;

async fn slow_consumer(test: &str, era: Era, options: SubscribeOptions, policy: Policy) {
    let seed = Seed::for_test(test);
    let bus = Arc::new(LocalBus::new());
    let config = ServerConfig::default().subscription_options(options);
    let (fleet, mut peers) = Fleet::start_eras(test, config, &[era], |config| {
        Server::with_config(TestHandler::new(), config).with_bus(bus.clone()).subscription_handler(Numbered { options })
    })
    .await;
    let subscribers = bus.subscriber_count();
    let mut peer = peers.pop().unwrap();
    let id = json!("stream");
    open_stream(&mut peer, era, 0, &id, &fleet.ledger).await;
    let notes = Mutex::new(NotificationLedger::new(test, policy));
    notes.lock().subscriber("consumer");
    let published_all = Arc::new(AtomicBool::new(false));
    let consumer = Consumer {
        name: "consumer".into(),
        era,
        conn: 0,
        listen: (era == Era::Modern).then(|| id.clone()),
        pace: SlowReads::pick(&mut seed.rng(1)),
        echo_every: ECHO_EVERY,
        published_all: published_all.clone(),
        until_signalled: false,
        delay_ms: None,
    };
    println!("[kit] {test}: reads paced {:?}", consumer.pace);
    let pad = Value::from("x".repeat(PAD));
    let publish = async {
        let mut deepest = 0;
        for seq in 1..=EVENTS {
            let (message, key) = numbered(seq, KEYS, &pad);
            notes.lock().published(seq, Some(&key));
            bus.publish(message).unwrap();
            if seq % 100 == 0 {
                deepest = deepest.max(deepest_stream_queue(&fleet.server).await);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        published_all.store(true, Ordering::SeqCst);
        deepest
    };
    let (deepest, (peer, echoes)) = tokio::join!(publish, consumer.run(peer, &notes, &fleet.ledger));
    println!("[kit] {test}: deepest stream queue {deepest} (capacity {}), {echoes} echo requests", options.capacity);
    assert!(deepest <= options.capacity, "a stream queued {deepest}, past its capacity {}", options.capacity);
    // The consumer leaves: it cancels its listen, or unsubscribes.
    match era {
        Era::Modern if !notes.lock().ended("consumer") => {
            peer.send(tests::kit::peer::cancel(&id));
            fleet.ledger.lock().cancelled(0, &id, Cancel::Accepted);
        }
        Era::Modern => {}
        Era::Legacy => {
            let leave = json!("leave");
            peer.send(json!({"jsonrpc": "2.0", "id": leave, "method": "resources/unsubscribe", "params": {"uri": crate::kit_streams::FEED}}));
            fleet.ledger.lock().sent(0, &leave, &[Kind::Result]);
        }
    }
    let peer = Fleet::drain(fleet.ledger.clone(), 0, peer).await;
    tests::poll::until("the stream's bus subscriptions are dropped", Duration::from_secs(10), || {
        bus.subscriber_count() == subscribers
    })
    .await;
    let summary = notes.into_inner().finish();
    assert_eq!(summary.published, EVENTS as usize);
    fleet.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn a_slow_listen_consumer_under_the_default_coalesce_policy() {
    let test = "a_slow_listen_consumer_under_the_default_coalesce_policy";
    slow_consumer(test, Era::Modern, SubscribeOptions::coalesce(), Policy::Coalesce).await;
}

#[tokio::test(start_paused = true)]
async fn a_slow_legacy_subscriber_under_the_default_coalesce_policy() {
    let test = "a_slow_legacy_subscriber_under_the_default_coalesce_policy";
    slow_consumer(test, Era::Legacy, SubscribeOptions::coalesce(), Policy::Coalesce).await;
}

#[tokio::test(start_paused = true)]
async fn a_slow_listen_consumer_under_drop_oldest() {
    let test = "a_slow_listen_consumer_under_drop_oldest";
    slow_consumer(test, Era::Modern, SubscribeOptions::drop_oldest(), Policy::DropOldest).await;
}

#[tokio::test(start_paused = true)]
async fn a_slow_legacy_subscriber_under_drop_oldest() {
    let test = "a_slow_legacy_subscriber_under_drop_oldest";
    slow_consumer(test, Era::Legacy, SubscribeOptions::drop_oldest(), Policy::DropOldest).await;
}

#[tokio::test(start_paused = true)]
async fn a_slow_listen_consumer_under_end_stream() {
    let test = "a_slow_listen_consumer_under_end_stream";
    slow_consumer(test, Era::Modern, SubscribeOptions::end_stream(), Policy::EndStream).await;
}

#[tokio::test(start_paused = true)]
async fn a_slow_legacy_subscriber_under_end_stream() {
    let test = "a_slow_legacy_subscriber_under_end_stream";
    slow_consumer(test, Era::Legacy, SubscribeOptions::end_stream(), Policy::EndStream).await;
}
