use crate::support::{modern_meta, Harness};
use serde_json::json;

#[tokio::test]
async fn a_panicking_handler_costs_its_request_an_internal_error_only() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-11-25", json!({})).await;
    let failed = h.peer.call(1, "tools/call", json!({"name": "panic"})).await;
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert!(!failed["error"]["message"].as_str().unwrap().contains("the tool broke"));
    let fine = h.peer.call(2, "tools/call", json!({"name": "echo", "arguments": {"message": "still here"}})).await;
    assert_eq!(fine["result"]["content"][0]["text"], "still here");
    let modern = h.peer.call(3, "tools/call", json!({"_meta": modern_meta(json!({})), "name": "panic"})).await;
    assert_eq!(modern["error"]["code"], -32603);
    assert!(h.connection.is_open());
    h.finish().await;
}
