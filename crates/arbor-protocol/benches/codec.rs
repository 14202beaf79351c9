//! Typed codec vs `serde_json::Value`, side by side in one run.
//!
//! (a) decodes a typical 2026-07-28 `tools/call` request frame into `ClientRequest`
//! (in one pass with `decode_frame`, and in two steps with `decode_raw` + `from_raw`)
//! and encodes a typical `CallToolResult` response frame through our types;
//! (b) round-trips the same bytes through `serde_json::Value`. The requirement is
//! that (a) is no slower than (b).

use arbor_protocol::jsonrpc::{decode_raw, RawMessage, RequestId};
use arbor_protocol::method::{decode_result, encode_response};
use arbor_protocol::methods::{CallTool, ClientRequest};
use arbor_protocol::model::tools::CallToolResult;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::Value;
use std::hint::black_box;

const REQUEST: &str = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}},"sampling":{"tools":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"example-client","title":"Example Client","version":"1.4.2"},"progressToken":"call-42"},"name":"search_repositories","arguments":{"query":"mcp runtime language:rust","limit":20,"sort":"stars","filters":{"archived":false,"topics":["mcp","json-rpc","actors"]},"cursor":"eyJwYWdlIjoyfQ"}}}"#;

const RESULT: &str = r#"{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"example-server","version":"2.0.1"}},"resultType":"complete","content":[{"type":"text","text":"Found 3 repositories matching 'mcp runtime language:rust'."},{"type":"text","text":"[{\"name\":\"arbor\",\"stars\":1204},{\"name\":\"rmcp\",\"stars\":981},{\"name\":\"mcp-rs\",\"stars\":310}]","annotations":{"audience":["assistant"],"priority":0.8}},{"type":"resource_link","uri":"https://example.com/repos/arbor","name":"arbor","mimeType":"text/html"}],"structuredContent":{"total":3,"items":[{"name":"arbor","stars":1204,"url":"https://example.com/repos/arbor"},{"name":"rmcp","stars":981,"url":"https://example.com/repos/rmcp"},{"name":"mcp-rs","stars":310,"url":"https://example.com/repos/mcp-rs"}]},"isError":false}"#;

fn codec(c: &mut Criterion) {
    let request = REQUEST.as_bytes();
    let id = RequestId::from(42);
    let typed_result: CallToolResult = serde_json::from_str(RESULT).unwrap();
    let value_response: Value =
        serde_json::json!({"jsonrpc": "2.0", "id": 42, "result": serde_json::from_str::<Value>(RESULT).unwrap()});
    // Both encoders must produce the same bytes, or the comparison is meaningless.
    assert_eq!(encode_response(&id, &typed_result), serde_json::to_vec(&value_response).unwrap());
    let raw = decode_raw(request).unwrap();
    assert!(matches!(ClientRequest::from_raw(&raw), Ok((_, ClientRequest::CallTool(_)))));
    assert_eq!(ClientRequest::decode_frame(request).unwrap(), ClientRequest::from_raw(&raw).unwrap());

    let mut group = c.benchmark_group("decode tools/call request");
    group.bench_function("typed, one pass (ClientRequest::decode_frame)", |b| {
        b.iter(|| black_box(ClientRequest::decode_frame(black_box(request)).unwrap()))
    });
    group.bench_function("typed, two steps (decode_raw + ClientRequest::from_raw)", |b| {
        b.iter(|| {
            let raw = decode_raw(black_box(request)).unwrap();
            black_box(ClientRequest::from_raw(&raw).unwrap())
        })
    });
    group.bench_function("serde_json::Value", |b| {
        b.iter(|| black_box(serde_json::from_slice::<Value>(black_box(request)).unwrap()))
    });
    group.finish();

    let mut group = c.benchmark_group("encode CallToolResult response");
    group.bench_function("typed (CallToolResult)", |b| {
        b.iter(|| black_box(encode_response(black_box(&id), black_box(&typed_result))))
    });
    group.bench_function("serde_json::Value", |b| {
        b.iter(|| black_box(serde_json::to_vec(black_box(&value_response)).unwrap()))
    });
    group.finish();

    // The client's side, for information: reading the response with the pending
    // request's result type (`Outcome<CallToolResult>`) vs reading it as a Value.
    let response = encode_response(&id, &typed_result);
    let mut group = c.benchmark_group("decode CallToolResult response (client side)");
    group.bench_function("typed (decode_result::<CallTool>)", |b| {
        b.iter(|| {
            let RawMessage::Response { result, .. } = decode_raw(black_box(&response)).unwrap() else { unreachable!() };
            black_box(decode_result::<CallTool>(result).unwrap())
        })
    });
    group.bench_function("serde_json::Value", |b| {
        b.iter(|| black_box(serde_json::from_slice::<Value>(black_box(&response)).unwrap()))
    });
    group.finish();

    let mut group = c.benchmark_group("decode request + encode result");
    group.bench_function("typed", |b| {
        b.iter(|| {
            black_box(ClientRequest::decode_frame(black_box(request)).unwrap());
            black_box(encode_response(black_box(&id), black_box(&typed_result)))
        })
    });
    group.bench_function("serde_json::Value", |b| {
        b.iter(|| {
            black_box(serde_json::from_slice::<Value>(black_box(request)).unwrap());
            black_box(serde_json::to_vec(black_box(&value_response)).unwrap())
        })
    });
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
