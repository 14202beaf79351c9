//! How the HTTP client recovers from two things a server may do, against a scripted axum
//! server on a loopback port (port 0): a legacy response stream that ends after its
//! priming event without the answer (SEP-1699: the client waits the `retry` delay and
//! resumes with a GET carrying `Last-Event-ID`, where the answer arrives), and a
//! `server/discover` probe refused -32022 although the version sent is among the
//! supported ones (SEP-2575: the client asks once more). Found with the conformance
//! client's `sse-retry` and `request-metadata` scenarios; these tests keep them fixed.

use std::sync::Arc;

use arbor_client::{Client, ClientOptions, EraCache, EraMode, HttpTarget};
use arbor_protocol::version::Era;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use parking_lot::Mutex;
use serde_json::{json, Value};

#[derive(Default)]
struct Seen {
    /// The `Last-Event-ID` of each GET (None for a GET without one).
    gets: Vec<Option<String>>,
    discovers: usize,
    /// The id of the tools/call whose stream was cut.
    pending_call: Option<Value>,
}

type Shared = Arc<Mutex<Seen>>;

fn json_response(status: StatusCode, body: Value) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .header("mcp-session-id", "s1")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn sse(text: String) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("mcp-session-id", "s1")
        .body(Body::from(text))
        .unwrap()
}

/// A legacy server whose tools/call stream ends after its priming event; the answer
/// waits for the GET that resumes it.
async fn cut_stream_server(State(seen): State<Shared>, method: Method, headers: HeaderMap, body: String) -> Response {
    if method == Method::GET {
        let last = headers.get("last-event-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let mut s = seen.lock();
        s.gets.push(last.clone());
        return match (last, s.pending_call.take()) {
            (Some(_), Some(id)) => {
                let answer =
                    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "resumed"}]}});
                sse(format!("id: e2\nevent: message\ndata: {answer}\n\n"))
            }
            // No standalone stream here.
            _ => Response::builder().status(StatusCode::METHOD_NOT_ALLOWED).body(Body::empty()).unwrap(),
        };
    }
    if method == Method::DELETE {
        return json_response(StatusCode::OK, json!({}));
    }
    let msg: Value = serde_json::from_str(&body).unwrap();
    let id = msg.get("id").cloned();
    match msg["method"].as_str() {
        Some("initialize") => json_response(
            StatusCode::OK,
            json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "cut-stream", "version": "1"}}}),
        ),
        Some("tools/call") => {
            seen.lock().pending_call = id;
            sse("id: e1\nretry: 50\ndata: \n\n".to_owned())
        }
        _ if id.is_none() => Response::builder().status(StatusCode::ACCEPTED).body(Body::empty()).unwrap(),
        Some(m) => json_response(
            StatusCode::OK,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("no {m}")}}),
        ),
        None => json_response(StatusCode::BAD_REQUEST, json!({})),
    }
}

/// A 2026-07-28 server that refuses the first probe -32022 while listing the version sent.
async fn picky_server(State(seen): State<Shared>, body: String) -> Response {
    let msg: Value = serde_json::from_str(&body).unwrap();
    let id = msg.get("id").cloned();
    match msg["method"].as_str() {
        Some("server/discover") => {
            let first = {
                let mut s = seen.lock();
                s.discovers += 1;
                s.discovers == 1
            };
            if first {
                return json_response(
                    StatusCode::BAD_REQUEST,
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022, "message": "Unsupported protocol version",
                        "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}}),
                );
            }
            json_response(
                StatusCode::OK,
                json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                    "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}}),
            )
        }
        Some("tools/list") => json_response(
            StatusCode::OK,
            json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "tools": []}}),
        ),
        _ => json_response(
            StatusCode::NOT_FOUND,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
        ),
    }
}

async fn serve(router: axum::Router) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    (url, task)
}

fn options(era: EraMode) -> ClientOptions {
    ClientOptions::new("recovery-test", "1").era(era).era_cache(EraCache::new())
}

#[tokio::test]
async fn a_legacy_stream_cut_before_its_answer_is_resumed_with_last_event_id() {
    let seen = Shared::default();
    let router = axum::Router::new().route("/mcp", axum::routing::any(cut_stream_server)).with_state(seen.clone());
    let (url, server) = serve(router).await;
    let client = Client::connect_http(HttpTarget::new(url), options(EraMode::ForceLegacy)).await.unwrap();
    let result = client.call_tool("anything", json!({})).await.expect("the answer arrives on the resumed stream");
    assert_eq!(serde_json::to_value(&result.content).unwrap(), json!([{"type": "text", "text": "resumed"}]));
    assert!(
        seen.lock().gets.contains(&Some("e1".to_owned())),
        "a GET resumed after the priming event: {:?}",
        seen.lock().gets
    );
    client.close().await;
    server.abort();
}

#[tokio::test]
async fn a_probe_refused_while_naming_the_version_sent_is_asked_once_more() {
    let seen = Shared::default();
    let router = axum::Router::new().route("/mcp", axum::routing::post(picky_server)).with_state(seen.clone());
    let (url, server) = serve(router).await;
    let client = Client::connect_http(HttpTarget::new(url), options(EraMode::Detect)).await.unwrap();
    assert_eq!(client.era(), Some(Era::Modern));
    assert_eq!(seen.lock().discovers, 2);
    assert!(client.list_all_tools().await.unwrap().is_empty());
    client.close().await;
    server.abort();
}
