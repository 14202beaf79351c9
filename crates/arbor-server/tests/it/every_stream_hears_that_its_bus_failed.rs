//! The bus that feeds every stream fails (`Bus::close`: what a node's bus does when it
//! stops, and what ends every subscription of it) while eight subscribers read, four
//! 2026-07-28 listens and four legacy `resources/subscribe`s, each sending delayed
//! requests on its own connection, so some are in flight when the bus goes.
//!
//! The notification ledger proves each subscriber got the events queued before the
//! failure once and in order (or superseded, under the default `coalesce`) and was then
//! told: a listen by its graceful end (the complete result), a legacy session, which has
//! no message for an end, by a gap (the runtime's "re-read" `updated`); never silence.
//! The request ledger proves each request got one answer; afterwards the streams are gone
//! (the legacy sessions' `list_changed` streams too: their bus ended), the bus holds no
//! subscription and the rest of the live counts are back to their baseline.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_bus::{Bus, LocalBus, PublishError, SubscribeOptions};
use arbor_server::{Server, ServerConfig};
use futures::future::join_all;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::ledger::Kind;
use tests::kit::notifications::{NotificationLedger, Policy};
use tests::kit::peer::SlowReads;
use tests::kit::Seed;

use crate::kit::{Era, Fleet};
use crate::kit_streams::{numbered, open_stream, Consumer, Numbered, FEED};
use crate::support::TestHandler;

/// Subscribers of each era.
const PER_ERA: usize = 4;
/// Events published before the bus fails (each to eight subscribers).
const EVENTS: u64 = 1_000;
const KEYS: u64 = 1_000;

#[tokio::test(start_paused = true)]
async fn a_failed_bus_ends_every_listen_and_marks_every_legacy_subscription() {
    let test = "a_failed_bus_ends_every_listen_and_marks_every_legacy_subscription";
    let seed = Seed::for_test(test);
    let bus = Arc::new(LocalBus::new());
    let options = SubscribeOptions::coalesce();
    let eras: Vec<Era> = [[Era::Modern; PER_ERA], [Era::Legacy; PER_ERA]].concat();
    let (mut fleet, mut peers) = Fleet::start_eras(test, ServerConfig::default(), &eras, |config| {
        Server::with_config(TestHandler::new(), config).with_bus(bus.clone()).subscription_handler(Numbered { options })
    })
    .await;
    let id = json!("stream");
    let notes = Mutex::new(NotificationLedger::new(test, Policy::Coalesce));
    let published_all = Arc::new(AtomicBool::new(false));
    let mut consumers = Vec::new();
    for (conn, peer) in peers.iter_mut().enumerate() {
        open_stream(peer, eras[conn], conn, &id, &fleet.ledger).await;
        let name = format!("{:?} {conn}", eras[conn]);
        notes.lock().subscriber(&name);
        consumers.push(Consumer {
            name,
            era: eras[conn],
            conn,
            listen: (eras[conn] == Era::Modern).then(|| id.clone()),
            pace: SlowReads::pick(&mut seed.rng(conn as u64)),
            echo_every: 4,
            delay_ms: Some(seed.rng(100 + conn as u64).u64(1..=30)),
            published_all: published_all.clone(),
            until_signalled: true,
        });
    }
    let pad = Value::from("x".repeat(256));
    let publish = async {
        for seq in 1..=EVENTS {
            let (message, key) = numbered(seq, KEYS, &pad);
            notes.lock().published(seq, Some(&key));
            bus.publish(message).unwrap();
            if seq % 50 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        bus.close();
        let (late, _) = numbered(EVENTS + 1, KEYS, &pad);
        assert!(matches!(bus.publish(late), Err(PublishError::Closed { .. })));
        published_all.store(true, Ordering::SeqCst);
    };
    let reads = consumers.iter().zip(peers).map(|(consumer, peer)| consumer.run(peer, &notes, &fleet.ledger));
    let ((), ran) = tokio::join!(publish, join_all(reads));
    let mut peers = Vec::new();
    let mut requests = 0;
    for ((peer, sent), consumer) in ran.into_iter().zip(&consumers) {
        assert!(notes.lock().signalled(&consumer.name), "{} was never told its bus failed", consumer.name);
        requests += sent;
        if consumer.era == Era::Legacy {
            // The session still holds its subscription, as far as it knows: it leaves.
            let leave = json!("leave");
            peer.send(
                json!({"jsonrpc": "2.0", "id": leave, "method": "resources/unsubscribe", "params": {"uri": FEED}}),
            );
            fleet.ledger.lock().sent(consumer.conn, &leave, &[Kind::Result]);
        }
        peers.push(Fleet::drain(fleet.ledger.clone(), consumer.conn, peer).await);
    }
    println!("[kit] {test}: {requests} delayed requests sent while reading");
    tests::poll::until("every bus subscription is dropped", Duration::from_secs(10), || bus.subscriber_count() == 0)
        .await;
    let summary = notes.into_inner().finish();
    for (name, account) in &summary.subscribers {
        assert_eq!(account.ended, name.starts_with("Modern"), "only a listen can end: {name} {account}");
    }
    // The closed bus rightly ended the legacy sessions' `list_changed` streams too.
    fleet.rebase(|live| {
        live.streams -= PER_ERA;
        live.tasks -= PER_ERA;
    });
    fleet.finish(peers).await;
}
