//! `RedisSessionStore` against a real `redis-server`, as arbor-http uses it from several
//! nodes: a record saved by one node is loaded by another and renewed or found gone by the
//! keeper; stream events come back in order after a cursor, bounded by the cap, and the
//! session-wide stream is numbered by the store whichever node writes; an answer is taken
//! exactly once by the node it lands on and reaches the node that asked; relays and ends
//! reach every other node, not the sender, and a relay waited on returns once every other
//! node has applied it; an answer for a node that is gone says so.

use std::sync::Arc;
use std::time::Duration;

use arbor_cluster::{RedisSessionStore, RedisSessionStoreOptions};
use arbor_http::cluster::{Answered, Delivery, SessionRecord, SessionStore};
use serde_json::json;
use tests::redis::RedisServer;
use tokio::sync::mpsc::Receiver;

const TTL: Duration = Duration::from_secs(60);

async fn node(url: &str, name: &str) -> RedisSessionStore {
    let options = RedisSessionStoreOptions { node: Some(name.to_owned()), ..Default::default() };
    RedisSessionStore::connect(url, options).await.expect("the test's redis-server is up")
}

fn record(id: &str) -> SessionRecord {
    SessionRecord {
        id: id.to_owned(),
        tenant: Some("acme".into()),
        owner: Some("https://issuer#alice".into()),
        initialize: json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        log_level: None,
    }
}

async fn next(rx: &mut Receiver<Delivery>) -> Delivery {
    tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.expect("a delivery in time").expect("open")
}

#[tokio::test]
async fn records_are_shared_renewed_and_ended_everywhere() {
    let redis = RedisServer::start();
    let (a, b) = (node(&redis.url(), "a").await, node(&redis.url(), "b").await);
    let mut b_inbox = b.deliveries().expect("given once");
    assert!(b.deliveries().is_none(), "the deliveries are given once");

    a.save(&record("s1"), TTL).await.unwrap();
    assert_eq!(b.load("s1").await.unwrap(), Some(record("s1")));
    assert_eq!(b.load("nope").await.unwrap(), None);

    b.set_log_level("s1", &json!({"level": "debug"})).await.unwrap();
    assert_eq!(a.load("s1").await.unwrap().unwrap().log_level, Some(json!({"level": "debug"})));

    // The keeper: renewing a live session finds nothing gone; a short TTL that lapses is.
    let live: Arc<str> = Arc::from("s1");
    let short: Arc<str> = Arc::from("s2");
    a.save(&record("s2"), Duration::from_millis(50)).await.unwrap();
    assert!(a.keep(std::slice::from_ref(&live), &[], TTL).await.unwrap().is_empty());
    let mut gone = Vec::new();
    for _ in 0..100 {
        gone = b.keep(&[], &[live.clone(), short.clone()], TTL).await.unwrap();
        if !gone.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(gone, vec![short], "only the lapsed session is gone");

    // Ending through A: the record goes, B is told, A (which did it) is not.
    a.end("s1").await.unwrap();
    assert_eq!(b.load("s1").await.unwrap(), None);
    assert_eq!(next(&mut b_inbox).await, Delivery::Ended { session: "s1".into() });
}

#[tokio::test]
async fn streams_come_back_in_order_after_a_cursor_and_bounded() {
    let redis = RedisServer::start();
    let (a, b) = (node(&redis.url(), "a").await, node(&redis.url(), "b").await);

    // A POST stream written by A with its own seqs, read by B after a cursor.
    assert!(!b.read("s", 7, 0, 10).await.unwrap().exists, "an unknown stream");
    for seq in 1..=5u64 {
        assert_eq!(a.append("s", 7, Some(seq), format!("{{\"n\":{seq}}}").as_bytes(), 4, TTL).await.unwrap(), seq);
    }
    assert_eq!(a.append("s", 7, Some(3), b"{\"repeat\":true}", 4, TTL).await.unwrap(), 5, "a repeat writes nothing");
    let page = b.read("s", 7, 2, 10).await.unwrap();
    assert!(page.exists && !page.finished);
    assert_eq!(page.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [3, 4, 5]);
    assert_eq!(page.events[0].data.as_ref(), b"{\"n\":3}");
    let all = b.read("s", 7, 0, 10).await.unwrap();
    assert_eq!(all.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3, 4, 5], "the cap keeps the last four");
    a.finish("s", 7, TTL).await.unwrap();
    let finished = b.read("s", 7, 5, 10).await.unwrap();
    assert!(finished.finished && finished.events.is_empty() && finished.last_seq == 5);

    // The session-wide stream: both nodes write, the store numbers.
    let first = a.append("s", 0, None, b"{\"from\":\"a\"}", 64, TTL).await.unwrap();
    let second = b.append("s", 0, None, b"{\"from\":\"b\"}", 64, TTL).await.unwrap();
    assert_eq!((first, second), (1, 2));
    let head = a.read("s", 0, u64::MAX, 0).await.unwrap();
    assert_eq!((head.exists, head.last_seq, head.events.len()), (true, 2, 0), "the head only");
    let page = a.read("s", 0, 1, 10).await.unwrap();
    assert_eq!(page.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [2]);

    // Seq 0 makes a stream known before its first event (a primed stream).
    a.append("s", 9, Some(0), b"", 64, TTL).await.unwrap();
    let primed = b.read("s", 9, 0, 10).await.unwrap();
    assert!(primed.exists && primed.events.is_empty() && !primed.finished);
}

#[tokio::test]
async fn an_answer_reaches_the_node_that_asked_exactly_once() {
    let redis = RedisServer::start();
    let (a, b, c) = (node(&redis.url(), "a").await, node(&redis.url(), "b").await, node(&redis.url(), "c").await);
    let mut a_inbox = a.deliveries().unwrap();
    let mut c_inbox = c.deliveries().unwrap();

    a.asked("s", "41", TTL).await.unwrap();
    let body = br#"{"jsonrpc":"2.0","id":41,"result":{"action":"accept"}}"#;
    assert_eq!(b.answer("s", "41", body).await.unwrap(), Answered::Waiting { node: "a".into(), sent: true });
    assert_eq!(next(&mut a_inbox).await, Delivery::Answer { session: "s".into(), body: body.to_vec().into() });
    assert_eq!(c.answer("s", "41", body).await.unwrap(), Answered::NobodyWaits, "taken once");

    // The asking node answered itself: nothing is sent, the caller submits it.
    a.asked("s", "42", TTL).await.unwrap();
    assert_eq!(a.answer("s", "42", body).await.unwrap(), Answered::Waiting { node: "a".into(), sent: false });

    // Relays reach every other node, not the sender.
    b.relay("s", br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#).await.unwrap();
    for inbox in [&mut a_inbox, &mut c_inbox] {
        assert!(matches!(next(inbox).await, Delivery::Relay { session, .. } if session == "s"));
    }

    // The asking node is gone: the answer is reported unheard.
    c.asked("s", "43", TTL).await.unwrap();
    drop(c_inbox);
    drop(c);
    let mut outcome = Answered::NobodyWaits;
    for _ in 0..100 {
        c_asks_again(&redis.url()).await;
        outcome = b.answer("s", "43", body).await.unwrap();
        if outcome == Answered::OwnerGone {
            break;
        }
    }
    assert_eq!(outcome, Answered::OwnerGone);
}

#[tokio::test]
async fn a_relay_waited_on_returns_once_every_node_applied_it() {
    let redis = RedisServer::start();
    let (a, b, c) = (node(&redis.url(), "a").await, node(&redis.url(), "b").await, node(&redis.url(), "c").await);
    let (mut a_inbox, mut c_inbox) = (a.deliveries().unwrap(), c.deliveries().unwrap());
    let _b_inbox = b.deliveries().unwrap();
    let body = br#"{"jsonrpc":"2.0","id":"arbor-relay","method":"logging/setLevel","params":{"level":"debug"}}"#;
    let wait = Duration::from_secs(10);

    let relaying = b.relay_applied("s", body, wait);
    tokio::pin!(relaying);
    let mut tokens = Vec::new();
    for inbox in [&mut a_inbox, &mut c_inbox] {
        let delivery = tokio::select! {
            d = next(inbox) => d,
            done = &mut relaying => panic!("returned before anyone applied it: {done:?}"),
        };
        let Delivery::Relay { session, body: got, ack: Some(ack) } = delivery else { panic!("{delivery:?}") };
        assert_eq!((session.as_str(), &got[..]), ("s", &body[..]));
        tokens.push(ack);
    }
    // One of two applied: still waiting.
    a.applied(&tokens[0]).await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut relaying).await.is_err(),
        "returned with one of two nodes applied"
    );
    c.applied(&tokens[1]).await.unwrap();
    assert!(tokio::time::timeout(wait, relaying).await.expect("returned").unwrap(), "every node applied it");

    // A node that never applies it: the wait ends at its bound, saying so.
    assert!(!b.relay_applied("s", body, Duration::from_millis(300)).await.unwrap());
    // A plain relay (a cancel) asks nobody to acknowledge.
    b.relay("s", body).await.unwrap();
    let _ = next(&mut a_inbox).await;
    assert!(matches!(next(&mut a_inbox).await, Delivery::Relay { ack: None, .. }));
}

/// Notes again that the dropped node "c" waits for id 43 (an answer takes the entry): the
/// loop above retries until Redis has seen c's subscriber go.
async fn c_asks_again(url: &str) {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("SET").arg("arbor:ask:s:43").arg("c").query_async(&mut conn).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
}

#[tokio::test]
async fn an_outage_is_unavailable_promptly_and_the_store_heals_by_itself() {
    use arbor_http::cluster::SessionStoreError;
    let mut redis = RedisServer::start();
    let options = RedisSessionStoreOptions {
        node: Some("a".into()),
        response_timeout: Duration::from_millis(500),
        ..Default::default()
    };
    let a = RedisSessionStore::connect(&redis.url(), options).await.unwrap();
    let mut inbox = a.deliveries().unwrap();
    a.save(&record("s1"), TTL).await.unwrap();

    redis.kill();
    let guard = Duration::from_secs(10);
    let down = |r: Result<_, SessionStoreError>| matches!(r, Err(SessionStoreError::Unavailable(_)));
    assert!(down(tokio::time::timeout(guard, a.load("s1")).await.expect("hung").map(drop)));
    assert!(down(tokio::time::timeout(guard, a.append("s1", 0, None, b"{}", 8, TTL)).await.expect("hung").map(drop)));
    assert!(down(tokio::time::timeout(guard, a.answer("s1", "1", b"{}")).await.expect("hung").map(drop)));
    assert!(down(tokio::time::timeout(guard, a.keep(&[], &[Arc::from("s1")], TTL)).await.expect("hung").map(drop)));

    // Restarted empty: the store reconnects by itself, the record from before is gone (the
    // keeper then closes its copies), and the subscriber hears the other nodes again.
    redis.restart();
    let mut gone = None;
    for _ in 0..100 {
        if let Ok(found) = a.keep(&[], &[Arc::from("s1")], TTL).await {
            gone = Some(found);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(gone.expect("the store never reconnected"), vec![Arc::<str>::from("s1")]);
    let b = node(&redis.url(), "b").await;
    let mut heard = false;
    for _ in 0..100 {
        b.relay("s2", b"{}").await.unwrap();
        if let Ok(Some(delivery)) = tokio::time::timeout(Duration::from_millis(100), inbox.recv()).await {
            assert!(matches!(delivery, Delivery::Relay { session, .. } if session == "s2"));
            heard = true;
            break;
        }
    }
    assert!(heard, "the subscriber never re-subscribed");
}
