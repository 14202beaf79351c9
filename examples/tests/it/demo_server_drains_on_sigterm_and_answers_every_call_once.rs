//! `demo_server` under load, then SIGTERM: 200 `slow_count` calls in flight, half over
//! 2026-07-28 and half in 2025-11-25 sessions, half finishing within the drain deadline
//! and half running far past it. The ledger: every call gets exactly one answer, its
//! result or the drain's -32603 (`data.reason: "drain"`), and nothing after it on its
//! stream; `/readyz` turns 503 while `/healthz` stays 200; a new call is refused 503 with
//! `Retry-After`; the process exits 0.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::http::{modern_meta, Client, ServerProcess, Sse};

/// Calls in flight at SIGTERM, both eras together.
const CALLS: usize = 200;
/// Legacy sessions the 2025-11-25 half is spread over.
const SESSIONS: usize = 10;
/// The drain's deadline given to the server.
const DRAIN_MS: u64 = 5000;
/// Every wait here is bounded by this.
const WAIT: Duration = Duration::from_secs(30);

/// One call: its id, its era, whether it finishes within the deadline, and the session it
/// goes in (legacy).
#[derive(Clone)]
struct Call {
    id: u64,
    session: Option<String>,
    quick: bool,
}

impl Call {
    /// `slow_count` with a progress token, so its first progress event shows it is running:
    /// quick ones count 15 × 200 ms (3 s, within the deadline), the others 100 × 500 ms
    /// (50 s, the most the demo allows, far past it).
    fn body(&self) -> Value {
        let (to, interval) = if self.quick { (15, 200) } else { (100, 500) };
        let mut meta = match self.session {
            Some(_) => json!({}),
            None => modern_meta(),
        };
        meta["progressToken"] = json!(format!("p{}", self.id));
        json!({"jsonrpc": "2.0", "id": self.id, "method": "tools/call",
            "params": {"name": "slow_count", "arguments": {"to": to, "interval_ms": interval}, "_meta": meta}})
    }
}

/// What a call's client saw: its one response, and anything after it on the stream.
struct Outcome {
    call: Call,
    response: Value,
    after: Vec<Value>,
}

async fn run(http: reqwest::Client, url: String, call: Call, running: mpsc::UnboundedSender<u64>) -> Outcome {
    let mut request = tests::peer::http::post(&http, &url, &call.body());
    request = match &call.session {
        Some(session) => request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25"),
        None => request
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "slow_count"),
    };
    let response = request.send().await.expect("POST to the server");
    assert_eq!(response.status(), 200, "call {} was admitted", call.id);
    // Progress comes before the response: the answer is an SSE stream.
    let mut events = Sse::new(response);
    let mut told = false;
    let response = loop {
        let message = events.next().await.expect("a message");
        if message["method"] == "notifications/progress" {
            if !told {
                told = true;
                let _ = running.send(call.id);
            }
            continue;
        }
        if message.get("id").is_some() && message.get("method").is_none() {
            break message;
        }
    };
    let after = events.until_end().await;
    Outcome { call, response, after }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_in_flight_at_sigterm_gets_exactly_one_answer_and_the_process_exits_0() {
    let drain = DRAIN_MS.to_string();
    let mut server =
        ServerProcess::spawn("demo_server", &["--drain-timeout-ms", &drain, "--feed-interval-ms", "0"]).await;
    let base = server.url.trim_end_matches("/mcp").to_owned();
    let probe = reqwest::Client::builder().timeout(WAIT).build().unwrap();
    let ready = probe.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200, "ready before the drain");

    let client = Client::new(&server.url);
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(client.open_session().await);
    }
    let http = reqwest::Client::builder().pool_max_idle_per_host(CALLS).build().unwrap();
    let (running_tx, mut running) = mpsc::unbounded_channel();
    let mut calls = Vec::new();
    for i in 0..CALLS {
        let legacy = i % 2 == 1;
        let call = Call {
            id: i as u64 + 1,
            session: legacy.then(|| sessions[(i / 2) % SESSIONS].clone()),
            quick: (i / 2) % 2 == 0,
        };
        calls.push(tokio::spawn(run(http.clone(), server.url.clone(), call, running_tx.clone())));
    }
    drop(running_tx);
    // Every call is running (its first progress arrived) before the signal.
    tokio::time::timeout(WAIT, async {
        for _ in 0..CALLS {
            running.recv().await.expect("a call ended before it ran");
        }
    })
    .await
    .expect("every call started in time");

    server.terminate();
    let signalled = std::time::Instant::now();

    // Readiness turns first; liveness stays; a new call is refused with Retry-After.
    let reason = tokio::time::timeout(WAIT, async {
        loop {
            let ready = probe.get(format!("{base}/readyz")).send().await.unwrap();
            if ready.status() == 503 {
                let body: Value = ready.json().await.unwrap();
                return body["reason"].clone();
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("/readyz turned 503");
    assert_eq!(reason, "draining");
    assert_eq!(probe.get(format!("{base}/healthz")).send().await.unwrap().status(), 200, "live while draining");
    let late = json!({"name": "echo", "arguments": {"message": "late"}});
    let refused = client.modern(json!(9999), "tools/call", late).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    let refused: Value = refused.json().await.unwrap();
    assert_eq!((refused["id"].clone(), refused["error"]["data"]["reason"].clone()), (json!(9999), json!("draining")));

    // The ledger: one answer per call, the right one.
    let mut ledger = BTreeMap::new();
    for call in calls {
        let outcome = tokio::time::timeout(WAIT, call).await.expect("every call answered in time").unwrap();
        let Outcome { call, response, after } = outcome;
        let era = if call.session.is_some() { "2025-11-25" } else { "2026-07-28" };
        assert_eq!(response["id"], call.id, "{era}: {response}");
        assert!(after.is_empty(), "{era} call {}: nothing after its answer, got {after:?}", call.id);
        if call.quick {
            assert_eq!(response["result"]["content"][0]["text"], "Counted to 15", "{era}: {response}");
        } else {
            assert_eq!(response["error"]["code"], -32603, "{era}: {response}");
            assert_eq!(response["error"]["data"]["reason"], "drain", "{era}: {response}");
            assert_eq!(response["error"]["data"]["drainTimeoutMs"], DRAIN_MS, "{era}: {response}");
        }
        assert!(ledger.insert(call.id, call.quick).is_none(), "call {} answered twice", call.id);
    }
    assert_eq!(ledger.len(), CALLS);
    let finished = ledger.values().filter(|quick| **quick).count();
    eprintln!("drain ledger: {CALLS} calls, {finished} finished, {} stopped at the deadline", CALLS - finished);

    let status = server.wait().await;
    // A figure for the record, not an assertion: the deadline plus the shutdown proper.
    eprintln!("drain: SIGTERM to exit in {} ms (deadline {DRAIN_MS} ms)", signalled.elapsed().as_millis());
    assert!(status.success(), "the drained server exits 0: {status}");
}
