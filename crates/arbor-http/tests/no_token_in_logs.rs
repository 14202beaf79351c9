//! No bearer token reaches a log line, a span, an answer or a tree snapshot, whatever the
//! token (accepted, short of scope, refused) and the era, with the request spans at TRACE
//! and tool payloads traced (`ServerConfig::trace_tool_payloads`). Its own test binary: the
//! subscriber that captures every line at TRACE is the process's global one, so nothing
//! run in parallel can hide a line from it.

use std::sync::Arc;
use std::time::Duration;

use arbor_http::auth::{AuthConfig, Principal, StaticVerifier};
use arbor_http::{HttpConfig, HttpServer};
use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::{RequestContext, Router, Server, ServerConfig};
use serde_json::{json, Value};

const TOKENS: [&str; 3] = ["alice-secret-token", "reader-secret-token", "forged-secret-token"];

/// Every byte logged, at every level.
#[derive(Clone, Default)]
struct Captured(Arc<parking_lot::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn no_token_reaches_a_log_line_a_span_an_answer_or_a_snapshot() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
        .with_writer(move || writer.clone())
        .init();
    let router = Router::new("logs", "1")
        .tool("whoami", "who", |_: NoArgs, cx: RequestContext| async move { cx.principal().unwrap().subject.clone() })
        .tool_route(ToolRoute::new("read_file", |_: NoArgs| async { "contents" }).scopes(["files:read"]));
    let verifier = StaticVerifier::new()
        .token(TOKENS[0], Principal::new("https://as", "alice").with_scopes(["mcp", "files:read"]))
        .token(TOKENS[1], Principal::new("https://as", "reader").with_scopes(["mcp"]));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let url = format!("http://{addr}/mcp");
    let auth = AuthConfig::new(url.clone(), "https://as", verifier).required_scopes(["mcp"]);
    let server = Server::with_config(router, ServerConfig::default().trace_tool_payloads(true));
    let bound = HttpServer::with_config(server.clone(), HttpConfig::default().bind(addr).auth(auth)).bind().await;
    let bound = bound.unwrap();
    let stop = bound.shutdown_handle();
    let run = tokio::spawn(bound.run());
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let mut answers = String::new();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    for token in TOKENS {
        for tool in ["whoami", "read_file"] {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": tool, "arguments": {"note": "payload-marker"}, "_meta": meta}});
            let r = tests::peer::http::post(&client, &url, &body)
                .bearer_auth(token)
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", tool);
            let r = r.send().await.unwrap();
            answers.push_str(&format!("{:?}", r.headers()));
            answers.push_str(&r.text().await.unwrap());
        }
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
        let r = tests::peer::http::post(&client, &url, &init).bearer_auth(token).send().await.unwrap();
        answers.push_str(&format!("{:?}", r.headers()));
        let answer: Value = r.json().await.unwrap();
        answers.push_str(&answer.to_string());
    }
    let snapshot = server.snapshot().await.map(|s| s.to_json().to_string()).unwrap_or_default();
    stop.shutdown();
    tokio::time::timeout(Duration::from_secs(10), run).await.unwrap().unwrap().unwrap();
    let logs = String::from_utf8_lossy(&captured.0.lock()).into_owned();
    assert!(logs.contains("connection"), "the server's spans were captured: {logs}");
    assert!(logs.contains("tools/call whoami"), "the request spans were captured: {logs}");
    assert!(logs.contains("payload-marker"), "the tool payloads were traced: {logs}");
    assert!(logs.contains("gen_ai.tool.call.result"), "the tool results were traced: {logs}");
    assert!(snapshot.contains("tenant"), "a snapshot was taken: {snapshot}");
    for token in TOKENS {
        assert!(!logs.contains(token), "{token} in the logs");
        assert!(!answers.contains(token), "{token} in an answer");
        assert!(!snapshot.contains(token), "{token} in the snapshot");
    }
}
