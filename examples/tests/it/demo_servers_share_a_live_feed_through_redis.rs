//! Two demo server processes on one real `redis-server`: a feed item published through
//! process B reaches the subscribers of process A, and delivery resumes after Redis
//! restarts. Once over stdio (a 2026-07-28 listen and a legacy `resources/subscribe` on the
//! same pipe), once over Streamable HTTP on two ports (a 2026-07-28 `subscriptions/listen`
//! SSE stream, and a legacy session's standalone GET stream after `resources/subscribe`).
//!
//! `redis-server` must be installed (`.ci/run` installs it): a missing binary fails the test
//! with that instruction. Every wait is bounded, and Redis and both servers are killed when
//! the test ends, however it ends.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
// The shared throwaway `redis-server`: a free loopback port, killed on drop.
use tests::redis::RedisServer as Redis;

use crate::http::{answer, Client, ServerProcess, Sse};
use crate::support::{modern_meta, Peer};

fn demo(redis: &Redis) -> Peer {
    Peer::spawn_with("demo_server", &["--redis", &redis.url(), "--feed-interval-ms", "0"])
}

async fn publish(b: &mut Peer, id: u64, text: &str) {
    let params = json!({"_meta": modern_meta(json!({})), "name": "publish_feed", "arguments": {"text": text}});
    let published = b.call(id, "tools/call", params).await;
    assert_eq!(published["result"]["content"][0]["text"], "Published", "{published}");
}

/// The next `updated` of `demo://feed` on A, modern (with the listen id) or legacy.
async fn next_update(a: &mut Peer, within: Duration) -> Option<Value> {
    let message = a.recv_within(within).await?;
    assert_eq!(message["method"], "notifications/resources/updated", "unexpected message on A: {message}");
    assert_eq!(message["params"]["uri"], "demo://feed", "{message}");
    Some(message)
}

async fn read_feed(a: &mut Peer, id: u64) -> String {
    let read = a.call(id, "resources/read", json!({"_meta": modern_meta(json!({})), "uri": "demo://feed"})).await;
    read["result"]["contents"][0]["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_feed_item_published_on_one_process_reaches_subscribers_of_the_other_across_a_redis_restart() {
    let mut redis = Redis::start();
    let mut a = demo(&redis);
    let mut b = demo(&redis);

    // A: a legacy session subscribed to the feed, and a modern listen on the same pipe.
    a.initialize("2025-11-25", json!({})).await;
    let subscribed = a.call(1, "resources/subscribe", json!({"uri": "demo://feed"})).await;
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    let listen = json!({"_meta": modern_meta(json!({})), "notifications": {"resourceSubscriptions": ["demo://feed"]}});
    a.send(json!({"jsonrpc": "2.0", "id": "feed", "method": "subscriptions/listen", "params": listen})).await;
    let ack = a.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["notifications"], json!({"resourceSubscriptions": ["demo://feed"]}));

    publish(&mut b, 1, "one").await;
    let mut modern = 0;
    let mut legacy = 0;
    for _ in 0..2 {
        let update = next_update(&mut a, Duration::from_secs(10)).await.expect("A heard B's feed item");
        match update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].as_str() {
            Some("feed") => modern += 1,
            None => legacy += 1,
            Some(other) => panic!("a notification for another subscription: {other}"),
        }
    }
    assert_eq!((modern, legacy), (1, 1));
    assert_eq!(read_feed(&mut a, 2).await, "one");

    // Redis goes away and comes back empty on the same port.
    redis.restart();
    // B keeps publishing until an item crosses to A again (both reconnect with backoff).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut id = 10;
    let crossed = loop {
        assert!(Instant::now() < deadline, "delivery did not resume within 30 s of the Redis restart");
        id += 1;
        let text = format!("after {id}");
        publish(&mut b, id, &text).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Drain what A was told meanwhile (the reconnection gap is announced as an update too).
        while next_update(&mut a, Duration::from_millis(50)).await.is_some() {}
        if read_feed(&mut a, id).await.starts_with("after") {
            break text;
        }
    };
    // And A's subscribers are told of the items that cross from now on.
    publish(&mut b, 1000, "last").await;
    let mut told = 0;
    while told < 2 && next_update(&mut a, Duration::from_secs(5)).await.is_some() {
        told += 1;
    }
    assert_eq!(told, 2, "both of A's subscriptions hear B's item after the restart (crossed at {crossed})");

    assert!(a.close().await.success());
    assert!(b.close().await.success());
}

// ===== over Streamable HTTP =====

const NO_TICKS: [&str; 2] = ["--feed-interval-ms", "0"];

async fn http_demo(redis: &Redis) -> ServerProcess {
    let url = redis.url();
    ServerProcess::spawn("demo_server", &["--redis", &url, NO_TICKS[0], NO_TICKS[1]]).await
}

async fn http_publish(b: &Client, id: u64, text: &str) {
    let response =
        b.modern(json!(id), "tools/call", json!({"name": "publish_feed", "arguments": {"text": text}})).await;
    assert_eq!(response.status(), 200);
    let published = answer(response).await;
    assert_eq!(published["result"]["content"][0]["text"], "Published", "{published}");
}

async fn http_read_feed(a: &Client, id: u64) -> String {
    let read = answer(a.modern(json!(id), "resources/read", json!({"uri": "demo://feed"})).await).await;
    read["result"]["contents"][0]["text"].as_str().unwrap_or_default().to_owned()
}

/// The next `updated` of `demo://feed` on a stream.
async fn http_update(stream: &mut Sse, within: Duration) -> Option<Value> {
    let message = stream.next_within(within).await?;
    assert_eq!(message["method"], "notifications/resources/updated", "unexpected message: {message}");
    assert_eq!(message["params"]["uri"], "demo://feed", "{message}");
    Some(message)
}

#[tokio::test]
async fn over_http_a_feed_item_published_on_one_server_reaches_the_streams_of_the_other_across_a_redis_restart() {
    let mut redis = Redis::start();
    let a_server = http_demo(&redis).await;
    let b_server = http_demo(&redis).await;
    assert_ne!(a_server.url, b_server.url, "two servers, two ports");
    let (a, b) = (Client::new(&a_server.url), Client::new(&b_server.url));

    // A, modern: a subscriptions/listen held open as an SSE stream, acknowledged first.
    let params = json!({"notifications": {"resourceSubscriptions": ["demo://feed"]}});
    let listen = a.modern(json!("feed"), "subscriptions/listen", params).await;
    assert_eq!(listen.status(), 200);
    let content_type = listen.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    assert!(content_type.starts_with("text/event-stream"), "a listen is an SSE stream, got {content_type}");
    let mut modern = Sse::new(listen);
    let ack = modern.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["notifications"], json!({"resourceSubscriptions": ["demo://feed"]}));

    // A, legacy: a session subscribed to the feed, hearing of it on its standalone stream.
    let session = a.open_session().await;
    let mut legacy = a.standalone_stream(&session).await;
    let subscribe =
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "demo://feed"}});
    let subscribed = answer(a.legacy(Some(&session), subscribe).await).await;
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");

    http_publish(&b, 1, "one").await;
    let update = http_update(&mut modern, Duration::from_secs(10)).await.expect("A's listen heard B's item");
    assert_eq!(update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "feed", "{update}");
    let update = http_update(&mut legacy, Duration::from_secs(10)).await.expect("A's session heard B's item");
    assert!(update["params"].get("_meta").is_none(), "no listen id in the legacy era: {update}");
    assert_eq!(http_read_feed(&a, 2).await, "one");

    // Redis goes away and comes back empty on the same port.
    redis.restart();
    // B keeps publishing until an item crosses to A again (both reconnect with backoff).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut id = 10;
    let crossed = loop {
        assert!(Instant::now() < deadline, "delivery did not resume within 30 s of the Redis restart");
        id += 1;
        let text = format!("after {id}");
        http_publish(&b, id, &text).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Drain what A's streams were told meanwhile (the reconnection gap is announced as
        // an update too).
        while http_update(&mut modern, Duration::from_millis(50)).await.is_some() {}
        while http_update(&mut legacy, Duration::from_millis(50)).await.is_some() {}
        if http_read_feed(&a, id).await.starts_with("after") {
            break text;
        }
    };
    // And both of A's streams are told of the items that cross from now on.
    http_publish(&b, 1000, "last").await;
    assert!(
        http_update(&mut modern, Duration::from_secs(5)).await.is_some(),
        "the listen hears B's item after the restart (crossed at {crossed})"
    );
    assert!(
        http_update(&mut legacy, Duration::from_secs(5)).await.is_some(),
        "the session hears B's item after the restart (crossed at {crossed})"
    );

    drop((modern, legacy));
    assert!(a_server.stop().await.success());
    assert!(b_server.stop().await.success());
}
