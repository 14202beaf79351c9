//! Hardening: a foreign `Host` or `Origin` is 403 with a JSON-RPC error body, a body over
//! the cap 413, a body nested too deep 400 + -32600, a wrong media type 415, an `Accept`
//! without JSON or SSE 406; none of them costs the server anything, and a good request
//! right after is served.

use arbor_http::HttpConfig;
use serde_json::{json, Value};

use crate::support::serve;

async fn status_and_code(response: reqwest::Response) -> (u16, Option<i64>) {
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    (status, body["error"]["code"].as_i64())
}

#[tokio::test]
async fn foreign_hosts_and_origins_and_malformed_bodies_get_their_status() {
    let config = HttpConfig { max_body_bytes: 1024, max_json_depth: 8, ..HttpConfig::default() };
    let s = serve(config).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});

    // DNS rebinding: a name that is not loopback, whatever the socket says.
    let (status, code) = status_and_code(s.post(&ping, &[("host", "evil.example.com")]).send().await.unwrap()).await;
    assert_eq!(status, 403);
    assert!(code.is_some(), "a JSON-RPC error body");
    let (status, _) =
        status_and_code(s.post(&ping, &[("origin", "https://evil.example.com")]).send().await.unwrap()).await;
    assert_eq!(status, 403);
    let (status, _) = status_and_code(s.post(&ping, &[("origin", "null")]).send().await.unwrap()).await;
    assert_eq!(status, 403);

    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x".repeat(2000)}});
    assert_eq!(s.post(&big, &[]).send().await.unwrap().status(), 413);

    let mut deep = json!(1);
    for _ in 0..10 {
        deep = json!([deep]);
    }
    let nested = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"deep": deep}});
    let (status, code) = status_and_code(s.post(&nested, &[]).send().await.unwrap()).await;
    assert_eq!((status, code), (400, Some(-32600)));

    let response = s
        .client
        .post(&s.url)
        .header("content-type", "text/plain")
        .header("accept", "application/json, text/event-stream")
        .body(ping.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
    let response = s
        .client
        .post(&s.url)
        .header("content-type", "application/json")
        .header("accept", "text/html")
        .body(ping.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 406);

    let garbage = s.post(&json!(null), &[]).body("{not json").send().await.unwrap();
    let (status, code) = status_and_code(garbage).await;
    assert_eq!((status, code), (400, Some(-32700)));

    // Loopback names with the port, and a local page's origin, are served.
    for host in [format!("localhost:{}", s.port), format!("127.0.0.1:{}", s.port)] {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let response = s.post(&init, &[("host", &host), ("origin", "http://localhost:8080")]).send().await.unwrap();
        assert_eq!(response.status(), 200, "{host}");
    }
    s.finish().await;
}

#[tokio::test]
async fn a_body_over_the_cap_closes_its_connection_so_the_next_post_is_served() {
    // The server stops reading at the cap: the rest of the body may still be in flight, so
    // the connection cannot carry another request, and the 413 must say so, or the client
    // pools it and loses its next POST to a closed socket.
    let s = serve(HttpConfig { max_body_bytes: 1024, ..HttpConfig::default() }).await;
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x".repeat(64 * 1024)}});
    for n in 0..20 {
        // Declared too long (Content-Length), then streamed with no length at all.
        let response = if n % 2 == 0 {
            s.post(&big, &[]).send().await.unwrap()
        } else {
            let chunks = futures::stream::iter(vec![Ok::<_, std::io::Error>(big.to_string())]);
            s.post(&json!(null), &[]).body(reqwest::Body::wrap_stream(chunks)).send().await.unwrap()
        };
        assert_eq!(response.status(), 413);
        assert_eq!(response.headers().get("connection").map(|v| v.as_bytes()), Some(&b"close"[..]), "round {n}");
        let init = json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let good = s.post(&init, &[]).send().await.expect("the next POST is served");
        assert_eq!(good.status(), 200, "round {n}");
    }
    s.finish().await;
}
