use crate::support::Harness;
use arbor_server::ServerConfig;
use serde_json::json;
use std::time::Duration;

#[tokio::test(start_paused = true)]
async fn a_hung_handler_is_stopped_at_the_default_deadline() {
    let mut h = Harness::with_config(ServerConfig::default().default_deadline(Duration::from_secs(5))).await;
    h.peer.initialize("2025-11-25", json!({})).await;
    let started = tokio::time::Instant::now();
    let timed_out = h.peer.call(1, "tools/call", json!({"name": "hang"})).await;
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert_eq!(timed_out["error"]["code"], -32603, "{timed_out}");
    assert!(timed_out["error"]["message"].as_str().unwrap().contains("timed out"));
    assert_eq!(timed_out["error"]["data"]["timeoutMs"], 5000);
    // Only the session's `list_changed` stream is left.
    assert_eq!(h.gauge.alive_tasks(), 1);
    h.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_tool_can_override_the_deadline() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-11-25", json!({})).await;
    let started = tokio::time::Instant::now();
    let timed_out = h.peer.call(1, "tools/call", json!({"name": "hang_briefly"})).await;
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    assert_eq!(timed_out["error"]["data"]["timeoutMs"], 1000);
    h.finish().await;
}
