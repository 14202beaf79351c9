//! Ordered shutdown with a slow child over Streamable HTTP, on tokio's paused clock (the
//! router driven in process, no sockets): over a thousand 2026-07-28 `fault` calls and
//! the calls of four legacy sessions in flight, and a subscription handler whose
//! `handle_close` never returns on the sessions' streams (a child that ignores being told
//! to stop). `HttpServer::shutdown_with_deadline` drains, then shuts down.
//!
//! What must hold: every request gets exactly one answer, its own result or the drain's
//! -32603 (the kit's ledger); the slow streams are waited for up to their close grace and
//! then killed; and when the shutdown returns, nothing of the server is alive: no actor,
//! no supervised task, no session, no stream.

use std::sync::Arc;
use std::time::Duration;

use arbor_http::{HttpConfig, HttpServer};
use arbor_otp::Gauge;
use arbor_protocol::model::subscriptions::SubscriptionFilter;
use arbor_server::bus::BusMessage;
use arbor_server::{Channel, Flow, ServerConfig, Subscribe, SubscriptionHandler};
use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::ledger::{Kind, Ledger, Live};
use tests::kit::plan::{Fault, FaultPlan};
use tests::kit::Seed;
use tokio::time::Instant;
use tower::ServiceExt;

use crate::support::{fixture_with, MODERN};

const MODERN_CALLS: usize = 1000;
const SESSIONS: usize = 4;
const PER_SESSION: usize = 25;
const DRAIN: Duration = Duration::from_secs(3);
/// A connection's close grace for its streams (arbor-server's `STREAM_CLOSE_GRACE`).
const STREAM_GRACE: Duration = Duration::from_secs(5);

/// The tenant whose streams close slowly but within their grace (the second test).
const EARLY: &str = "early";

/// Counts the streams whose `handle_close` began, and those dropped unfinished; an
/// [`EARLY`] stream's close takes a second and finishes.
#[derive(Clone, Default)]
struct Closer {
    log: Arc<Mutex<Vec<(&'static str, Instant)>>>,
}

struct Killed(Arc<Mutex<Vec<(&'static str, Instant)>>>);

impl Drop for Killed {
    fn drop(&mut self) {
        self.0.lock().push(("killed", Instant::now()));
    }
}

impl SubscriptionHandler for Closer {
    type State = ();

    async fn subscribe(&self, _: &SubscriptionFilter, _: &Channel) -> Subscribe<()> {
        Subscribe::Accept(())
    }

    async fn handle_message(&self, _: Arc<BusMessage>, _: &Channel, _: &mut ()) -> Flow {
        Flow::Stream
    }

    async fn handle_close(&self, channel: &Channel, _: ()) {
        self.log.lock().push(("close", Instant::now()));
        if channel.connection().tenant == EARLY {
            // A stream that takes its time to close, well within its grace.
            tokio::time::sleep(Duration::from_secs(1)).await;
            self.log.lock().push(("closed", Instant::now()));
            return;
        }
        let _killed = Killed(self.log.clone());
        std::future::pending::<()>().await;
    }
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

/// A 2026-07-28 `fault` call.
fn modern_call(id: i64, fault: Fault) -> Request<Body> {
    let meta =
        json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}});
    let params = json!({"name": "fault", "arguments": fault.arguments(), "_meta": meta});
    let headers = [("mcp-protocol-version", MODERN), ("mcp-method", "tools/call"), ("mcp-name", "fault")];
    post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}), &headers)
}

async fn json_of(response: axum::http::Response<Body>) -> Value {
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap_or_else(|_| panic!("JSON: {}", String::from_utf8_lossy(&bytes)))
}

/// A legacy session (2025-11-25), initialized: its id.
async fn session(http: &HttpServer) -> String {
    session_of(http, &[]).await
}

/// A legacy session opened with `headers` (a tenant's, say), initialized: its id.
async fn session_of(http: &HttpServer, headers: &[(&str, &str)]) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    let response = http.router().oneshot(post(&init, headers)).await.unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = http.router().oneshot(post(&initialized, &[("mcp-session-id", &session)])).await.unwrap();
    assert_eq!(response.status(), 202);
    session
}

/// How a call with `fault` ends when the drain's deadline is `DRAIN`.
fn expect(fault: Fault) -> Kind {
    match fault {
        Fault::None => Kind::Result,
        Fault::Delay { ms } if Duration::from_millis(ms) < DRAIN => Kind::Result,
        _ => Kind::Error(-32603),
    }
}

#[tokio::test(start_paused = true)]
async fn a_drained_http_shutdown_answers_every_request_and_outwaits_a_slow_child() {
    let name = "ordered shutdown over HTTP with a slow child";
    let seed = Seed::for_test(name);
    let gauge = Gauge::new();
    let closer = Closer::default();
    let (server, _handle, _probe) = fixture_with(ServerConfig::default().gauge(gauge.clone()));
    let config = HttpConfig { json_wait: Duration::from_secs(60), ..HttpConfig::default() };
    let http = HttpServer::with_config(server.subscription_handler(closer.clone()), config);
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(session(&http).await);
    }
    let mut ledger = Ledger::new(name);
    let plan = FaultPlan::new()
        .with(Fault::None, 2)
        .with(Fault::Delay { ms: 1000 }, 2)
        .with(Fault::Delay { ms: 10_000 }, 1)
        .with(Fault::Hang, 1);
    let mut rng = seed.rng(0);
    let mut calls = Vec::new();
    // Connection 0 of the ledger is the stateless era; 1.. are the sessions.
    for n in 0..MODERN_CALLS + SESSIONS * PER_SESSION {
        let id = n as i64;
        let fault = plan.pick(&mut rng);
        let (conn, request) = match n.checked_sub(MODERN_CALLS) {
            None => (0, modern_call(id, fault)),
            Some(k) => {
                let body = tests::kit::peer::call(&json!(id), "fault", fault.arguments());
                (1 + k % SESSIONS, post(&body, &[("mcp-session-id", &sessions[k % SESSIONS])]))
            }
        };
        ledger.sent(conn, &json!(id), &[expect(fault)]);
        let router = http.router();
        calls.push((conn, tokio::spawn(async move { router.oneshot(request).await.unwrap() })));
    }
    // Every call reaches its handler (no time passes: the clock waits for the idle runtime).
    tokio::time::sleep(Duration::from_millis(1)).await;
    let in_flight = http.server().in_flight().await;
    assert!(in_flight > 0, "requests are running when the drain begins");

    let began = Instant::now();
    let shutdown = {
        let http = http.clone();
        tokio::spawn(async move {
            http.shutdown_with_deadline(DRAIN).await;
            Instant::now()
        })
    };
    for (conn, call) in calls {
        let response = call.await.expect("the call's task ran");
        assert_eq!(response.status(), 200);
        let answer = json_of(response).await;
        ledger.received(conn, &answer);
    }
    let stopped = shutdown.await.expect("the shutdown ran");

    // When the shutdown returns, nothing of the server is alive.
    let stats = http.stats();
    assert_eq!((stats.sessions, stats.streams_open, stats.modern_endpoints), (0, 0, 0), "{stats:?}");
    let after = Live { actors: gauge.alive_actors(), tasks: gauge.alive_tasks(), ..Live::default() };
    let log = closer.log.lock().clone();
    let count = |what: &str| log.iter().filter(|(w, _)| *w == what).count();
    assert_eq!(count("close"), SESSIONS, "each session's stream was told to close: {log:?}");
    assert_eq!(count("killed"), SESSIONS, "and killed once its grace ran out: {log:?}");
    let killed_at = log.iter().filter(|(w, _)| *w == "killed").map(|(_, at)| *at - began).max();
    assert!(killed_at >= Some(DRAIN + STREAM_GRACE), "not before the drain and the grace: {killed_at:?}");
    let summary = ledger.finish(Live::default(), after);
    println!("[kit] {name}: {in_flight} in flight at the drain; shutdown returned after {:?}", stopped - began);
    assert!(summary.requests >= 1000);
    assert!(summary.outcomes.get(&Kind::Error(-32603)).is_some_and(|n| *n > 0), "{summary}");
}

#[tokio::test(start_paused = true)]
async fn the_shutdown_returns_only_once_the_slow_child_was_killed_and_nothing_is_alive() {
    // Two sessions on two tenants: the default tenant's stream never finishes closing,
    // tenant "early"'s takes a second. The sessions close at once; the server's tree then
    // stops in order, the slow stream killed at its close grace, which is also the
    // HTTP shutdown grace: the shutdown must not return before that kill.
    let gauge = Gauge::new();
    let closer = Closer::default();
    let (server, _handle, _probe) = fixture_with(ServerConfig::default().gauge(gauge.clone()));
    let config = HttpConfig::default().tenant_header("x-tenant");
    let http = HttpServer::with_config(server.subscription_handler(closer.clone()), config);
    session_of(&http, &[("x-tenant", EARLY)]).await;
    session(&http).await;
    let began = Instant::now();
    http.shutdown().await;
    // Read before anything else runs: what the shutdown left when it returned.
    let alive = (gauge.alive_actors(), gauge.alive_tasks());
    let log = closer.log.lock().clone();
    let at = |what: &str| log.iter().filter(|(w, _)| *w == what).map(|(_, at)| *at - began).collect::<Vec<_>>();
    assert_eq!(alive, (0, 0), "nothing of the server is alive when the shutdown returns: {log:?}");
    assert_eq!(at("close"), [Duration::ZERO; 2], "both streams told at once: {log:?}");
    assert_eq!(at("closed"), [Duration::from_secs(1)], "the early one finished: {log:?}");
    assert_eq!(at("killed"), [STREAM_GRACE], "the slow one killed at its grace: {log:?}");
    assert!(!http.server().is_live());
    let stats = http.stats();
    assert_eq!((stats.sessions, stats.streams_open, stats.modern_endpoints), (0, 0, 0), "{stats:?}");
}
