//! The 2025-11-25 core tasks on a legacy session, raw JSON over the in-memory transport:
//! the `tasks` capability and `execution.taskSupport`, a call with `params.task` answered
//! with a nested `CreateTaskResult`, `tasks/get`, the blocking `tasks/result` with the
//! `related-task` `_meta`, `tasks/list` by owner with cursors, `tasks/cancel`, the TTL
//! clamp, taskSupport violations (-32601), a panicking run, and a task that outlives the
//! connection that created it. Time is tokio's paused clock.

use std::time::Duration;

use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::tasks::TaskConfig;
use arbor_server::{ConnectOptions, Router, Server, ServerConfig, TaskSupport};
use serde_json::{json, Value};

use crate::support::{created_id, sleepy, task_call, ScriptedPeer, TaskSetup};

const V: &str = "2025-11-25";

fn router() -> Router {
    Router::new("core-tasks-test", "1")
        .tool("plain", "never a task", |_: NoArgs| async { "plain" })
        .tool_route(sleepy())
        .tool_route(
            ToolRoute::new("must_task", |_: NoArgs| async { "done" })
                .description("task only")
                .task_support(TaskSupport::Required),
        )
        .tool_route(
            ToolRoute::new("boom", |_: NoArgs| async {
                panic!("boom");
                #[allow(unreachable_code)]
                ""
            })
            .description("panics")
            .task_support(TaskSupport::Optional),
        )
}

/// The server: `router()` with tasks, on `config`.
fn server(config: ServerConfig) -> Server {
    Server::with_config(router(), config.tasks(TaskConfig::default()))
}

/// A legacy session at `version`, initialized; with its `initialize` result.
async fn session(s: &mut TaskSetup, options: ConnectOptions, version: &str) -> (ScriptedPeer, Value) {
    let mut peer = s.connect(0, options).await;
    let init = peer.initialize(version, json!({})).await;
    (peer, init)
}

#[tokio::test(start_paused = true)]
async fn the_capability_and_each_tools_task_support_are_advertised_at_2025_11_25_only() {
    let mut s = TaskSetup::new(1, server);
    let (mut peer, init) = session(&mut s, ConnectOptions::default(), V).await;
    let tasks = &init["capabilities"]["tasks"];
    assert_eq!(*tasks, json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}), "{init}");
    assert!(init["capabilities"].get("extensions").is_none());
    let listed = peer.call(2, "tools/list", json!({})).await;
    let support = |name: &str| {
        let tools = listed["result"]["tools"].as_array().unwrap();
        let tool = tools.iter().find(|t| t["name"] == name).unwrap();
        tool.get("execution").map(|e| e["taskSupport"].clone())
    };
    assert_eq!(support("sleepy"), Some(json!("optional")), "{listed}");
    assert_eq!(support("must_task"), Some(json!("required")));
    assert_eq!(support("plain"), None);

    let (mut old, init) = session(&mut s, ConnectOptions::default(), "2025-06-18").await;
    assert!(init["capabilities"].get("tasks").is_none(), "{init}");
    let listed = old.call(2, "tools/list", json!({})).await;
    assert!(listed["result"]["tools"].as_array().unwrap().iter().all(|t| t.get("execution").is_none()));
    // The methods do not exist before 2025-11-25, and a `task` param there runs inline.
    let list = old.call(3, "tasks/list", json!({})).await;
    assert_eq!(list["error"]["code"], -32601, "{list}");
    let inline = old.call(4, "tools/call", task_call("sleepy", json!({"seconds": 1}), json!(5000))).await;
    assert_eq!(inline["result"]["content"][0]["text"], "slept 1s", "{inline}");
    s.finish(vec![peer, old]).await;
}

#[tokio::test(start_paused = true)]
async fn a_task_is_created_polled_and_its_result_fetched_by_the_blocking_tasks_result() {
    let mut s = TaskSetup::new(1, server);
    let (mut peer, _) = session(&mut s, ConnectOptions::default(), V).await;
    let started = tokio::time::Instant::now();
    let created = peer.call(2, "tools/call", task_call("sleepy", json!({"seconds": 5}), json!(60_000))).await;
    assert_eq!(started.elapsed(), Duration::ZERO, "answered before the tool runs");
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(task["ttl"], 60_000);
    assert_eq!(task["pollInterval"], 500);
    assert!(task.get("ttlMs").is_none() && created["result"].get("resultType").is_none());
    let id = created_id(&created);

    let got = peer.call(3, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "working", "{got}");
    assert_eq!(got["result"]["taskId"], json!(id));
    assert!(got["result"].get("resultType").is_none() && got["result"].get("result").is_none());

    // tasks/result waits for the end: 5 s of the paused clock.
    let result = peer.call(4, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(started.elapsed(), Duration::from_secs(5), "{result}");
    assert_eq!(result["result"]["content"][0]["text"], "slept 5s", "{result}");
    assert_eq!(result["result"]["_meta"]["io.modelcontextprotocol/related-task"], json!({"taskId": id}));
    let done = peer.call(5, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    // Fetched again, the same result.
    let again = peer.call(6, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(again["result"]["content"], result["result"]["content"]);
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn ttls_are_clamped_and_the_clamp_is_reported() {
    let mut s = TaskSetup::new(1, server);
    let (mut peer, _) = session(&mut s, ConnectOptions::default(), V).await;
    let zero = peer.call(2, "tools/call", task_call("sleepy", json!({"seconds": 0}), json!(0))).await;
    assert_eq!(zero["result"]["task"]["ttl"], 1000, "{zero}");
    let huge =
        peer.call(3, "tools/call", task_call("sleepy", json!({"seconds": 0}), json!(1_000_000_000_000_i64))).await;
    assert_eq!(huge["result"]["task"]["ttl"], 600_000, "{huge}");
    let absent = peer.call(4, "tools/call", json!({"name": "sleepy", "arguments": {"seconds": 0}, "task": {}})).await;
    assert_eq!(absent["result"]["task"]["ttl"], 600_000, "{absent}");
    // The 1 s task is gone after its TTL: the same "not found" as an unknown id.
    let id = created_id(&zero);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let gone = peer.call(5, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn task_support_is_enforced_with_method_not_found() {
    let mut s = TaskSetup::new(1, server);
    let (mut peer, _) = session(&mut s, ConnectOptions::default(), V).await;
    let forbidden = peer.call(2, "tools/call", task_call("plain", json!({}), json!(1000))).await;
    assert_eq!(forbidden["error"]["code"], -32601, "{forbidden}");
    assert!(forbidden["error"]["message"].as_str().unwrap().contains("forbidden"));
    let required = peer.call(3, "tools/call", json!({"name": "must_task", "arguments": {}})).await;
    assert_eq!(required["error"]["code"], -32601, "{required}");
    assert!(required["error"]["message"].as_str().unwrap().contains("required"));
    let inline = peer.call(4, "tools/call", json!({"name": "sleepy", "arguments": {"seconds": 0}})).await;
    assert_eq!(inline["result"]["content"][0]["text"], "slept 0s", "optional without task: inline: {inline}");
    let as_task = peer.call(5, "tools/call", task_call("must_task", json!({}), json!(1000))).await;
    assert_eq!(as_task["result"]["task"]["status"], "working", "{as_task}");
    // The session goes on.
    assert_eq!(peer.call(6, "ping", json!({})).await["result"], json!({}));
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn cancel_is_terminal_once_and_a_cancelled_task_has_no_result() {
    let mut s = TaskSetup::new(1, server);
    let (mut peer, _) = session(&mut s, ConnectOptions::default(), V).await;
    let id = created_id(&peer.call(2, "tools/call", task_call("sleepy", json!({"seconds": 20}), json!(60_000))).await);
    // A tasks/result waiting when the cancel lands gets the error, not a hang.
    peer.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": id}}));
    tokio::time::sleep(Duration::from_millis(10)).await;
    peer.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/cancel", "params": {"taskId": id}}));
    let (mut waited, mut cancelled) = (Value::Null, Value::Null);
    for _ in 0..2 {
        let r = peer.recv_response().await;
        if r["id"] == 3 {
            waited = r;
        } else {
            cancelled = r;
        }
    }
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["result"]["taskId"], json!(id));
    assert_eq!(waited["error"]["code"], -32602, "{waited}");
    assert!(waited["error"]["message"].as_str().unwrap().contains("cancelled"));
    let again = peer.call(5, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(again["error"]["code"], -32602, "cancelling a terminal task: {again}");
    let result = peer.call(6, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["error"]["code"], -32602, "{result}");
    // Exactly one terminal status: the run's end (its future dropped) changed nothing.
    tokio::time::sleep(Duration::from_secs(30)).await;
    let got = peer.call(7, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn a_panicking_run_fails_its_task_with_a_clear_error() {
    let mut s = TaskSetup::new(1, server);
    let (mut peer, _) = session(&mut s, ConnectOptions::default(), V).await;
    let id = created_id(&peer.call(2, "tools/call", task_call("boom", json!({}), json!(60_000))).await);
    let result = peer.call(3, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["error"]["code"], -32603, "{result}");
    assert!(result["error"]["message"].as_str().unwrap().contains("panicked"));
    let got = peer.call(4, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "failed", "{got}");
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn tasks_are_listed_by_owner_with_cursors_and_hidden_from_everyone_else() {
    let mut s = TaskSetup::new(1, server);
    let (mut alice, _) = session(&mut s, ConnectOptions::tenant("acme").auth("alice"), V).await;
    let (mut bob, _) = session(&mut s, ConnectOptions::tenant("acme").auth("bob"), V).await;
    let mut ids = Vec::new();
    for n in 0..55 {
        let created =
            alice.call(100 + n, "tools/call", task_call("sleepy", json!({"seconds": 60}), json!(60_000))).await;
        ids.push(created_id(&created));
    }
    let first = alice.call(2, "tasks/list", json!({})).await;
    let page: Vec<&Value> = first["result"]["tasks"].as_array().unwrap().iter().map(|t| &t["taskId"]).collect();
    assert_eq!(page.len(), 50, "{first}");
    assert_eq!(*page[0], json!(ids[0]), "creation order");
    let cursor = first["result"]["nextCursor"].as_str().expect("a second page").to_owned();
    let second = alice.call(3, "tasks/list", json!({"cursor": cursor})).await;
    let rest: Vec<&Value> = second["result"]["tasks"].as_array().unwrap().iter().map(|t| &t["taskId"]).collect();
    assert_eq!(rest.len(), 5, "{second}");
    assert_eq!(*rest[4], json!(ids[54]));
    assert!(second["result"].get("nextCursor").is_none());
    let bad = alice.call(4, "tasks/list", json!({"cursor": "not-a-cursor"})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");

    let listed = bob.call(2, "tasks/list", json!({})).await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    let unknown = bob.call(3, "tasks/get", json!({"taskId": "0123456789abcdef0123456789abcdef"})).await;
    for (n, method) in [(4, "tasks/get"), (5, "tasks/result"), (6, "tasks/cancel")] {
        let hidden = bob.call(n, method, json!({"taskId": ids[0]})).await;
        assert_eq!(hidden["error"], unknown["error"], "{method}: another owner's id is an unknown id");
    }
    assert_eq!(unknown["error"]["code"], -32602);
    let mine = alice.call(5, "tasks/get", json!({"taskId": ids[0]})).await;
    assert_eq!(mine["result"]["status"], "working", "nobody else cancelled it: {mine}");
    s.finish(vec![alice, bob]).await;
}

#[tokio::test(start_paused = true)]
async fn a_task_outlives_the_connection_that_created_it() {
    let mut s = TaskSetup::new(1, server);
    let (first, _) = session(&mut s, ConnectOptions::tenant("acme").auth("alice"), V).await;
    let mut first = first;
    let id = created_id(&first.call(2, "tools/call", task_call("sleepy", json!({"seconds": 5}), json!(60_000))).await);
    first.close().await;
    s.connections[0].closed().await;
    let (mut later, _) = session(&mut s, ConnectOptions::tenant("acme").auth("alice"), V).await;
    let result = later.call(2, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["result"]["content"][0]["text"], "slept 5s", "{result}");
    s.finish(vec![first, later]).await;
}
