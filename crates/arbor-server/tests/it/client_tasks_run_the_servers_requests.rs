//! The server asking a 2025-11-25 client to run its elicitation as a task (opt-in,
//! `ServerConfig::client_tasks`), against a scripted client: the request carries
//! `params.task` only when the client declared `tasks.requests.elicitation.create`; the
//! server polls the client's `tasks/get` until the task is terminal, fetches `tasks/result`,
//! and the handler sees the answer as from a plain request. A client that ignores the
//! augmentation, or fails its task, is handled too. Time is tokio's paused clock.

use std::time::Duration;

use arbor_server::ServerConfig;
use serde_json::{json, Value};

use crate::schema::check_message;
use crate::support::{next_request, Harness, ScriptedPeer};

const TASKS: &str = "2025-11-25";

fn declares_tasks() -> Value {
    json!({"elicitation": {}, "tasks": {"requests": {"elicitation": {"create": {}}}}})
}

fn client_task(id: &str, status: &str) -> Value {
    json!({"taskId": id, "status": status, "createdAt": "2025-11-25T10:00:00Z",
        "lastUpdatedAt": "2025-11-25T10:00:00Z", "ttl": 60_000, "pollInterval": 1000})
}

fn reply(peer: &ScriptedPeer, to: &Value, result: Value) {
    peer.send(json!({"jsonrpc": "2.0", "id": to["id"], "result": result}));
}

async fn harness(capabilities: Value) -> Harness {
    let mut h = Harness::with_config(ServerConfig::default().client_tasks(Duration::from_secs(60))).await;
    h.peer.initialize(TASKS, capabilities).await;
    h
}

#[tokio::test(start_paused = true)]
async fn a_declared_client_runs_the_elicitation_as_a_task_polled_to_its_result() {
    let mut h = harness(declares_tasks()).await;
    h.peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask"}}));
    let asked = next_request(&mut h.peer).await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["task"], json!({"ttl": 60_000}), "{asked}");
    check_message(TASKS, &asked, None);
    reply(&h.peer, &asked, json!({"task": client_task("c-1", "working")}));

    // Polled at the suggested interval, until the task is terminal.
    let polled = next_request(&mut h.peer).await;
    assert_eq!((&polled["method"], &polled["params"]), (&json!("tasks/get"), &json!({"taskId": "c-1"})));
    check_message(TASKS, &polled, None);
    reply(&h.peer, &polled, client_task("c-1", "working"));
    let polled = next_request(&mut h.peer).await;
    assert_eq!(polled["method"], "tasks/get");
    reply(&h.peer, &polled, client_task("c-1", "completed"));
    let fetch = next_request(&mut h.peer).await;
    assert_eq!((&fetch["method"], &fetch["params"]), (&json!("tasks/result"), &json!({"taskId": "c-1"})));
    check_message(TASKS, &fetch, None);
    reply(
        &h.peer,
        &fetch,
        json!({"action": "accept", "content": {"name": "Ada"},
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "c-1"}}}),
    );

    let answered = h.peer.recv_response().await;
    assert_eq!(answered["id"], 2);
    assert_eq!(answered["result"]["content"][0]["text"], "hello Ada ({\"round\":1})", "{answered}");
    h.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_client_that_did_not_declare_task_augmented_elicitation_gets_a_plain_request() {
    let mut h = harness(json!({"elicitation": {}, "tasks": {"requests": {"sampling": {"createMessage": {}}}}})).await;
    h.peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask"}}));
    let asked = next_request(&mut h.peer).await;
    assert!(asked["params"].get("task").is_none(), "{asked}");
    reply(&h.peer, &asked, json!({"action": "accept", "content": {"name": "Bo"}}));
    let answered = h.peer.recv_response().await;
    assert_eq!(answered["result"]["content"][0]["text"], "hello Bo ({\"round\":1})", "{answered}");
    h.finish().await;
}

#[tokio::test(start_paused = true)]
async fn without_the_switch_a_declared_client_gets_a_plain_request() {
    let mut h = Harness::start().await;
    h.peer.initialize(TASKS, declares_tasks()).await;
    h.peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask"}}));
    let asked = next_request(&mut h.peer).await;
    assert!(asked["params"].get("task").is_none(), "{asked}");
    reply(&h.peer, &asked, json!({"action": "accept", "content": {"name": "Cy"}}));
    let answered = h.peer.recv_response().await;
    assert_eq!(answered["result"]["content"][0]["text"], "hello Cy ({\"round\":1})", "{answered}");
    h.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_client_that_ignores_the_augmentation_is_answered_as_a_plain_request() {
    let mut h = harness(declares_tasks()).await;
    h.peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask"}}));
    let asked = next_request(&mut h.peer).await;
    assert!(asked["params"].get("task").is_some(), "{asked}");
    reply(&h.peer, &asked, json!({"action": "accept", "content": {"name": "Di"}}));
    let answered = h.peer.recv_response().await;
    assert_eq!(answered["result"]["content"][0]["text"], "hello Di ({\"round\":1})", "{answered}");
    h.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_failed_client_task_fails_the_call_with_the_clients_error() {
    let mut h = harness(declares_tasks()).await;
    h.peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask"}}));
    let asked = next_request(&mut h.peer).await;
    reply(&h.peer, &asked, json!({"task": client_task("c-2", "failed")}));
    // Already terminal: no poll, the result is fetched at once, and it is the error.
    let fetch = next_request(&mut h.peer).await;
    assert_eq!(fetch["method"], "tasks/result", "{fetch}");
    let error = json!({"code": -32000, "message": "the user went away"});
    h.peer.send(json!({"jsonrpc": "2.0", "id": fetch["id"], "error": error}));
    let answered = h.peer.recv_response().await;
    assert_eq!(answered["error"]["code"], -32603, "{answered}");
    assert_eq!(answered["error"]["data"]["error"]["message"], "the user went away", "{answered}");
    h.finish().await;
}
