use crate::support::{modern_meta, Harness};
use serde_json::json;

#[tokio::test]
async fn progress_goes_out_for_the_requests_token_before_the_response() {
    let mut h = Harness::start().await;
    h.peer.initialize("2024-11-05", json!({})).await;
    h.peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": {"progressToken": "p1"}, "name": "progress"}}));
    let first = h.peer.recv().await;
    assert_eq!(first["method"], "notifications/progress");
    assert_eq!(first["params"]["progressToken"], "p1");
    assert_eq!(first["params"]["progress"], 1);
    // 2024-11-05 has no progress message.
    assert!(first["params"].get("message").is_none(), "{first}");
    let second = h.peer.recv().await;
    assert_eq!(second["params"]["progress"], 2);
    assert_eq!(h.peer.recv().await["id"], 1);
    // Without a token, no progress.
    let quiet = h.peer.recv_response_after(2, "tools/call", json!({"name": "progress"})).await;
    assert_eq!(quiet, 0);
    h.finish().await;
}

#[tokio::test]
async fn legacy_logs_follow_set_level() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-11-25", json!({})).await;
    // The default level is info: the debug line is filtered.
    assert_eq!(h.peer.recv_response_after(1, "tools/call", json!({"name": "log"})).await, 1);
    h.peer.call(2, "logging/setLevel", json!({"level": "debug"})).await;
    assert_eq!(h.peer.recv_response_after(3, "tools/call", json!({"name": "log"})).await, 2);
    h.finish().await;
}

#[tokio::test]
async fn modern_logs_only_go_to_requests_that_carry_a_level() {
    let mut h = Harness::start().await;
    let quiet =
        h.peer.recv_response_after(1, "tools/call", json!({"_meta": modern_meta(json!({})), "name": "log"})).await;
    assert_eq!(quiet, 0);
    let mut meta = modern_meta(json!({}));
    meta["io.modelcontextprotocol/logLevel"] = json!("warning");
    h.peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"_meta": meta, "name": "log"}}));
    let log = h.peer.recv().await;
    assert_eq!(log["method"], "notifications/message");
    assert_eq!(log["params"]["level"], "warning");
    assert_eq!(log["params"]["data"], "warning line");
    assert_eq!(h.peer.recv().await["id"], 2);
    h.finish().await;
}
