use std::time::Duration;

use arbor_bus::{Bus, BusMessage, PublishError, RedisBus, RedisBusOptions, RedisConnectError, SubscribeOptions};
use serde_json::json;

use crate::support::redis_server::{Numsub, RedisServer};
use crate::support::{next, payload};

async fn node(server: &RedisServer) -> RedisBus {
    RedisBus::connect(&server.url(), RedisBusOptions::default()).await.unwrap()
}

#[tokio::test]
async fn a_message_published_on_one_node_reaches_subscribers_on_both() {
    let server = RedisServer::start();
    let (a, b) = (node(&server).await, node(&server).await);
    assert_ne!(a.node_id(), b.node_id());
    let mut on_a = a.subscribe("feed", SubscribeOptions::default());
    let mut on_b = b.subscribe("feed", SubscribeOptions::default());
    a.settled().await;
    b.settled().await;

    b.publish(BusMessage::new("feed", json!({"n": 1})).with_key("k")).unwrap();
    let Some(arbor_bus::BusEvent::Message(m)) = next(&mut on_a, 10).await else { panic!("expected a message") };
    assert_eq!((&*m.topic, m.key.as_deref(), &m.payload), ("feed", Some("k"), &json!({"n": 1})));
    assert_eq!(payload(next(&mut on_b, 10).await), json!({"n": 1}));

    // B's own message comes back to B through Redis and must not be delivered twice. A
    // publishes after A received B's message, so Redis delivers B's echo (if any) before
    // A's marker on B's connection: the marker must be the next thing B sees.
    a.publish(BusMessage::new("feed", json!("marker"))).unwrap();
    assert_eq!(payload(next(&mut on_b, 10).await), json!("marker"));
    assert_eq!(payload(next(&mut on_a, 10).await), json!("marker"));
    assert_eq!(b.stats().received, 1);
    assert!(b.stats().published >= 1);
}

#[tokio::test]
async fn redis_channels_follow_the_first_and_last_local_subscriber() {
    let server = RedisServer::start();
    let (a, b) = (node(&server).await, node(&server).await);
    let first = a.subscribe("feed", SubscribeOptions::default());
    let second = a.subscribe("feed", SubscribeOptions::default());
    let on_b = b.subscribe("feed", SubscribeOptions::default());
    a.settled().await;
    b.settled().await;
    // One connection per node, however many local subscribers.
    assert_eq!(server.numsub("arbor:feed").await, 2);
    drop(first);
    a.settled().await;
    assert_eq!(server.numsub("arbor:feed").await, 2);
    drop(second);
    a.settled().await;
    assert_eq!(server.numsub("arbor:feed").await, 1);
    drop(on_b);
    b.settled().await;
    assert_eq!(server.numsub("arbor:feed").await, 0);
    assert_eq!((a.subscriber_count(), b.subscriber_count()), (0, 0));
}

#[tokio::test]
async fn a_topic_resubscribed_quickly_stays_subscribed() {
    let server = RedisServer::start();
    let (a, b) = (node(&server).await, node(&server).await);
    for _ in 0..50 {
        drop(a.subscribe("feed", SubscribeOptions::default()));
    }
    let mut sub = a.subscribe("feed", SubscribeOptions::default());
    a.settled().await;
    assert_eq!(server.numsub("arbor:feed").await, 1);
    b.publish(BusMessage::new("feed", json!("after churn"))).unwrap();
    assert_eq!(payload(next(&mut sub, 10).await), json!("after churn"));
}

/// The outbound queue is bounded: on a current-thread runtime the publisher task cannot run
/// while we publish in a loop, so past the capacity publishes are refused, counted, and
/// still delivered locally.
#[tokio::test(flavor = "current_thread")]
async fn a_full_outbound_queue_refuses_publishes_but_delivers_locally() {
    let server = RedisServer::start();
    let options = RedisBusOptions { outbound_capacity: 4, ..RedisBusOptions::default() };
    let a = RedisBus::connect(&server.url(), options).await.unwrap();
    let mut local = a.subscribe("feed", SubscribeOptions::default());
    let results: Vec<_> = (0..10).map(|i| a.publish(BusMessage::new("feed", json!(i)))).collect();
    assert!(results[..4].iter().all(Result::is_ok));
    for r in &results[4..] {
        assert!(matches!(r, Err(PublishError::Backlogged { capacity: 4, .. })), "{r:?}");
    }
    assert_eq!(a.stats().backlogged, 6);
    for i in 0..10 {
        assert_eq!(payload(next(&mut local, 10).await), json!(i));
    }
}

#[tokio::test]
async fn connecting_to_nothing_fails_with_the_reason() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("redis://127.0.0.1:{port}/");
    let connecting = RedisBus::connect(&url, RedisBusOptions::default());
    let err = tokio::time::timeout(Duration::from_secs(10), connecting).await.unwrap().unwrap_err();
    assert!(matches!(err, RedisConnectError::Unreachable { .. }), "{err}");
    let err = RedisBus::connect("http://nope", RedisBusOptions::default()).await.unwrap_err();
    assert!(matches!(err, RedisConnectError::InvalidUrl { .. }), "{err}");
}

#[tokio::test]
async fn closing_a_node_ends_its_subscriptions() {
    let server = RedisServer::start();
    let a = node(&server).await;
    let mut sub = a.subscribe("feed", SubscribeOptions::default());
    a.close();
    assert_eq!(next(&mut sub, 10).await, None);
    assert!(matches!(a.publish(BusMessage::new("feed", json!(1))), Err(PublishError::Closed { .. })));
    a.settled().await;
}

/// The subscriber connection is pinged when idle; the replies must not be mistaken for
/// messages or break the connection.
#[tokio::test]
async fn an_idle_connection_survives_its_pings() {
    let server = RedisServer::start();
    let options = RedisBusOptions { ping_interval: Duration::from_millis(20), ..RedisBusOptions::default() };
    let a = RedisBus::connect(&server.url(), options).await.unwrap();
    let b = node(&server).await;
    let mut sub = a.subscribe("feed", SubscribeOptions::default());
    a.settled().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    b.publish(BusMessage::new("feed", json!("after pings"))).unwrap();
    assert_eq!(payload(next(&mut sub, 10).await), json!("after pings"));
    assert_eq!(a.stats().reconnects, 0);
    assert_eq!(a.stats().undecodable, 0);
}
