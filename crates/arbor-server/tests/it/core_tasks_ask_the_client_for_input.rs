//! Input during a 2025-11-25 task, raw JSON over the in-memory transport: a handler that
//! answers input required inside a task-augmented `tools/call` makes the server send its
//! `elicitation/create` with the `related-task` `_meta` to the session, the task shows
//! `input_required` meanwhile and `working` once answered, and `tasks/result` returns what
//! the handler built from the answer. A client error, a closed session and an undeclared
//! capability each fail the task with -32603; with `ServerConfig::client_tasks`, the
//! elicitation itself runs as a task on the client, followed to its answer while the
//! server's task waits. Time is tokio's paused clock.

use std::time::Duration;

use arbor_protocol::model::content::ContentBlock;
use arbor_protocol::model::mrtr::InputResponse;
use arbor_protocol::model::tools::CallToolResult;
use arbor_server::router::ToolRoute;
use arbor_server::tasks::TaskConfig;
use arbor_server::{ConnectOptions, InputRequired, Reply, RequestContext, Router, Server, ServerConfig, TaskSupport};
use serde_json::{json, Value};

use crate::schema::check_message;
use crate::support::{created_id, next_request, task_call, ScriptedPeer, TaskSetup};

const V: &str = "2025-11-25";
const RELATED: &str = "io.modelcontextprotocol/related-task";

/// `ask`: asks for a name (after `delay` seconds), then takes a second to answer with it.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Ask {
    #[serde(default)]
    delay: u64,
}

fn router() -> Router {
    Router::new("core-tasks-input", "1").tool_route(
        ToolRoute::new("ask", |a: Ask, cx: RequestContext| async move {
            match cx.input_responses().and_then(|r| r.get("name")) {
                Some(InputResponse::Elicit(answer)) => {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    let name = answer.content.as_ref().and_then(|c| c.get("name")).cloned().unwrap_or(Value::Null);
                    let seen = cx.input_state().cloned().unwrap_or(Value::Null);
                    let text = format!("hello {} ({seen})", name.as_str().unwrap_or("?"));
                    Reply::Complete(CallToolResult::new(vec![ContentBlock::text(text)]))
                }
                _ => {
                    tokio::time::sleep(Duration::from_secs(a.delay)).await;
                    let params = serde_json::from_value(json!({
                        "message": "What is your name?",
                        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
                    }))
                    .unwrap();
                    Reply::InputRequired(InputRequired::new().elicit("name", params).state(json!({"round": 1})))
                }
            }
        })
        .description("asks for a name")
        .task_support(TaskSupport::Optional),
    )
}

/// The server: `router()` with tasks, on `config`.
fn server(config: ServerConfig) -> Server {
    Server::with_config(router(), config.tasks(TaskConfig::default()))
}

/// A 2025-11-25 session declaring `capabilities`, initialized.
async fn session(s: &mut TaskSetup, capabilities: Value) -> ScriptedPeer {
    let mut peer = s.connect(0, ConnectOptions::default()).await;
    peer.initialize(V, capabilities).await;
    peer
}

/// Starts `ask` as a task; its id.
async fn start(peer: &mut ScriptedPeer, id: i64, delay: u64) -> String {
    created_id(&peer.call(id, "tools/call", task_call("ask", json!({"delay": delay}), json!(60_000))).await)
}

async fn status(peer: &mut ScriptedPeer, id: i64, task: &str) -> Value {
    let got = peer.call(id, "tasks/get", json!({"taskId": task})).await;
    got["result"]["status"].clone()
}

#[tokio::test(start_paused = true)]
async fn an_elicitation_during_a_task_carries_the_related_task_and_its_answer_resumes_the_task() {
    let mut s = TaskSetup::new(1, server);
    let mut peer = session(&mut s, json!({"elicitation": {}})).await;
    let task = start(&mut peer, 2, 0).await;

    let asked = next_request(&mut peer).await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["_meta"][RELATED], json!({"taskId": task}), "{asked}");
    assert_eq!(asked["params"]["message"], "What is your name?");
    check_message(V, &asked, None);
    let got = peer.call(3, "tasks/get", json!({"taskId": task})).await;
    assert_eq!(got["result"]["status"], "input_required", "{got}");
    assert_eq!(got["result"]["statusMessage"], "Waiting for the client to answer elicitation/create");
    assert!(got["result"].get("inputRequests").is_none(), "not on the 2025-11-25 wire: {got}");

    peer.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}));
    // The answer resumes the run, which then works for a second before it completes.
    let mut now = status(&mut peer, 4, &task).await;
    for n in 5..50 {
        if now != "input_required" {
            break;
        }
        tokio::task::yield_now().await;
        now = status(&mut peer, n, &task).await;
    }
    assert_eq!(now, "working");

    let result = peer.call(60, "tasks/result", json!({"taskId": task})).await;
    assert_eq!(result["result"]["content"][0]["text"], "hello Ada ({\"round\":1})", "{result}");
    assert_eq!(result["result"]["_meta"][RELATED], json!({"taskId": task}));
    assert_eq!(status(&mut peer, 61, &task).await, "completed");
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn the_client_answering_with_an_error_fails_the_task_with_32603() {
    let mut s = TaskSetup::new(1, server);
    let mut peer = session(&mut s, json!({"elicitation": {}})).await;
    let task = start(&mut peer, 2, 0).await;
    let asked = next_request(&mut peer).await;
    peer.send(json!({"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -32000, "message": "no user here"}}));

    let result = peer.call(3, "tasks/result", json!({"taskId": task})).await;
    assert_eq!(result["error"]["code"], -32603, "{result}");
    assert_eq!(result["error"]["data"]["error"]["message"], "no user here", "{result}");
    assert_eq!(status(&mut peer, 4, &task).await, "failed");
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn a_session_closed_while_input_is_pending_fails_the_task_saying_the_client_cannot_be_reached() {
    let mut s = TaskSetup::new(1, server);
    let mut first = session(&mut s, json!({"elicitation": {}})).await;
    let task = start(&mut first, 2, 0).await;
    let asked = next_request(&mut first).await;
    assert_eq!(asked["method"], "elicitation/create");
    first.close().await;
    s.connections[0].closed().await;

    // The same owner, from another session: the task failed, it did not wait for its TTL.
    let mut second = session(&mut s, json!({"elicitation": {}})).await;
    let started = tokio::time::Instant::now();
    let result = second.call(3, "tasks/result", json!({"taskId": task})).await;
    assert_eq!(started.elapsed(), Duration::ZERO, "{result}");
    assert_eq!(result["error"]["code"], -32603, "{result}");
    let message = result["error"]["message"].as_str().unwrap();
    assert!(message.contains("cannot be reached"), "{result}");
    assert_eq!(status(&mut second, 4, &task).await, "failed");
    s.finish(vec![first, second]).await;
}

#[tokio::test(start_paused = true)]
async fn a_task_whose_session_closed_asks_on_an_open_tasks_result_of_another_session() {
    let mut s = TaskSetup::new(1, server);
    let mut first = session(&mut s, json!({"elicitation": {}})).await;
    // The handler asks only after 5 s, by when its session has gone.
    let task = start(&mut first, 2, 5).await;
    first.close().await;
    s.connections[0].closed().await;

    let mut second = session(&mut s, json!({"elicitation": {}})).await;
    second.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": task}}));
    let asked = next_request(&mut second).await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["_meta"][RELATED], json!({"taskId": task}));
    second
        .send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Bo"}}}));
    let result = second.recv_response().await;
    assert_eq!(result["id"], 3);
    assert_eq!(result["result"]["content"][0]["text"], "hello Bo ({\"round\":1})", "{result}");
    s.finish(vec![first, second]).await;
}

#[tokio::test(start_paused = true)]
async fn an_undeclared_capability_fails_the_task_with_required_capabilities() {
    let mut s = TaskSetup::new(1, server);
    let mut peer = session(&mut s, json!({})).await;
    let task = start(&mut peer, 2, 0).await;
    let result = peer.call(3, "tasks/result", json!({"taskId": task})).await;
    assert_eq!(result["error"]["code"], -32603, "{result}");
    assert_eq!(result["error"]["data"]["requiredCapabilities"], json!({"elicitation": {}}), "{result}");
    assert_eq!(status(&mut peer, 4, &task).await, "failed");
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn inside_a_task_the_elicitation_may_run_as_a_task_on_the_client() {
    let mut s = TaskSetup::new(1, |config| server(config.client_tasks(Duration::from_secs(30))));
    let mut peer =
        session(&mut s, json!({"elicitation": {}, "tasks": {"requests": {"elicitation": {"create": {}}}}})).await;
    let task = start(&mut peer, 2, 0).await;
    let asked = next_request(&mut peer).await;
    assert_eq!(asked["params"]["_meta"][RELATED], json!({"taskId": task}), "{asked}");
    assert_eq!(asked["params"]["task"], json!({"ttl": 30_000}), "{asked}");
    check_message(V, &asked, None);
    let client_task = |status: &str| {
        json!({"taskId": "on-client", "status": status, "createdAt": "2025-11-25T10:00:00Z",
            "lastUpdatedAt": "2025-11-25T10:00:00Z", "ttl": 30_000, "pollInterval": 200})
    };
    peer.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"task": client_task("working")}}));
    let polled = next_request(&mut peer).await;
    assert_eq!(polled["method"], "tasks/get", "{polled}");
    // While the client's task runs, the server's waits for input.
    assert_eq!(status(&mut peer, 3, &task).await, "input_required");
    peer.send(json!({"jsonrpc": "2.0", "id": polled["id"], "result": client_task("completed")}));
    let fetch = next_request(&mut peer).await;
    assert_eq!(fetch["method"], "tasks/result", "{fetch}");
    peer.send(json!({"jsonrpc": "2.0", "id": fetch["id"], "result": {"action": "accept", "content": {"name": "Eve"}}}));
    let result = peer.call(4, "tasks/result", json!({"taskId": task})).await;
    assert_eq!(result["result"]["content"][0]["text"], "hello Eve ({\"round\":1})", "{result}");
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_task_cancels_the_clients_task_it_was_following() {
    let mut s = TaskSetup::new(1, |config| server(config.client_tasks(Duration::from_secs(30))));
    let caps = json!({"elicitation": {}, "tasks": {"cancel": {}, "requests": {"elicitation": {"create": {}}}}});
    let mut peer = session(&mut s, caps).await;
    let task = start(&mut peer, 2, 0).await;
    let asked = next_request(&mut peer).await;
    let created = json!({"taskId": "on-client", "status": "working", "createdAt": "2025-11-25T10:00:00Z",
        "lastUpdatedAt": "2025-11-25T10:00:00Z", "ttl": 30_000, "pollInterval": 200});
    peer.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"task": created}}));
    let polled = next_request(&mut peer).await;
    assert_eq!(polled["method"], "tasks/get", "{polled}");

    // The poll is left unanswered; the server's task is cancelled meanwhile.
    peer.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": {"taskId": task}}));
    // The answer to the cancel and the server's tasks/cancel of the client's task, in
    // either order (and the poll's notifications/cancelled among them).
    let (mut cancel, mut answered) = (None, None);
    while cancel.is_none() || answered.is_none() {
        let message = peer.recv().await;
        if message["method"] == "tasks/cancel" {
            cancel = Some(message);
        } else if message["id"] == 3 {
            answered = Some(message);
        }
    }
    let (cancel, answered) = (cancel.unwrap(), answered.unwrap());
    assert_eq!(cancel["params"], json!({"taskId": "on-client"}), "{cancel}");
    check_message(V, &cancel, None);
    assert_eq!(answered["result"]["status"], "cancelled", "{answered}");
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn input_needed_after_the_session_closed_fails_the_task_at_once() {
    let mut s = TaskSetup::new(1, server);
    let mut first = session(&mut s, json!({"elicitation": {}})).await;
    // The handler asks after 5 s; its session is gone by then and no tasks/result is open.
    let task = start(&mut first, 2, 5).await;
    first.close().await;
    s.connections[0].closed().await;
    tokio::time::sleep(Duration::from_secs(6)).await;

    let mut second = session(&mut s, json!({"elicitation": {}})).await;
    let got = second.call(3, "tasks/get", json!({"taskId": task})).await;
    assert_eq!(got["result"]["status"], "failed", "{got}");
    let result = second.call(4, "tasks/result", json!({"taskId": task})).await;
    assert_eq!(result["error"]["code"], -32603, "{result}");
    assert!(result["error"]["message"].as_str().unwrap().contains("cannot be reached"), "{result}");
    s.finish(vec![first, second]).await;
}
