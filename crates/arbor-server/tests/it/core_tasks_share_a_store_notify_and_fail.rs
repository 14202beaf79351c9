//! The task store is pluggable and the 2025-11-25 task faults are clear, raw JSON over the
//! in-memory transport on the paused clock: two servers sharing one store serve each
//! other's tasks to their owner only; the creating session hears
//! `notifications/tasks/status` (the full legacy task, no related-task `_meta`, one
//! terminal); a tool's `isError` result fails a 2025-11-25 task (the extension keeps it
//! completed) and `tasks/result` still returns it; a handler hanging past its deadline
//! fails its task with -32603; a cancel racing the run's completion leaves one terminal
//! status; a blocking `tasks/result` outwaits the request deadline; a store's own
//! refusals reach the client as the overload error and -32603.

use std::sync::Arc;
use std::time::Duration;

use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::tasks::{TaskCap, TaskChange, TaskConfig, TaskOwner, TaskPage};
use arbor_server::{
    ConnectOptions, MemoryTaskStore, Router, Server, TaskRecord, TaskStore, TaskStoreError, TaskSupport, ToolError,
};
use futures::future::BoxFuture;
use serde_json::{json, Value};
use tests::peer::Exchange;

use crate::support::{created_id, modern_meta, sleepy, task_call, ScriptedPeer, TaskSetup};

const V: &str = "2025-11-25";
const RELATED: &str = "io.modelcontextprotocol/related-task";

fn router() -> Router {
    Router::new("task-store-test", "1").tool_route(sleepy()).tool_route(
        ToolRoute::new("refuses", |_: NoArgs| async { Err::<String, _>(ToolError::failed("no such city")) })
            .description("a tool error")
            .task_support(TaskSupport::Optional),
    )
}

/// `n` servers sharing one `MemoryTaskStore` (or each its own default store, if `None`).
fn setup(n: usize, store: Option<Arc<dyn TaskStore>>) -> TaskSetup {
    TaskSetup::new(n, |config| {
        let server = Server::with_config(router(), config.tasks(TaskConfig::default()));
        match &store {
            Some(store) => server.with_task_store(store.clone()),
            None => server,
        }
    })
}

/// A session at `version` on the server at `server`, initialized.
async fn session(s: &mut TaskSetup, server: usize, options: ConnectOptions, version: &str) -> ScriptedPeer {
    let mut peer = s.connect(server, options).await;
    peer.initialize(version, json!({})).await;
    peer
}

/// Reads messages until the response `id`, returning it and the task status
/// notifications seen on the way.
async fn response_and_statuses(peer: &mut ScriptedPeer, id: i64) -> (Value, Vec<Value>) {
    let mut statuses = Vec::new();
    loop {
        let message = peer.recv().await;
        if message.get("id").is_some() {
            assert_eq!(message["id"], json!(id), "{message}");
            return (message, statuses);
        }
        assert_eq!(message["method"], "notifications/tasks/status", "{message}");
        statuses.push(message["params"].clone());
    }
}

#[tokio::test(start_paused = true)]
async fn two_servers_sharing_a_store_serve_each_others_tasks_to_their_owner_only() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::new(&TaskConfig::default()));
    let mut s = setup(2, Some(store));
    let alice = || ConnectOptions::tenant("acme").auth("alice");
    let mut on_a = session(&mut s, 0, alice(), V).await;
    let mut on_b = session(&mut s, 1, alice(), V).await;
    let mut mallory = session(&mut s, 1, ConnectOptions::tenant("acme").auth("mallory"), V).await;

    let id = created_id(&on_a.call(2, "tools/call", task_call("sleepy", json!({"seconds": 5}), json!(60_000))).await);
    let got = on_b.call(2, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "working", "B reads the record A created: {got}");
    assert_eq!(got["result"]["ttl"], 60_000);
    let listed = on_b.call(3, "tasks/list", json!({})).await;
    assert_eq!(listed["result"]["tasks"][0]["taskId"], json!(id), "{listed}");

    // B's blocking tasks/result is woken by A's run completing.
    let started = tokio::time::Instant::now();
    let result = on_b.call(4, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(started.elapsed(), Duration::from_secs(5), "{result}");
    assert_eq!(result["result"]["content"][0]["text"], "slept 5s", "{result}");
    assert_eq!(result["result"]["_meta"][RELATED], json!({"taskId": id}));

    // Another owner on B: the same "not found" as an id that never existed.
    mallory.assert_task_hidden(&id).await;

    // Servers with their own default stores do not see each other's tasks.
    let mut apart = setup(2, None);
    let mut first = session(&mut apart, 0, alice(), V).await;
    let mut second = session(&mut apart, 1, alice(), V).await;
    let other =
        created_id(&first.call(2, "tools/call", task_call("sleepy", json!({"seconds": 1}), json!(60_000))).await);
    assert_eq!(second.call(2, "tasks/get", json!({"taskId": other})).await["error"]["code"], -32602);
    apart.finish(vec![first, second]).await;
    s.finish(vec![on_a, on_b, mallory]).await;
}

/// Reads messages until the response to a `ping` sent now: the status notifications on
/// the way.
async fn statuses_until_ping(peer: &mut ScriptedPeer, id: i64) -> Vec<Value> {
    peer.send(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
    response_and_statuses(peer, id).await.1
}

#[tokio::test(start_paused = true)]
async fn the_creating_session_hears_each_status_change_and_exactly_one_terminal() {
    let mut s = setup(1, None);
    let mut peer = session(&mut s, 0, ConnectOptions::default(), V).await;
    let mut other = session(&mut s, 0, ConnectOptions::default(), V).await;
    let created = peer.call(2, "tools/call", task_call("sleepy", json!({"seconds": 5}), json!(60_000))).await;
    let id = created_id(&created);
    assert!(statuses_until_ping(&mut peer, 3).await.is_empty(), "no change yet");

    // working → completed: heard while tasks/result waits, or right after its answer.
    peer.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/result", "params": {"taskId": id}}));
    let (result, mut heard) = response_and_statuses(&mut peer, 4).await;
    assert_eq!(result["result"]["content"][0]["text"], "slept 5s", "{result}");
    heard.extend(statuses_until_ping(&mut peer, 5).await);
    assert_eq!(heard.len(), 1, "one notification, the terminal one: {heard:?}");
    let note = &heard[0];
    assert_eq!(note["taskId"], json!(id));
    assert_eq!(note["status"], "completed");
    assert_eq!((note["ttl"].clone(), note["pollInterval"].clone()), (json!(60_000), json!(500)), "{note}");
    assert!(note.get("ttlMs").is_none() && note.get("_meta").is_none() && note.get("result").is_none(), "{note}");
    assert!(note["createdAt"].is_string() && note["lastUpdatedAt"].is_string());

    // working → cancelled: the cancel's status, and nothing when the stopped run ends.
    let long =
        created_id(&peer.call(6, "tools/call", task_call("sleepy", json!({"seconds": 60}), json!(60_000))).await);
    let (cancelled, mut heard) = {
        peer.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/cancel", "params": {"taskId": long}}));
        response_and_statuses(&mut peer, 7).await
    };
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    tokio::time::sleep(Duration::from_secs(120)).await;
    heard.extend(statuses_until_ping(&mut peer, 8).await);
    let terminal: Vec<&Value> = heard.iter().filter(|n| n["taskId"] == json!(long)).collect();
    assert_eq!(terminal.len(), 1, "{heard:?}");
    assert_eq!(terminal[0]["status"], "cancelled");
    // Another session of the same owner is not the one that created them.
    assert!(statuses_until_ping(&mut other, 2).await.is_empty());
    s.finish(vec![peer, other]).await;
}

#[tokio::test(start_paused = true)]
async fn a_tool_error_fails_a_2025_11_25_task_and_tasks_result_still_returns_it() {
    let mut s = setup(1, None);
    let mut peer = session(&mut s, 0, ConnectOptions::default(), V).await;
    let id = created_id(&peer.call(2, "tools/call", task_call("refuses", json!({}), json!(60_000))).await);
    let result = peer.call(3, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["result"]["isError"], true, "the tool's own result: {result}");
    assert_eq!(result["result"]["content"][0]["text"], "no such city");
    assert_eq!(result["result"]["_meta"][RELATED], json!({"taskId": id}));
    let got = peer.call(4, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "failed", "{got}");
    assert!(got["result"].get("error").is_none() && got["result"].get("result").is_none(), "{got}");

    // The extension (2026-07-28): `failed` is only for JSON-RPC errors; such a task is
    // completed, its result carrying `isError`.
    let mut modern = session(&mut s, 0, ConnectOptions::default(), "2026-07-28").await;
    let meta = modern_meta(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
    let created = modern.call(2, "tools/call", json!({"_meta": meta, "name": "refuses", "arguments": {}})).await;
    let id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let got = modern.call(3, "tasks/get", json!({"_meta": meta, "taskId": id})).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert_eq!(got["result"]["result"]["isError"], true, "{got}");
    s.finish(vec![peer, modern]).await;
}

#[tokio::test(start_paused = true)]
async fn a_handler_hanging_past_its_deadline_fails_its_task_with_a_clear_error() {
    let mut s = setup(1, None);
    let mut peer = session(&mut s, 0, ConnectOptions::default(), V).await;
    let started = tokio::time::Instant::now();
    let id = created_id(&peer.call(2, "tools/call", task_call("sleepy", json!({"seconds": 3600}), json!(5_000))).await);
    let result = peer.call(3, "tasks/result", json!({"taskId": id})).await;
    assert!(started.elapsed() <= Duration::from_secs(5), "stopped within its TTL: {:?}", started.elapsed());
    assert_eq!(result["error"]["code"], -32603, "{result}");
    let message = result["error"]["message"].as_str().unwrap();
    assert!(message.contains("did not finish within the task's TTL of 5000 ms"), "{message}");
    let got = peer.call(4, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "failed", "{got}");
    assert_eq!(got["result"]["statusMessage"], json!(message), "{got}");
    // And the record goes at its TTL.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(peer.call(5, "tasks/get", json!({"taskId": id})).await["error"]["code"], -32602);
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn a_cancel_racing_the_runs_completion_leaves_exactly_one_terminal_status() {
    let mut s = setup(1, None);
    let mut peer = session(&mut s, 0, ConnectOptions::default(), V).await;
    for round in 0..4_i64 {
        let n = 10 * round;
        let id =
            created_id(&peer.call(n, "tools/call", task_call("sleepy", json!({"seconds": 2}), json!(60_000))).await);
        // The cancel lands at the instant the run completes, give or take a tick.
        tokio::time::sleep(Duration::from_secs(2) - Duration::from_millis(1) * round as u32).await;
        peer.send(json!({"jsonrpc": "2.0", "id": n + 1, "method": "tasks/cancel", "params": {"taskId": id}}));
        let (cancel, mut heard) = response_and_statuses(&mut peer, n + 1).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
        heard.extend(statuses_until_ping(&mut peer, n + 2).await);
        let terminal: Vec<&Value> = heard.iter().filter(|h| h["taskId"] == json!(id)).collect();
        assert_eq!(terminal.len(), 1, "round {round}: one terminal notification: {heard:?}");
        let status = terminal[0]["status"].clone();
        let got = peer.call(n + 3, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(got["result"]["status"], status, "round {round}: the status heard is the one kept: {got}");
        match status.as_str() {
            Some("cancelled") => assert_eq!(cancel["result"]["status"], "cancelled", "{cancel}"),
            Some("completed") => assert_eq!(cancel["error"]["code"], -32602, "too late to cancel: {cancel}"),
            other => panic!("round {round}: {other:?}"),
        }
    }
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn a_blocking_tasks_result_outwaits_the_request_deadline() {
    let mut s =
        TaskSetup::new(1, |config| Server::with_config(router(), config.default_deadline(Duration::from_secs(10))));
    let mut peer = session(&mut s, 0, ConnectOptions::default(), V).await;
    let id = created_id(&peer.call(2, "tools/call", task_call("sleepy", json!({"seconds": 25}), json!(60_000))).await);
    let started = tokio::time::Instant::now();
    let result = peer.call(3, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["result"]["content"][0]["text"], "slept 25s", "{result}");
    assert_eq!(started.elapsed(), Duration::from_secs(25), "past the 10 s request deadline");
    s.finish(vec![peer]).await;
}

/// A store that is full for every new task and unreachable for every look-up.
struct Refusing;

impl TaskStore for Refusing {
    fn create(&self, _: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        let full = TaskStoreError::Full { cap: TaskCap::Owner, limit: 7, retry_after: Duration::from_secs(2) };
        Box::pin(async move { Err(full) })
    }
    fn get<'a>(&'a self, _: &'a TaskOwner, _: &'a str) -> BoxFuture<'a, Result<TaskRecord, TaskStoreError>> {
        Box::pin(async { Err(TaskStoreError::Unavailable("connection refused".into())) })
    }
    fn change<'a>(&'a self, _: &'a str, _: TaskChange) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        Box::pin(async { Err(TaskStoreError::NotFound) })
    }
    fn remove<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        Box::pin(async { Ok(()) })
    }
    fn wait<'a>(&'a self, _: &'a TaskOwner, _: &'a str) -> BoxFuture<'a, Result<TaskRecord, TaskStoreError>> {
        Box::pin(async { Err(TaskStoreError::Unavailable("connection refused".into())) })
    }
    fn list<'a>(
        &'a self,
        _: &'a TaskOwner,
        _: Option<&'a str>,
        _: usize,
    ) -> BoxFuture<'a, Result<TaskPage, TaskStoreError>> {
        Box::pin(async { Err(TaskStoreError::InvalidCursor) })
    }
}

#[tokio::test(start_paused = true)]
async fn a_stores_own_refusals_reach_the_client_as_the_overload_error_and_internal_errors() {
    let mut s = setup(1, Some(Arc::new(Refusing)));
    let mut peer = session(&mut s, 0, ConnectOptions::default(), V).await;
    let full = peer.call(2, "tools/call", task_call("sleepy", json!({"seconds": 1}), json!(60_000))).await;
    assert_eq!(full["error"]["code"], -32000, "{full}");
    let data = &full["error"]["data"];
    assert_eq!(
        (data["scope"].clone(), data["limit"].clone(), data["retryAfterMs"].clone()),
        (json!("owner"), json!(7), json!(2000))
    );
    for (n, method) in [(3, "tasks/get"), (4, "tasks/result")] {
        let down = peer.call(n, method, json!({"taskId": "0123456789abcdef0123456789abcdef"})).await;
        assert_eq!(down["error"]["code"], -32603, "{method}: {down}");
        assert!(down["error"]["message"].as_str().unwrap().contains("unavailable: connection refused"), "{down}");
    }
    let listed = peer.call(5, "tasks/list", json!({"cursor": "anything"})).await;
    assert_eq!(listed["error"]["code"], -32602, "{listed}");
    s.finish(vec![peer]).await;
}

/// Expired records are dropped by the server's periodic sweep, with no request touching
/// the store: the memory of a burst of tasks comes back on an idle server (paused clock;
/// the default TTL of 10 minutes sweeps every minute).
#[tokio::test(start_paused = true)]
async fn expired_records_are_swept_on_an_idle_server() {
    let memory = Arc::new(MemoryTaskStore::new(&TaskConfig::default()));
    let mut s = setup(1, Some(memory.clone()));
    let mut peer = session(&mut s, 0, ConnectOptions::tenant("acme").auth("alice"), V).await;
    for n in 0..3 {
        let id =
            created_id(&peer.call(2 + n, "tools/call", task_call("sleepy", json!({"seconds": 0}), json!(1_000))).await);
        let result = peer.call(10 + n, "tasks/result", json!({"taskId": id})).await;
        assert_eq!(result["result"]["content"][0]["text"], "slept 0s", "{result}");
    }
    assert_eq!(memory.len(), 3, "completed records are kept until their TTL");
    // Past the TTL (1 s) and the next sweep (60 s), nothing asked.
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(memory.len(), 0, "the sweep dropped every expired record");
    s.finish(vec![peer]).await;
}
