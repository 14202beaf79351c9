//! Hostile input over a real loopback socket, interleaved with good calls of both eras
//! (stateless 2026-07-28 POSTs and 2025-11-25 sessions), a thousand POSTs and more per
//! scenario, each accounted for by the kit's ledger: malformed, truncated, non-object,
//! oversized and deeply nested bodies, wrong `jsonrpc` versions and ids of the wrong type
//! (400 with -32700 or -32600, 413 over the size cap); unknown methods (404 + -32601 on
//! the 2026-07-28 path, the error alone in a session) and invalid params, the peer's text
//! clamped; foreign `Origin` and DNS-rebinding `Host` values (403). Every good call gets
//! its result, the sessions carry on, and the live counts come back to the baseline.

use std::sync::Arc;

use arbor_http::HttpConfig;
use arbor_protocol::reflect::MAX_REFLECTED_CHARS;
use arbor_server::ServerConfig;
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::hostile::{bad_frame, hostile_text, invalid_params, reflection_fault, BadFrame, Era};
use tests::kit::ledger::{Kind, Ledger, Live};
use tests::kit::plan::Fault;
use tests::kit::Seed;

use crate::kit::{call, fault_body, legacy, legacy_answer, live, served, settle};
use crate::support::{Served, MODERN};

/// The body cap: small, so an oversized body costs little, and above a body nested
/// [`tests::kit::hostile::DEPTH`] deep, which the depth check must refuse on its own.
const MAX_BODY: usize = 64 * 1024;

/// The methods of the fixture (tools, completions, logging) whose params are drawn.
const FIXTURE_HAS: [&str; 4] = ["tools/call", "tools/list", "completion/complete", "logging/setLevel"];

/// How many legacy sessions share the run with the stateless POSTs (ledger connection 0).
pub(crate) const SESSIONS: usize = 4;

/// A served fixture with the body cap, its sessions open and pinged, and the baseline.
pub(crate) async fn start() -> (Served, Vec<String>, Live) {
    let http = HttpConfig { max_body_bytes: MAX_BODY, ..HttpConfig::default() };
    let served = served(ServerConfig::default(), http).await;
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        let session = served.initialize("2025-11-25", json!({})).await;
        let ping = json!({"jsonrpc": "2.0", "id": "ready", "method": "ping"});
        assert_eq!(legacy(&served, &session, &ping).await.expect("a pong")["result"], json!({}));
        sessions.push(session);
    }
    let baseline = live(&served).await;
    (served, sessions, baseline)
}

/// Sends `text` as a POST: on the 2026-07-28 path (`session` none; `method` names the
/// `Mcp-Method` header) or in a session. Returns the status and the JSON-RPC answer.
pub(crate) async fn post(served: &Served, session: Option<&str>, method: &str, text: String) -> (u16, Option<Value>) {
    post_with(served, session, method, text, &[]).await
}

/// [`post`] with `extra` headers (a `Host`, an `Origin`).
pub(crate) async fn post_with(
    served: &Served,
    session: Option<&str>,
    method: &str,
    text: String,
    extra: &[(&str, &str)],
) -> (u16, Option<Value>) {
    let mut headers: Vec<(&str, &str)> = match session {
        None => vec![("mcp-protocol-version", MODERN), ("mcp-method", method)],
        Some(session) => vec![("mcp-session-id", session), ("mcp-protocol-version", "2025-11-25")],
    };
    headers.extend_from_slice(extra);
    let response = served.post(&Value::Null, &headers).body(text).send().await.expect("the POST was answered");
    let status = response.status().as_u16();
    (status, legacy_answer(response).await)
}

/// A good call on connection `conn` (0: stateless, else session `conn - 1`), recorded.
pub(crate) async fn good(served: &Served, sessions: &[String], ledger: &Mutex<Ledger>, conn: usize, id: i64) {
    ledger.lock().sent(conn, &json!(id), &[Kind::Result]);
    let answer = match conn {
        0 => call(served, id, Fault::None).await,
        _ => legacy(served, &sessions[conn - 1], &fault_body(&json!(id), Fault::None)).await.expect("an answer"),
    };
    ledger.lock().received(conn, &answer);
}

/// Records an error answer after checking its status and what it reflects.
pub(crate) fn refused(ledger: &Mutex<Ledger>, conn: usize, status: (u16, u16), answer: Option<Value>, what: &str) {
    let answer = answer.unwrap_or_else(|| panic!("{what}: no JSON-RPC answer"));
    assert_eq!(status.0, status.1, "{what}: {answer}");
    if let Some(fault) = reflection_fault(&answer["error"], MAX_REFLECTED_CHARS + 1, 2) {
        panic!("{what}: {fault}: {answer}");
    }
    // At most two reflected members and the product's own words around them.
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.chars().count() <= 2 * (MAX_REFLECTED_CHARS + 1) + 120, "{what}: a long message: {answer}");
    ledger.lock().received(conn, &answer);
}

/// Checks every session still answers, then the ledger and the live counts; shuts down.
pub(crate) async fn finish_run(
    served: Served,
    sessions: Vec<String>,
    baseline: Live,
    ledger: Arc<Mutex<Ledger>>,
) -> String {
    for session in &sessions {
        let ping = json!({"jsonrpc": "2.0", "id": "after", "method": "ping"});
        assert_eq!(legacy(&served, session, &ping).await.expect("a pong")["result"], json!({}), "the session lives");
    }
    let after = settle(&served, baseline).await;
    let summary = Arc::try_unwrap(ledger).expect("the posts are done").into_inner().finish(baseline, after);
    served.finish().await;
    summary.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_oversized_and_deeply_nested_bodies_get_their_status_among_good_calls() {
    let name = "bad bodies among good calls over HTTP";
    let seed = Seed::for_test(name);
    let (served, sessions, baseline) = start().await;
    let ledger = Arc::new(Mutex::new(Ledger::new(name)));
    let mut rng = seed.rng(0);
    let plan: Vec<(usize, Option<BadFrame>)> =
        (0..1200).map(|_| (rng.usize(..=SESSIONS), rng.bool().then(|| BadFrame::pick(&mut rng)))).collect();
    let (served_ref, sessions_ref) = (&served, &sessions);
    let posts = plan.into_iter().enumerate().map(|(n, (conn, shape))| {
        let (ledger, mut rng) = (ledger.clone(), seed.rng(1 + n as u64));
        async move {
            let id = 1000 + n as i64;
            let Some(shape) = shape else { return good(served_ref, sessions_ref, &ledger, conn, id).await };
            let bad = bad_frame(&mut rng, shape, &json!(id), MAX_BODY);
            // Over the cap the body is not read, and one nested too deep is refused by the
            // depth scan before any parse: neither id is known.
            let (status, id) = match shape {
                BadFrame::OversizedIdFirst | BadFrame::OversizedIdLast => (413, Value::Null),
                BadFrame::DeeplyNested => (400, Value::Null),
                _ => (400, bad.id.clone()),
            };
            ledger.lock().sent(conn, &id, &[Kind::Error(bad.code)]);
            let session = (conn > 0).then(|| sessions_ref[conn - 1].as_str());
            let (got, answer) = post(served_ref, session, "tools/call", bad.text).await;
            refused(&ledger, conn, (got, status), answer, &format!("{shape:?} on conn {conn}"));
        }
    });
    futures::stream::iter(posts).buffer_unordered(32).collect::<Vec<()>>().await;
    let summary = finish_run(served, sessions, baseline, ledger).await;
    assert!(summary.contains("error -32700") && summary.contains("error -32600"), "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_methods_and_invalid_params_get_their_codes_with_the_text_clamped_over_http() {
    let name = "unknown methods and invalid params over HTTP";
    let seed = Seed::for_test(name);
    let (served, sessions, baseline) = start().await;
    let ledger = Arc::new(Mutex::new(Ledger::new(name)));
    let mut rng = seed.rng(0);
    let plan: Vec<(usize, u8)> = (0..1200).map(|_| (rng.usize(..=SESSIONS), rng.u8(..3))).collect();
    let (served_ref, sessions_ref) = (&served, &sessions);
    let posts = plan.into_iter().enumerate().map(|(n, (conn, what))| {
        let (ledger, mut rng) = (ledger.clone(), seed.rng(1 + n as u64));
        async move {
            let id = json!(1000 + n);
            let session = (conn > 0).then(|| sessions_ref[conn - 1].as_str());
            let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                              "io.modelcontextprotocol/clientCapabilities": {}});
            match what {
                0 => good(served_ref, sessions_ref, &ledger, conn, 1000 + n as i64).await,
                1 => {
                    // A header carries the method on the 2026-07-28 path, so its name
                    // there is what a header can hold: long, but visible ASCII.
                    let method = match session {
                        None => format!("tools/{}", "x".repeat(rng.usize(1..4000))),
                        Some(_) => tests::kit::hostile::unknown_method(&mut rng),
                    };
                    let params = if session.is_none() { json!({"_meta": meta}) } else { json!({}) };
                    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
                    ledger.lock().sent(conn, &id, &[Kind::Error(-32601)]);
                    let (status, answer) = post(served_ref, session, &method, body.to_string()).await;
                    let expect = if session.is_none() { 404 } else { 200 };
                    refused(&ledger, conn, (status, expect), answer, &format!("unknown method on conn {conn}"));
                }
                _ => {
                    // Invalid params in a session: on the 2026-07-28 path a name or URI
                    // rides a header too, and a mismatch there is -32020 before the params
                    // are read (the header checks have their own tests).
                    let session = session.unwrap_or(sessions_ref[n % SESSIONS].as_str());
                    let conn = 1 + sessions_ref.iter().position(|s| s == session).expect("a session");
                    let text = hostile_text(&mut rng);
                    let (method, params, code) =
                        invalid_params(&mut rng, &text, Era::Legacy, |m| FIXTURE_HAS.contains(&m));
                    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
                    ledger.lock().sent(conn, &id, &[Kind::Error(code)]);
                    let (status, answer) = post(served_ref, Some(session), method, body.to_string()).await;
                    refused(&ledger, conn, (status, 200), answer, &format!("{method} on conn {conn}"));
                }
            }
        }
    });
    futures::stream::iter(posts).buffer_unordered(32).collect::<Vec<()>>().await;
    let summary = finish_run(served, sessions, baseline, ledger).await;
    assert!(summary.contains("error -32601") && summary.contains("error -32602"), "{summary}");
}
