use std::time::Duration;

use arbor_bus::{Bus, BusEvent, BusMessage, GapReason, RedisBus, RedisBusOptions, SubscribeOptions};
use serde_json::json;

use crate::support::redis_server::{Numsub, RedisServer};
use crate::support::{next, payload};

fn options() -> RedisBusOptions {
    RedisBusOptions {
        reconnect_min: Duration::from_millis(20),
        reconnect_max: Duration::from_millis(200),
        ..RedisBusOptions::default()
    }
}

const RECONNECTED: BusEvent = BusEvent::Gap { missed: None, reason: GapReason::Reconnected };

/// Kill Redis under two nodes and start it again on the same port: each subscriber sees a
/// `Reconnected` gap, then delivery across nodes resumes. Meanwhile a node's own
/// subscribers keep receiving its publishes.
#[tokio::test]
async fn delivery_resumes_after_a_redis_restart_and_subscribers_see_the_gap() {
    let mut server = RedisServer::start();
    let a = RedisBus::connect(&server.url(), options()).await.unwrap();
    let b = RedisBus::connect(&server.url(), options()).await.unwrap();
    let mut on_a = a.subscribe("feed", SubscribeOptions::default());
    let mut on_b = b.subscribe("feed", SubscribeOptions::default());
    a.settled().await;
    b.publish(BusMessage::new("feed", json!("before"))).unwrap();
    assert_eq!(payload(next(&mut on_a, 10).await), json!("before"));
    assert_eq!(payload(next(&mut on_b, 10).await), json!("before"));

    server.kill();
    // Redis is down: B's subscribers still get B's messages, at once.
    b.publish(BusMessage::new("feed", json!("while down"))).unwrap();
    assert_eq!(payload(next(&mut on_b, 10).await), json!("while down"));
    server.restart();

    assert_eq!(next(&mut on_a, 20).await, Some(RECONNECTED));
    assert_eq!(next(&mut on_b, 20).await, Some(RECONNECTED));
    assert!(a.stats().reconnects >= 1);

    // B's first publishes may go to a dead connection (counted as failed); keep publishing
    // until one crosses. Everything A sees after the gap is a post-restart message.
    let mut crossed = None;
    for i in 0..400 {
        b.publish(BusMessage::new("feed", json!(i))).unwrap();
        if let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(50), on_a.recv()).await {
            crossed = Some(event);
            break;
        }
    }
    let first = payload(crossed);
    assert!(first.is_u64(), "{first}");
    assert_eq!(server.numsub("arbor:feed").await, 2);
    // The subscription on Redis is back for both nodes: A to B works too.
    a.publish(BusMessage::new("feed", json!("a to b"))).unwrap();
    loop {
        match next(&mut on_b, 10).await {
            Some(BusEvent::Message(m)) if m.payload == json!("a to b") => break,
            Some(BusEvent::Message(_)) => continue, // B's own numbered messages
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// A topic subscribed while Redis is down is subscribed once it is back, and its subscriber
/// is told about the gap too.
#[tokio::test]
async fn topics_subscribed_while_redis_is_down_are_subscribed_on_reconnection() {
    let mut server = RedisServer::start();
    let a = RedisBus::connect(&server.url(), options()).await.unwrap();
    let b = RedisBus::connect(&server.url(), options()).await.unwrap();
    server.kill();
    let mut late = a.subscribe("late", SubscribeOptions::default());
    server.restart();
    assert_eq!(next(&mut late, 20).await, Some(RECONNECTED));
    a.settled().await;
    let mut crossed = None;
    for i in 0..400 {
        b.publish(BusMessage::new("late", json!(i))).unwrap();
        if let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(50), late.recv()).await {
            crossed = Some(event);
            break;
        }
    }
    assert!(payload(crossed).is_u64());
}
