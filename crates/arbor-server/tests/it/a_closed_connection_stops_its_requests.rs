use crate::support::{Harness, TestHandler};
use arbor_otp::Gauge;
use arbor_server::{ConnectOptions, Server, ServerConfig, Transport};
use serde_json::json;

#[tokio::test(start_paused = true)]
async fn closing_a_connection_stops_its_requests_unanswered_and_ends_its_output() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-11-25", json!({})).await;
    h.peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hang"}}));
    h.peer.call(2, "ping", json!({})).await;
    // The request, and the session's `list_changed` stream.
    assert_eq!(h.gauge.alive_tasks(), 2);
    h.connection.close();
    h.connection.closed().await;
    assert!(!h.connection.is_open());
    assert_eq!(h.gauge.alive_tasks(), 0);
    // Nothing came for the hung request; the stream simply ended.
    h.peer.expect_end().await;
    h.finish().await;
}

#[tokio::test]
async fn a_peer_that_goes_away_ends_its_connection() {
    let gauge = Gauge::new();
    let server = Server::with_config(TestHandler::new(), ServerConfig::default().gauge(gauge.clone()));
    let (server_side, client_side) = Transport::memory_pair();
    let connection = server.connect(server_side, ConnectOptions::default()).await.unwrap();
    // The client drops both ends without a word.
    drop(client_side);
    connection.closed().await;
    server.shutdown().await;
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
}
