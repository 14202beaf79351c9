//! Issue 11, item 3: one anonymous 2026-07-28 client must not lock out every other.
//!
//! Modern requests share the pooled endpoints of `demo_server` (min(cores, 4) of them).
//! The attack was one client holding hundreds of listens, or thousands of slow calls,
//! until every endpoint's slots were full and every other client's listens and calls
//! (even `echo`) got -32000 "… already in flight for this connection". Here requester A
//! (loopback source 127.0.0.2, over many TCP connections) opens listens, then slow calls,
//! until it is refused; requester B (127.0.0.3) must still be served, and A's refusal must
//! name the bound that refused it: this requester's, which is one share of the whole
//! tenant however many connections, endpoints or legacy sessions A spreads over. The
//! server runs with small shares (flags) so counts stay bounded; waits are bounded too.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use futures::future::join_all;
use serde_json::{json, Value};

use crate::http::{answer, Client, ServerProcess, Sse};

const A: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const B: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));

/// The per-requester shares the server is started with, below one endpoint's own bounds
/// (256 listens, 1,024 requests) and the tenant's (`TENANT`).
const LISTENS_PER_REQUESTER: usize = 48;
const CALLS_PER_REQUESTER: usize = 96;
const TENANT: usize = 160;

/// `demo_server` with those shares.
async fn server() -> ServerProcess {
    let (listens, calls, tenant) =
        (LISTENS_PER_REQUESTER.to_string(), CALLS_PER_REQUESTER.to_string(), TENANT.to_string());
    let args = [
        "--feed-interval-ms",
        "0",
        "--max-listens-per-requester",
        &listens,
        "--max-in-flight-per-requester",
        &calls,
        "--max-in-flight-per-tenant",
        &tenant,
    ];
    ServerProcess::spawn("demo_server", &args).await
}
/// How many listens, and how many slow calls, are opened at once.
const LISTEN_BATCH: usize = 32;
const CALL_BATCH: usize = 64;
/// How long one answer (or a stream's first message) may take.
const WAIT: Duration = Duration::from_secs(15);

/// A 2026-07-28 client whose every connection leaves from `from`.
struct Requester {
    http: reqwest::Client,
    url: String,
}

/// What a request got first: a stream (its first message was a notification) or an answer.
enum First {
    Stream(#[allow(dead_code)] Sse),
    Answer(Value),
}

impl Requester {
    fn new(url: &str, from: IpAddr) -> Requester {
        let http = reqwest::Client::builder().local_address(from).build().expect("a client");
        Requester { http, url: url.to_owned() }
    }

    /// POSTs one 2026-07-28 request and reads what comes first.
    async fn send(&self, id: u64, method: &str, params: Value, name: Option<&str>) -> First {
        let mut params = params;
        let mut meta = crate::http::modern_meta();
        meta["progressToken"] = json!(id);
        params["_meta"] = meta;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .json(&body);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        let response =
            tokio::time::timeout(WAIT, request.send()).await.expect("an answer in time").expect("POST to the server");
        let sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !sse {
            let bytes = tokio::time::timeout(WAIT, response.bytes()).await.expect("a body in time").expect("a body");
            return First::Answer(serde_json::from_slice(&bytes).expect("a JSON answer"));
        }
        let mut events = Sse::new(response);
        let first = events.next_within(WAIT).await.expect("a first message on the stream in time");
        if first.get("id").is_some() && first.get("method").is_none() {
            return First::Answer(first);
        }
        First::Stream(events)
    }

    async fn listen(&self, id: u64) -> First {
        self.send(
            id,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": ["demo://feed"]}}),
            None,
        )
        .await
    }

    /// A `slow_count` that reports progress every 500 ms (its first message, which shows
    /// it was admitted) and runs for 50 s, far longer than the test.
    async fn slow_call(&self, id: u64) -> First {
        let params = json!({"name": "slow_count", "arguments": {"to": 100, "interval_ms": 500}});
        self.send(id, "tools/call", params, Some("slow_count")).await
    }

    async fn echo(&self, id: u64) -> First {
        let params = json!({"name": "echo", "arguments": {"message": "still here"}});
        self.send(id, "tools/call", params, Some("echo")).await
    }
}

/// Opens `open(n)` in batches of `batch` until one is refused or `attempts` were made:
/// the streams admitted (kept open) and the first refusal.
async fn fill<'a, F, Fut>(attempts: usize, batch: usize, open: F) -> (Vec<First>, Option<Value>)
where
    F: Fn(u64) -> Fut,
    Fut: std::future::Future<Output = First> + 'a,
{
    let mut held = Vec::new();
    let mut refusal = None;
    let mut next = 0;
    while refusal.is_none() && next < attempts {
        let opened: Vec<_> = (next..(next + batch).min(attempts)).map(|n| open(n as u64)).collect();
        next += opened.len();
        for first in join_all(opened).await {
            match first {
                stream @ First::Stream(_) => held.push(stream),
                First::Answer(answer) => {
                    refusal.get_or_insert(answer);
                }
            }
        }
    }
    (held, refusal)
}

/// B's probes while A holds what it was given: each an `echo` that must be answered with
/// its text, and a listen that must be acknowledged.
async fn probes(b: &Requester, echoes: u64, listens: u64) -> (usize, usize, Vec<First>) {
    let mut answered = 0;
    for n in 0..echoes {
        match b.echo(10_000 + n).await {
            First::Answer(answer) if answer["result"]["content"][0]["text"] == "still here" => answered += 1,
            First::Answer(answer) => eprintln!("B's echo was refused: {answer}"),
            First::Stream(_) => eprintln!("B's echo streamed instead of answering"),
        }
    }
    let mut streams = Vec::new();
    for n in 0..listens {
        match b.listen(20_000 + n).await {
            stream @ First::Stream(_) => streams.push(stream),
            First::Answer(answer) => eprintln!("B's listen was refused: {answer}"),
        }
    }
    (answered, streams.len(), streams)
}

fn assert_names_the_requester(refusal: &Value, what: &str, limit: usize) {
    let error = &refusal["error"];
    assert_eq!(error["code"], -32000, "{refusal}");
    assert_eq!(error["data"]["reason"], "overloaded", "{refusal}");
    assert_eq!(error["data"]["scope"], "requester", "{refusal}");
    assert_eq!(error["data"]["limit"], limit, "{refusal}");
    assert!(error["data"]["retryAfterMs"].is_u64(), "{refusal}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains(what) && message.contains("for this requester"), "{refusal}");
}

#[tokio::test]
async fn a_requester_holding_its_most_listens_leaves_the_others_their_listens_and_calls() {
    let server = server().await;
    let (a, b) = (Requester::new(&server.url, A), Requester::new(&server.url, B));

    let attempts = LISTENS_PER_REQUESTER + LISTEN_BATCH;
    let (held, refusal) = fill(attempts, LISTEN_BATCH, |n| a.listen(n)).await;
    let (echoes, listens, b_streams) = probes(&b, 5, 3).await;
    eprintln!(
        "item 3, listens: A holds {} listens (refused: {}); B's probes answered: {echoes}/5 echo, {listens}/3 listen",
        held.len(),
        refusal.is_some()
    );

    let refusal = refusal.unwrap_or_else(|| panic!("A opened {attempts} listens and was never refused"));
    assert_names_the_requester(&refusal, "listens", LISTENS_PER_REQUESTER);
    assert_eq!(held.len(), LISTENS_PER_REQUESTER, "A got exactly its share, over all the pool's endpoints");
    assert_eq!((echoes, listens), (5, 3), "B is served while A holds its most listens");

    drop((held, b_streams));
    server.stop().await;
}

#[tokio::test]
async fn a_requester_holding_its_most_slow_calls_leaves_the_others_their_calls() {
    let server = server().await;
    let (a, b) = (Requester::new(&server.url, A), Requester::new(&server.url, B));

    let attempts = CALLS_PER_REQUESTER + CALL_BATCH;
    let (held, refusal) = fill(attempts, CALL_BATCH, |n| a.slow_call(n)).await;
    let (echoes, listens, b_streams) = probes(&b, 5, 1).await;
    // A's own echo waits behind its own bound, not anyone else's.
    let own = a.echo(30_000).await;
    eprintln!(
        "item 3, slow calls: A holds {} calls (refused: {}); B's probes answered: {echoes}/5 echo, {listens}/1 listen",
        held.len(),
        refusal.is_some()
    );

    let refusal = refusal.unwrap_or_else(|| panic!("A made {attempts} slow calls and was never refused"));
    assert_names_the_requester(&refusal, "requests", CALLS_PER_REQUESTER);
    assert_eq!(held.len(), CALLS_PER_REQUESTER, "A got exactly its share, over all the pool's endpoints");
    assert_eq!((echoes, listens), (5, 1), "B is served while A holds its most calls");
    match own {
        First::Answer(answer) => assert_eq!(answer["error"]["data"]["scope"], "requester", "{answer}"),
        First::Stream(_) => panic!("A's echo past its bound was admitted"),
    }

    drop((held, b_streams));
    server.stop().await;
}

/// A legacy `slow_count` in `session`: what its POST sent first (a progress notification
/// on its stream once admitted, or the refusal).
async fn legacy_slow_call(client: &Client, session: &str, id: u64) -> First {
    let params = json!({"name": "slow_count", "arguments": {"to": 100, "interval_ms": 500},
        "_meta": {"progressToken": id}});
    let response =
        client.legacy(Some(session), json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
    let response = tokio::time::timeout(WAIT, response).await.expect("an answer in time");
    let sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !sse {
        return First::Answer(tokio::time::timeout(WAIT, answer(response)).await.expect("a body in time"));
    }
    let mut events = Sse::new(response);
    loop {
        let event = events.next_within(WAIT).await.expect("a message on the stream in time");
        if event.get("id").is_some() && event.get("method").is_none() {
            return First::Answer(event);
        }
        if event.get("method").is_some() {
            return First::Stream(events);
        }
        // A priming event (2025-11-25) carries no message: read on.
    }
}

#[tokio::test]
async fn a_requester_spreading_slow_calls_over_many_legacy_sessions_leaves_the_tenant_to_the_others() {
    // The legacy form of the attack: every session is its own connection with its own
    // bound, so before, four sessions of 40 slow calls filled the tenant (160) and every
    // other client, in either era, was refused "for this tenant".
    let server = server().await;
    let a = Client::from_address(&server.url, A);
    let mut sessions = Vec::new();
    for _ in 0..4 {
        sessions.push(a.open_session().await);
    }
    let mut held = Vec::new();
    let mut refusal = None;
    for round in 0..4u64 {
        let calls = sessions.iter().enumerate().flat_map(|(s, session)| {
            (0..10u64).map(move |n| (session.clone(), 1000 * (s as u64 + 1) + round * 10 + n))
        });
        let answers = join_all(calls.map(|(session, id)| {
            let a = &a;
            async move { legacy_slow_call(a, &session, id).await }
        }))
        .await;
        for first in answers {
            match first {
                stream @ First::Stream(_) => held.push(stream),
                First::Answer(answer) => {
                    refusal.get_or_insert(answer);
                }
            }
        }
    }
    let b = Client::from_address(&server.url, B);
    let b_session = b.open_session().await;
    let legacy_echo = answer(
        b.legacy(
            Some(&b_session),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"message": "still here"}}}),
        )
        .await,
    )
    .await;
    let modern_echo = Requester::new(&server.url, B).echo(2).await;
    eprintln!(
        "item 3, legacy sessions: A holds {} slow calls over 4 sessions (refused: {}); B's legacy echo: {}, modern echo: {}",
        held.len(),
        refusal.is_some(),
        legacy_echo["result"]["content"][0]["text"],
        matches!(&modern_echo, First::Answer(a) if a["result"]["content"][0]["text"] == "still here"),
    );

    let refusal = refusal.unwrap_or_else(|| panic!("A's 160 slow calls over 4 sessions were never refused"));
    assert_names_the_requester(&refusal, "requests", CALLS_PER_REQUESTER);
    assert_eq!(held.len(), CALLS_PER_REQUESTER, "A got exactly its share over its sessions");
    assert_eq!(legacy_echo["result"]["content"][0]["text"], "still here", "{legacy_echo}");
    match modern_echo {
        First::Answer(answer) => assert_eq!(answer["result"]["content"][0]["text"], "still here", "{answer}"),
        First::Stream(_) => panic!("B's modern echo streamed instead of answering"),
    }
    drop(held);
    server.stop().await;
}
