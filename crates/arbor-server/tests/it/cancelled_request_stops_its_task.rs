use crate::support::Harness;
use arbor_server::ConnectOptions;
use serde_json::json;
use std::time::Duration;

fn cancel(id: i64) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "test"}})
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_request_is_never_answered_and_its_task_stops() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-11-25", json!({})).await;
    h.peer.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "hang"}}));
    // Let the request start before it is cancelled.
    assert_eq!(h.peer.call(8, "ping", json!({})).await["result"], json!({}));
    // The request, and the session's `list_changed` stream.
    assert_eq!(h.gauge.alive_tasks(), 2);
    h.peer.send(cancel(7));
    // The next answer is the ping's, and nothing ever comes for 7.
    assert_eq!(h.peer.call(9, "ping", json!({})).await["id"], 9);
    h.peer.expect_silence(Duration::from_secs(120)).await;
    assert_eq!(h.gauge.alive_tasks(), 1);
    h.finish().await;
}

#[tokio::test]
async fn cancels_for_unknown_or_finished_ids_are_ignored() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-11-25", json!({})).await;
    h.peer.send(cancel(12345));
    let echoed = h.peer.call(1, "tools/call", json!({"name": "echo", "arguments": {"message": "a"}})).await;
    assert_eq!(echoed["result"]["content"][0]["text"], "a");
    h.peer.send(cancel(1));
    assert_eq!(h.peer.call(2, "ping", json!({})).await["result"], json!({}));
    h.finish().await;
}

#[tokio::test(start_paused = true)]
async fn one_connection_cannot_cancel_another_connections_request() {
    let mut h = Harness::start().await;
    let (other, mut other_peer) = h.connect(ConnectOptions::default()).await;
    h.peer.initialize("2025-11-25", json!({})).await;
    other_peer.initialize("2025-11-25", json!({})).await;
    other_peer.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "sleep", "arguments": {"ms": 1000}}}));
    other_peer.call(6, "ping", json!({})).await;
    // Same id, other connection.
    h.peer.send(cancel(5));
    let answer = other_peer.recv_response().await;
    assert_eq!(answer["id"], 5);
    assert_eq!(answer["result"]["content"][0]["text"], "slept");
    other_peer.close().await;
    other.closed().await;
    h.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_handlers_cancellation_token_is_cancelled_by_the_clients_cancel_and_not_by_an_answer() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-11-25", json!({})).await;

    // Cancelled by the client: the token the handler got, and its context, see the stop.
    h.peer.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "token", "arguments": {"hang": true}}}));
    let (stopped, cx) = h.contexts.recv().await.unwrap();
    assert!(!stopped.is_cancelled() && !cx.is_cancelled(), "running, not cancelled");
    h.peer.send(cancel(7));
    stopped.cancelled().await;
    cx.cancelled().await;
    assert!(cx.is_cancelled());
    assert!(cx.cancellation_token().is_cancelled(), "a token taken after the stop is cancelled too");
    assert_eq!(h.peer.call(8, "ping", json!({})).await["id"], 8);
    h.peer.expect_silence(Duration::from_secs(120)).await;

    // Answered normally: the token is not cancelled, then or after the connection closes.
    let answered = h.peer.call(9, "tools/call", json!({"name": "token", "arguments": {}})).await;
    assert_eq!(answered["result"]["content"][0]["text"], "answered");
    let (finished, cx) = h.contexts.recv().await.unwrap();
    assert!(!finished.is_cancelled() && !cx.is_cancelled(), "an answered request is not cancelled");
    // A handler cancelling its own token stops only what it gave the token to.
    let mine = cx.cancellation_token();
    mine.cancel();
    assert!(!cx.is_cancelled() && !cx.cancellation_token().is_cancelled());
    drop((cx, stopped));
    h.finish().await;
    assert!(!finished.is_cancelled(), "not cancelled by the shutdown after the answer");
}
