//! The demo server's `slow_count` over real stdio pipes: progress for the request's token,
//! nothing more once the client cancels, the connection carries on, and the process exits
//! cleanly when stdin closes.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{only_text, Peer};

#[tokio::test]
async fn slow_count_reports_progress_and_a_cancel_stops_it() {
    let mut peer = Peer::spawn("demo_server");
    let init = peer.initialize("2025-06-18", json!({})).await;
    assert_eq!(init["serverInfo"]["name"], "arbor-demo", "{init}");

    peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "slow_count", "arguments": {"to": 100, "interval_ms": 20}, "_meta": {"progressToken": "count"}}}))
        .await;
    for expected in 1..=2 {
        let note = peer.recv().await;
        assert_eq!(note["method"], "notifications/progress", "{note}");
        assert_eq!(note["params"]["progressToken"], "count");
        assert_eq!(note["params"]["progress"].as_f64(), Some(expected as f64));
        assert_eq!(note["params"]["total"].as_f64(), Some(100.0));
    }
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})).await;

    // Progress already on its way may still arrive; a response never does, and the stream
    // goes quiet well before the count could have finished (100 × 20 ms).
    let quiet_by = Instant::now() + Duration::from_millis(500);
    while let Some(message) = peer.recv_within(quiet_by.saturating_duration_since(Instant::now())).await {
        assert!(message.get("id").is_none(), "a cancelled request was answered: {message}");
    }
    assert!(peer.recv_within(Duration::from_millis(300)).await.is_none(), "progress went on after the cancel");

    let echoed = peer.call(2, "tools/call", json!({"name": "echo", "arguments": {"message": "still here"}})).await;
    assert_eq!(only_text(&echoed), "still here");
    let started = Instant::now();
    assert!(peer.close().await.success());
    assert!(started.elapsed() < Duration::from_secs(2), "exit took {:?}", started.elapsed());
}

#[tokio::test]
async fn an_unknown_flag_or_a_bad_port_is_refused_with_status_2() {
    for args in [&["--port", "http"][..], &["--port"][..], &["--bind", "3000"][..], &["--bogus"][..]] {
        let output = std::process::Command::new(crate::support::example("demo_server"))
            .args(args)
            .output()
            .expect("running demo_server");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "stdout is the protocol channel");
        assert!(!output.stderr.is_empty());
    }
}
