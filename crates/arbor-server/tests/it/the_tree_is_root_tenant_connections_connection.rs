use crate::support::Harness;
use arbor_server::ConnectOptions;
use serde_json::json;

#[tokio::test]
async fn connections_live_under_their_tenant_and_leave_when_they_close() {
    let mut h = Harness::start().await;
    let (other, other_peer) = h.connect(ConnectOptions::tenant("acme")).await;
    h.peer.initialize("2025-11-25", json!({})).await;
    let tree = h.server.snapshot().await.expect("running").to_json();
    let text = tree.to_string();
    for name in ["tasks", "tenant:default", "tenant:acme", "connections"] {
        assert!(text.contains(name), "{name} missing from {tree:#}");
    }
    // root and its tasks-extension task supervisor + two tenants + two connection
    // supervisors + two connections (their request and subscription task supervisors are
    // owned by the connection actor, not actors of their own)
    assert_eq!(h.gauge.alive_actors(), 8, "{tree:#}");
    other_peer.close().await;
    other.closed().await;
    assert_eq!(h.gauge.alive_actors(), 7);
    h.finish().await;
}
