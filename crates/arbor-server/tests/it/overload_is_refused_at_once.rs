use crate::support::Harness;
use arbor_server::{ConnectOptions, ServerConfig};
use serde_json::json;

fn hang(id: i64) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "hang"}})
}

#[tokio::test(start_paused = true)]
async fn requests_beyond_the_connection_bound_are_refused_with_a_retry_hint() {
    let mut h = Harness::with_config(ServerConfig::default().max_in_flight_per_connection(2)).await;
    h.peer.initialize("2025-11-25", json!({})).await;
    h.peer.send(hang(1));
    h.peer.send(hang(2));
    h.peer.send(hang(3));
    let refused = h.peer.recv_response().await;
    assert_eq!(refused["id"], 3);
    assert_eq!(refused["error"]["code"], -32000);
    assert_eq!(refused["error"]["data"]["scope"], "connection");
    assert!(refused["error"]["data"]["retryAfterMs"].as_u64().unwrap() > 0);
    // Housekeeping is not a request task and is still answered.
    assert_eq!(h.peer.call(4, "ping", json!({})).await["result"], json!({}));
    h.finish().await;
}

#[tokio::test(start_paused = true)]
async fn the_tenant_bound_is_shared_by_its_connections() {
    let mut h = Harness::with_config(ServerConfig::default().max_in_flight_per_tenant(1)).await;
    let (other, mut other_peer) = h.connect(ConnectOptions::default()).await;
    let (third, mut elsewhere) = h.connect(ConnectOptions::tenant("other")).await;
    for peer in [&mut h.peer, &mut other_peer, &mut elsewhere] {
        peer.initialize("2025-11-25", json!({})).await;
    }
    h.peer.send(hang(1));
    h.peer.call(2, "ping", json!({})).await;
    let refused = other_peer.call(1, "tools/call", json!({"name": "echo", "arguments": {"message": "x"}})).await;
    assert_eq!(refused["error"]["code"], -32000);
    assert_eq!(refused["error"]["data"]["scope"], "tenant");
    // Another tenant has its own bound.
    let served = elsewhere.call(1, "tools/call", json!({"name": "echo", "arguments": {"message": "x"}})).await;
    assert_eq!(served["result"]["content"][0]["text"], "x");
    for (peer, conn) in [(other_peer, other), (elsewhere, third)] {
        peer.close().await;
        conn.closed().await;
    }
    h.finish().await;
}
