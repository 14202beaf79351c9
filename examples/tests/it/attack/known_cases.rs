//! The cases of the attack that held (issue 11), kept so that they stay true: a real
//! `demo_server` over HTTP, spoken to with raw loopback sockets (`raw.rs`) or the plain
//! JSON client (`http.rs`), and over stdio for the cancel race.
//!
//! Covered: a few hundred seeded random and malformed bodies (4xx with a JSON-RPC error,
//! never 5xx, the server answering after), the size and depth caps, the head checks
//! (Content-Type, Accept, Origin, Host), a header slowloris beside normal traffic, cancels
//! racing completion (each request answered at most once, the session working after),
//! cross-session cancels without effect, and stream churn (legacy standalone GETs and
//! 2026-07-28 listens opened and dropped, fds back to baseline, RSS bounded). Every loop is
//! bounded in count and every wait in time; no assertion is about speed.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::raw::{self, Answer};
use crate::http::{answer, modern_meta, Client, ServerProcess};
use crate::support::Peer;

/// A deterministic generator (xorshift64*), so a failing body can be found again by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A valid 2026-07-28 `tools/call` of `echo`, the base the malformed bodies are cut from.
fn echo_body(id: u64) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "hi"}, "_meta": modern_meta()}});
    serde_json::to_vec(&body).expect("JSON")
}

/// One malformed body of kind `n % 6`: random bytes, a valid body cut short, members of the
/// wrong type, a body that is not a request object, invalid UTF-8 in a string, or junk
/// around a valid body. None of them can be a request the server serves.
fn malformed(rng: &mut Rng, n: usize) -> Vec<u8> {
    match n % 6 {
        0 => (0..1 + rng.below(2000)).map(|_| rng.next() as u8).collect(),
        1 => {
            let body = echo_body(n as u64);
            body[..1 + rng.below(body.len() - 2)].to_vec()
        }
        2 => {
            let wrong = [json!({}), json!([]), json!(true), json!(1.5), json!(null), json!("x")];
            let pick = |rng: &mut Rng| wrong[rng.below(wrong.len())].clone();
            let mut body = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "echo"}});
            match rng.below(4) {
                0 => body["id"] = pick(rng),
                1 => body["method"] = json!(rng.next() % 1000),
                2 => body["jsonrpc"] = json!(["1.0", "2", "", "3.0"][rng.below(4)]),
                _ => body["params"] = json!(["str", "5", "[1]"][rng.below(3)]),
            }
            if let Some(params) = body["params"].as_object_mut().filter(|_| rng.below(2) == 0) {
                params.insert("_meta".into(), modern_meta());
            }
            serde_json::to_vec(&body).expect("JSON")
        }
        3 => {
            let bodies: [&[u8]; 8] = [b"", b"   ", b"null", b"[]", b"42", b"\"text\"", b"[1, 2, 3]", b"{}"];
            bodies[rng.below(bodies.len())].to_vec()
        }
        4 => {
            let mut body = br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": ""#.to_vec();
            body.extend_from_slice(&[0xff, 0xfe, 0xc3, 0x28]);
            body.extend_from_slice(br#""}}"#);
            body
        }
        _ => {
            let mut body = echo_body(n as u64);
            let junk: &[u8] = [&b"}"[..], b",", b"x", b"]", b"{"][rng.below(5)];
            if rng.below(2) == 0 {
                body.extend_from_slice(junk);
            } else {
                body.splice(0..0, junk.iter().copied());
            }
            body
        }
    }
}

/// Whether `answer` is a JSON-RPC error object: `jsonrpc` 2.0, an integer code, a message.
fn is_json_rpc_error(answer: &Answer) -> bool {
    let Ok(body) = serde_json::from_slice::<Value>(&answer.body) else { return false };
    body["jsonrpc"] == "2.0" && body["error"]["code"].is_i64() && body["error"]["message"].is_string()
}

/// A modern `echo` over the plain client: the server still serves.
async fn still_serves(client: &Client, id: u64) {
    let response =
        client.modern(json!(id), "tools/call", json!({"name": "echo", "arguments": {"message": "ok"}})).await;
    assert_eq!(response.status(), 200);
    let answer = answer(response).await;
    assert_eq!(answer["result"]["content"][0]["text"], "ok", "{answer}");
}

#[tokio::test]
async fn random_and_malformed_bodies_get_a_4xx_json_rpc_error_never_a_5xx() {
    let server = ServerProcess::spawn("demo_server", &["--feed-interval-ms", "0"]).await;
    let authority = raw::authority(&server.url).to_owned();
    let mut rng = Rng(0x5eed_0011);
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for n in 0..300 {
        let body = malformed(&mut rng, n);
        let extra = if n % 2 == 0 { "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n" } else { "" };
        let request = raw::post_bytes(&authority, "/mcp", extra, &body);
        let answer = raw::exchange(&authority, &request).await.unwrap_or_else(|| panic!("no answer to body {n}"));
        *statuses.entry(answer.status).or_default() += 1;
        assert!(
            (400..500).contains(&answer.status) && is_json_rpc_error(&answer),
            "body {n} ({:?}) got {} {}",
            String::from_utf8_lossy(&body),
            answer.status,
            String::from_utf8_lossy(&answer.body)
        );
    }
    eprintln!("300 malformed bodies, answers by status: {statuses:?}");
    still_serves(&Client::new(&server.url), 1).await;
    assert!(server.stop().await.success());
}

#[tokio::test]
async fn a_body_over_4_mib_is_413_and_nesting_past_64_is_400_invalid_request() {
    let server = ServerProcess::spawn("demo_server", &["--feed-interval-ms", "0"]).await;
    let authority = raw::authority(&server.url).to_owned();
    let cap = 4 * 1024 * 1024;
    // Declared too long: refused from the head.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
        cap + 1
    );
    let answer = raw::exchange(&authority, head.as_bytes()).await.expect("an answer to the declared length");
    assert_eq!(answer.status, 413, "{}", String::from_utf8_lossy(&answer.body));
    assert!(is_json_rpc_error(&answer));
    // Chunked, so the cap is met while reading: 4 MiB + 64 KiB written by a second handle
    // on the socket while this one reads the answer.
    let mut tcp = raw::connect(&authority).await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    tcp.write_all(head.as_bytes()).await.expect("writing the head");
    let writer = {
        let std = tcp.into_std().expect("a std socket");
        let clone = std.try_clone().expect("a second handle");
        tcp = TcpStream::from_std(std).expect("back to tokio");
        let mut clone = TcpStream::from_std(clone).expect("a tokio handle");
        tokio::spawn(async move {
            let chunk = vec![b' '; 64 * 1024];
            let frame = [format!("{:x}\r\n", chunk.len()).into_bytes(), chunk, b"\r\n".to_vec()].concat();
            for _ in 0..(cap / (64 * 1024) + 1) {
                // The server may stop reading once it has refused: errors end the writing.
                if clone.write_all(&frame).await.is_err() {
                    return;
                }
            }
            let _ = clone.write_all(b"0\r\n\r\n").await;
        })
    };
    let answer = raw::read_answer(&mut tcp, raw::WAIT).await.expect("an answer to the chunked body");
    assert_eq!(answer.status, 413, "{}", String::from_utf8_lossy(&answer.body));
    assert!(is_json_rpc_error(&answer));
    drop(tcp);
    let _ = tokio::time::timeout(raw::WAIT, writer).await;
    // Nesting: 65 levels is refused before parsing, 64 is not a depth error.
    for (depth, refused) in [(65usize, true), (100, true), (10_000, true), (64, false)] {
        let mut body = br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "x", "deep": "#.to_vec();
        // The body itself, `params` and `arguments` are three levels already.
        let nested = depth.saturating_sub(3);
        body.extend(std::iter::repeat_n(b'[', nested));
        body.extend(std::iter::repeat_n(b']', nested));
        body.extend_from_slice(br#"}, "_meta": "#);
        body.extend_from_slice(&serde_json::to_vec(&modern_meta()).expect("JSON"));
        body.extend_from_slice(b"}}");
        let extra = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n";
        let answer = raw::exchange(&authority, &raw::post_bytes(&authority, "/mcp", extra, &body))
            .await
            .expect("an answer to the nested body");
        let json = answer.json();
        if refused {
            assert_eq!((answer.status, json["error"]["code"].as_i64()), (400, Some(-32600)), "depth {depth}: {json}");
        } else {
            assert_eq!(answer.status, 200, "depth {depth}: {json}");
        }
    }
    still_serves(&Client::new(&server.url), 2).await;
    assert!(server.stop().await.success());
}

#[tokio::test]
async fn bad_content_type_accept_origin_and_host_are_refused_with_their_statuses() {
    let server = ServerProcess::spawn("demo_server", &["--feed-interval-ms", "0"]).await;
    let authority = raw::authority(&server.url).to_owned();
    let body = echo_body(1);
    let headers = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n";
    let post = |head: String| {
        let mut request = head.into_bytes();
        request.extend_from_slice(&body);
        request
    };
    let cases = [
        (
            "Content-Type: text/plain",
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: text/plain\r\nAccept: application/json, \
                 text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n",
                body.len()
            ),
            415,
        ),
        (
            "Accept: text/html",
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: text/html\r\n\
                 {headers}Content-Length: {}\r\n\r\n",
                body.len()
            ),
            406,
        ),
        (
            "Origin: http://evil.example",
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, \
                 text/event-stream\r\nOrigin: http://evil.example\r\n{headers}Content-Length: {}\r\n\r\n",
                body.len()
            ),
            403,
        ),
        (
            "Host: evil.example",
            format!(
                "POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\nAccept: application/json, \
                 text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n",
                body.len()
            ),
            403,
        ),
    ];
    for (what, head, status) in cases {
        let answer = raw::exchange(&authority, &post(head)).await.unwrap_or_else(|| panic!("no answer to {what}"));
        assert_eq!(answer.status, status, "{what}: {}", String::from_utf8_lossy(&answer.body));
        assert!(is_json_rpc_error(&answer), "{what}: {}", String::from_utf8_lossy(&answer.body));
    }
    // The same request with good headers is served.
    let good = raw::post_bytes(&authority, "/mcp", headers, &body);
    let answer = raw::exchange(&authority, &good).await.expect("an answer to the good request");
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    assert!(server.stop().await.success());
}

#[tokio::test]
async fn fifty_header_slowloris_connections_do_not_stop_others_and_end_with_the_server() {
    let server = ServerProcess::spawn("demo_server", &["--feed-interval-ms", "0"]).await;
    let authority = raw::authority(&server.url).to_owned();
    let client = Client::new(&server.url);
    still_serves(&client, 0).await;
    let baseline = raw::open_fds(server.pid());
    let mut slow = Vec::new();
    for _ in 0..50 {
        slow.push(raw::connect(&authority).await);
    }
    // One byte of a request head per connection every 100 ms, never the end of the head.
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nX-Pad: ");
    let drip = tokio::spawn(async move {
        for (round, byte) in head.bytes().chain(std::iter::repeat(b'a')).take(30).enumerate() {
            for tcp in &mut slow {
                // A connection the server closed is no longer written to.
                let _ = tcp.write_all(&[byte]).await;
            }
            if round < 29 {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        slow
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let held = raw::open_fds(server.pid());
    let mut answered = 0;
    for id in 1..=20 {
        still_serves(&client, id).await;
        answered += 1;
    }
    let mut slow = tokio::time::timeout(raw::WAIT, drip).await.expect("the drip ends").expect("the drip ran");
    eprintln!("slowloris: fds {baseline} before, {held} with 50 slow heads open; probes answered {answered}/20");
    assert_eq!(answered, 20);
    assert!(held >= baseline + 50, "the slow connections were not held open: {baseline} -> {held}");
    assert!(server.stop().await.success());
    // The server is gone: every slow connection reads its end (or a reset), none hangs.
    for tcp in &mut slow {
        let mut buf = [0u8; 1024];
        loop {
            match tokio::time::timeout(raw::WAIT, tcp.read(&mut buf)).await.expect("the connection ended") {
                Ok(0) | Err(_) => break,
                // A 408 or the like before the end is fine.
                Ok(_) => continue,
            }
        }
    }
}

/// How many JSON-RPC responses with `id` a POST's body carries (JSON or SSE).
fn responses_in(body: &[u8], id: u64) -> usize {
    let text = String::from_utf8_lossy(body);
    let messages: Vec<Value> = if let Ok(value) = serde_json::from_str::<Value>(&text) {
        vec![value]
    } else {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    };
    messages.iter().filter(|m| m.get("method").is_none() && m["id"] == id).count()
}

#[tokio::test]
async fn cancels_racing_completion_answer_each_request_at_most_once_and_the_session_goes_on() {
    // Over stdio: a call taking 20 ms cancelled after 0 to 38 ms, 40 times.
    let mut peer = Peer::spawn("demo_server");
    peer.initialize("2025-11-25", json!({})).await;
    for round in 0..40u64 {
        let id = 100 + round;
        peer.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "slow_count", "arguments": {"to": 1, "interval_ms": 20}}}))
            .await;
        tokio::time::sleep(Duration::from_millis((round % 20) * 2)).await;
        peer.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})).await;
    }
    // Every response until those of a ping and an echo sent after the last cancel (the
    // calls take 20 ms: by then each has been answered or stopped), then any straggler.
    let mut answers = std::collections::HashMap::<u64, usize>::new();
    let mut count = |message: &Value| {
        if let (None, Some(id)) = (message.get("method"), message["id"].as_u64()) {
            *answers.entry(id).or_default() += 1;
        }
    };
    peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await;
    peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "after"}}}))
        .await;
    let mut echo = Value::Null;
    for _ in 0..1000 {
        let message = peer.recv().await;
        count(&message);
        if message["id"] == 2 {
            echo = message;
            break;
        }
    }
    while let Some(message) = peer.recv_within(Duration::from_millis(300)).await {
        count(&message);
    }
    let answered = (100..140).filter(|id| answers.contains_key(id)).count();
    eprintln!("stdio cancel race: {answered}/40 calls answered (the rest cancelled in time)");
    assert!(answers.values().all(|&n| n == 1), "a request answered twice: {answers:?}");
    assert_eq!(answers.get(&1), Some(&1), "the ping after the race: {answers:?}");
    assert_eq!(echo["result"]["content"][0]["text"], "after", "{echo}");
    assert!(peer.close().await.success());

    // Over HTTP, in one legacy session: each POST carries at most one response.
    let server = ServerProcess::spawn("demo_server", &["--feed-interval-ms", "0"]).await;
    let client = Client::new(&server.url);
    let session = client.open_session().await;
    let (mut statuses, mut answered) = (std::collections::BTreeMap::<u16, usize>::new(), 0);
    for round in 0..30u64 {
        let id = 200 + round;
        let call = client.legacy(
            Some(&session),
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "slow_count", "arguments": {"to": 1, "interval_ms": 20}}}),
        );
        let cancel = async {
            tokio::time::sleep(Duration::from_millis((round % 15) * 3)).await;
            let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}});
            client.legacy(Some(&session), cancel).await.status()
        };
        let (response, cancelled) = tokio::join!(call, cancel);
        assert_eq!(cancelled, 202);
        *statuses.entry(response.status().as_u16()).or_default() += 1;
        let body = tokio::time::timeout(raw::WAIT, response.bytes()).await.expect("the POST ended").expect("a body");
        let responses = responses_in(&body, id);
        assert!(responses <= 1, "round {round}: {}", String::from_utf8_lossy(&body));
        answered += responses;
        let ping =
            client.legacy(Some(&session), json!({"jsonrpc": "2.0", "id": 10_000 + round, "method": "ping"})).await;
        assert_eq!(answer(ping).await["result"], json!({}));
    }
    eprintln!("HTTP cancel race, 30 rounds: {answered} calls answered, POST statuses {statuses:?}");
    assert!(server.stop().await.success());
}

#[tokio::test]
async fn a_cancel_from_another_session_or_exchange_has_no_effect() {
    let server = ServerProcess::spawn("demo_server", &["--feed-interval-ms", "0"]).await;
    let client = Client::new(&server.url);
    let (a, b) = (client.open_session().await, client.open_session().await);
    let count = json!({"name": "slow_count", "arguments": {"to": 3, "interval_ms": 100}});
    let call = client.legacy(Some(&a), json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": count}));
    let meddle = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}});
        client.legacy(Some(&b), cancel).await.status()
    };
    let (response, meddled) = tokio::join!(call, meddle);
    assert_eq!(meddled, 202);
    let legacy = answer(response).await;
    assert_eq!(legacy["result"]["content"][0]["text"], "Counted to 3", "{legacy}");
    // 2026-07-28: a cancel in another exchange names no request of this one.
    let call = client.modern(json!(8), "tools/call", count.clone());
    let meddle = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8}});
        cancel["params"]["_meta"] = modern_meta();
        reqwest::Client::new()
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "notifications/cancelled")
            .body(cancel.to_string())
            .send()
            .await
            .expect("POST")
            .status()
    };
    let (response, meddled) = tokio::join!(call, meddle);
    assert!(meddled.is_success() || meddled.is_client_error(), "{meddled}");
    let modern = answer(response).await;
    assert_eq!(modern["result"]["content"][0]["text"], "Counted to 3", "{modern}");
    assert!(server.stop().await.success());
}

/// Reads from `tcp` until `needle` has arrived (true) or `within` passes or it ends (false).
async fn read_until(tcp: &mut TcpStream, needle: &[u8], within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if seen.windows(needle.len()).any(|w| w == needle) {
            return true;
        }
        match tokio::time::timeout_at(deadline, tcp.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => seen.extend_from_slice(&chunk[..n]),
            _ => return false,
        }
    }
}

/// Polls `pid`'s fd count (bounded) until it is at most `target`; the last count.
async fn fds_settle(pid: u32, target: usize) -> usize {
    let mut fds = raw::open_fds(pid);
    for _ in 0..100 {
        if fds <= target {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        fds = raw::open_fds(pid);
    }
    fds
}

#[tokio::test]
async fn opening_and_dropping_300_sse_streams_gives_the_fds_back_and_keeps_rss_bounded() {
    let server = ServerProcess::spawn("demo_server", &["--feed-interval-ms", "0"]).await;
    let (authority, pid) = (raw::authority(&server.url).to_owned(), server.pid());
    let client = Client::new(&server.url);
    let session = client.open_session().await;
    let standalone = format!(
        "GET /mcp HTTP/1.1\r\nHost: {authority}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         MCP-Protocol-Version: 2025-11-25\r\n\r\n"
    );
    let listen = |id: usize| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": true}, "_meta": modern_meta()}});
        let extra = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n";
        raw::post_bytes(&authority, "/mcp", extra, body.to_string().as_bytes())
    };
    let churn = |from: usize, count: usize| {
        let (authority, standalone) = (authority.clone(), standalone.clone());
        async move {
            for n in from..from + count {
                let mut tcp = raw::connect(&authority).await;
                let (request, needle): (Vec<u8>, &[u8]) = if n % 2 == 0 {
                    (standalone.as_bytes().to_vec(), b"\r\n\r\n")
                } else {
                    (listen(n), b"notifications/subscriptions/acknowledged")
                };
                tcp.write_all(&request).await.expect("writing the request");
                assert!(read_until(&mut tcp, needle, raw::WAIT).await, "stream {n} did not open");
                // Dropped mid-stream, as a client that goes away.
            }
        }
    };
    // A warm-up, so lazily made runtime resources are in the baseline.
    churn(0, 10).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (fds_before, rss_before) = (raw::open_fds(pid), raw::rss_kib(pid));
    churn(10, 300).await;
    let peak = raw::open_fds(pid);
    let (fds_after, rss_after) = (fds_settle(pid, fds_before + 4).await, raw::rss_kib(pid));
    eprintln!(
        "stream churn, 300 streams (150 standalone GETs, 150 listens): fds {fds_before} -> {fds_after} (just after \
         the churn {peak}); RSS {rss_before} KiB -> {rss_after} KiB"
    );
    assert!(fds_after <= fds_before + 4, "fds did not come back: {fds_before} -> {fds_after}");
    assert!(rss_after < rss_before + 64 * 1024, "RSS grew past the bound: {rss_before} -> {rss_after} KiB");
    still_serves(&client, 1).await;
    assert!(server.stop().await.success());
}

#[tokio::test]
async fn header_slowloris_connections_are_closed_by_the_header_timeout_while_the_server_runs() {
    // The same drip as above against a 1 s header timeout: each connection is closed by the
    // server itself, long before the drip (one byte every 200 ms, at most 50 rounds) ends,
    // and the server's descriptors come back to their baseline while it keeps serving.
    let server = ServerProcess::spawn("demo_server", &["--feed-interval-ms", "0", "--header-timeout-ms", "1000"]).await;
    let authority = raw::authority(&server.url).to_owned();
    let client = Client::new(&server.url);
    still_serves(&client, 0).await;
    let baseline = raw::open_fds(server.pid());
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nX-Pad: ");
    let mut drips = Vec::new();
    for _ in 0..50 {
        let mut tcp = raw::connect(&authority).await;
        let head = head.clone();
        drips.push(tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            for byte in head.bytes().chain(std::iter::repeat(b'a')).take(50) {
                if tcp.write_all(&[byte]).await.is_err() {
                    return true;
                }
                // Wait 200 ms for the server's end between bytes (a 408 may come first).
                let until = tokio::time::Instant::now() + Duration::from_millis(200);
                loop {
                    match tokio::time::timeout_at(until, tcp.read(&mut buf)).await {
                        Ok(Ok(0)) | Ok(Err(_)) => return true,
                        Ok(Ok(_)) => continue,
                        Err(_) => break,
                    }
                }
            }
            false
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = raw::open_fds(server.pid());
    still_serves(&client, 1).await;
    let mut closed_by_server = 0;
    for drip in drips {
        if tokio::time::timeout(raw::WAIT, drip).await.expect("the drip ends").expect("the drip ran") {
            closed_by_server += 1;
        }
    }
    // The server closes its side as the timeout fires; give the descriptors a moment (bounded).
    let mut after = raw::open_fds(server.pid());
    for _ in 0..50 {
        if after <= baseline + 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = raw::open_fds(server.pid());
    }
    eprintln!(
        "slowloris (1 s header timeout): fds {baseline} before, {held} held, {after} after; \
         closed by the server {closed_by_server}/50"
    );
    assert!(held >= baseline + 50, "the slow connections were not held open: {baseline} -> {held}");
    assert_eq!(closed_by_server, 50, "every slow head is closed by the header timeout, not by the drip ending");
    assert!(after <= baseline + 2, "descriptors not given back: {baseline} -> {after}");
    still_serves(&client, 2).await;
    assert!(server.stop().await.success());
}
