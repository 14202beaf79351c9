//! Issue 17 at the HTTP door: a tenant's rate (and a requester's), checked after
//! authentication and before the body is read, is answered 429 with `Retry-After` and the
//! runtime's -32000 naming the limit, while other tenants go on; the tenant's body cap is
//! 413; a quarantined tenant is 503 at the door; its legacy sessions are capped (503 +
//! `Retry-After`, a slot back after DELETE); the tenant comes from
//! `HttpConfig::tenant_header` (validated, 400) or, with OAuth on, from the token, whatever
//! the header says.
//!
//! Real loopback sockets and the real clock: every wait is bounded by `PATIENCE`, and no
//! assertion is about time. The rates refill slowly (at most one token a second), far
//! slower than a handful of loopback requests sent back to back.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use arbor_http::auth::{AuthConfig, Principal, StaticVerifier, TenantSource};
use arbor_http::{HttpConfig, HttpServer};
use arbor_server::tenant::TenantPolicy;
use arbor_server::ServerConfig;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{serve_with, Served, PATIENCE};

const TENANT: &str = "x-arbor-tenant";

const POLICY: &str = r#"
[tenants.a]
rate = { per_second = 1.0, burst = 3 }

[tenants.peers]
principal_rate = { per_second = 0.01, burst = 2 }

[tenants.small]
max_body_bytes = 256

[tenants.s]
max_sessions = 2

[tenants.sse]
rate = { per_second = 0.01, burst = 2 }

[tenants.q]
restart_budget = { max_restarts = 0, max_seconds = 10, quarantine_seconds = 600 }
"#;

/// The fixture with [`POLICY`] and the tenant header; a body that does not come is
/// waited for a minute (so only the gate can answer a stalled POST within `PATIENCE`).
async fn served() -> Served {
    let policy = TenantPolicy::from_toml(POLICY).unwrap();
    let config = HttpConfig {
        legacy_sse: true,
        body_read_timeout: Duration::from_secs(60),
        body_min_rate: 0,
        ..HttpConfig::default()
    }
    .tenant_header(TENANT);
    serve_with(ServerConfig::default().tenant_policy(policy), config).await
}

fn echo(message: &str) -> Value {
    json!({"name": "echo", "arguments": {"message": message}})
}

/// A 2026-07-28 `echo` call as `tenant`: its status and body.
async fn call(s: &Served, tenant: &str, id: i64) -> (u16, Value) {
    let response = s.modern(id, "tools/call", echo("hi"), &[(TENANT, tenant)]).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// The `Retry-After` of a response, in seconds.
fn retry_after(headers: &reqwest::header::HeaderMap) -> u64 {
    let value = headers.get("retry-after").unwrap_or_else(|| panic!("a Retry-After: {headers:?}"));
    value.to_str().unwrap().parse().unwrap()
}

/// The -32000 of a tenant refusal naming `limit`, with a positive `retryAfterMs`.
fn assert_refusal(body: &Value, limit: &str) {
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["id"], Value::Null, "the body was not read, so neither was its id: {body}");
    assert_eq!(body["error"]["code"], -32000, "{body}");
    assert_eq!(body["error"]["data"]["limit"], limit, "{body}");
    assert!(body["error"]["data"]["retryAfterMs"].as_u64().is_some_and(|ms| ms > 0), "{body}");
}

/// Everything the server answers to `request` on a fresh connection: its head and as
/// much body as its `Content-Length` says, or `None` if that did not come within
/// `PATIENCE` (the server is waiting for the rest of our body).
async fn raw_answer(port: u16, request: &[u8]) -> Option<String> {
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    tcp.write_all(request).await.unwrap();
    let read = async {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let text = String::from_utf8_lossy(&buf).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned()))
                    .and_then(|v| v.parse::<usize>().ok());
                if length.is_some_and(|n| body.len() >= n) {
                    return text;
                }
            }
            match tcp.read(&mut chunk).await {
                Ok(0) | Err(_) => return String::from_utf8_lossy(&buf).into_owned(),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    tokio::time::timeout(PATIENCE, read).await.ok()
}

#[tokio::test]
async fn a_tenants_rate_is_refused_with_429_before_the_body_while_another_tenant_goes_on() {
    let s = served().await;
    for id in 1..=3 {
        let (status, body) = call(&s, "a", id).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["content"][0]["text"], "hi", "{body}");
    }
    // The fourth declares a 1,000-byte body and sends 20 bytes of it: the refusal comes
    // at once, without the rest (the body's deadline is a minute away).
    let stalled = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{TENANT}: a\r\nContent-Length: 1000\r\n\r\n\
         {{\"jsonrpc\": \"2.0\",",
        s.port
    );
    let answer = raw_answer(s.port, stalled.as_bytes()).await.expect("answered without the rest of the body");
    assert!(answer.starts_with("HTTP/1.1 429 "), "{answer}");
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let retry = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("retry-after:").map(|v| v.trim().to_owned()))
        .and_then(|v| v.parse::<u64>().ok());
    assert!(retry.is_some_and(|secs| secs >= 1), "{head}");
    let body: Value = serde_json::from_str(body).unwrap();
    assert_refusal(&body, "tenant_rate");
    assert_eq!(body["error"]["data"]["reason"], "rate_limited", "{body}");

    // Through a plain client too, with the whole body sent.
    let response = s.modern(5, "tools/call", echo("hi"), &[(TENANT, "a")]).send().await.unwrap();
    assert_eq!(response.status(), 429);
    assert!(retry_after(response.headers()) >= 1);
    assert_refusal(&response.json().await.unwrap(), "tenant_rate");

    // Tenant b, and the default tenant (no header), have rates of their own: none.
    for id in 10..16 {
        let (status, body) = call(&s, "b", id).await;
        assert_eq!(status, 200, "{body}");
    }
    let response = s.modern(20, "tools/call", echo("hi"), &[]).send().await.unwrap();
    assert_eq!(response.status(), 200);
    s.finish().await;
}

#[tokio::test]
async fn a_quarantined_tenant_is_refused_with_503_before_the_body_while_another_tenant_goes_on() {
    let s = served().await;
    let crash = arbor_server::router::ToolRoute::new("crash", |_: arbor_server::router::NoArgs| async {
        if std::hint::black_box(true) {
            panic!("a planned crash");
        }
        String::new()
    });
    assert!(!s.handle.add_tool(crash.description("panics")), "a new tool");
    // Tenant q's budget is no crash at all: its first escalates it.
    let response = s.modern(1, "tools/call", json!({"name": "crash"}), &[(TENANT, "q")]).send().await.unwrap();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32603, "{body}");
    // From now on q is refused at the door, naming the quarantine and the time left.
    let response = s.modern(2, "tools/call", echo("hi"), &[(TENANT, "q")]).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 503);
    let wait = retry_after(response.headers());
    assert!((1..=600).contains(&wait), "{wait}");
    let body: Value = response.json().await.unwrap();
    assert_refusal(&body, "quarantine");
    assert_eq!(body["error"]["data"]["reason"], "quarantined");
    assert!(body["error"]["message"].as_str().unwrap().contains("crashed 1 times within 10 s"), "{body}");
    // Its neighbour is served.
    let (status, body) = call(&s, "other", 3).await;
    assert_eq!((status, body["result"]["content"][0]["text"].as_str()), (200, Some("hi")), "{body}");
    s.finish().await;
}

#[tokio::test]
async fn a_principal_rate_is_each_peers_own() {
    let s = served().await;
    for id in 1..=2 {
        assert_eq!(call(&s, "peers", id).await.0, 200);
    }
    let response = s.modern(3, "tools/call", echo("hi"), &[(TENANT, "peers")]).send().await.unwrap();
    assert_eq!(response.status(), 429);
    assert!(retry_after(response.headers()) >= 1);
    assert_refusal(&response.json().await.unwrap(), "principal_rate");

    // Another loopback address is another anonymous requester, with a full bucket.
    let other = reqwest::Client::builder()
        .timeout(PATIENCE)
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)))
        .build()
        .unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "echo",
        "arguments": {"message": "hi"}, "_meta": {"io.modelcontextprotocol/protocolVersion": crate::support::MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers = [
        (TENANT, "peers"),
        ("mcp-protocol-version", crate::support::MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
    ];
    for _ in 0..2 {
        let mut request = tests::peer::http::post(&other, &s.url, &body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        assert_eq!(request.send().await.unwrap().status(), 200);
    }
    s.finish().await;
}

#[tokio::test]
async fn a_tenants_body_cap_is_413_and_the_same_body_passes_for_another_tenant() {
    let s = served().await;
    let long = "x".repeat(300);
    let response = s.modern(1, "tools/call", echo(&long), &[(TENANT, "small")]).send().await.unwrap();
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("256 bytes") && message.contains("tenant's max_body_bytes"), "{body}");
    let response = s.modern(2, "tools/call", echo(&long), &[(TENANT, "b")]).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["content"][0]["text"], long.as_str());
    // A short body is within the small tenant's cap.
    assert_eq!(call(&s, "small", 3).await.0, 200);
    s.finish().await;
}

/// `initialize` as `tenant`.
async fn initialize(s: &Served, tenant: &str) -> reqwest::Response {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    s.post(&init, &[(TENANT, tenant)]).send().await.unwrap()
}

fn session_of(response: &reqwest::Response) -> String {
    assert_eq!(response.status(), 200);
    response.headers()["mcp-session-id"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_tenants_legacy_sessions_are_capped_and_a_delete_frees_one() {
    let s = served().await;
    let first = session_of(&initialize(&s, "s").await);
    let _second = session_of(&initialize(&s, "s").await);
    let refused = initialize(&s, "s").await;
    assert_eq!(refused.status(), 503);
    assert!(retry_after(refused.headers()) >= 1);
    let body: Value = refused.json().await.unwrap();
    assert_refusal(&body, "tenant_sessions");
    assert_eq!(body["error"]["data"]["reason"], "overloaded", "{body}");
    // The refused initialize held no session, nor any admission slot.
    assert_eq!(s.http.stats().sessions, 2);
    // The 2024-11-05 transport's sessions count too.
    let sse = s.client.get(format!("{}/sse", s.base)).header("accept", "text/event-stream").header(TENANT, "s");
    let refused = sse.send().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_refusal(&refused.json().await.unwrap(), "tenant_sessions");
    // Another tenant is not capped.
    session_of(&initialize(&s, "b").await);

    let deleted = s.client.delete(&s.url).header("mcp-session-id", first.as_str()).send().await.unwrap();
    assert_eq!(deleted.status(), 200);
    // The session's slot comes back once its connection actor has stopped.
    let reopened = crate::support::until_async("a session of s again", || async {
        let response = initialize(&s, "s").await;
        (response.status() == 200).then(|| session_of(&response))
    })
    .await;
    assert!(!reopened.is_empty());
    s.finish().await;
}

#[tokio::test]
async fn a_legacy_sessions_requests_are_charged_to_its_tenant_on_both_transports() {
    let s = served().await;
    // 2024-11-05: the GET that opens the session takes one of `sse`'s two tokens.
    let stream = s
        .client
        .get(format!("{}/sse", s.base))
        .header("accept", "text/event-stream")
        .header(TENANT, "sse")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut events = crate::support::SseReader::new(stream);
    let endpoint = events.next().await.expect("the endpoint event");
    let messages = format!("{}{}", s.base, endpoint.data);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let post = |headers: &[(&str, &str)]| {
        let mut request = s.client.post(&messages).header("content-type", "application/json").body(ping.to_string());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send()
    };
    // The session's tenant is charged whatever the POST's own header says.
    assert_eq!(post(&[(TENANT, "b")]).await.unwrap().status(), 202);
    let refused = post(&[(TENANT, "b")]).await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_refusal(&refused.json().await.unwrap(), "tenant_rate");
    drop(events);

    // Streamable HTTP: a session of `a` (one token for its initialize) charges `a`.
    let session = session_of(&initialize(&s, "a").await);
    let mut statuses = Vec::new();
    for id in 1..=3 {
        let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
        let response = s.post(&ping, &[("mcp-session-id", &session), (TENANT, "b")]).send().await.unwrap();
        statuses.push(response.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 429], "a's burst of 3, its initialize included");
    s.finish().await;
}

#[tokio::test]
async fn a_malformed_tenant_header_is_400_before_the_body() {
    let s = served().await;
    let long = "t".repeat(65);
    for bad in ["", long.as_str(), "acme corp", "a/b", "a,b"] {
        let response = s.modern(1, "tools/call", echo("hi"), &[(TENANT, bad)]).send().await.unwrap();
        assert_eq!(response.status(), 400, "{bad:?}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], -32600, "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains(TENANT), "{body}");
    }
    // Two values are refused too: which one would be the tenant?
    let response = s.modern(2, "tools/call", echo("hi"), &[(TENANT, "a"), (TENANT, "b")]).send().await.unwrap();
    assert_eq!(response.status(), 400);
    assert!(response.text().await.unwrap().contains("repeated"));
    s.finish().await;
}

#[tokio::test]
async fn with_oauth_the_tokens_tenant_wins_over_the_header() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let url = format!("http://{addr}/mcp");
    let mut claims = serde_json::Map::new();
    claims.insert("tenant".into(), json!("a"));
    let verifier =
        StaticVerifier::new().token("acme-token", Principal::new("https://as.example", "ada").with_claims(claims));
    let auth =
        AuthConfig::new(url.clone(), "https://as.example", verifier).tenant(TenantSource::Claim("tenant".into()));
    let policy = TenantPolicy::from_toml("[tenants.a]\nrate = { per_second = 0.01, burst = 1 }").unwrap();
    let config = HttpConfig::default().bind(addr).auth(auth).tenant_header(TENANT);
    let (server, _handle, _probe) = crate::support::fixture_with(ServerConfig::default().tenant_policy(policy));
    let bound = HttpServer::with_config(server, config).bind().await.unwrap();
    let stop = bound.shutdown_handle();
    let run = tokio::spawn(bound.run());
    let client = reqwest::Client::builder().timeout(PATIENCE).build().unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo",
        "arguments": {"message": "hi"}, "_meta": {"io.modelcontextprotocol/protocolVersion": crate::support::MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let send = |tenant: &'static str| {
        tests::peer::http::post(&client, &url, &body)
            .bearer_auth("acme-token")
            .header(TENANT, tenant)
            .header("mcp-protocol-version", crate::support::MODERN)
            .header("mcp-method", "tools/call")
            .header("mcp-name", "echo")
            .send()
    };
    // The header says b (and then something invalid): the token says a, whose one token
    // the first call takes.
    assert_eq!(send("b").await.unwrap().status(), 200);
    let refused = send("not a tenant!").await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_refusal(&refused.json().await.unwrap(), "tenant_rate");
    stop.shutdown();
    tokio::time::timeout(PATIENCE, run).await.unwrap().unwrap().unwrap();
}
