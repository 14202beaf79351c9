//! The server's drain over a byte stream, on tokio's paused clock: `Server::end_listens`
//! ends an open listen with its complete result (and, on stdio, `notifications/cancelled`
//! for it); `Server::start_drain` lets a request finish within the deadline with its own
//! result and answers one still running at the deadline once, with the drain's -32603,
//! from its own task; `in_flight` counts them down to zero and nothing else is sent.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use crate::support::{modern_meta, Harness};

fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

#[tokio::test(start_paused = true)]
async fn a_drain_ends_listens_first_then_answers_each_running_request_once() {
    let mut h = Harness::start().await;
    // A 2026-07-28 listen on the byte stream, acknowledged.
    let params = json!({"_meta": modern_meta(json!({})), "notifications": {"toolsListChanged": true}});
    h.peer.send(json!({"jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen", "params": params}));
    let ack = h.peer.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");

    let meta = modern_meta(json!({}));
    let modern = |id: i64, name: &str, arguments: Value| {
        let mut message = call(id, name, arguments);
        message["params"]["_meta"] = meta.clone();
        message
    };
    h.peer.send(modern(1, "hang", json!({})));
    h.peer.send(modern(2, "sleep", json!({"ms": 1000})));
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(h.server.in_flight().await, 2);
    assert!(h.server.is_live());

    let started = Instant::now();
    h.server.start_drain(Duration::from_secs(3));
    let result = h.peer.recv().await;
    assert_eq!((result["id"].clone(), result["result"]["resultType"].clone()), (json!("l"), json!("complete")));
    let cancelled = h.peer.recv().await;
    assert_eq!(cancelled["method"], "notifications/cancelled", "{cancelled}");
    assert_eq!(cancelled["params"]["requestId"], "l", "{cancelled}");
    assert!(Instant::now() < started + Duration::from_millis(10), "the listen ended when the drain began");

    let slept = h.peer.recv_response().await;
    assert_eq!((slept["id"].clone(), slept["result"]["content"][0]["text"].clone()), (json!(2), json!("slept")));
    let stopped = h.peer.recv_response().await;
    assert_eq!(Instant::now(), started + Duration::from_secs(3), "at the deadline");
    assert_eq!(stopped["id"], 1, "{stopped}");
    assert_eq!(stopped["error"]["code"], -32603, "{stopped}");
    assert_eq!(stopped["error"]["data"], json!({"reason": "drain", "drainTimeoutMs": 3000}), "{stopped}");
    assert!(h.server.requests_stopped());
    assert_eq!(h.server.in_flight().await, 0);
    h.peer.expect_silence(Duration::from_secs(5)).await;
    h.finish().await;
}
