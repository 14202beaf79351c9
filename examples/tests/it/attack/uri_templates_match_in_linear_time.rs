//! Item 1 of issue 11: a huge URI that a resource template matches must cost little CPU,
//! must not take the runtime's workers from other clients, and must not stop SIGTERM
//! from stopping the server.
//!
//! Before the fix, matching `demo://notes/{id}` against `demo://notes/` + n characters
//! percent-decoded every candidate prefix of the value (quadratic): 200,000 characters
//! cost seconds of CPU on an async worker (64 KiB: 14.4 s in a debug build), so two such
//! requests left no worker for anyone and SIGTERM went unanswered. Now matching is linear
//! and the router refuses URIs over `DEFAULT_MAX_URI_BYTES` (16 KiB) with -32602 before
//! matching at all. These tests drive a real `demo_server` over HTTP (a legacy session and
//! 2026-07-28 with a 64 KiB `Mcp-Name`) and over stdio, and read its CPU time from
//! `/proc`; the bound asserted is generous (5 s for everything a test sends), so it
//! catches the quadratic cost (seconds per request) and not a slow machine.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::raw;
use crate::http::{answer, Client, ServerProcess};
use crate::support::modern_meta;

/// A legacy `resources/read` URI of `demo://notes/` + this many characters.
const HUGE_LEGACY: usize = 200_000;
/// A 2026-07-28 `resources/read` URI (and so `Mcp-Name`) of about this many bytes.
const HUGE_MODERN: usize = 64 * 1024;
/// Generous: the quadratic matcher spent seconds on each of these requests.
const CPU_BOUND_SECONDS: f64 = 5.0;
/// The router's default URI cap, in bytes.
const URI_CAP: usize = 16 * 1024;
/// How long an answer may take; far more than a linear match needs.
const WAIT: Duration = Duration::from_secs(20);

fn note_uri(chars: usize) -> String {
    format!("demo://notes/{}", "a".repeat(chars))
}

/// Asserts that `response` is the -32602 refusal of a `len`-byte URI: it names the cap and
/// the length, and does not reflect the URI.
fn assert_refused_over_cap(response: &Value, len: usize) {
    let error = &response["error"];
    assert_eq!(error["code"], -32602, "{}", clip(response));
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.len() < 300, "the refusal reflects the URI: {}", clip(response));
    assert!(message.contains(&len.to_string()), "the refusal names the length {len}: {message}");
    assert!(message.contains(&URI_CAP.to_string()), "the refusal names the cap: {message}");
}

/// The first 300 bytes of `value`'s JSON, for failure messages that must stay readable.
fn clip(value: &Value) -> String {
    value.to_string().chars().take(300).collect()
}

fn echo_text(response: &Value) -> &str {
    response["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no echo: {}", clip(response)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_huge_uris_cost_little_cpu_while_a_third_client_is_answered() {
    let server = ServerProcess::spawn("demo_server", &[]).await;
    let pid = server.pid();
    let (legacy_client, modern_client, third) =
        (Client::new(&server.url), Client::new(&server.url), Client::new(&server.url));
    let session = legacy_client.open_session().await;
    let third_session = third.open_session().await;
    let before = raw::cpu_seconds(pid);

    let legacy_uri = note_uri(HUGE_LEGACY);
    let legacy = tokio::spawn(async move {
        let read = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": legacy_uri}});
        answer(legacy_client.legacy(Some(&session), read).await).await
    });
    let modern_uri = note_uri(HUGE_MODERN);
    let modern = tokio::spawn(async move {
        answer(modern_client.modern(json!(2), "resources/read", json!({"uri": modern_uri})).await).await
    });

    // A third client, on connections of its own, is answered meanwhile.
    let echo = json!({"name": "echo", "arguments": {"message": "still here"}});
    let echoed = tokio::time::timeout(WAIT, async { answer(third.modern(json!(3), "tools/call", echo).await).await })
        .await
        .expect("the third client's echo is answered while the huge reads are in flight");
    assert_eq!(echo_text(&echoed), "still here");
    let ping = json!({"jsonrpc": "2.0", "id": 4, "method": "ping"});
    let pong = tokio::time::timeout(WAIT, async { answer(third.legacy(Some(&third_session), ping).await).await })
        .await
        .expect("the third client's ping is answered while the huge reads are in flight");
    assert!(pong.get("result").is_some(), "{pong}");

    let legacy = tokio::time::timeout(WAIT, legacy).await.expect("the legacy read is answered").expect("legacy task");
    let modern = tokio::time::timeout(WAIT, modern).await.expect("the modern read is answered").expect("modern task");
    assert_refused_over_cap(&legacy, note_uri(HUGE_LEGACY).len());
    assert_refused_over_cap(&modern, note_uri(HUGE_MODERN).len());

    let spent = raw::cpu_seconds(pid) - before;
    eprintln!("two huge reads (legacy {HUGE_LEGACY} chars, 2026-07-28 {HUGE_MODERN} B Mcp-Name) + echo + ping: {spent:.2} s of server CPU");
    assert!(spent < CPU_BOUND_SECONDS, "the server spent {spent:.2} s of CPU on two refused reads");
    assert!(server.stop().await.success(), "demo_server exits cleanly on SIGTERM");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uri_just_under_the_cap_is_matched_and_read_cheaply() {
    let server = ServerProcess::spawn("demo_server", &[]).await;
    let pid = server.pid();
    let client = Client::new(&server.url);
    let session = client.open_session().await;
    let before = raw::cpu_seconds(pid);
    // Under the cap, the template matches: each read is answered with the note, and the
    // matching is linear however the value is spelt (plain or percent-encoded).
    let plain = note_uri(URI_CAP - "demo://notes/".len());
    let encoded = format!("demo://notes/{}", "%41".repeat((URI_CAP - "demo://notes/".len()) / 3));
    for (id, uri) in [(1, &plain), (2, &encoded)] {
        let read = json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}});
        let response = tokio::time::timeout(WAIT, async { answer(client.legacy(Some(&session), read).await).await })
            .await
            .expect("the read is answered");
        let contents = &response["result"]["contents"][0];
        assert_eq!(contents["uri"].as_str(), Some(uri.as_str()), "{}", clip(&response));
        assert!(contents["text"].as_str().is_some_and(|t| t.starts_with("# Note ")), "{}", clip(&response));
    }
    let modern = tokio::time::timeout(WAIT, async {
        answer(client.modern(json!(3), "resources/read", json!({"uri": plain})).await).await
    })
    .await
    .expect("the 2026-07-28 read is answered");
    assert_eq!(modern["result"]["contents"][0]["uri"].as_str(), Some(plain.as_str()), "{}", clip(&modern));
    let spent = raw::cpu_seconds(pid) - before;
    eprintln!("three reads of {URI_CAP}-byte URIs: {spent:.2} s of server CPU");
    assert!(spent < CPU_BOUND_SECONDS, "the server spent {spent:.2} s of CPU on three reads under the cap");
    assert!(server.stop().await.success(), "demo_server exits cleanly on SIGTERM");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_server_while_two_huge_reads_are_in_flight() {
    let server = ServerProcess::spawn("demo_server", &[]).await;
    let authority = raw::authority(&server.url).to_owned();
    let client = Client::new(&server.url);
    let session = client.open_session().await;
    // Two huge reads written on raw connections and left unread.
    let legacy =
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": note_uri(HUGE_LEGACY)}});
    let legacy_headers = format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n");
    let modern_uri = note_uri(HUGE_MODERN);
    let modern = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                        "params": {"uri": modern_uri, "_meta": modern_meta(json!({}))}});
    let modern_headers =
        format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: resources/read\r\nMcp-Name: {modern_uri}\r\n");
    let mut held = Vec::new();
    for (headers, body) in [(legacy_headers, legacy), (modern_headers, modern)] {
        let mut tcp = raw::connect(&authority).await;
        let request = raw::post_bytes(&authority, "/mcp", &headers, body.to_string().as_bytes());
        tcp.write_all(&request).await.expect("writing a huge read");
        held.push(tcp);
    }
    // Let them reach the server's workers before the signal (no assertion on time).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = server.stop().await;
    assert!(status.success(), "demo_server exits cleanly on SIGTERM while huge reads are in flight: {status}");
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_uris_over_stdio_are_refused_and_cost_little_cpu() {
    let mut child = crate::support::spawn_stdio("demo_server", &[]);
    let pid = child.id().expect("running");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "arbor-examples-test", "version": "0.0.0"}}});
    let uri = note_uri(HUGE_LEGACY);
    let requests = [
        init,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": uri}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "completion/complete", "params": {
            "ref": {"type": "ref/resource", "uri": uri}, "argument": {"name": "id", "value": "4"}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": note_uri(HUGE_LEGACY / 2)}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
    ];
    let before = raw::cpu_seconds(pid);
    for request in &requests {
        let mut line = request.to_string().into_bytes();
        line.push(b'\n');
        stdin.write_all(&line).await.expect("writing to the server");
    }
    stdin.flush().await.expect("flushing");
    let mut answers: Vec<Value> = Vec::new();
    let collected = tokio::time::timeout(WAIT, async {
        while answers.iter().filter(|a| a.get("id").is_some()).count() < 6 {
            let line = lines.next_line().await.expect("reading stdout").expect("the server closed stdout");
            answers.push(serde_json::from_str(&line).expect("a JSON line"));
        }
    })
    .await;
    assert!(collected.is_ok(), "six answers in time; got {}", answers.iter().map(clip).collect::<Vec<_>>().join("\n"));
    let by_id = |id: u64| answers.iter().find(|a| a["id"] == id).cloned().unwrap_or_default();
    assert_refused_over_cap(&by_id(1), uri.len());
    assert_refused_over_cap(&by_id(2), uri.len());
    assert_refused_over_cap(&by_id(3), uri.len());
    assert_refused_over_cap(&by_id(4), note_uri(HUGE_LEGACY / 2).len());
    assert!(by_id(5).get("result").is_some(), "{}", clip(&by_id(5)));
    let spent = raw::cpu_seconds(pid) - before;
    eprintln!("stdio: four requests naming {}-byte URIs + ping: {spent:.2} s of server CPU", uri.len());
    assert!(spent < CPU_BOUND_SECONDS, "the server spent {spent:.2} s of CPU on four refused requests");
    drop(stdin);
    let status = tokio::time::timeout(WAIT, child.wait()).await.expect("exits after EOF").expect("waiting");
    assert!(status.success(), "{status}");
}
