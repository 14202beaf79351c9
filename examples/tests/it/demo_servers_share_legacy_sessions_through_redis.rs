//! Three `demo_server --redis URL --cluster` processes on one real `redis-server` share
//! their legacy (2025-11-25) sessions (issue 18): the test speaks to each node directly, so
//! which node serves each step is chosen, not left to a balancer. A session opened on A
//! is served on B and C; a subscription made on C notifies the GET stream read on B; the
//! elicitation a tool asks on A is answered through B; a POST stream of C cut after its
//! first event resumes on A with `Last-Event-ID` and loses nothing; a cancel sent to B
//! stops the request running on A; a log level set on B holds for C's next request;
//! DELETE on B ends the session on every node.
//!
//! `redis-server` must be installed (`scripts/test` installs it). Every wait is bounded;
//! Redis and the servers are killed when the test ends.

use std::time::Duration;

use serde_json::{json, Value};
use tests::redis::RedisServer;

use crate::http::{answer, Client, ServerProcess, Sse};

const VERSION: &str = "2025-11-25";

/// `initialize` (declaring elicitation) through `client`: the session's id.
async fn open(client: &Client) -> String {
    let params = json!({
        "protocolVersion": VERSION,
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "cluster-test", "version": "0.0.0"}
    });
    let response =
        client.legacy(None, json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})).await;
    assert_eq!(response.status(), 200);
    let session = response.headers().get("mcp-session-id").expect("a session id").to_str().unwrap().to_owned();
    let answer = answer(response).await;
    assert_eq!(answer["result"]["protocolVersion"], VERSION, "{answer}");
    session
}

fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A POST of the session answered as an SSE stream.
async fn stream(client: &Client, session: &str, message: Value) -> Sse {
    let response = client.legacy(Some(session), message).await;
    assert_eq!(response.status(), 200);
    Sse::new(response)
}

/// The next message of `events` that is not a progress or log notification.
async fn next_not_progress(events: &mut Sse) -> Value {
    loop {
        let event = events.next().await.expect("an event");
        let method = event["method"].as_str().unwrap_or_default();
        if method != "notifications/progress" && method != "notifications/message" {
            return event;
        }
    }
}

#[tokio::test]
async fn three_nodes_serve_one_legacy_session_with_its_streams_answers_and_end() {
    let redis = RedisServer::start();
    let args = ["--redis", &redis.url(), "--cluster", "--feed-interval-ms", "0"];
    let nodes = [
        ServerProcess::spawn("demo_server", &args).await,
        ServerProcess::spawn("demo_server", &args).await,
        ServerProcess::spawn("demo_server", &args).await,
    ];
    let [a, b, c] = [0, 1, 2].map(|i| Client::new(&nodes[i].url));

    // Opened on A; its initialized notification and requests served on B and C.
    let session = open(&a).await;
    let initialized = b.legacy(Some(&session), json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    assert_eq!(initialized.status(), 202);
    let tools = answer(c.legacy(Some(&session), request(1, "tools/list", json!({}))).await).await;
    assert!(tools["result"]["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["name"] == "echo")), "{tools}");
    let echo = answer(
        b.legacy(Some(&session), request(2, "tools/call", json!({"name": "echo", "arguments": {"message": "hi"}})))
            .await,
    )
    .await;
    assert_eq!(echo["result"]["content"][0]["text"], "hi", "{echo}");
    let unknown = b.legacy(Some("0123456789abcdef0123456789abcdef"), request(3, "tools/list", json!({}))).await;
    assert_eq!(unknown.status(), 404, "a session no node opened is unknown everywhere");

    // The GET stream read on B hears the update of a subscription made on C, published on A.
    let mut standalone = b.standalone_stream(&session).await;
    let subscribed =
        answer(c.legacy(Some(&session), request(4, "resources/subscribe", json!({"uri": "demo://feed"}))).await).await;
    assert!(subscribed.get("result").is_some(), "{subscribed}");
    let published = answer(
        a.legacy(
            Some(&session),
            request(5, "tools/call", json!({"name": "publish_feed", "arguments": {"text": "cluster news"}})),
        )
        .await,
    )
    .await;
    assert_eq!(published["result"]["content"][0]["text"], "Published", "{published}");
    let updated = loop {
        let event = standalone.next().await.expect("an event on the GET stream");
        if event["method"] == "notifications/resources/updated" {
            break event;
        }
    };
    assert_eq!(updated["params"]["uri"], "demo://feed", "{updated}");

    // The elicitation a tool asks on A is answered through B; the result comes on A's stream.
    let mut call = stream(
        &a,
        &session,
        request(6, "tools/call", json!({"name": "confirm_delete", "arguments": {"path": "notes/x.txt"}})),
    )
    .await;
    let asked = next_not_progress(&mut call).await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let reply =
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"confirm": true}}});
    assert_eq!(b.legacy(Some(&session), reply.clone()).await.status(), 202);
    let done = next_not_progress(&mut call).await;
    assert_eq!(done["id"], 6, "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "Deleted notes/x.txt", "{done}");
    // The same answer again finds nobody waiting: taken once, and harmless.
    assert_eq!(c.legacy(Some(&session), reply).await.status(), 202);

    // A POST stream of C, cut after its first progress event, resumes on A and loses nothing.
    let count = request(
        7,
        "tools/call",
        json!({"name": "slow_count", "arguments": {"to": 4, "interval_ms": 150}, "_meta": {"progressToken": "p7"}}),
    );
    let mut counting = stream(&c, &session, count).await;
    let first = counting.next().await.expect("a first event");
    assert_eq!(first["method"], "notifications/progress", "{first}");
    assert_eq!(first["params"]["progress"], 1, "{first}");
    let last_id = counting.last_event_id.clone().expect("the event's id");
    drop(counting);
    let mut resumed = a.resume(&session, &last_id).await;
    let rest = resumed.until_end().await;
    let progress: Vec<i64> = rest
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_i64().unwrap_or(-1))
        .collect();
    assert_eq!(progress, [2, 3, 4], "every later progress event, once, in order: {rest:?}");
    let result = rest.iter().find(|m| m["id"] == 7).unwrap_or_else(|| panic!("the result after resuming: {rest:?}"));
    assert_eq!(result["result"]["content"][0]["text"], "Counted to 4", "{result}");

    // A cancel sent to B stops the request running on A: its stream ends unanswered.
    let long = request(
        8,
        "tools/call",
        json!({"name": "slow_count", "arguments": {"to": 100, "interval_ms": 100}, "_meta": {"progressToken": "p8"}}),
    );
    let mut running = stream(&a, &session, long).await;
    assert_eq!(running.next().await.expect("progress")["method"], "notifications/progress");
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8, "reason": "test"}});
    assert_eq!(b.legacy(Some(&session), cancel).await.status(), 202);
    let after = running.until_end().await;
    assert!(after.iter().all(|m| m.get("id").is_none()), "no answer to a cancelled request: {after:?}");
    assert!(after.len() < 50, "stopped long before counting to 100: {} events", after.len());

    // A log level set through B holds for the very next request on C: B answers only once
    // every copy applied it (before, C could still run the call at the old level).
    let logs_of = |messages: &[Value]| messages.iter().filter(|m| m["method"] == "notifications/message").count();
    let count = |id| request(id, "tools/call", json!({"name": "slow_count", "arguments": {"to": 2, "interval_ms": 0}}));
    let quiet = stream(&c, &session, count(9)).await.until_end().await;
    assert_eq!(logs_of(&quiet), 0, "no debug logs before the level is set: {quiet:?}");
    let level =
        answer(b.legacy(Some(&session), request(10, "logging/setLevel", json!({"level": "debug"}))).await).await;
    assert!(level.get("result").is_some(), "{level}");
    let logged = stream(&c, &session, count(11)).await.until_end().await;
    assert_eq!(logs_of(&logged), 2, "a debug log per count, on another node at once: {logged:?}");

    // DELETE on B ends the session on every node (each copy hears it through Redis).
    assert_eq!(b.delete_session(&session).await, 200);
    for (name, client) in [("A", &a), ("C", &c), ("B", &b)] {
        let mut status = 0;
        for attempt in 0..100u64 {
            status = client.legacy(Some(&session), request(100 + attempt, "ping", json!({}))).await.status().as_u16();
            if status == 404 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(status, 404, "node {name} still serves the deleted session");
    }
    for node in nodes {
        node.stop().await;
    }
}
