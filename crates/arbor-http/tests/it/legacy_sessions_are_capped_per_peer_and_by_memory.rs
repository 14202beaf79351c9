//! The legacy session caps: one peer holds at most `max_sessions_per_peer` sessions of
//! both legacy transports together, the server at most `min(max_sessions, memory budget /
//! 16 KiB)`; past either `initialize` (or `GET /sse`) is 503 with `Retry-After` and a
//! -32000 naming the limit, and a session leaving (DELETE, reaping, the end of a
//! 2024-11-05 stream) gives its slot back exactly once.

use std::time::Duration;

use arbor_http::HttpConfig;
use serde_json::{json, Value};

use crate::support::{serve, until, Served};

/// `initialize` without a session: the response.
async fn initialize(s: &Served) -> reqwest::Response {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    s.post(&init, &[]).send().await.unwrap()
}

/// A 503 naming `scope`, with a `Retry-After` in seconds.
async fn assert_refused(response: reqwest::Response, scope: &str, limit: usize) {
    assert_eq!(response.status(), 503);
    let retry = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    assert!(retry.is_some_and(|secs| secs >= 1), "{:?}", response.headers());
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32000, "{body}");
    assert_eq!(body["error"]["data"]["scope"], scope, "{body}");
    assert_eq!(body["error"]["data"]["limit"], limit, "{body}");
}

fn session_of(response: &reqwest::Response) -> String {
    assert_eq!(response.status(), 200);
    response.headers()["mcp-session-id"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn both_legacy_transports_share_the_per_peer_cap() {
    let s = serve(HttpConfig { legacy_sse: true, max_sessions_per_peer: 2, ..HttpConfig::default() }).await;
    let streamable = session_of(&initialize(&s).await);
    let sse_url = format!("{}/sse", s.base);
    let open_sse = || s.client.get(&sse_url).header("accept", "text/event-stream").send();
    let held = open_sse().await.unwrap();
    assert_eq!(held.status(), 200);
    until("the 2024-11-05 session registered", || s.http.stats().sse_sessions == 1).await;

    assert_refused(open_sse().await.unwrap(), "peer", 2).await;
    assert_refused(initialize(&s).await, "peer", 2).await;

    // The end of the 2024-11-05 stream gives its slot back; so does DELETE.
    drop(held);
    until("the 2024-11-05 session closed", || s.http.stats().sse_sessions == 0).await;
    let again = session_of(&initialize(&s).await);
    assert_refused(initialize(&s).await, "peer", 2).await;
    for id in [&streamable, &again] {
        let deleted = s.client.delete(&s.url).header("mcp-session-id", id.as_str()).send().await.unwrap();
        assert_eq!(deleted.status(), 200);
    }
    assert_eq!(s.http.stats().sessions, 0);
    session_of(&initialize(&s).await);
    session_of(&initialize(&s).await);
    assert_refused(initialize(&s).await, "peer", 2).await;
    s.finish().await;
}

#[tokio::test]
async fn the_memory_budget_caps_sessions_for_every_peer() {
    let s = serve(HttpConfig { session_memory_budget: 3 * 16 * 1024, ..HttpConfig::default() }).await;
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(session_of(&initialize(&s).await));
    }
    assert_refused(initialize(&s).await, "sessions", 3).await;
    let deleted = s.client.delete(&s.url).header("mcp-session-id", sessions[0].as_str()).send().await.unwrap();
    assert_eq!(deleted.status(), 200);
    // Deleting twice is a 404 and frees nothing more.
    let twice = s.client.delete(&s.url).header("mcp-session-id", sessions[0].as_str()).send().await.unwrap();
    assert_eq!(twice.status(), 404);
    session_of(&initialize(&s).await);
    assert_refused(initialize(&s).await, "sessions", 3).await;
    s.finish().await;
}

#[tokio::test]
async fn reaped_sessions_give_their_slots_back() {
    let config =
        HttpConfig { max_sessions_per_peer: 2, session_idle_timeout: Duration::from_secs(1), ..HttpConfig::default() };
    let s = serve(config).await;
    session_of(&initialize(&s).await);
    session_of(&initialize(&s).await);
    assert_refused(initialize(&s).await, "peer", 2).await;
    until("both sessions reaped", || s.http.stats().sessions == 0).await;
    session_of(&initialize(&s).await);
    session_of(&initialize(&s).await);
    assert_refused(initialize(&s).await, "peer", 2).await;
    s.finish().await;
}
