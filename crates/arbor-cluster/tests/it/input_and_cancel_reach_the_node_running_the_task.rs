//! Routing on a real Redis: two `Server`s, each with its own `RedisTaskStore` (two nodes
//! behind a round-robin load balancer), and 2026-07-28 tasks created through the first.
//! `tasks/update` through the second resumes the run on the first with that input (the
//! result read through the second is the one computed with it), and an answer of the
//! wrong kind through the second is the owner's -32602; `tasks/cancel` through the second
//! stops the run on the first (its handler sees the cancellation); an update for a task
//! whose node crashed is a -32603 naming the unreachable node, within a bound, not a hang.
//! Conditions are waited for with bounded loops; nothing asserts a duration.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_cluster::RedisTaskStoreOptions;
use arbor_protocol::model::tools::CallToolResult;
use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::{ConnectOptions, InputRequired, Reply, RequestContext, Router, Server, TaskSupport, Transport};
use serde_json::{json, Value};
use tests::peer::Exchange;
use tests::redis::RedisServer;

use crate::support::{options, store, Peer};

const EXT: &str = "io.modelcontextprotocol/tasks";

/// Set by the `watched` handler: when it started, and when it saw its cancellation.
#[derive(Clone, Default)]
struct Seen {
    started: Arc<AtomicBool>,
    cancelled: Arc<AtomicBool>,
}

fn meta() -> Value {
    tests::peer::modern_meta(json!({"elicitation": {}, "extensions": {EXT: {}}}), None)
}

/// `greet` asks the client for a name, then greets it; `watched` waits to be cancelled.
fn router(seen: Seen) -> Router {
    let greet = ToolRoute::new("greet", |_: NoArgs, cx: RequestContext| async move {
        let answer = cx.input_responses().and_then(|r| r.get("name")).map(|r| serde_json::to_value(r).unwrap());
        match answer {
            Some(answer) => {
                let name = answer["content"]["name"].as_str().unwrap_or("nobody").to_owned();
                Reply::Complete(CallToolResult::from_text(format!("hello {name}")))
            }
            None => {
                let form = serde_json::from_value(json!({
                    "message": "Name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
                }))
                .unwrap();
                Reply::InputRequired(InputRequired::new().elicit("name", form))
            }
        }
    });
    let watched = ToolRoute::new("watched", move |_: NoArgs, cx: RequestContext| {
        let seen = seen.clone();
        async move {
            // Work handed elsewhere sees the run's cancellation through its token.
            let token = cx.cancellation_token();
            let cancelled = seen.cancelled.clone();
            tokio::spawn(async move {
                token.cancelled().await;
                cancelled.store(true, Ordering::SeqCst);
            });
            seen.started.store(true, Ordering::SeqCst);
            std::future::pending::<()>().await;
            "never".to_owned()
        }
    });
    Router::new("routing", "1")
        .tool_route(greet.description("greets").task_support(TaskSupport::Optional))
        .tool_route(watched.description("waits").task_support(TaskSupport::Optional))
}

async fn node(url: &str, options: RedisTaskStoreOptions, seen: Seen) -> Server {
    Server::new(router(seen)).with_task_store(Arc::new(store(url, options).await))
}

async fn peer(server: &Server) -> Peer {
    let (side, client) = Transport::memory_pair();
    server.connect(side, ConnectOptions::tenant("acme").auth("alice")).await.unwrap();
    Peer::new(client)
}

async fn create(peer: &mut Peer, tool: &str) -> String {
    let created = peer.call(1, "tools/call", json!({"_meta": meta(), "name": tool, "arguments": {}})).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_owned()
}

/// `tasks/get` through `peer` until the task is `status`; the last answer.
async fn until(peer: &mut Peer, id: &str, status: &str) -> Value {
    let mut got = Value::Null;
    for n in 0..200 {
        got = peer.call(100 + n, "tasks/get", json!({"_meta": meta(), "taskId": id})).await;
        if got["result"]["status"] == status {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} never became {status}: {got}");
}

fn update(id: &str, answers: Value) -> Value {
    json!({"_meta": meta(), "taskId": id, "inputResponses": answers})
}

async fn flag_set(flag: &AtomicBool) -> bool {
    for _ in 0..250 {
        if flag.load(Ordering::SeqCst) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn input_through_one_node_resumes_the_run_on_the_other_and_is_checked_there() {
    let redis = RedisServer::start();
    let (a, b) =
        (node(&redis.url(), options(), Seen::default()).await, node(&redis.url(), options(), Seen::default()).await);
    let (mut on_a, mut on_b) = (peer(&a).await, peer(&b).await);

    let id = create(&mut on_a, "greet").await;
    let parked = until(&mut on_b, &id, "input_required").await;
    assert_eq!(parked["result"]["inputRequests"]["name"]["method"], "elicitation/create", "{parked}");

    // A sampling answer to an elicitation: the owner's check refuses it, through b.
    let wrong = json!({"name": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}});
    let refused = on_b.call(2, "tasks/update", update(&id, wrong)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("elicitation/create"), "{refused}");
    let still = on_b.call(3, "tasks/get", json!({"_meta": meta(), "taskId": id})).await;
    assert_eq!(still["result"]["status"], "input_required", "nothing recorded: {still}");

    let answer = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    let taken = on_b.call(4, "tasks/update", update(&id, answer)).await;
    assert_eq!(taken["result"], json!({"resultType": "complete"}), "{taken}");
    let done = until(&mut on_b, &id, "completed").await;
    assert_eq!(done["result"]["result"]["content"][0]["text"], "hello Ada", "computed with b's input: {done}");

    on_a.close().await;
    on_b.close().await;
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn a_cancel_through_one_node_stops_the_run_on_the_other() {
    let redis = RedisServer::start();
    let seen = Seen::default();
    let (a, b) =
        (node(&redis.url(), options(), seen.clone()).await, node(&redis.url(), options(), Seen::default()).await);
    let (mut on_a, mut on_b) = (peer(&a).await, peer(&b).await);

    let id = create(&mut on_a, "watched").await;
    assert!(flag_set(&seen.started).await, "the handler never started");
    assert!(!seen.cancelled.load(Ordering::SeqCst));
    let ack = on_b.call(2, "tasks/cancel", json!({"_meta": meta(), "taskId": id})).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    assert!(flag_set(&seen.cancelled).await, "the run on a never saw its cancellation");
    until(&mut on_a, &id, "cancelled").await;

    on_a.close().await;
    on_b.close().await;
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn input_for_a_task_whose_node_crashed_is_a_clear_error() {
    let redis = RedisServer::start();
    // Node a runs on a runtime of its own, shut down below: its tasks, connections and
    // subscriber vanish at once, as in a crash. A long lease keeps the task's record
    // `input_required` and its lease naming a: only the routing can notice a is gone.
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let url = redis.url();
    let (a, a_side) = runtime
        .spawn(async move {
            let a = node(&url, options().lease(Duration::from_secs(60)), Seen::default()).await;
            let (side, client) = Transport::memory_pair();
            a.connect(side, ConnectOptions::tenant("acme").auth("alice")).await.unwrap();
            (a, client)
        })
        .await
        .unwrap();
    let mut on_a = Peer::new(a_side);
    let b = node(&redis.url(), options().forward_timeout(Duration::from_secs(1)), Seen::default()).await;
    let mut on_b = peer(&b).await;
    let id = create(&mut on_a, "greet").await;
    until(&mut on_b, &id, "input_required").await;

    runtime.shutdown_background();
    drop(a);
    let answer = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    let bound = Duration::from_secs(20);
    let failed = tokio::time::timeout(bound, on_b.call(2, "tasks/update", update(&id, answer))).await.expect("hung");
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(message.contains("the node running the task is unreachable"), "{message}");

    on_b.close().await;
    b.shutdown().await;
}
