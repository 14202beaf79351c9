//! Every message the server sends in a representative session validates against the
//! schema of the revision it was sent under, for each of the five revisions.

use crate::schema::check_message;
use crate::support::{modern_meta, Harness, ScriptedPeer};
use arbor_server::ListKind;
use serde_json::{json, Value};
use std::collections::HashMap;

/// A peer that remembers which method each of its request ids was for, and checks every
/// message it receives.
struct Checked<'a> {
    peer: &'a mut ScriptedPeer,
    revision: &'a str,
    methods: HashMap<i64, String>,
    seen: usize,
}

impl Checked<'_> {
    fn send(&mut self, id: i64, method: &str, params: Value) {
        self.methods.insert(id, method.to_owned());
        self.peer.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    async fn recv(&mut self) -> Value {
        let message = self.peer.recv().await;
        let method = message.get("id").and_then(Value::as_i64).filter(|_| message.get("method").is_none());
        let method = method.and_then(|id| self.methods.get(&id)).map(String::as_str);
        check_message(self.revision, &message, method);
        self.seen += 1;
        message
    }

    /// Sends a request and checks everything up to and including its response.
    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(id, method, params);
        loop {
            let message = self.recv().await;
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
        }
    }
}

#[tokio::test]
async fn legacy_sessions_send_only_valid_messages() {
    for revision in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut h = Harness::start().await;
        let elicits = revision >= "2025-06-18";
        let caps = if elicits { json!({"elicitation": {}}) } else { json!({}) };
        let changes = h.changes.clone();
        let mut c = Checked { peer: &mut h.peer, revision, methods: HashMap::new(), seen: 0 };
        let init = c
            .call(
                0,
                "initialize",
                json!({"protocolVersion": revision, "capabilities": caps, "clientInfo": {"name": "v", "version": "1"}}),
            )
            .await;
        assert_eq!(init["result"]["protocolVersion"], revision);
        c.peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        c.call(1, "ping", json!({})).await;
        c.call(2, "tools/list", json!({})).await;
        c.call(3, "tools/call", json!({"name": "echo", "arguments": {"message": "hi"}})).await;
        c.call(4, "tools/call", json!({"_meta": {"progressToken": 4}, "name": "progress"})).await;
        c.call(5, "logging/setLevel", json!({"level": "debug"})).await;
        c.call(6, "tools/call", json!({"name": "log"})).await;
        c.call(7, "resources/read", json!({"uri": "test://a"})).await;
        c.call(8, "resources/subscribe", json!({"uri": "test://a"})).await;
        c.call(9, "tools/frobnicate", json!({})).await;
        c.call(10, "tools/call", json!({"name": "panic"})).await;
        changes.send(ListKind::Tools);
        assert_eq!(c.recv().await["method"], "notifications/tools/list_changed");
        if elicits {
            c.send(11, "tools/call", json!({"name": "ask"}));
            let ask = c.recv().await;
            c.peer.send(
                json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "V"}}}),
            );
            assert_eq!(c.recv().await["id"], 11);
        }
        assert!(c.seen >= 14, "{revision}: {} messages", c.seen);
        h.finish().await;
    }
}

#[tokio::test]
async fn modern_requests_get_only_valid_messages() {
    let mut h = Harness::start().await;
    let mut c = Checked { peer: &mut h.peer, revision: "2026-07-28", methods: HashMap::new(), seen: 0 };
    let meta = modern_meta(json!({"elicitation": {}}));
    c.call(1, "server/discover", json!({"_meta": meta})).await;
    c.call(2, "tools/list", json!({"_meta": meta})).await;
    c.call(3, "tools/call", json!({"_meta": meta, "name": "echo", "arguments": {"message": "hi"}})).await;
    let mut with_token = meta.clone();
    with_token["progressToken"] = json!("t");
    with_token["io.modelcontextprotocol/logLevel"] = json!("debug");
    c.call(4, "tools/call", json!({"_meta": with_token, "name": "progress"})).await;
    c.call(5, "tools/call", json!({"_meta": with_token, "name": "log"})).await;
    c.call(6, "resources/read", json!({"_meta": meta, "uri": "test://a"})).await;
    let asked = c.call(7, "tools/call", json!({"_meta": meta, "name": "ask"})).await;
    let state = asked["result"]["requestState"].clone();
    let params = json!({"_meta": meta, "name": "ask", "requestState": state, "inputResponses": {"name": {"action": "accept", "content": {"name": "M"}}}});
    c.call(8, "tools/call", params).await;
    c.call(9, "ping", json!({"_meta": meta})).await;
    c.call(10, "tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}})).await;
    assert!(c.seen >= 13, "{} messages", c.seen);
    h.finish().await;
}

#[test]
fn the_oracle_rejects_what_the_spec_rejects() {
    let missing_result_type = json!({"content": []});
    let verdict =
        std::panic::catch_unwind(|| crate::schema::assert_valid("2026-07-28", "CallToolResult", &missing_result_type));
    assert!(verdict.is_err(), "a 2026-07-28 result without resultType must be rejected");
    crate::schema::assert_valid("2025-06-18", "CallToolResult", &missing_result_type);
}
