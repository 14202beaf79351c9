//! Issue 11, item 6: the weak spots, against a real `demo_server` over raw loopback
//! sockets. A legacy request cancelled by its client (or whose session is deleted) gets no
//! answer and no HTTP 500, its stream just ends and the session carries on; text a client
//! sent comes back in errors clamped (a 3 MB method name costs an error of a few hundred
//! bytes, never 3 MB); a second `Host` (or `Origin`, `Mcp-Session-Id`) is refused 400;
//! one peer cannot hold more than its share of legacy sessions (503 + `Retry-After`) while
//! another peer still opens one.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

use super::raw::{self, Answer, WAIT};
use crate::http::{modern_meta, ServerProcess};

/// Error answers to clamped input stay below this (the clamp is 200 characters).
const SMALL: usize = 1024;

fn message(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).expect("JSON")
}

fn session_headers(session: &str) -> String {
    format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n")
}

/// Writes `request` on a connection from `from` (127.0.0.1 when `None`) and reads one answer.
async fn exchange_from(authority: &str, from: Option<IpAddr>, request: &[u8]) -> Answer {
    let mut tcp = match from {
        Some(ip) => raw::connect_from(authority, ip).await,
        None => raw::connect(authority).await,
    };
    tcp.write_all(request).await.expect("writing the request");
    raw::read_answer(&mut tcp, WAIT).await.expect("an answer")
}

/// `initialize` at 2025-11-25 from `from`: the answer (200 with `Mcp-Session-Id`, or a refusal).
async fn initialize(authority: &str, from: Option<IpAddr>) -> Answer {
    let body = message(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "attack", "version": "0"}}}));
    exchange_from(authority, from, &raw::post_bytes(authority, "/mcp", "", &body)).await
}

/// A session, initialized.
async fn open_session(authority: &str) -> String {
    let answer = initialize(authority, None).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let session = answer.header("mcp-session-id").expect("a session id").to_owned();
    let note = message(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let done = post(authority, &session, &note).await;
    assert_eq!(done.status, 202);
    session
}

async fn post(authority: &str, session: &str, body: &[u8]) -> Answer {
    exchange_from(authority, None, &raw::post_bytes(authority, "/mcp", &session_headers(session), body)).await
}

/// Every JSON-RPC message in an answer: the JSON body, or each `data:` of an SSE body.
fn messages(answer: &Answer) -> Vec<Value> {
    let text = String::from_utf8_lossy(&answer.body);
    if answer.header("content-type").is_some_and(|t| t.starts_with("text/event-stream")) {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("SSE data not JSON ({e}): {d}")))
            .collect()
    } else if text.trim().is_empty() {
        Vec::new()
    } else {
        vec![answer.json()]
    }
}

/// Starts a `slow_count` (10 s if nobody stops it) as request `id` of `session`, on its
/// own connection; the task reads its answer.
async fn slow_call(authority: &str, session: &str, id: u64) -> tokio::task::JoinHandle<Answer> {
    let body = message(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "slow_count", "arguments": {"to": 50, "interval_ms": 200}}}));
    let request = raw::post_bytes(authority, "/mcp", &session_headers(session), &body);
    let mut tcp = raw::connect(authority).await;
    tcp.write_all(&request).await.expect("writing the call");
    let task = tokio::spawn(async move { raw::read_answer(&mut tcp, WAIT).await.expect("an answer to the call") });
    // The call reaches the session's endpoint before what the test sends next.
    tokio::time::sleep(Duration::from_millis(500)).await;
    task
}

/// The cancelled (or orphaned) call's POST: no 500, no error, no response for `id`.
fn assert_ended_cleanly(answer: &Answer, id: u64) {
    let body = String::from_utf8_lossy(&answer.body);
    eprintln!("weak_spots: the stopped call's POST: status {}, {} bytes: {body}", answer.status, answer.body.len());
    assert_ne!(answer.status, 500, "{body}");
    assert_eq!(answer.status, 200, "{body}");
    for m in messages(answer) {
        assert!(m.get("error").is_none(), "an error for a stopped request: {m}");
        assert!(m.get("id") != Some(&json!(id)), "a stopped request was answered: {m}");
    }
}

#[tokio::test]
async fn a_cancelled_legacy_request_ends_its_stream_without_an_error() {
    let server = ServerProcess::spawn("demo_server", &[]).await;
    let authority = raw::authority(&server.url).to_owned();
    let session = open_session(&authority).await;

    let call = slow_call(&authority, &session, 7).await;
    let cancel = message(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "changed my mind"}}));
    assert_eq!(post(&authority, &session, &cancel).await.status, 202);
    let answer = tokio::time::timeout(WAIT, call).await.expect("the call's POST ended").expect("the reader");
    assert_ended_cleanly(&answer, 7);

    // The session carries on.
    let echo = message(&json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "still here"}}}));
    let answer = post(&authority, &session, &echo).await;
    assert_eq!(answer.status, 200);
    let reply = messages(&answer).into_iter().find(|m| m["id"] == 8).expect("the echo's answer");
    assert_eq!(reply["result"]["content"][0]["text"], "still here", "{reply}");
    server.stop().await;
}

#[tokio::test]
async fn deleting_a_session_ends_its_running_requests_without_an_error() {
    let server = ServerProcess::spawn("demo_server", &[]).await;
    let authority = raw::authority(&server.url).to_owned();
    let session = open_session(&authority).await;

    let call = slow_call(&authority, &session, 3).await;
    let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: {authority}\r\n{}\r\n", session_headers(&session));
    let deleted = exchange_from(&authority, None, delete.as_bytes()).await;
    assert_eq!(deleted.status, 200);
    let answer = tokio::time::timeout(WAIT, call).await.expect("the call's POST ended").expect("the reader");
    assert_ended_cleanly(&answer, 3);
    let ping = message(&json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}));
    assert_eq!(post(&authority, &session, &ping).await.status, 404, "the session is gone");
    server.stop().await;
}

/// The error an answer carries, checked small and free of control and bidi characters.
fn small_error(what: &str, answer: &Answer) -> Value {
    eprintln!("weak_spots: {what}: status {}, {} bytes", answer.status, answer.body.len());
    assert!(answer.body.len() < SMALL, "{what}: a {}-byte answer", answer.body.len());
    let reply = messages(answer).into_iter().next().unwrap_or_else(|| panic!("{what}: no answer"));
    let error = reply["error"].clone();
    assert!(error.is_object(), "{what}: {reply}");
    let text = error.to_string();
    assert!(!text.contains('\u{202e}') && !text.contains('\u{7}'), "{what}: {text}");
    error
}

#[tokio::test]
async fn reflected_names_and_header_values_come_back_clamped() {
    let server = ServerProcess::spawn("demo_server", &[]).await;
    let authority = raw::authority(&server.url).to_owned();
    let session = open_session(&authority).await;

    for (label, len) in [("100 KB method name", 100 * 1024), ("3 MB method name", 3 * 1024 * 1024)] {
        let method = format!("x\u{202e}\u{7}{}", "m".repeat(len));
        let body = message(&json!({"jsonrpc": "2.0", "id": 1, "method": method}));
        let error = small_error(label, &post(&authority, &session, &body).await);
        assert_eq!(error["code"], -32601, "{error}");
        assert!(error["message"].as_str().is_some_and(|m| m.contains("mmmm")), "{error}");
    }

    let tool = "t".repeat(100 * 1024);
    let body = message(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": {}}}));
    let error = small_error("100 KB tool name", &post(&authority, &session, &body).await);
    assert_eq!(error["code"], -32602, "{error}");

    let uri = format!("demo://nothing/{}", "u".repeat(100 * 1024));
    let body = message(&json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": uri}}));
    let answer = post(&authority, &session, &body).await;
    small_error("100 KB unknown resource URI", &answer);

    // A long header value: the legacy MCP-Protocol-Version, and a modern Mcp-Name that
    // disagrees with its body.
    let version = "9".repeat(32 * 1024);
    let extra = format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: {version}\r\n");
    let ping = message(&json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}));
    let answer = exchange_from(&authority, None, &raw::post_bytes(&authority, "/mcp", &extra, &ping)).await;
    assert_eq!(answer.status, 400);
    small_error("32 KB MCP-Protocol-Version", &answer);

    let name = "n".repeat(32 * 1024);
    let extra = format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\n");
    let body = message(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "hi"}, "_meta": modern_meta()}}));
    let answer = exchange_from(&authority, None, &raw::post_bytes(&authority, "/mcp", &extra, &body)).await;
    assert_eq!(answer.status, 400);
    assert_eq!(small_error("32 KB Mcp-Name", &answer)["code"], -32020);

    let method = "q".repeat(100 * 1024);
    let extra = format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n");
    let body = message(&json!({"jsonrpc": "2.0", "id": 6, "method": method, "params": {"_meta": modern_meta()}}));
    let answer = exchange_from(&authority, None, &raw::post_bytes(&authority, "/mcp", &extra, &body)).await;
    small_error("100 KB modern method name", &answer);
    server.stop().await;
}

#[tokio::test]
async fn a_second_host_origin_or_session_header_is_refused_400() {
    let server = ServerProcess::spawn("demo_server", &[]).await;
    let authority = raw::authority(&server.url).to_owned();
    let session = open_session(&authority).await;
    let ping = message(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    let port = authority.rsplit(':').next().expect("a port");
    let own = session_headers(&session);
    let cases = [
        ("two Host headers", format!("{own}Host: evil.example\r\n")),
        ("two Origin headers", format!("{own}Origin: http://localhost:{port}\r\nOrigin: http://evil.example\r\n")),
        ("two Mcp-Session-Id headers", format!("{own}Mcp-Session-Id: {session}\r\n")),
        ("two MCP-Protocol-Version headers", format!("{own}MCP-Protocol-Version: 2025-06-18\r\n")),
    ];
    for (label, extra) in cases {
        let answer = exchange_from(&authority, None, &raw::post_bytes(&authority, "/mcp", &extra, &ping)).await;
        eprintln!("weak_spots: {label}: status {}: {}", answer.status, String::from_utf8_lossy(&answer.body));
        assert_eq!(answer.status, 400, "{label}: {}", String::from_utf8_lossy(&answer.body));
        assert!(answer.json()["error"]["code"].is_i64(), "{label}");
    }
    // One of each is still served.
    assert_eq!(post(&authority, &session, &ping).await.status, 200);
    server.stop().await;
}

#[tokio::test]
async fn one_peer_cannot_hold_every_legacy_session() {
    const CAP: usize = 5;
    let cap = CAP.to_string();
    let server = ServerProcess::spawn("demo_server", &["--max-sessions-per-peer", &cap]).await;
    let authority = raw::authority(&server.url).to_owned();
    let rss_before = raw::rss_kib(server.pid());
    let mut sessions = Vec::new();
    let mut refused = None;
    for _ in 0..CAP * 3 {
        let answer = initialize(&authority, None).await;
        if answer.status != 200 {
            refused = Some(answer);
            break;
        }
        sessions.push(answer.header("mcp-session-id").expect("a session id").to_owned());
    }
    eprintln!(
        "weak_spots: one peer opened {} sessions (cap {CAP}); RSS {} -> {} KiB",
        sessions.len(),
        rss_before,
        raw::rss_kib(server.pid())
    );
    assert_eq!(sessions.len(), CAP);
    let refused = refused.expect("a refusal past the cap");
    assert_eq!(refused.status, 503);
    assert!(refused.header("retry-after").is_some_and(|v| v.parse::<u64>().is_ok()), "{:?}", refused.headers);
    let error = refused.json()["error"].clone();
    assert_eq!(error["code"], -32000, "{error}");
    assert!(error["message"].as_str().is_some_and(|m| m.contains("per peer")), "{error}");

    // Another peer is not refused.
    let other = initialize(&authority, Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)))).await;
    assert_eq!(other.status, 200, "{}", String::from_utf8_lossy(&other.body));

    // A deleted session gives its slot back, exactly once.
    let gone = sessions.pop().expect("a session");
    let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: {authority}\r\n{}\r\n", session_headers(&gone));
    assert_eq!(exchange_from(&authority, None, delete.as_bytes()).await.status, 200);
    assert_eq!(exchange_from(&authority, None, delete.as_bytes()).await.status, 404);
    assert_eq!(initialize(&authority, None).await.status, 200, "the freed slot is usable");
    assert_eq!(initialize(&authority, None).await.status, 503, "and only one slot was freed");
    server.stop().await;
}
