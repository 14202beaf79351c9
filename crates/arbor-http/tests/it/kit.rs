//! The fault kit over HTTP: the fixture's `fault` tool that acts out a [`Fault`], a
//! 2026-07-28 `fault` call's outcome as the client reads it (a JSON body, or the response
//! event of an SSE body), and the live counts of the served server.
//!
//! The kit itself (`tests::kit`) speaks JSON only; the in-memory twin of this module is
//! arbor-server's `tests/it/kit.rs`. It is not a scenario and holds no client state:
//! every call is one POST on its own, so a cut is one request's business.
//!
//! Invariant: the live counts are read from the server's own gauge (given in its
//! configuration, so tests running beside it do not count) and its observed tree.

use std::time::Duration;

use arbor_http::HttpConfig;
use arbor_otp::Gauge;
use arbor_protocol::error::McpError;
use arbor_server::ServerConfig;
use serde::Deserialize;
use serde_json::{json, Value};
use tests::kit::ledger::{Kind, Live};
use tests::kit::plan::Fault;

use crate::support::{serve_with, Served, SseReader};

/// The `fault` tool's arguments, as the kit writes them.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct FaultArgs {
    fault: String,
    ms: Option<u64>,
    /// For a `busy` fault: spin until [`RELEASED`] reaches this instead of for `ms`.
    until: Option<u64>,
}

/// How far gated busy loops are released (a `busy` call with `until: n` spins in its
/// blocking section until this is at least `n`): a test can then tell a call that holds
/// others up from one that is merely slow without reading a clock. Only one test gates.
pub static RELEASED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A gated busy loop gives up after this, so a test that never releases it still ends.
const GATE_BOUND: Duration = Duration::from_secs(60);

/// Acts out the fault in a `fault` call's arguments.
pub async fn act(args: FaultArgs) -> Result<String, McpError> {
    let fault = Fault::from_arguments(&json!({"fault": &args.fault, "ms": args.ms}))
        .ok_or_else(|| McpError::invalid_params("not a fault"))?;
    match fault {
        Fault::None => {}
        Fault::Panic => panic!("injected panic"),
        Fault::Error => return Err(McpError::invalid_params("injected error")),
        Fault::Hang => std::future::pending().await,
        Fault::Busy { ms } => {
            let gate = args.until;
            let end = std::time::Instant::now() + gate.map_or(Duration::from_millis(ms), |_| GATE_BOUND);
            let released = tokio::task::spawn_blocking(move || {
                while std::time::Instant::now() < end {
                    if gate.is_some_and(|n| RELEASED.load(std::sync::atomic::Ordering::Acquire) >= n) {
                        return true;
                    }
                    std::hint::spin_loop();
                }
                gate.is_none()
            })
            .await
            .expect("the busy loop ran");
            if !released {
                return Err(McpError::internal("a gated busy loop was never released"));
            }
        }
        Fault::Delay { ms } => tokio::time::sleep(Duration::from_millis(ms)).await,
    }
    Ok("survived".into())
}

/// A `tools/call` body of the `fault` tool carrying `fault` (for a legacy session).
pub fn fault_body(id: &Value, fault: Fault) -> Value {
    tests::kit::peer::call(id, "fault", fault.arguments())
}

/// POSTs a 2026-07-28 `fault` call with `id` carrying `fault`, and returns the JSON-RPC
/// response, from a JSON body or from the SSE body's response event.
pub async fn call(served: &Served, id: i64, fault: Fault) -> Value {
    call_with(served, id, fault.arguments()).await
}

/// [`call`] with the `fault` tool's arguments as given (a gated `busy`, say).
pub async fn call_with(served: &Served, id: i64, arguments: Value) -> Value {
    let params = json!({"name": "fault", "arguments": arguments});
    let response = served.modern(id, "tools/call", params, &[]).send().await.expect("the POST was answered");
    let sse = response.headers().get("content-type").is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !sse {
        return response.json().await.expect("a JSON body");
    }
    let mut events = SseReader::new(response);
    loop {
        let message = events.next_data().await.json();
        if message.get("id").is_some() && message.get("method").is_none() {
            return message;
        }
    }
}

/// A served fixture with its own gauge, `config` and `http`, warmed by a few calls so that
/// every shard of the default tenant's endpoint pool (at most four, opened on first use in
/// turn) exists before a baseline is taken.
pub async fn served(config: ServerConfig, http: HttpConfig) -> Served {
    let served = serve_with(config.gauge(Gauge::new()), http).await;
    for id in 1..=8 {
        assert_eq!(Kind::of(&call(&served, id, Fault::None).await), Kind::Result);
    }
    served
}

/// POSTs `body` on the legacy `session` and returns the JSON-RPC response: the JSON body,
/// or the response event of the SSE body; `None` when the stream ends without one (a
/// cancelled request) or the POST was accepted with no body (a notification).
pub async fn legacy(served: &Served, session: &str, body: &Value) -> Option<Value> {
    let response = served.post(body, &[("mcp-session-id", session)]).send().await.expect("the POST was answered");
    legacy_answer(response).await
}

/// The JSON-RPC response in a legacy POST's answer ([`legacy`]).
pub async fn legacy_answer(response: reqwest::Response) -> Option<Value> {
    if response.status() == 202 {
        return None;
    }
    let sse = response.headers().get("content-type").is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !sse {
        return Some(response.json().await.expect("a JSON body"));
    }
    let mut events = SseReader::new(response);
    while let Some(event) = events.next().await {
        if event.data.is_empty() {
            continue;
        }
        let message = event.json();
        if message.get("id").is_some() && message.get("method").is_none() {
            return Some(message);
        }
    }
    None
}

/// The served server's live counts now.
pub async fn live(served: &Served) -> Live {
    live_of(&served.http).await
}

/// [`live`] of any `HttpServer` (one a test built itself, with OAuth say).
pub async fn live_of(http: &arbor_http::HttpServer) -> Live {
    let server = http.server();
    let view = serde_json::to_value(server.observe().await.expect("a request was served")).unwrap();
    let gauge = server.gauge();
    Live::from_view(&view, gauge.alive_actors(), gauge.alive_tasks())
}

/// Waits (bounded) for the live counts to come back to `baseline`; returns the last count.
pub async fn settle(served: &Served, baseline: Live) -> Live {
    settle_of(&served.http, baseline).await
}

/// [`settle`] of any `HttpServer`.
pub async fn settle_of(http: &arbor_http::HttpServer, baseline: Live) -> Live {
    for _ in 0..200 {
        let now = live_of(http).await;
        if now == baseline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    live_of(http).await
}
