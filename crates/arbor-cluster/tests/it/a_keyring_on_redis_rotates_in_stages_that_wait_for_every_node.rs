//! `RedisKeyring`: two nodes read one keyring from a real Redis; a `requestState` sealed
//! on one opens on the other before, during and after a staged rotation; a step that would
//! leave a live node behind is refused until it has read the ring; a stopped node stops
//! counting once its acknowledgement expires; the retired key's states are refused.

use std::time::Duration;

use arbor_cluster::{KeyringError, RedisKeyring};
use arbor_protocol::model::tools::CallToolResult;
use arbor_server::router::NoArgs;
use arbor_server::{
    ConnectOptions, InputRequired, Reply, RequestContext, Router, Server, ServerConfig, StateKey, Transport,
};
use serde_json::{json, Value};
use tests::peer::Exchange;
use tests::redis::RedisServer;

use crate::support::Peer;

/// Polls this rarely: each step is read with `sync_now`, so the test decides the order.
const NEVER: Duration = Duration::from_secs(3600);

/// A server whose `ask` tool asks for a name (2026-07-28: an MRTR `requestState`).
async fn node(key: StateKey) -> (Server, Peer) {
    let router = Router::new("keyring", "1").tool("ask", "asks a name", |_: NoArgs, cx: RequestContext| async move {
        match cx.input_responses().and_then(|r| r.get("name")) {
            Some(_) => Reply::Complete(CallToolResult::from_text("answered")),
            None => {
                let form = serde_json::from_value(json!({
                    "message": "Name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
                }))
                .unwrap();
                Reply::InputRequired(InputRequired::new().elicit("name", form))
            }
        }
    });
    let server = Server::with_config(router, ServerConfig::default().state_key(key));
    let (side, client) = Transport::memory_pair();
    server.connect(side, ConnectOptions::default()).await.unwrap();
    (server, Peer::new(client))
}

fn meta() -> Value {
    tests::peer::modern_meta(json!({"elicitation": {}}), None)
}

/// A `requestState` sealed by `peer`'s server.
async fn sealed(peer: &mut Peer) -> String {
    let asked = peer.call(1, "tools/call", json!({"_meta": meta(), "name": "ask"})).await;
    asked["result"]["requestState"].as_str().unwrap_or_else(|| panic!("a state: {asked}")).to_owned()
}

/// Whether `peer`'s server opens `state`.
async fn opens(peer: &mut Peer, state: &str) -> bool {
    let answers = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    let params = json!({"_meta": meta(), "name": "ask", "requestState": state, "inputResponses": answers});
    let retry = peer.call(2, "tools/call", params).await;
    retry["result"]["content"][0]["text"] == "answered"
}

#[tokio::test]
async fn a_staged_rotation_waits_for_every_live_node_and_refuses_no_state_in_flight() {
    let redis = RedisServer::start();
    let (key_a, key_b) = (StateKey::random(), StateKey::random());
    let a = RedisKeyring::attach(&redis.url(), "t:", "a", key_a.clone(), NEVER).await.unwrap();
    let b = RedisKeyring::attach(&redis.url(), "t:", "b", key_b.clone(), NEVER).await.unwrap();
    let ((_sa, mut pa), (_sb, mut pb)) = (node(key_a.clone()).await, node(key_b.clone()).await);
    // Before the keyring exists each node has its own key: the other refuses its states.
    let lonely = sealed(&mut pa).await;
    assert!(!opens(&mut pb, &lonely).await);
    assert!(matches!(a.promote().await, Err(KeyringError::Missing(_))));

    assert!(a.initialize(&[1; 32]).await.unwrap());
    assert!(!b.initialize(&[9; 32]).await.unwrap(), "a keyring is written once");
    assert_eq!(b.sync_now().await.unwrap(), 1);
    let before = sealed(&mut pa).await;
    assert!(opens(&mut pb, &before).await, "one key on both nodes");

    // Step 1, then step 2 refused until b has read the stage.
    assert!(matches!(a.promote().await, Err(KeyringError::Lagging { .. }) | Err(KeyringError::NothingStaged)));
    assert_eq!(a.stage(&[2; 32]).await.unwrap(), 2);
    match a.promote().await {
        Err(KeyringError::Lagging { generation, nodes }) => assert_eq!((generation, nodes), (2, vec!["b".to_owned()])),
        other => panic!("promoted past a node that had not read the stage: {other:?}"),
    }
    assert_eq!(b.sync_now().await.unwrap(), 2);
    assert_eq!(a.promote().await.unwrap(), 3);
    // a seals with the new key; b, still at generation 2, has it staged and opens it; a
    // still opens b's states sealed with the old key.
    let during_a = sealed(&mut pa).await;
    let during_b = sealed(&mut pb).await;
    assert!(opens(&mut pb, &during_a).await && opens(&mut pa, &during_b).await);
    assert!(matches!(a.retire().await, Err(KeyringError::Lagging { .. })), "b does not seal with the new key yet");
    assert_eq!(b.sync_now().await.unwrap(), 3);
    assert!(opens(&mut pa, &before).await, "a state from before the rotation, after the promotion");

    // A node that stops stops counting once its acknowledgement expires (3 polls).
    let c = RedisKeyring::attach(&redis.url(), "t:", "c", StateKey::random(), Duration::from_millis(50)).await.unwrap();
    assert_eq!(c.generation(), 3);
    drop(c);
    let mut retired = Err(KeyringError::NothingStaged);
    for _ in 0..100 {
        retired = a.retire().await;
        if retired.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(retired.unwrap(), 4, "c's acknowledgement expired; a and b had both read generation 3");
    b.sync_now().await.unwrap();
    assert_eq!((key_a.keys(), key_b.keys()), (1, 1));
    assert!(!opens(&mut pb, &during_b).await, "the retired key's states are refused");
    assert!(opens(&mut pb, &sealed(&mut pa).await).await);
    pa.close().await;
    pb.close().await;
}

#[tokio::test]
async fn a_node_follows_the_keyring_by_itself_and_keeps_its_keys_through_an_outage() {
    let mut redis = RedisServer::start();
    let key = StateKey::random();
    let admin = RedisKeyring::attach(&redis.url(), "u:", "admin", StateKey::random(), NEVER).await.unwrap();
    let follower = RedisKeyring::attach(&redis.url(), "u:", "f", key.clone(), Duration::from_millis(20)).await.unwrap();
    admin.initialize(&[5; 32]).await.unwrap();
    admin.stage(&[6; 32]).await.unwrap();
    let mut seen = 0;
    for _ in 0..200 {
        seen = follower.generation();
        if seen == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!((seen, key.keys()), (2, 2), "the follower read the stage on its own");
    // Redis gone: a step fails as unavailable; the follower keeps the keys in force.
    redis.kill();
    let failed = tokio::time::timeout(Duration::from_secs(10), admin.promote()).await.expect("no hang");
    assert!(matches!(failed, Err(KeyringError::Unavailable(_))), "{failed:?}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!((follower.generation(), key.keys()), (2, 2));
}
