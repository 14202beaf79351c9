//! The HTTP client against a hostile Streamable HTTP server (2025-11-25, an axum server
//! on a loopback port): 1,000 calls whose answers come as JSON or SSE with junk around
//! them (comments, unknown fields, CRLF line ends, events of other types, data that is
//! not JSON, answers to ids never sent), split across data lines, cut mid-event, ended
//! without the answer, refused with a bare 500, or over the client's frame cap (an SSE
//! event, a JSON body). Every call ends exactly one way, by the kit's ledger: its own
//! result, or a typed transport error when no usable answer came; every malformed
//! message is counted, never taken for an answer; the client still answers at the end.

use std::sync::Arc;

use arbor_client::{Client, ClientError, ClientOptions, EraCache, EraMode, HttpTarget, TransportError};
use axum::body::Body;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::ledger::{Kind, Ledger, Live};
use tests::kit::Seed;

const CALLS: u64 = 1000;
/// The client's frame cap over HTTP: the transport's, as over stdio.
const CAP: usize = arbor_transport::DEFAULT_MAX_FRAME_BYTES;
/// How the ledger records a call that ended with no usable answer (`NoAnswer`), and one
/// refused with a bare status: outside JSON-RPC's codes, so never confused with one.
const NO_ANSWER: i64 = 1;
const BARE_STATUS: i64 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Shape {
    Json,
    Sse,
    JunkAround,
    SplitData,
    EndsWithoutAnswer,
    CutMidEvent,
    Bare500,
    OversizedEvent,
    OversizedJson,
}

/// Call `n`'s shape, drawn from the seed on both sides; the oversized ones are rare (each
/// is megabytes).
fn shape(seed: &Seed, n: u64) -> Shape {
    const COMMON: [Shape; 7] = [
        Shape::Json,
        Shape::Sse,
        Shape::JunkAround,
        Shape::SplitData,
        Shape::EndsWithoutAnswer,
        Shape::CutMidEvent,
        Shape::Bare500,
    ];
    let mut rng = seed.rng(n);
    match rng.u32(..100) {
        0 => Shape::OversizedEvent,
        1 => Shape::OversizedJson,
        _ => COMMON[rng.usize(..COMMON.len())],
    }
}

/// How many messages of `shape` the client must count as malformed.
fn malformed_in(shape: Shape) -> u64 {
    match shape {
        // Data that is not JSON, and an answer to a string id never sent.
        Shape::JunkAround => 2,
        Shape::OversizedEvent | Shape::OversizedJson => 1,
        _ => 0,
    }
}

fn response(status: StatusCode, content_type: &str, body: impl Into<Body>) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header("mcp-session-id", "s1")
        .body(body.into())
        .unwrap()
}

fn answer(id: &Value, n: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": format!("{n}")}]}})
}

/// The hostile server: answers each call in its drawn shape.
async fn hostile(seed: Arc<Seed>, method: Method, body: String) -> Response {
    if method == Method::GET {
        return response(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "");
    }
    if method == Method::DELETE {
        return response(StatusCode::OK, "application/json", "{}");
    }
    let msg: Value = serde_json::from_str(&body).unwrap();
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    match msg["method"].as_str() {
        Some("initialize") => {
            let result = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                "serverInfo": {"name": "hostile", "version": "1"}});
            return response(
                StatusCode::OK,
                "application/json",
                json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
            );
        }
        Some("ping") => {
            return response(
                StatusCode::OK,
                "application/json",
                json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string(),
            )
        }
        Some("tools/call") => {}
        _ => return response(StatusCode::ACCEPTED, "text/plain", ""),
    }
    let n = msg["params"]["arguments"]["n"].as_u64().unwrap();
    let good = answer(&id, n);
    let sse = |text: String| response(StatusCode::OK, "text/event-stream", text);
    match shape(&seed, n) {
        Shape::Json => response(StatusCode::OK, "application/json", good.to_string()),
        Shape::Sse => sse(format!("id: e1\ndata: {good}\n\n")),
        Shape::JunkAround => sse(format!(
            ": a comment\r\nfoo: bar\r\nevent: other\r\ndata: {}\r\n\r\ndata: not json at all\r\n\r\n\
             data: {}\r\n\r\ndata: {}\r\n\r\nretry: x\r\nid: e9\r\ndata: {good}\r\n\r\n",
            answer(&json!(424242), n),
            json!({"jsonrpc": "2.0", "id": format!("stray-{n}"), "result": {}}),
            json!({"jsonrpc": "2.0", "id": 1_000_000_000 + n, "result": {}}),
        )),
        Shape::SplitData => {
            let text = serde_json::to_string_pretty(&good).unwrap();
            let lines: String = text.lines().map(|l| format!("data: {l}\n")).collect();
            sse(format!("{lines}\n"))
        }
        Shape::EndsWithoutAnswer => sse(": nothing to say\n\n".to_owned()),
        Shape::CutMidEvent => sse(format!("data: {good}\n")),
        Shape::Bare500 => response(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", ""),
        Shape::OversizedEvent => {
            // Over the cap first (an answer to this very id), then the real one.
            let big =
                json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "x".repeat(CAP)}]}});
            sse(format!("data: {big}\n\ndata: {good}\n\n"))
        }
        Shape::OversizedJson => {
            let big =
                json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "x".repeat(CAP)}]}});
            response(StatusCode::OK, "application/json", big.to_string())
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_http_call_ends_one_way_whatever_the_stream_holds() {
    let name = "HTTP client against malformed streams";
    let seed = Arc::new(Seed::for_test(name));
    let server_seed = seed.clone();
    let router = axum::Router::new().route(
        "/mcp",
        axum::routing::any(move |method: Method, body: String| hostile(server_seed.clone(), method, body)),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let options = ClientOptions::new("hostile-http", "1").era(EraMode::ForceLegacy).era_cache(EraCache::new());
    let client = Client::connect_http(HttpTarget::new(url), options).await.expect("connects");
    let ledger = Arc::new(Mutex::new(Ledger::new(name)));
    let malformed = Arc::new(Mutex::new(0u64));
    let calls = (0..CALLS).map(|n| {
        let (client, ledger, malformed, seed) = (client.clone(), ledger.clone(), malformed.clone(), seed.clone());
        async move {
            let shape = shape(&seed, n);
            *malformed.lock() += malformed_in(shape);
            let expect = match shape {
                Shape::EndsWithoutAnswer | Shape::CutMidEvent | Shape::OversizedJson => Kind::Error(NO_ANSWER),
                Shape::Bare500 => Kind::Error(BARE_STATUS),
                _ => Kind::Result,
            };
            ledger.lock().sent(0, &json!(n), &[expect]);
            let code = match client.call_tool("t", json!({"n": n})).await {
                Ok(result) => {
                    let text = serde_json::to_value(&result).unwrap()["content"][0]["text"].clone();
                    assert_eq!(text, json!(format!("{n}")), "call {n} ({shape:?}) got another's answer");
                    None
                }
                Err(ClientError::Transport(TransportError::NoAnswer(200))) => Some(NO_ANSWER),
                Err(ClientError::Transport(TransportError::Status(500))) => Some(BARE_STATUS),
                Err(other) => panic!("call {n} ({shape:?}) ended with {other}"),
            };
            let outcome = match code {
                None => json!({"id": n, "result": {}}),
                Some(code) => json!({"id": n, "error": {"code": code, "message": "transport"}}),
            };
            ledger.lock().received(0, &outcome);
        }
    });
    futures::stream::iter(calls).buffer_unordered(32).collect::<Vec<()>>().await;
    client.ping().await.expect("the client still answers");
    let summary =
        Arc::try_unwrap(ledger).expect("the calls are done").into_inner().finish(Live::default(), Live::default());
    assert_eq!(client.malformed_messages(), *malformed.lock(), "every malformed message counted once: {summary}");
    client.close().await;
    server.abort();
}
