use crate::support::{modern_meta, Harness};
use serde_json::{json, Value};

#[tokio::test]
async fn modern_input_required_round_trips_through_sealed_request_state() {
    let mut h = Harness::start().await;
    let meta = modern_meta(json!({"elicitation": {}}));
    let first = h.peer.call(1, "tools/call", json!({"_meta": meta, "name": "ask"})).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(result["inputRequests"]["name"]["method"], "elicitation/create");
    let state = result["requestState"].as_str().expect("a sealed state").to_owned();
    let retry = h
        .peer
        .call(
            2,
            "tools/call",
            json!({
                "_meta": meta,
                "name": "ask",
                "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}},
                "requestState": state,
            }),
        )
        .await;
    assert_eq!(retry["result"]["resultType"], "complete", "{retry}");
    assert_eq!(retry["result"]["content"][0]["text"], "hello Ada ({\"round\":1})");
    // A tampered state is refused.
    let mut forged = state.clone();
    forged.replace_range(forged.len() - 2.., "AA");
    let tampered = h
        .peer
        .call(3, "tools/call", json!({"_meta": meta, "name": "ask", "inputResponses": {}, "requestState": forged}))
        .await;
    assert_eq!(tampered["error"]["code"], -32602, "{tampered}");
    h.finish().await;
}

/// Answers given for one set of arguments are refused on a retry with others, for tools
/// and prompts alike, although neither handler keeps its arguments in its state; a retry
/// that only re-serialises the arguments in another member order is served.
#[tokio::test]
async fn modern_answers_are_bound_to_the_arguments_they_were_given_for() {
    let mut h = Harness::start().await;
    let meta = modern_meta(json!({"elicitation": {}}));
    let answer = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    let cases = [
        (
            "tools/call",
            "ask",
            json!({"path": "A", "opts": {"x": 1, "y": 2}}),
            json!({"path": "B", "opts": {"x": 1, "y": 2}}),
            json!({"opts": {"y": 2, "x": 1}, "path": "A"}),
            answer,
        ),
        (
            "prompts/get",
            "confirm",
            json!({"target": "A", "mode": "hard"}),
            json!({"target": "B", "mode": "hard"}),
            json!({"mode": "hard", "target": "A"}),
            json!({"confirm": {"action": "accept", "content": {"ok": true}}}),
        ),
    ];
    let mut id = 0;
    for (method, name, first, other, reordered, answers) in cases {
        id += 1;
        let asked = h.peer.call(id, method, json!({"_meta": meta, "name": name, "arguments": first})).await;
        assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
        let state = asked["result"]["requestState"].clone();
        let retry = |arguments: &Value| json!({"_meta": meta, "name": name, "arguments": arguments, "requestState": state, "inputResponses": answers});
        id += 1;
        let replayed = h.peer.call(id, method, retry(&other)).await;
        assert_eq!(replayed["error"]["code"], -32602, "{method}: {replayed}");
        assert_eq!(replayed["error"]["message"], "Invalid requestState: it was issued for other arguments");
        id += 1;
        let served = h.peer.call(id, method, retry(&reordered)).await;
        assert_eq!(served["result"]["resultType"], "complete", "{method}: {served}");
    }
    h.finish().await;
}

/// A handler that says a tool never asks for input keeps no copy of its arguments; if the
/// tool asks all the same, the call is answered -32603 at once instead of a state that its
/// retry could never open, and the connection carries on.
#[tokio::test]
async fn a_tool_that_asks_after_saying_it_never_does_is_answered_an_internal_error() {
    let mut h = Harness::start().await;
    let meta = modern_meta(json!({"elicitation": {}}));
    let params = |name: &str| json!({"_meta": meta, "name": name, "arguments": {"path": "A"}});
    let refused = h.peer.call(1, "tools/call", params("ask_unannounced")).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("ask_unannounced") && message.contains("tool_asks_input"), "{message}");
    let asked = h.peer.call(2, "tools/call", params("ask")).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    h.finish().await;
}

#[tokio::test]
async fn modern_input_for_an_undeclared_capability_is_refused() {
    let mut h = Harness::start().await;
    // Capabilities are read from each request, never carried over from an earlier one.
    let declared =
        h.peer.call(0, "tools/call", json!({"_meta": modern_meta(json!({"elicitation": {}})), "name": "ask"})).await;
    assert_eq!(declared["result"]["resultType"], "input_required");
    let refused = h.peer.call(1, "tools/call", json!({"_meta": modern_meta(json!({})), "name": "ask"})).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    h.finish().await;
}

#[tokio::test]
async fn legacy_input_is_asked_with_a_server_to_client_request() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-06-18", json!({"elicitation": {}})).await;
    h.peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}}));
    let ask = h.peer.recv().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "What is your name?");
    let ask_id = ask["id"].clone();
    h.peer.send(json!({"jsonrpc": "2.0", "id": ask_id, "result": {"action": "accept", "content": {"name": "Grace"}}}));
    let done = h.peer.recv().await;
    assert_eq!(done["id"], 1);
    assert_eq!(done["result"]["content"][0]["text"], "hello Grace ({\"round\":1})", "{done}");
    h.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_legacy_input_request_left_unanswered_is_cancelled_with_its_request() {
    let config = arbor_server::ServerConfig::default().default_deadline(std::time::Duration::from_secs(5));
    let mut h = Harness::with_config(config).await;
    h.peer.initialize("2025-11-25", json!({"elicitation": {}})).await;
    h.peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}}));
    let ask = h.peer.recv().await;
    assert_eq!(ask["method"], "elicitation/create");
    // The client never answers; at the deadline both the request and the question end.
    let (a, b) = (h.peer.recv().await, h.peer.recv().await);
    let (timeout, cancel) = if a.get("id").is_some() { (a, b) } else { (b, a) };
    assert_eq!(timeout["id"], 1);
    assert_eq!(timeout["error"]["data"]["reason"], "timeout");
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], ask["id"]);
    // A late answer is ignored.
    h.peer.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}}));
    assert_eq!(h.peer.call(2, "ping", json!({})).await["result"], json!({}));
    h.finish().await;
}

/// Two nodes sharing a key, rotated in stages while states are in flight: a state sealed
/// on one node before, during or after the rotation opens on the other, until the old key
/// is retired everywhere.
#[tokio::test]
async fn a_staged_key_rotation_refuses_no_request_state_in_flight_across_nodes() {
    let (old, new) = ([3u8; 32], [4u8; 32]);
    let config =
        |bytes: &[u8]| arbor_server::ServerConfig::default().state_key(arbor_server::StateKey::from_bytes(bytes));
    let (mut a, mut b) = (Harness::with_config(config(&old)).await, Harness::with_config(config(&old)).await);
    let (key_a, key_b) = (a.server.config().state_key.clone(), b.server.config().state_key.clone());
    let meta = modern_meta(json!({"elicitation": {}}));
    let answer = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    let mut id = 0;
    let mut ask = async |h: &mut Harness| {
        id += 1;
        let first = h.peer.call(id, "tools/call", json!({"_meta": meta, "name": "ask"})).await;
        first["result"]["requestState"].as_str().expect("a sealed state").to_owned()
    };
    let before = ask(&mut a).await;
    key_a.stage(&new);
    key_b.stage(&new);
    key_a.promote(); // A seals with the new key; B still with the old one
    let during_a = ask(&mut a).await;
    let during_b = ask(&mut b).await;
    key_b.promote();
    let after = ask(&mut b).await;
    let retry = async |h: &mut Harness, state: &str, id: i64| {
        let params = json!({"_meta": meta, "name": "ask", "inputResponses": answer, "requestState": state});
        h.peer.call(id, "tools/call", params).await
    };
    // Each state opens on the other node.
    for (n, (on_b, state)) in
        [(true, &before), (true, &during_a), (false, &during_b), (false, &after)].into_iter().enumerate()
    {
        let h = if on_b { &mut b } else { &mut a };
        let done = retry(h, state, 100 + n as i64).await;
        assert_eq!(done["result"]["content"][0]["text"], "hello Ada ({\"round\":1})", "state {n}: {done}");
    }
    // Once the old key is retired, its states are refused; the new key's open.
    key_a.retire();
    let refused = retry(&mut a, &during_b, 200).await;
    assert_eq!(refused["error"]["message"], "Invalid requestState: it is malformed or was not issued by this server");
    assert_eq!(retry(&mut a, &after, 201).await["result"]["resultType"], "complete");
    a.finish().await;
    b.finish().await;
}
