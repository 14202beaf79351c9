//! The drain on tokio's paused clock, the router driven in process (no sockets, so the
//! clock only moves when everything waits): readiness turns 503 at once, a new request
//! is refused 503 with `Retry-After`, an open listen ends with its complete result, a
//! call that finishes within the deadline gets its result, and a hung call (both eras) is
//! answered with the drain's error exactly at the deadline, then the server stops. A
//! 2024-11-05 HTTP+SSE session gets both answers on its stream, which closes after them.

use std::time::Duration;

use arbor_http::{HealthConfig, HttpConfig, HttpServer};
use arbor_server::router::NoArgs;
use arbor_server::{Router, Server};
use axum::body::Body;
use axum::http::{Request, Response};
use futures::StreamExt;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tests::peer::http::EventBuffer;
use tokio::time::Instant;
use tower::ServiceExt;

use crate::support::MODERN;

const DEADLINE: Duration = Duration::from_secs(3);
/// The drain looks every 10 ms; on the paused clock nothing else moves time.
const TICK: Duration = Duration::from_millis(10);

/// The data events of an SSE body, as JSON.
struct Events {
    body: axum::body::BodyDataStream,
    buf: EventBuffer,
}

impl Events {
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(event) = self.buf.next_event() {
                if !event.data.is_empty() {
                    return Some(event.json());
                }
                continue;
            }
            self.buf.push(&self.body.next().await?.ok()?);
        }
    }
}

fn http() -> HttpServer {
    let router = Router::new("drain", "1.0.0")
        .tool("hang", "Never answers", |_: NoArgs| std::future::pending::<String>())
        .tool("quick", "Answers after a second", |_: NoArgs| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            "quick"
        });
    // The JSON wait is longer than the drain, so every answer here is a JSON body.
    let config =
        HttpConfig { json_wait: Duration::from_secs(60), ..HttpConfig::default() }.health(HealthConfig::default());
    HttpServer::with_config(Server::new(router), config)
}

fn post(body: &Value, headers: &[(&str, &str)]) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(Body::from(body.to_string())).unwrap()
}

fn modern(id: i64, method: &str, mut params: Value) -> Request<Body> {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}});
    let name = params.get("name").and_then(Value::as_str).map(str::to_owned);
    let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
    if let Some(name) = name.as_deref() {
        headers.push(("mcp-name", name));
    }
    post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}), &headers)
}

fn call(id: i64, tool: &str) -> Request<Body> {
    modern(id, "tools/call", json!({"name": tool, "arguments": {}}))
}

async fn json_of(response: Response<Body>) -> Value {
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap_or_else(|_| panic!("JSON: {}", String::from_utf8_lossy(&bytes)))
}

async fn get(http: &HttpServer, path: &str) -> (u16, Value) {
    let request = Request::get(path).header("host", "localhost").body(Body::empty()).unwrap();
    let response = http.router().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    (status, json_of(response).await)
}

/// A legacy session (2025-06-18) opened and initialized; its id.
async fn legacy_session(http: &HttpServer) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    let response = http.router().oneshot(post(&init, &[])).await.unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = http.router().oneshot(post(&initialized, &[("mcp-session-id", &session)])).await.unwrap();
    assert_eq!(response.status(), 202);
    session
}

/// Sends `request` on a task of its own; resolves to the answer and when it came.
fn send(http: &HttpServer, request: Request<Body>) -> tokio::task::JoinHandle<(Instant, Response<Body>)> {
    let router = http.router();
    tokio::spawn(async move {
        let response = router.oneshot(request).await.unwrap();
        (Instant::now(), response)
    })
}

#[tokio::test(start_paused = true)]
async fn a_hung_call_gets_the_drain_error_at_the_deadline_and_nothing_is_lost() {
    let http = http();
    assert_eq!(get(&http, "/readyz").await, (200, json!({"status": "ready"})));
    assert_eq!(get(&http, "/healthz").await, (200, json!({"status": "live"})));
    let session = legacy_session(&http).await;

    // A listen, open and acknowledged.
    let listen = http.router().oneshot(modern(1, "subscriptions/listen", json!({"notifications": {}}))).await.unwrap();
    assert_eq!(listen.status(), 200);
    let mut listen = Events { body: listen.into_body().into_data_stream(), buf: EventBuffer::default() };
    let ack = listen.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");

    // Admitted before the drain: two hung calls (one per era) and a quick one.
    let hung = send(&http, call(2, "hang"));
    let legacy_call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "hang", "arguments": {}}});
    let legacy_hung = send(&http, post(&legacy_call, &[("mcp-session-id", &session)]));
    let quick = send(&http, call(4, "quick"));
    // Let each reach its handler (no time passes: the clock waits for the idle runtime).
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(1)).await;

    let started = Instant::now();
    let drain = {
        let http = http.clone();
        tokio::spawn(async move {
            http.shutdown_with_deadline(DEADLINE).await;
            Instant::now()
        })
    };
    tokio::task::yield_now().await;
    assert!(http.is_draining());

    // Readiness first; new requests and sessions are refused with Retry-After.
    let (status, why) = get(&http, "/readyz").await;
    assert_eq!((status, why["reason"].clone()), (503, json!("draining")), "{why}");
    assert_eq!(get(&http, "/healthz").await.0, 200, "still live while draining");
    let refused = http.router().oneshot(call(5, "quick")).await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    let refused = json_of(refused).await;
    assert_eq!(refused["id"], 5, "{refused}");
    assert_eq!(refused["error"]["data"]["reason"], "draining", "{refused}");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    assert_eq!(http.router().oneshot(post(&init, &[])).await.unwrap().status(), 503, "no new session");

    // The listen ends at once with its complete result.
    let result = listen.next().await.expect("the listen's result");
    assert_eq!(result["id"], 1, "{result}");
    assert_eq!(result["result"]["resultType"], "complete", "{result}");
    assert!(Instant::now() < started + TICK, "the listen ended when the drain began");
    assert!(listen.next().await.is_none(), "nothing follows the result");

    // The quick call finishes within the deadline with its own result.
    let (at, answer) = quick.await.unwrap();
    assert!(at < started + DEADLINE);
    let answer = json_of(answer).await;
    assert_eq!(answer["result"]["content"][0]["text"], "quick", "{answer}");

    // The hung calls get the drain's error, at the deadline and not before.
    for (era, hung) in [("2026-07-28", hung), ("2025-06-18", legacy_hung)] {
        let (at, answer) = hung.await.unwrap();
        assert!(at >= started + DEADLINE && at < started + DEADLINE + TICK, "{era}: answered at the deadline");
        assert_eq!(answer.status(), 200, "{era}");
        let answer = json_of(answer).await;
        assert_eq!(answer["error"]["code"], -32603, "{era}: {answer}");
        assert_eq!(answer["error"]["data"]["reason"], "drain", "{era}: {answer}");
        assert_eq!(answer["error"]["data"]["drainTimeoutMs"], 3000, "{era}: {answer}");
    }

    // Then the server stops: the drain returns, nothing is left.
    let stopped = drain.await.unwrap();
    assert!(stopped >= started + DEADLINE);
    assert!(!http.server().is_live());
    assert_eq!(get(&http, "/healthz").await.0, 503);
    let stats = http.stats();
    assert_eq!((stats.sessions, stats.streams_open, stats.modern_endpoints), (0, 0, 0), "{stats:?}");
}

#[tokio::test(start_paused = true)]
async fn a_drain_with_nothing_in_flight_ends_at_once() {
    let http = http();
    let answer = json_of(http.router().oneshot(call(1, "quick")).await.unwrap()).await;
    assert_eq!(answer["result"]["content"][0]["text"], "quick", "{answer}");
    let started = Instant::now();
    http.shutdown_with_deadline(Duration::from_secs(30)).await;
    assert!(Instant::now() < started + Duration::from_secs(1), "it did not wait for the deadline");
    // A second call (a second signal) returns too.
    http.shutdown_with_deadline(Duration::from_secs(30)).await;
}

#[tokio::test(start_paused = true)]
async fn a_2024_11_05_session_gets_its_calls_answers_on_its_stream_before_it_closes() {
    let router = Router::new("drain", "1.0.0")
        .tool("hang", "Never answers", |_: NoArgs| std::future::pending::<String>())
        .tool("quick", "Answers after a second", |_: NoArgs| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            "quick"
        });
    let config = HttpConfig { legacy_sse: true, ..HttpConfig::default() };
    let http = HttpServer::with_config(Server::new(router), config);
    let open = Request::get("/sse").header("host", "localhost").header("accept", "text/event-stream");
    let stream = http.router().oneshot(open.body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(stream.status(), 200);
    let mut body = stream.into_body().into_data_stream();
    let mut buf = EventBuffer::default();
    let endpoint = loop {
        if let Some(event) = buf.next_event() {
            break event.data;
        }
        buf.push(&body.next().await.unwrap().unwrap());
    };
    let mut stream = Events { body, buf };
    let message = |message: Value| {
        let request =
            Request::post(endpoint.as_str()).header("host", "localhost").header("content-type", "application/json");
        http.router().oneshot(request.body(Body::from(message.to_string())).unwrap())
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    assert_eq!(message(init).await.unwrap().status(), 202);
    assert_eq!(stream.next().await.unwrap()["id"], 0);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(message(initialized).await.unwrap().status(), 202);
    for (id, tool) in [(1, "hang"), (2, "quick")] {
        let call =
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}}});
        assert_eq!(message(call).await.unwrap().status(), 202);
    }
    tokio::time::sleep(Duration::from_millis(1)).await;

    let started = Instant::now();
    let drain = {
        let http = http.clone();
        tokio::spawn(async move { http.shutdown_with_deadline(DEADLINE).await })
    };
    tokio::task::yield_now().await;
    let late = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "quick", "arguments": {}}});
    let refused = message(late).await.unwrap();
    assert_eq!(refused.status(), 503, "a new call during the drain");
    assert_eq!(refused.headers()["retry-after"], "1");

    let quick = stream.next().await.expect("the quick call's answer on the stream");
    assert_eq!((quick["id"].clone(), quick["result"]["content"][0]["text"].clone()), (json!(2), json!("quick")));
    let hung = stream.next().await.expect("the hung call's answer on the stream");
    assert!(Instant::now() >= started + DEADLINE && Instant::now() < started + DEADLINE + TICK);
    assert_eq!(hung["id"], 1, "{hung}");
    assert_eq!(hung["error"]["data"]["reason"], "drain", "{hung}");
    // Then the session's stream closes, and the server stops.
    assert!(stream.next().await.is_none(), "nothing after the last answer");
    drain.await.unwrap();
    assert_eq!(http.stats().sse_sessions, 0);
}
