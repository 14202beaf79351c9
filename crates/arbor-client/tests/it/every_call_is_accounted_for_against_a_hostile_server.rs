//! The client's safety checks under load against a hostile scripted server (2025-11-25,
//! in memory, on the paused clock): while 1,200 calls are in flight, the server answers
//! ids never sent (numbers and strings), answers twice, sends frames over the client's
//! cap, garbage and error responses without an id, asks for sampling the client never
//! declared, asks for URL elicitation with forbidden schemes, asks for the roots (the
//! handler's answer holds roots outside what may leave the client), and leaves calls
//! unanswered. Every call ends exactly one way (its result, its typed error, or its
//! timeout), by the kit's ledger; every refused server request gets its JSON-RPC error,
//! every roots answer only the local file roots; the malformed frames are counted, not
//! fatal; and the client still answers a ping at the end.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arbor_client::handler::{ClientLimits, HandlerBuilder, RateLimit};
use arbor_client::{CallOptions, ClientError, ClientOptions};
use arbor_protocol::model::elicitation::{ElicitResult, ElicitationMode};
use arbor_protocol::model::roots::{ListRootsResult, Root};
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::ledger::{Kind, Ledger, Live};
use tests::kit::Seed;

use crate::scripted::{connect_framed, Script};

/// The client's frame cap.
const MAX_FRAME: usize = 8 * 1024;
const CALLS: usize = 1200;

/// What the server does around its answer to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Hostility {
    /// Answers, and nothing else.
    Plain,
    /// Answers ids never sent first (a number and a string).
    StrayIds,
    /// Answers twice.
    Twice,
    /// Sends a frame over the client's cap first.
    Oversized,
    /// Sends garbage first: not JSON, not an object, an error with no id.
    Garbage,
    /// Answers with a JSON-RPC error.
    Error,
    /// Asks for sampling, which the client never declared, first.
    UndeclaredSampling,
    /// Asks for URL elicitation with a forbidden URL first.
    ForbiddenUrl,
    /// Asks for the roots first.
    Roots,
    /// Never answers: the call's timeout ends it.
    Silent,
}

const ALL: [Hostility; 10] = [
    Hostility::Plain,
    Hostility::StrayIds,
    Hostility::Twice,
    Hostility::Oversized,
    Hostility::Garbage,
    Hostility::Error,
    Hostility::UndeclaredSampling,
    Hostility::ForbiddenUrl,
    Hostility::Roots,
    Hostility::Silent,
];

/// The hostility of call `n`: both sides draw it from the seed, so the client knows the
/// outcome to expect and the server what to do, whatever order the calls arrive in.
fn hostility(seed: &Seed, n: u64) -> Hostility {
    ALL[seed.rng(n).usize(..ALL.len())]
}

const FORBIDDEN_URLS: [&str; 5] = [
    "javascript:alert(1)",
    "file:///etc/passwd",
    "http://mcp.example/login",
    "https://u:p@mcp.example/",
    "data:text/html,x",
];

/// What the server checks of the client's answers to its own requests, by their ids.
#[derive(Default)]
struct Checks {
    /// Server request id → the error code the client must answer with (`None`: roots).
    asked: HashMap<String, Option<i64>>,
    answered: usize,
    malformed_sent: u64,
}

/// The hostile server: reads the client's frames until `stop`, acting on each call.
async fn hostile_server(
    mut script: Script,
    seed: Seed,
    checks: Arc<Mutex<Checks>>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let mut stop = stop;
    let mut asked = 0u64;
    loop {
        let frame = tokio::select! {
            frame = script.recv() => frame,
            _ = &mut stop => return,
        };
        if frame.get("method").is_none() {
            // The client's answer to one of our requests.
            let key = frame["id"].to_string();
            let expect = checks.lock().asked.remove(&key).unwrap_or_else(|| panic!("an answer to what? {frame}"));
            match expect {
                Some(code) => assert_eq!(frame["error"]["code"], code, "{frame}"),
                None => {
                    let roots: Vec<&str> = frame["result"]["roots"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| r["uri"].as_str().unwrap())
                        .collect();
                    assert_eq!(roots, ["file:///work/repo"], "only the local file root leaves the client: {frame}");
                }
            }
            checks.lock().answered += 1;
            continue;
        }
        if frame.get("id").is_none() || frame["method"] == "ping" {
            if frame["method"] == "ping" {
                script.send(json!({"jsonrpc": "2.0", "id": frame["id"], "result": {}}));
            }
            continue; // notifications: cancels of timed-out calls, and the like
        }
        let id = frame["id"].clone();
        let n = frame["params"]["arguments"]["n"].as_u64().expect("a numbered call");
        let answer =
            json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": format!("{n}")}]}});
        let mut ask = |method: &str, params: Value, expect: Option<i64>| {
            asked += 1;
            let key = json!(format!("s{asked}"));
            checks.lock().asked.insert(key.to_string(), expect);
            script.send(json!({"jsonrpc": "2.0", "id": key, "method": method, "params": params}));
        };
        match hostility(&seed, n) {
            Hostility::Plain | Hostility::Error | Hostility::Silent => {}
            Hostility::StrayIds => {
                script.send(json!({"jsonrpc": "2.0", "id": 1_000_000_000 + n, "result": {}}));
                script.send(json!({"jsonrpc": "2.0", "id": format!("stray-{n}"), "result": {}}));
                checks.lock().malformed_sent += 1; // a string id is never one of the client's
            }
            Hostility::Twice => script.send(answer.clone()),
            Hostility::Oversized => {
                let pad = "x".repeat(MAX_FRAME + 1);
                script.send_raw(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"pad":"{pad}"}}}}"#).as_bytes());
                checks.lock().malformed_sent += 1;
            }
            Hostility::Garbage => {
                for junk in [&b"{not json"[..], b"42", br#"{"jsonrpc":"2.0","error":{"code":-1,"message":"no id"}}"#] {
                    script.send_raw(junk);
                }
                checks.lock().malformed_sent += 3;
            }
            Hostility::UndeclaredSampling => {
                let params =
                    json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5});
                ask("sampling/createMessage", params, Some(-32601));
            }
            Hostility::ForbiddenUrl => {
                let url = FORBIDDEN_URLS[(n as usize) % FORBIDDEN_URLS.len()];
                let params = json!({"mode": "url", "message": "m", "url": url, "elicitationId": format!("e{n}")});
                ask("elicitation/create", params, Some(-32602));
            }
            Hostility::Roots => ask("roots/list", json!({}), None),
        }
        match hostility(&seed, n) {
            Hostility::Silent => {}
            Hostility::Error => {
                script.send(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "no such thing"}}))
            }
            _ => script.send(answer),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn every_call_ends_one_way_and_every_hostile_frame_is_checked() {
    let name = "client against a hostile server";
    let seed = Seed::for_test(name);
    let handler = HandlerBuilder::new()
        .elicitation(vec![ElicitationMode::Form, ElicitationMode::Url], |_, _| async { Ok(ElicitResult::decline()) })
        .roots(|_| async {
            let roots = ["file:///work/./repo", "https://evil.example/x", "file://server/share", "not a uri"];
            Ok(ListRootsResult::new(roots.iter().map(|uri| Root::new(*uri)).collect()))
        })
        .build();
    let limits = ClientLimits {
        max_server_requests: 1000,
        input_rate: RateLimit::new(100_000, 100_000),
        ..ClientLimits::default()
    };
    let options = ClientOptions::new("hostile-test", "1").handler_arc(handler).limits(limits);
    let (client, script, _) = connect_framed(options, Some(MAX_FRAME)).await;
    let checks = Arc::new(Mutex::new(Checks::default()));
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let server = tokio::spawn(hostile_server(script, seed.clone(), checks.clone(), stopped));
    let ledger = Arc::new(Mutex::new(Ledger::new(name)));
    let counts = Arc::new(Mutex::new(HashMap::<Hostility, usize>::new()));
    let calls = (0..CALLS as u64).map(|n| {
        let (client, ledger, counts, seed) = (client.clone(), ledger.clone(), counts.clone(), seed.clone());
        async move {
            let hostility = hostility(&seed, n);
            *counts.lock().entry(hostility).or_default() += 1;
            let expect = match hostility {
                Hostility::Error => Kind::Error(-32602),
                Hostility::Silent => Kind::Timeout,
                _ => Kind::Result,
            };
            ledger.lock().sent(0, &json!(n), &[expect]);
            let options = CallOptions::new().timeout(Duration::from_secs(30));
            let outcome = match client.call_tool_with("t", json!({"n": n}), options).await {
                Ok(result) => {
                    assert_eq!(serde_json::to_value(&result).unwrap()["content"][0]["text"], format!("{n}"));
                    json!({"id": n, "result": {}})
                }
                Err(ClientError::Rpc(e)) => json!({"id": n, "error": e.to_error_object()}),
                Err(ClientError::Timeout(after)) => json!({"id": n, "error": {"code": -32603, "message": "t",
                                                                            "data": {"timeoutMs": after.as_millis() as u64}}}),
                Err(other) => panic!("call {n} ({hostility:?}) ended with {other}"),
            };
            ledger.lock().received(0, &outcome);
        }
    });
    futures::stream::iter(calls).buffer_unordered(64).collect::<Vec<()>>().await;
    // The client still serves.
    client.ping().await.expect("the client still answers");
    let in_flight = client.handler_runtime().map_or(0, |r| r.requests_in_flight());
    let summary = Arc::try_unwrap(ledger)
        .expect("the calls are done")
        .into_inner()
        .finish(Live::default(), Live { requests: in_flight, ..Live::default() });
    let _ = stop.send(());
    server.await.expect("the hostile server's checks held");
    {
        let checks = checks.lock();
        println!("[kit] {name}: hostilities {:?}", counts.lock());
        let unanswered: Vec<_> = checks.asked.keys().collect();
        assert!(unanswered.is_empty(), "every server request was answered: {unanswered:?}");
        assert_eq!(client.malformed_messages(), checks.malformed_sent, "every malformed frame counted once");
        assert_eq!(counts.lock().len(), ALL.len(), "every hostility was used");
        assert!(summary.requests >= 1000 && checks.answered > 0, "{summary}");
    }
    client.close().await;
}
