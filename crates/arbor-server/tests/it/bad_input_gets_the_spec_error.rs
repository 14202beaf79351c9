use crate::support::Harness;
use arbor_server::ServerConfig;
use serde_json::json;

#[tokio::test]
async fn malformed_frames_get_parse_or_invalid_request_errors_and_the_connection_carries_on() {
    let mut h = Harness::with_config(ServerConfig::default()).await;
    h.peer.send_raw("{not json");
    let parse = h.peer.recv().await;
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert!(parse.get("id").is_none());
    h.peer.send_raw(r#"{"id": 4, "method": "ping"}"#);
    let invalid = h.peer.recv().await;
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    assert_eq!(invalid["id"], 4);
    h.peer.initialize("2025-11-25", json!({})).await;
    assert_eq!(h.peer.call(1, "ping", json!({})).await["result"], json!({}));
    h.finish().await;
}

#[tokio::test]
async fn unknown_methods_and_invalid_params_get_their_codes_with_the_id() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-11-25", json!({})).await;
    let unknown = h.peer.call(1, "tools/frobnicate", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
    let invalid = h.peer.call(2, "tools/call", json!({"arguments": {}})).await;
    assert_eq!(invalid["error"]["code"], -32602);
    let unknown_tool = h.peer.call(3, "tools/call", json!({"name": "nope"})).await;
    assert_eq!(unknown_tool["error"]["code"], -32602);
    // Unknown notifications are never answered.
    h.peer.send(json!({"jsonrpc": "2.0", "method": "notifications/whatever"}));
    assert_eq!(h.peer.call(4, "ping", json!({})).await["id"], 4);
    h.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_duplicate_in_flight_id_is_refused_and_the_original_carries_on() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-11-25", json!({})).await;
    h.peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "sleep", "arguments": {"ms": 100}}}));
    h.peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "dup"}}}));
    let duplicate = h.peer.recv_response().await;
    assert_eq!(duplicate["error"]["code"], -32600, "{duplicate}");
    let original = h.peer.recv_response().await;
    assert_eq!(original["result"]["content"][0]["text"], "slept");
    // Once answered, the id may be used again.
    let reused = h.peer.call(1, "tools/call", json!({"name": "echo", "arguments": {"message": "again"}})).await;
    assert_eq!(reused["result"]["content"][0]["text"], "again");
    h.finish().await;
}

#[tokio::test]
async fn a_frame_over_the_cap_is_refused_and_the_next_one_is_served() {
    let gauge = arbor_otp::Gauge::new();
    let server = arbor_server::Server::with_config(
        crate::support::TestHandler::new(),
        ServerConfig::default().gauge(gauge.clone()),
    );
    let (server_side, client_side) = arbor_server::Transport::memory_pair();
    let connection =
        server.connect(server_side.with_max_frame_bytes(256), arbor_server::ConnectOptions::default()).await.unwrap();
    let mut peer = crate::support::ScriptedPeer::new(client_side);
    let pad = "x".repeat(1000);
    // The id comes before the params: the refusal carries it.
    peer.send_raw(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"id":9,"pad":"{pad}"}}}}"#));
    let refused = peer.recv().await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(refused["id"], 1, "{refused}");
    // After short params, still in the first bytes: found too.
    peer.send_raw(&format!(r#"{{"jsonrpc":"2.0","method":"ping","params":{{"id":9}},"id":"s","pad":"{pad}"}}"#));
    assert_eq!(peer.recv().await["id"], "s");
    // After long params, past what is kept: no id rather than a guess.
    let long = "y".repeat(8192);
    peer.send_raw(&format!(r#"{{"jsonrpc":"2.0","method":"ping","params":{{"id":9,"pad":"{long}"}},"id":3}}"#));
    let refused = peer.recv().await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(refused.get("id").is_none(), "{refused}");
    assert_eq!(peer.call(2, "ping", json!({})).await["result"], json!({}));
    peer.close().await;
    connection.closed().await;
    server.shutdown().await;
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
}

#[tokio::test]
async fn garbage_of_every_shape_never_breaks_the_connection() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-03-26", json!({})).await;
    // A cheap deterministic generator: no dependency, same bytes on every run.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let pieces = [
        "{",
        "}",
        "[",
        "]",
        "\"jsonrpc\"",
        "\"2.0\"",
        "\"id\"",
        "\"method\"",
        "\"params\"",
        "\"tools/call\"",
        "\"ping\"",
        ":",
        ",",
        "1",
        "null",
        "\"_meta\"",
        "\"name\"",
        "{}",
        "[]",
        "\"\\u0000\"",
        "é",
        "-1e999",
        "\"notifications/cancelled\"",
        "\"result\"",
        "\"error\"",
    ];
    for _ in 0..300 {
        let len = (next() % 24) as usize;
        let line: String = (0..len).map(|_| pieces[(next() % pieces.len() as u64) as usize]).collect();
        if !line.trim().is_empty() {
            h.peer.send_raw(&line);
        }
    }
    h.peer.send(json!({"jsonrpc": "2.0", "id": "last", "method": "ping"}));
    // Whatever the garbage was answered with, the ping still gets its answer.
    loop {
        let message = h.peer.recv().await;
        if message.get("id") == Some(&json!("last")) {
            assert_eq!(message["result"], json!({}));
            break;
        }
    }
    assert!(h.connection.is_open());
    h.finish().await;
}
