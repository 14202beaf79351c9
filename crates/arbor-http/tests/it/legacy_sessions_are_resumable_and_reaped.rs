//! 2025-03-26 … 2025-11-25 over HTTP: `initialize` mints a session id, every other
//! request must name a live session (400 without, 404 unknown or ended), DELETE ends it,
//! an idle one is reaped; the standalone GET stream carries `list_changed` and resumes
//! from `Last-Event-ID`; a POST stream carries a server-to-client request whose answer is
//! a separate POST; SEP-1699 polling closes a waiting stream after its priming event and
//! the client resumes it; the 2024-11-05 HTTP+SSE transport sends its endpoint event; a
//! 2025-11-25 task's `notifications/tasks/status` come on the standalone stream, and the
//! task keeps no POST stream open.

use std::time::Duration;

use arbor_http::HttpConfig;
use serde_json::{json, Value};

use crate::support::{serve, until, Served, SseReader};

fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

#[tokio::test]
async fn a_session_is_named_on_every_request_until_deleted() {
    let s = serve(HttpConfig::default()).await;
    let session = s.initialize("2025-06-18", json!({})).await;
    assert_eq!(session.len(), 32);
    assert!(session.bytes().all(|b| b.is_ascii_hexdigit()));
    let headers = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-06-18")];

    let response = s.post(&call(1, "echo", json!({"message": "hi"})), &headers).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["content"][0]["text"], "hi", "{body}");

    let without = s.post(&call(2, "echo", json!({"message": "hi"})), &[]).send().await.unwrap();
    assert_eq!(without.status(), 400);
    let unknown =
        s.post(&call(3, "echo", json!({"message": "hi"})), &[("mcp-session-id", "nope")]).send().await.unwrap();
    assert_eq!(unknown.status(), 404);
    let bad_version = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", "1999-01-01")];
    let refused = s.post(&call(4, "echo", json!({"message": "hi"})), &bad_version).send().await.unwrap();
    assert_eq!(refused.status(), 400);

    let deleted = s.client.delete(&s.url).header("mcp-session-id", &session).send().await.unwrap();
    assert!(deleted.status().is_success());
    assert_eq!(s.http.stats().sessions, 0);
    let after = s.post(&call(5, "echo", json!({"message": "hi"})), &headers).send().await.unwrap();
    assert_eq!(after.status(), 404);
    let get = s.client.get(&s.url).header("mcp-session-id", &session).send().await.unwrap();
    assert_eq!(get.status(), 404);
    s.finish().await;
}

#[tokio::test]
async fn an_idle_session_is_reaped_but_one_with_an_open_stream_is_not() {
    let config = HttpConfig { session_idle_timeout: Duration::from_millis(50), ..HttpConfig::default() };
    let s = serve(config).await;
    let watched = s.initialize("2025-11-25", json!({})).await;
    let stream = s
        .client
        .get(&s.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &watched)
        .send()
        .await
        .unwrap();
    let idle = s.initialize("2025-11-25", json!({})).await;
    until("the idle session reaped", || s.http.stats().sessions == 1).await;
    let gone = s.post(&call(1, "echo", json!({"message": "hi"})), &[("mcp-session-id", &idle)]).send().await.unwrap();
    assert_eq!(gone.status(), 404);
    let kept =
        s.post(&call(2, "echo", json!({"message": "hi"})), &[("mcp-session-id", &watched)]).send().await.unwrap();
    assert_eq!(kept.status(), 200, "a session whose stream is open is in use");
    drop(stream);
    until("the watched session reaped once its stream closed", || s.http.stats().sessions == 0).await;
    s.finish().await;
}

async fn get_stream(s: &Served, session: &str, last_event_id: Option<&str>) -> SseReader {
    let mut request = s.client.get(&s.url).header("accept", "text/event-stream").header("mcp-session-id", session);
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    SseReader::new(response)
}

#[tokio::test]
async fn the_standalone_stream_carries_list_changed_and_resumes_after_last_event_id() {
    let s = serve(HttpConfig::default()).await;
    let session = s.initialize("2025-11-25", json!({})).await;
    let mut events = get_stream(&s, &session, None).await;
    let priming = events.next().await.unwrap();
    assert_eq!((priming.id.as_deref(), priming.retry, priming.data.as_str()), (Some("0-0"), Some(1000), ""));

    s.handle.remove_tool("echo");
    let changed = events.next_data().await;
    assert_eq!(changed.json()["method"], "notifications/tools/list_changed");
    assert_eq!(changed.id.as_deref(), Some("0-1"));
    drop(events);

    // A change while nobody reads is kept, and replayed after the last id seen.
    s.handle.remove_tool("nap");
    let mut resumed = get_stream(&s, &session, Some("0-1")).await;
    let replayed = resumed.next_data().await;
    assert_eq!(replayed.json()["method"], "notifications/tools/list_changed");
    assert_eq!(replayed.id.as_deref(), Some("0-2"));
    // Shutting down with the stream open ends it, and `run` returns.
    s.finish().await;
    assert!(resumed.next().await.is_none(), "shutdown ended the stream");
}

#[tokio::test]
async fn an_idle_standalone_stream_sends_keep_alives_every_period_until_shutdown() {
    let keep_alive = std::time::Duration::from_millis(100);
    let s = serve(HttpConfig { keep_alive, ..HttpConfig::default() }).await;
    let session = s.initialize("2025-06-18", json!({})).await;
    // Taken before the GET is sent: the server starts the stream's period after it reads
    // the request, so no keep-alive can be due before `opened + period` (taken once the
    // answer's head arrived, a slow machine saw the first at 96 ms of a 100 ms period).
    let opened = std::time::Instant::now();
    let response = s
        .client
        .get(&s.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    use futures::StreamExt;
    let mut body = response.bytes_stream();
    let mut seen = Vec::new();
    // Nothing else is sent on it: each chunk is one keep-alive comment.
    while seen.len() < 4 {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(5), body.next())
            .await
            .expect("a keep-alive in time")
            .expect("the stream is open")
            .unwrap();
        assert_eq!(&chunk[..], b":\n\n");
        seen.push(opened.elapsed());
    }
    for (n, at) in seen.iter().enumerate() {
        let due = keep_alive * (n as u32 + 1);
        assert!(*at >= due, "keep-alive {n} came at {at:?}, before {due:?}");
    }
    // A shutdown ends the idle stream (its body waits for it with nothing else to wake it).
    s.finish().await;
    let end = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while let Some(chunk) = body.next().await {
            if chunk.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(end.is_ok(), "shutdown ended the stream");
}

/// The elicitation request goes out on the POST's stream; its answer is a POST of its own
/// (202), and the tool's result then ends the stream.
async fn ask_round_trip(s: &Served, version: &str, events: &mut SseReader, session: &str) -> Value {
    let asked = events.next_data().await;
    let question = asked.json();
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let answer =
        json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    let headers = [("mcp-session-id", session), ("mcp-protocol-version", version)];
    let answered = s.post(&answer, &headers).send().await.unwrap();
    assert_eq!(answered.status(), 202);
    question
}

#[tokio::test]
async fn a_post_stream_carries_an_elicitation_round_trip() {
    let s = serve(HttpConfig::default()).await;
    let session = s.initialize("2025-06-18", json!({"elicitation": {}})).await;
    let headers = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-06-18")];
    let response = s.post(&call(9, "ask", json!({})), &headers).send().await.unwrap();
    let mut events = SseReader::new(response);
    ask_round_trip(&s, "2025-06-18", &mut events, &session).await;
    let done = events.next_data().await;
    assert_eq!(done.json()["result"]["content"][0]["text"], "hello Ada", "{done:?}");
    let (first, second) = (done.id.as_deref().unwrap(), "-2");
    assert!(first.ends_with(second), "ids count per stream: {first}");
    assert!(events.next().await.is_none(), "the stream ends with the response");
    s.finish().await;
}

#[tokio::test]
async fn polling_closes_a_waiting_stream_and_the_client_resumes_it() {
    let config = HttpConfig { sse_polling: Some(Duration::from_millis(30)), ..HttpConfig::default() };
    let s = serve(config).await;
    let session = s.initialize("2025-11-25", json!({"elicitation": {}})).await;
    let headers = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-11-25")];
    let response = s.post(&call(9, "ask", json!({})), &headers).send().await.unwrap();
    let mut events = SseReader::new(response);
    let priming = events.next().await.unwrap();
    assert_eq!((priming.data.as_str(), priming.retry), ("", Some(1000)));
    let stream = priming.id.unwrap().split_once('-').unwrap().0.to_owned();
    // The question is out; nobody answers it within the polling interval, so the server
    // ends the response (the request runs on).
    let question = events.next_data().await;
    let last = question.id.clone().unwrap();
    assert!(events.next().await.is_none(), "the server closed the stream");

    let answer = json!({"jsonrpc": "2.0", "id": question.json()["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    assert_eq!(s.post(&answer, &headers).send().await.unwrap().status(), 202);
    let mut resumed = get_stream(&s, &session, Some(&last)).await;
    let done = resumed.next_data().await;
    assert_eq!(done.json()["result"]["content"][0]["text"], "hello Ada", "{done:?}");
    assert!(done.id.unwrap().starts_with(&format!("{stream}-")), "the resumed stream is the POST's");
    s.finish().await;
}

#[tokio::test]
async fn the_2024_transport_names_its_post_endpoint_and_answers_on_the_stream() {
    let config = HttpConfig { legacy_sse: true, ..HttpConfig::default() };
    let s = serve(config).await;
    let response = s.client.get(format!("{}/sse", s.base)).header("accept", "text/event-stream").send().await.unwrap();
    let mut events = SseReader::new(response);
    let endpoint = events.next().await.unwrap();
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    assert!(endpoint.data.starts_with("/messages?sessionId="), "{endpoint:?}");
    let post_url = format!("{}{}", s.base, endpoint.data);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}});
    let send =
        |body: Value| s.client.post(&post_url).header("content-type", "application/json").body(body.to_string()).send();
    assert_eq!(send(init).await.unwrap().status(), 202);
    let answer = events.next_data().await;
    assert_eq!(answer.event.as_deref(), Some("message"));
    assert_eq!(answer.json()["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await.unwrap().status(), 202);
    assert_eq!(send(call(2, "echo", json!({"message": "old"}))).await.unwrap().status(), 202);
    let echoed = events.next_data().await.json();
    assert_eq!(echoed["result"]["content"][0]["text"], "old", "{echoed}");
    assert_eq!(s.http.stats().sse_sessions, 1);
    drop(events);
    until("the session closed with its stream", || s.http.stats().sse_sessions == 0).await;
    assert_eq!(send(call(3, "echo", json!({"message": "x"}))).await.unwrap().status(), 404);
    s.finish().await;
}

/// A 2025-11-25 task created by a POST: the POST's answer ends at once (the task does not
/// hold its route), and the task's terminal status comes on the session's GET stream.
#[tokio::test]
async fn a_2025_11_25_tasks_status_comes_on_the_standalone_stream() {
    let router = arbor_server::Router::new("tasks-over-http", "1").tool_route(crate::support::background_task());
    let http = arbor_http::HttpServer::with_config(
        arbor_server::Server::new(router),
        HttpConfig::default().bind("127.0.0.1:0".parse().unwrap()),
    );
    let bound = http.bind().await.expect("bind");
    let url = format!("http://{}/mcp", bound.local_addr());
    let stop = bound.shutdown_handle();
    let run = tokio::spawn(bound.run());
    let client = reqwest::Client::builder().timeout(crate::support::PATIENCE).build().unwrap();
    let post = |body: Value, session: Option<&str>| {
        let request = tests::peer::http::post(&client, &url, &body);
        match session {
            Some(session) => request.header("mcp-session-id", session.to_owned()),
            None => request,
        }
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    let response = post(init, None).send().await.unwrap();
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let _ = response.bytes().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(initialized, Some(&session)).send().await.unwrap().status(), 202);
    let get = client.get(&url).header("accept", "text/event-stream").header("mcp-session-id", &session);
    let mut events = SseReader::new(get.send().await.unwrap());

    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "background", "arguments": {}, "task": {"ttl": 60_000}}});
    let response = post(call, Some(&session)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    // The whole answer, read to its end well before the task's TTL: the route was let go.
    let body = String::from_utf8(response.bytes().await.unwrap().to_vec()).unwrap();
    let line = body.lines().find(|l| l.contains("taskId")).unwrap_or_else(|| panic!("{body}"));
    let created: Value = serde_json::from_str(line.trim_start_matches("data:").trim()).unwrap();
    let id = created["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();

    let status = loop {
        let event = events.next_data().await.json();
        if event["method"] == "notifications/tasks/status" {
            break event;
        }
    };
    assert_eq!(status["params"]["taskId"], json!(id), "{status}");
    assert_eq!(status["params"]["status"], "completed", "{status}");
    assert_eq!(status["params"]["ttl"], 60_000);
    stop.shutdown();
    tokio::time::timeout(crate::support::PATIENCE, run).await.unwrap().unwrap().unwrap();
}
