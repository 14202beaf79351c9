//! Issue 11, item 2: a body that arrives too slowly is answered 408 (a JSON-RPC error) and
//! its connection closed; past `max_connections` a connection is answered 503 with
//! `Retry-After` and closed, and the count of open connections is exact; shutdown ends
//! within `shutdown_grace` even while a client holds a connection mid-body.
//!
//! Raw loopback sockets against a real `Bound::run`; the timeouts run on tokio's paused
//! clock, so the waits they name cost no wall time.

use std::time::Duration;

use arbor_http::HttpConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{serve, PATIENCE};

/// A POST head declaring a 1,000-byte body, and 17 bytes of it.
fn stalled_post(port: u16) -> Vec<u8> {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{{\"jsonrpc\":\"2.0\","
    )
    .into_bytes()
}

/// Everything the server sends until it closes the connection (bounded by `PATIENCE`);
/// `None` if it is still open then.
async fn until_closed(tcp: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    match tokio::time::timeout(PATIENCE, tcp.read_to_end(&mut buf)).await {
        Ok(_) => Some(String::from_utf8_lossy(&buf).into_owned()),
        Err(_) => None,
    }
}

fn json_body(answer: &str) -> serde_json::Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {answer}"))
}

#[tokio::test(start_paused = true)]
async fn a_stalled_body_gets_408_after_one_rate_window_and_its_connection_closes() {
    let s = serve(HttpConfig::default()).await;
    let mut tcp = TcpStream::connect(("127.0.0.1", s.port)).await.unwrap();
    tcp.write_all(&stalled_post(s.port)).await.unwrap();
    let started = tokio::time::Instant::now();
    let answer = until_closed(&mut tcp).await.expect("the server closed the connection");
    let waited = started.elapsed();
    eprintln!("a stalled body was answered after {waited:?} (paused clock): {answer:?}");
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("connection: close"), "{answer}");
    let error = json_body(&answer);
    assert_eq!(error["error"]["code"], -32000, "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("slower than 256 bytes/s"), "{error}");
    // The rate window (5 s) decides, long before the 30 s deadline.
    assert!(waited >= Duration::from_secs(5) && waited < Duration::from_secs(30), "{waited:?}");

    // With the rate check off, the deadline decides.
    let config = HttpConfig { body_min_rate: 0, body_read_timeout: Duration::from_secs(8), ..HttpConfig::default() };
    let t = serve(config).await;
    let mut tcp = TcpStream::connect(("127.0.0.1", t.port)).await.unwrap();
    tcp.write_all(&stalled_post(t.port)).await.unwrap();
    let started = tokio::time::Instant::now();
    let answer = until_closed(&mut tcp).await.expect("the server closed the connection");
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert!(json_body(&answer)["error"]["message"].as_str().unwrap().contains("within 8 s"), "{answer}");
    assert!(started.elapsed() >= Duration::from_secs(8), "{:?}", started.elapsed());
    s.finish().await;
    t.finish().await;
}

#[tokio::test]
async fn past_max_connections_a_connection_gets_503_with_retry_after_and_the_count_is_exact() {
    let s = serve(HttpConfig { max_connections: Some(2), ..HttpConfig::default() }).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(TcpStream::connect(("127.0.0.1", s.port)).await.unwrap());
    }
    let counted = wait_for_connections(&s, |n| n == 2).await;
    assert_eq!(counted, 2, "both connections are counted");

    let mut third = TcpStream::connect(("127.0.0.1", s.port)).await.unwrap();
    third.write_all(&stalled_post(s.port)).await.unwrap();
    let answer = until_closed(&mut third).await.expect("the refused connection is closed");
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    assert!(answer.contains("retry-after: 1\r\n"), "{answer}");
    let error = json_body(&answer);
    assert_eq!(error["error"]["code"], -32000, "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("maximum of 2 connections"), "{error}");
    assert_eq!(s.http.stats().connections_open, 2, "a refused connection is not counted");

    // Leaving frees the slots: a normal request is served again.
    drop(held);
    assert_eq!(wait_for_connections(&s, |n| n == 0).await, 0, "the count returns to zero");
    let ping = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let status = s.post(&ping, &[("mcp-protocol-version", "2025-11-25")]).send().await.unwrap().status();
    assert_ne!(status.as_u16(), 503, "served once the slots are free");
    s.finish().await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_drops_a_connection_still_open_after_the_grace() {
    // Neither body bound would end this read for ten minutes: only the grace can.
    let config = HttpConfig {
        body_min_rate: 0,
        body_read_timeout: Duration::from_secs(600),
        shutdown_grace: Duration::from_secs(2),
        ..HttpConfig::default()
    };
    let s = serve(config).await;
    let mut tcp = TcpStream::connect(("127.0.0.1", s.port)).await.unwrap();
    tcp.write_all(&stalled_post(s.port)).await.unwrap();
    wait_for_connections(&s, |n| n == 1).await;
    let started = tokio::time::Instant::now();
    s.finish().await;
    let took = started.elapsed();
    eprintln!("shutdown with a connection held mid-body returned after {took:?} (paused clock)");
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(600), "{took:?}");
    assert!(until_closed(&mut tcp).await.is_some(), "the held connection was closed");
}

/// Polls the server's open connection count (bounded) until `done` holds; the last count.
async fn wait_for_connections(s: &crate::support::Served, done: impl Fn(usize) -> bool) -> usize {
    for _ in 0..200 {
        let open = s.http.stats().connections_open;
        if done(open) {
            return open;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.http.stats().connections_open
}
