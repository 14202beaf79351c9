//! 2026-07-28 over HTTP: headers checked against the body (400 + -32020), JSON answers,
//! SSE when notifications precede the result, 404 + -32601 for unknown methods, 405 for
//! GET and DELETE, 202 for notifications, a closed exchange cancels its request, and a
//! listen stream lives until the client closes it (`handle_close`).

use arbor_http::HttpConfig;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

use crate::support::{serve, signalled, SseReader, MODERN, PATIENCE};

async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn headers_must_match_the_body() {
    let s = serve(HttpConfig::default()).await;

    let (status, body) = json_of(s.modern(1, "tools/list", json!({}), &[]).send().await.unwrap()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "complete");
    assert!(body["result"]["tools"].as_array().is_some_and(|t| t.len() >= 5), "{body}");

    let call = |name: &str| json!({"name": name, "arguments": {"message": "hi"}});
    let (status, body) = json_of(s.modern(2, "tools/call", call("echo"), &[]).send().await.unwrap()).await;
    assert_eq!((status, body["result"]["content"][0]["text"].clone()), (200, json!("hi")), "{body}");

    // Each rule on its own: the request is otherwise right.
    let meta =
        json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"_meta": meta, "name": "echo", "arguments": {"message": "hi"}}});
    let cases: [(&str, Vec<(&str, &str)>); 5] = [
        ("no Mcp-Method", vec![("mcp-protocol-version", MODERN), ("mcp-name", "echo")]),
        ("no Mcp-Name", vec![("mcp-protocol-version", MODERN), ("mcp-method", "tools/call")]),
        (
            "another Mcp-Name",
            vec![("mcp-protocol-version", MODERN), ("mcp-method", "tools/call"), ("mcp-name", "slow")],
        ),
        ("no version header", vec![("mcp-method", "tools/call"), ("mcp-name", "echo")]),
        (
            "another version",
            vec![("mcp-protocol-version", "2025-11-25"), ("mcp-method", "tools/call"), ("mcp-name", "echo")],
        ),
    ];
    for (case, headers) in cases {
        let (status, answer) = json_of(s.post(&body, &headers).send().await.unwrap()).await;
        assert_eq!((status, answer["error"]["code"].as_i64()), (400, Some(-32020)), "{case}: {answer}");
        assert_eq!(answer["id"], 3, "{case}: the id is echoed");
    }
    // The base64 form of a header value is decoded before comparing.
    let encoded = [("mcp-name", "=?base64?ZWNobw==?=")];
    let (status, answer) = json_of(
        s.post(&body, &[("mcp-protocol-version", MODERN), ("mcp-method", "tools/call"), encoded[0]])
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{answer}");

    // Mcp-Param-Region: required when the argument is there, refused when it is not.
    let region = |args: Value| json!({"name": "region", "arguments": args});
    let (status, answer) = json_of(
        s.modern(4, "tools/call", region(json!({"region": "eu"})), &[("mcp-param-region", "eu")]).send().await.unwrap(),
    )
    .await;
    assert_eq!((status, answer["result"]["content"][0]["text"].clone()), (200, json!("eu")), "{answer}");
    let (status, answer) =
        json_of(s.modern(5, "tools/call", region(json!({"region": "eu"})), &[]).send().await.unwrap()).await;
    assert_eq!((status, answer["error"]["code"].as_i64()), (400, Some(-32020)), "{answer}");
    let (status, answer) = json_of(
        s.modern(6, "tools/call", region(json!({"region": "eu"})), &[("mcp-param-region", "us")]).send().await.unwrap(),
    )
    .await;
    assert_eq!((status, answer["error"]["code"].as_i64()), (400, Some(-32020)), "{answer}");
    let (status, answer) =
        json_of(s.modern(7, "tools/call", region(json!({})), &[("mcp-param-region", "eu")]).send().await.unwrap())
            .await;
    assert_eq!((status, answer["error"]["code"].as_i64()), (400, Some(-32020)), "{answer}");
    let (status, answer) = json_of(s.modern(8, "tools/call", region(json!({})), &[]).send().await.unwrap()).await;
    assert_eq!((status, answer["result"]["content"][0]["text"].clone()), (200, json!("none")), "{answer}");

    // Unknown methods are 404 + -32601; GET and DELETE 405; notifications 202.
    let (status, answer) = json_of(s.modern(9, "no/such", json!({}), &[]).send().await.unwrap()).await;
    assert_eq!((status, answer["error"]["code"].as_i64()), (404, Some(-32601)), "{answer}");
    let get = s.client.get(&s.url).header("accept", "text/event-stream").send().await.unwrap();
    assert_eq!(get.status(), 405);
    assert_eq!(s.client.delete(&s.url).send().await.unwrap().status(), 405);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed", "params": {"_meta": meta}});
    let sent = s.post(&note, &[("mcp-protocol-version", MODERN), ("mcp-method", "notifications/roots/list_changed")]);
    assert_eq!(sent.send().await.unwrap().status(), 202);
    // A session header is ignored, never echoed.
    let answered = s.modern(10, "tools/list", json!({}), &[("mcp-session-id", "whatever")]).send().await.unwrap();
    assert!(answered.headers().get("mcp-session-id").is_none());
    assert_eq!(answered.status(), 200);
    s.finish().await;
}

#[tokio::test]
async fn progress_makes_an_sse_answer_and_closing_it_cancels() {
    let config = HttpConfig { keep_alive: std::time::Duration::from_millis(50), ..HttpConfig::default() };
    let mut s = serve(config).await;
    let call = json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "p1"}});
    let response = s.modern(1, "tools/call", call, &[]).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    let mut events = SseReader::new(response);
    let first = events.next_data().await.json();
    assert_eq!(first["method"], "notifications/progress", "{first}");
    let second = events.next_data().await.json();
    assert_eq!(second["params"]["progress"], 2.0, "{second}");
    let done = events.next_data().await.json();
    assert_eq!(done["result"]["content"][0]["text"], "finished", "{done}");
    assert!(events.next().await.is_none(), "the stream ends with the response");

    // A slow call whose client goes away is cancelled on the server. A raw socket, so the
    // connection really closes when the client gives up.
    let request = s.modern(2, "tools/call", json!({"name": "slow", "arguments": {}}), &[]).build().unwrap();
    let body = request.body().unwrap().as_bytes().unwrap().to_vec();
    let mut head = format!("POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{}\r\ncontent-length: {}\r\n", s.port, body.len());
    for (name, value) in request.headers() {
        head.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap()));
    }
    head.push_str("\r\n");
    let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", s.port)).await.unwrap();
    socket.write_all(head.as_bytes()).await.unwrap();
    socket.write_all(&body).await.unwrap();
    signalled(&mut s.probe.started, "the slow call started").await;
    drop(socket);
    signalled(&mut s.probe.cancelled, "the slow call was cancelled").await;
    s.finish().await;
}

#[tokio::test]
async fn a_listen_stream_carries_changes_until_the_client_closes_it() {
    let mut s = serve(HttpConfig::default()).await;
    let filter = json!({"notifications": {"toolsListChanged": true}});
    let response = s.modern(7, "subscriptions/listen", filter, &[]).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let mut events = SseReader::new(response);
    let ack = events.next_data().await.json();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);

    s.handle.remove_tool("echo");
    let changed = events.next_data().await.json();
    assert_eq!(changed["method"], "notifications/tools/list_changed", "{changed}");
    assert_eq!(changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);

    drop(events);
    signalled(&mut s.probe.closed, "handle_close after the client closed the stream").await;
    let gone = tokio::time::timeout(PATIENCE, async {
        while s.http.stats().streams_open > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(gone.is_ok(), "the stream's body was dropped");
    s.finish().await;
}

#[tokio::test]
async fn the_tenant_hook_places_each_request_in_its_tenant() {
    let config = HttpConfig::default().tenant(|parts| match parts.headers.get("x-tenant") {
        Some(name) => arbor_server::ConnectOptions::tenant(name.to_str().unwrap_or("bad")),
        None => arbor_server::ConnectOptions::default(),
    });
    let s = serve(config).await;
    let listed = s.modern(1, "tools/list", json!({}), &[("x-tenant", "acme")]).send().await.unwrap();
    assert_eq!(listed.status(), 200);
    let session = s.initialize("2025-11-25", json!({})).await;
    assert!(!session.is_empty());
    let tree = s.http.server().snapshot().await.expect("the tree runs").to_json().to_string();
    assert!(tree.contains("tenant:acme"), "{tree}");
    assert!(tree.contains("tenant:default"), "{tree}");
    s.finish().await;
}
