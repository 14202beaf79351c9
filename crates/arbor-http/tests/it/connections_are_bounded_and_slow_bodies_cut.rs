//! Issue 11, item 2: a body that arrives too slowly is answered 408 (a JSON-RPC error) and
//! its connection closed; past `max_connections` a connection is answered 503 with
//! `Retry-After` and closed, and the count of open connections is exact; shutdown ends
//! within `shutdown_grace` even while a client holds a connection mid-body. Issue 19: an
//! idle keep-alive connection is closed by the idle timeout (120 s), not the head timeout
//! (30 s), which runs from a head's first byte.
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

/// A 2026-07-28 `tools/list` on `tcp`, and its whole answer (the connection stays open).
async fn list_on(tcp: &mut TcpStream, port: u16, id: u64) -> String {
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/list\",\"params\":{{\"_meta\":{{\
         \"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\
         \"io.modelcontextprotocol/clientCapabilities\":{{}}}}}}}}"
    );
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/list\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    // Until the head and the body its Content-Length names (or a chunked body's end).
    loop {
        let text = String::from_utf8_lossy(&answer).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let lower = head.to_ascii_lowercase();
            let length = lower
                .lines()
                .find_map(|line| line.strip_prefix("content-length: "))
                .and_then(|n| n.trim().parse::<usize>().ok());
            match length {
                Some(n) if body.len() >= n => return text,
                None if body.ends_with("0\r\n\r\n") => return text,
                _ => {}
            }
        }
        let n = tokio::time::timeout(PATIENCE, tcp.read(&mut chunk)).await.expect("an answer").unwrap();
        assert!(n > 0, "the connection closed before the answer: {}", String::from_utf8_lossy(&answer));
        answer.extend_from_slice(&chunk[..n]);
    }
}

#[tokio::test(start_paused = true)]
async fn an_idle_keep_alive_connection_outlives_the_head_timeout_and_closes_after_the_idle_timeout() {
    // The one-hour soak lost a request when hyper's header timer (30 s) closed a pooled
    // connection just as reqwest (90 s pools) sent on it: idle is now timed on its own.
    let s = serve(HttpConfig::default()).await;
    let mut tcp = TcpStream::connect(("127.0.0.1", s.port)).await.unwrap();
    let first = list_on(&mut tcp, s.port, 1).await;
    assert!(first.starts_with("HTTP/1.1 200 "), "{first}");
    // 100 s idle: past the 30 s head timeout, within the 120 s idle timeout.
    tokio::time::sleep(Duration::from_secs(100)).await;
    let second = list_on(&mut tcp, s.port, 2).await;
    assert!(second.starts_with("HTTP/1.1 200 "), "the same connection serves after 100 s idle: {second}");
    let idle_from = tokio::time::Instant::now();
    let rest = until_closed(&mut tcp).await;
    // `until_closed` waits at most PATIENCE (10 s) of paused time; sleep past 120 s first.
    let rest = match rest {
        Some(rest) => rest,
        None => {
            tokio::time::sleep(Duration::from_secs(120)).await;
            until_closed(&mut tcp).await.expect("closed once idle past 120 s")
        }
    };
    assert!(rest.is_empty(), "closed without a word: {rest:?}");
    let idle = idle_from.elapsed();
    assert!(idle >= Duration::from_secs(120), "not before the idle timeout: {idle:?}");
    s.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_head_trickled_after_an_exchange_is_cut_at_the_head_timeout_counted_from_its_first_byte() {
    let s = serve(HttpConfig::default()).await;
    let mut tcp = TcpStream::connect(("127.0.0.1", s.port)).await.unwrap();
    assert!(list_on(&mut tcp, s.port, 1).await.starts_with("HTTP/1.1 200 "));
    tokio::time::sleep(Duration::from_secs(60)).await;
    // A head begun after 60 s idle, never finished: one byte every 5 s.
    let started = tokio::time::Instant::now();
    let mut closed = false;
    for byte in b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".iter() {
        if tcp.write_all(&[*byte]).await.is_err() {
            closed = true;
            break;
        }
        let mut probe = [0u8; 64];
        if let Ok(Ok(0)) = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut probe)).await {
            closed = true;
            break;
        }
    }
    assert!(closed, "a trickled head is cut");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(30) && waited <= Duration::from_secs(36),
        "cut 30 s after its first byte, not at the idle timeout: {waited:?}"
    );
    s.finish().await;
}
