use crate::support::Harness;
use arbor_server::ListKind;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn initialize_echoes_a_supported_version_and_refuses_a_second_one() {
    let mut h = Harness::start().await;
    let result = h.peer.initialize("2025-06-18", json!({})).await;
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(result["serverInfo"]["name"], "arbor-test");
    assert_eq!(result["instructions"], "test server");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    assert!(result.get("resultType").is_none(), "{result}");
    let again = h
        .peer
        .call(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        )
        .await;
    assert_eq!(again["error"]["code"], -32600);
    h.finish().await;
}

#[tokio::test]
async fn an_unknown_version_is_answered_with_the_newest_legacy_one() {
    let mut h = Harness::start().await;
    let result = h.peer.initialize("1999-01-01", json!({})).await;
    assert_eq!(result["protocolVersion"], "2025-11-25");
    h.finish().await;
}

#[tokio::test]
async fn requests_before_initialize_are_refused_but_ping_is_answered() {
    let mut h = Harness::start().await;
    let pong = h.peer.call(1, "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
    let refused = h.peer.call(2, "tools/list", json!({})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    h.peer.initialize("2025-11-25", json!({})).await;
    let listed = h.peer.call(3, "tools/list", json!({})).await;
    assert_eq!(listed["result"]["tools"][0]["name"], "echo");
    assert!(listed["result"].get("resultType").is_none());
    assert!(listed["result"].get("ttlMs").is_none());
    h.finish().await;
}

#[tokio::test]
async fn legacy_methods_work_and_features_follow_the_negotiated_revision() {
    let mut h = Harness::start().await;
    h.peer.initialize("2024-11-05", json!({})).await;
    assert_eq!(h.peer.call(1, "ping", json!({})).await["result"], json!({}));
    assert_eq!(h.peer.call(2, "logging/setLevel", json!({"level": "error"})).await["result"], json!({}));
    let sub = h.peer.call(3, "resources/subscribe", json!({"uri": "test://a"})).await;
    assert_eq!(sub["result"], json!({}), "{sub}");
    // Modern-only methods do not exist in a legacy session.
    assert_eq!(h.peer.call(4, "server/discover", json!({})).await["error"]["code"], -32601);
    assert_eq!(h.peer.call(5, "subscriptions/listen", json!({"notifications": {}})).await["error"]["code"], -32601);
    h.finish().await;
}

#[tokio::test]
async fn list_changes_reach_initialized_legacy_sessions() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-06-18", json!({})).await;
    // Make sure `initialized` was processed before the change fires.
    h.peer.call(1, "ping", json!({})).await;
    h.changes.send(ListKind::Tools);
    let note = h.peer.recv().await;
    assert_eq!(note["method"], "notifications/tools/list_changed");
    // Prompts did not advertise listChanged: nothing is sent.
    h.changes.send(ListKind::Prompts);
    h.peer.expect_silence(Duration::from_millis(50)).await;
    h.finish().await;
}
