use crate::support::Harness;
use serde_json::json;

#[tokio::test]
async fn a_2025_03_26_batch_gets_one_array_with_a_response_per_request() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-03-26", json!({})).await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "b"}}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/frobnicate"},
    ]);
    h.peer.send(batch);
    let answer = h.peer.recv().await;
    let responses = answer.as_array().expect("one array");
    assert_eq!(responses.len(), 3, "{answer}");
    crate::schema::assert_valid("2025-03-26", "JSONRPCBatchResponse", &answer);
    let by_id = |id: i64| responses.iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(by_id(1)["result"], json!({}));
    assert_eq!(by_id(2)["result"]["content"][0]["text"], "b");
    assert_eq!(by_id(3)["error"]["code"], -32601);
    // Not a batch: answered on its own.
    assert_eq!(h.peer.call(4, "ping", json!({})).await["result"], json!({}));
    h.finish().await;
}

#[tokio::test]
async fn batches_are_refused_where_the_revision_has_none() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-06-18", json!({})).await;
    h.peer.send(json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]));
    let refused = h.peer.recv().await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    h.finish().await;
}
