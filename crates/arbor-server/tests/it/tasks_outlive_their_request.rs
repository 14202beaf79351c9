//! The tasks extension (`io.modelcontextprotocol/tasks`), raw JSON over the in-memory
//! transport: a tool that opts in is answered with a `CreateTaskResult` and runs on;
//! `tasks/get` shows it working, parked on input, then finished; `tasks/cancel` stops
//! its run; records expire with their TTL, the store is bounded, and a task is only
//! seen by the tenant and principal that created it. Time is tokio's paused clock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::model::tools::CallToolResult;
use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::tasks::TaskConfig;
use arbor_server::{
    ConnectOptions, InputRequired, Reply, RequestContext, Router, Server, TaskStart, TaskSupport, Transport,
};
use serde_json::{json, Value};

use crate::support::{modern_meta, ScriptedPeer, TaskSetup};

const EXT: &str = "io.modelcontextprotocol/tasks";

fn with_ext() -> Value {
    modern_meta(json!({"elicitation": {}, "extensions": {EXT: {}}}))
}

fn without_ext() -> Value {
    modern_meta(json!({"elicitation": {}}))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Work {
    seconds: u64,
}

/// Set when the `sleepy` handler's future is dropped before it finishes.
#[derive(Clone, Default)]
struct Dropped(Arc<AtomicBool>);

struct SetOnDrop(Dropped, bool);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        if !self.1 {
            self.0 .0.store(true, Ordering::SeqCst);
        }
    }
}

fn elicit_form() -> arbor_protocol::model::elicitation::ElicitRequestParams {
    serde_json::from_value(json!({
        "message": "Sure?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    }))
    .unwrap()
}

async fn ask_twice(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    let answered = |key: &str| cx.input_responses().is_some_and(|r| r.contains_key(key));
    if !answered("a") || !answered("b") {
        let mut ask = InputRequired::new();
        for key in ["a", "b"].into_iter().filter(|k| !answered(k)) {
            ask = ask.elicit(key, elicit_form());
        }
        return Reply::InputRequired(ask);
    }
    Reply::Complete(CallToolResult::from_text("both answered"))
}

fn router(dropped: Dropped) -> Router {
    Router::new("tasks-test", "1")
        .tool("plain", "never a task", |_: NoArgs| async { "plain" })
        .tool_route(
            ToolRoute::new("sleepy", move |w: Work| {
                let dropped = dropped.clone();
                async move {
                    let mut guard = SetOnDrop(dropped, false);
                    tokio::time::sleep(Duration::from_secs(w.seconds)).await;
                    guard.1 = true;
                    format!("slept {}s", w.seconds)
                }
            })
            .description("sleeps")
            .task_support(TaskSupport::Optional),
        )
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
        .tool_route(ToolRoute::new("ask_twice", ask_twice).description("asks").task_support(TaskSupport::Optional))
        .tool_route(
            ToolRoute::new("ask_first", ask_twice)
                .description("asks inline, then a task")
                .task_support(TaskSupport::Optional)
                .task_start(TaskStart::AfterInput),
        )
}

/// One server with `tasks`, and the flag its `sleepy` runs set when dropped unfinished.
fn setup(tasks: TaskConfig) -> (TaskSetup, Dropped) {
    let dropped = Dropped::default();
    let s = TaskSetup::new(1, |config| Server::with_config(router(dropped.clone()), config.tasks(tasks.clone())));
    (s, dropped)
}

fn call(name: &str, args: Value, meta: Value) -> Value {
    json!({"_meta": meta, "name": name, "arguments": args})
}

fn task_id(response: &Value) -> String {
    response["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no taskId in {response}")).to_owned()
}

async fn get(peer: &mut ScriptedPeer, id: i64, task: &str) -> Value {
    peer.call(id, "tasks/get", json!({"_meta": with_ext(), "taskId": task})).await
}

#[tokio::test(start_paused = true)]
async fn a_task_is_created_at_once_then_polled_to_its_result() {
    let (mut s, _) = setup(TaskConfig::default());
    let mut peer = s.connect(0, ConnectOptions::default()).await;

    let discovered = peer.call(1, "server/discover", json!({"_meta": with_ext()})).await;
    assert_eq!(discovered["result"]["capabilities"]["extensions"][EXT], json!({}), "{discovered}");
    assert!(discovered["result"]["capabilities"].get("tasks").is_none());

    let started = tokio::time::Instant::now();
    let created = peer.call(2, "tools/call", call("sleepy", json!({"seconds": 5}), with_ext())).await;
    assert_eq!(started.elapsed(), Duration::ZERO, "the call is answered before the tool runs");
    let r = &created["result"];
    assert_eq!(r["resultType"], "task", "{created}");
    assert_eq!(r["status"], "working");
    assert_eq!(r["ttlMs"], 600_000);
    assert_eq!(r["pollIntervalMs"], 500);
    assert!(r.get("result").is_none() && r.get("task").is_none() && r.get("ttl").is_none());
    let id = task_id(&created);
    assert_eq!(id.len(), 32, "128 random bits, hex");
    assert!(r["createdAt"].as_str().unwrap().ends_with('Z'));

    let working = get(&mut peer, 3, &id).await;
    assert_eq!(working["result"]["resultType"], "complete", "{working}");
    assert_eq!(working["result"]["status"], "working");
    assert!(working["result"].get("result").is_none());

    tokio::time::sleep(Duration::from_secs(6)).await;
    let done = get(&mut peer, 4, &id).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["content"][0]["text"], "slept 5s");
    assert!(done["result"]["result"]["_meta"].get("io.modelcontextprotocol/related-task").is_none());

    // The same tool for a request without the extension runs inline.
    let inline = peer.call(5, "tools/call", call("sleepy", json!({"seconds": 1}), without_ext())).await;
    assert_eq!(inline["result"]["resultType"], "complete", "{inline}");
    assert!(inline["result"].get("taskId").is_none());
    // And a tool that never runs as a task ignores the extension (and a legacy `task` param).
    let mut params = call("plain", json!({}), with_ext());
    params["task"] = json!({"ttl": 1000});
    let plain = peer.call(6, "tools/call", params).await;
    assert_eq!(plain["result"]["content"][0]["text"], "plain", "{plain}");
    assert!(plain["result"].get("taskId").is_none());
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn cancel_stops_the_run_and_is_an_idempotent_empty_ack() {
    let (mut s, dropped) = setup(TaskConfig::default());
    let mut peer = s.connect(0, ConnectOptions::default()).await;
    let id = task_id(&peer.call(1, "tools/call", call("sleepy", json!({"seconds": 60}), with_ext())).await);
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(!dropped.0.load(Ordering::SeqCst));

    let ack = peer.call(2, "tasks/cancel", json!({"_meta": with_ext(), "taskId": id})).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(dropped.0.load(Ordering::SeqCst), "the run's future was dropped");
    let cancelled = get(&mut peer, 3, &id).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");

    // Cancelling a finished task answers the same, and changes nothing.
    let again = peer.call(4, "tasks/cancel", json!({"_meta": with_ext(), "taskId": id})).await;
    assert_eq!(again["result"], json!({"resultType": "complete"}));
    assert_eq!(get(&mut peer, 5, &id).await["result"]["status"], "cancelled");
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn a_task_expires_with_its_ttl_and_its_run_is_stopped() {
    let tasks = TaskConfig { ttl: Duration::from_secs(30), ..TaskConfig::default() };
    let (mut s, dropped) = setup(tasks);
    let mut peer = s.connect(0, ConnectOptions::default()).await;
    let quick = task_id(&peer.call(1, "tools/call", call("sleepy", json!({"seconds": 1}), with_ext())).await);
    let slow = task_id(&peer.call(2, "tools/call", call("sleepy", json!({"seconds": 3600}), with_ext())).await);
    assert_eq!(
        peer.call(3, "tasks/get", json!({"_meta": with_ext(), "taskId": quick})).await["result"]["ttlMs"],
        30_000
    );

    tokio::time::sleep(Duration::from_secs(29)).await;
    assert_eq!(get(&mut peer, 4, &quick).await["result"]["status"], "completed", "kept for its whole TTL");
    assert!(!dropped.0.load(Ordering::SeqCst));

    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(dropped.0.load(Ordering::SeqCst), "the slow run was stopped at the TTL");
    for (n, id) in [(5, &quick), (6, &slow)] {
        let gone = get(&mut peer, n, id).await;
        assert_eq!(gone["error"]["code"], -32602, "{gone}");
        // Looked up after its TTL ("expired") or already dropped by the periodic sweep
        // ("not found"): the same -32602 either way.
        let message = gone["error"]["message"].as_str().unwrap();
        assert!(
            ["Failed to retrieve task: Task has expired", "Failed to retrieve task: Task not found"].contains(&message),
            "{gone}"
        );
    }
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn the_store_is_bounded_per_owner_and_in_all_and_expired_records_make_room() {
    let tasks =
        TaskConfig { ttl: Duration::from_secs(10), max_tasks: 3, max_tasks_per_owner: 2, ..TaskConfig::default() };
    let (mut s, _) = setup(tasks);
    let mut alice = s.connect(0, ConnectOptions::tenant("acme").auth("alice")).await;
    let mut bob = s.connect(0, ConnectOptions::tenant("acme").auth("bob")).await;
    let create = || call("sleepy", json!({"seconds": 0}), with_ext());
    for n in 1..=2 {
        let created = alice.call(n, "tools/call", create()).await;
        assert_eq!(created["result"]["resultType"], "task", "{created}");
    }
    let refused = alice.call(3, "tools/call", create()).await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert_eq!(refused["error"]["data"]["scope"], "owner");
    // Another owner still has room, up to the store's own bound.
    assert_eq!(bob.call(1, "tools/call", create()).await["result"]["resultType"], "task");
    let full = bob.call(2, "tools/call", create()).await;
    assert_eq!(full["error"]["code"], -32000, "{full}");
    assert_eq!(full["error"]["data"]["scope"], "tasks");

    tokio::time::sleep(Duration::from_secs(11)).await;
    for n in 4..=5 {
        let room = alice.call(n, "tools/call", create()).await;
        assert_eq!(room["result"]["resultType"], "task", "expired records were swept: {room}");
    }
    s.finish(vec![alice, bob]).await;
}

#[tokio::test(start_paused = true)]
async fn the_wrong_requests_get_the_errors_the_extension_names() {
    let (mut s, _) = setup(TaskConfig::default());
    let mut peer = s.connect(0, ConnectOptions::default()).await;
    let unknown = get(&mut peer, 1, "0123456789abcdef0123456789abcdef").await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    for (n, method) in [(2, "tasks/get"), (3, "tasks/cancel"), (4, "tasks/update")] {
        let params = json!({"_meta": without_ext(), "taskId": "x", "inputResponses": {}});
        let refused = peer.call(n, method, params).await;
        assert_eq!(refused["error"]["code"], -32021, "{method}: {refused}");
        assert_eq!(refused["error"]["data"]["requiredCapabilities"]["extensions"][EXT], json!({}));
    }
    for (n, method) in [(5, "tasks/result"), (6, "tasks/list")] {
        let gone = peer.call(n, method, json!({"_meta": with_ext(), "taskId": "x"})).await;
        assert_eq!(gone["error"]["code"], -32601, "{method}: {gone}");
    }
    let required = peer.call(7, "tools/call", call("must_task", json!({}), without_ext())).await;
    assert_eq!(required["error"]["code"], -32021, "{required}");
    assert_eq!(required["error"]["data"]["requiredCapabilities"]["extensions"][EXT], json!({}));

    // A run that panics fails its task with -32603; the server goes on.
    let id = task_id(&peer.call(8, "tools/call", call("boom", json!({}), with_ext())).await);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let failed = get(&mut peer, 9, &id).await;
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    assert_eq!(failed["result"]["error"]["code"], -32603);
    assert!(failed["result"].get("result").is_none());

    // A legacy call without `params.task` runs inline; the 2025-11-25 core tasks serve
    // the same store, so the same owner sees the task there, on that revision's wire.
    let mut legacy = s.connect(0, ConnectOptions::default()).await;
    legacy.initialize("2025-11-25", json!({"extensions": {EXT: {}}})).await;
    let inline = legacy.call(10, "tools/call", json!({"name": "sleepy", "arguments": {"seconds": 1}})).await;
    assert_eq!(inline["result"]["content"][0]["text"], "slept 1s", "{inline}");
    let core = legacy.call(11, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(core["result"]["status"], "failed", "{core}");
    assert!(core["result"].get("error").is_none() && core["result"].get("ttlMs").is_none(), "{core}");
    let update = legacy.call(12, "tasks/update", json!({"taskId": id, "inputResponses": {}})).await;
    assert_eq!(update["error"]["code"], -32601, "tasks/update is the extension's: {update}");
    s.finish(vec![peer, legacy]).await;
}

#[tokio::test(start_paused = true)]
async fn a_task_is_seen_only_by_its_tenant_and_principal() {
    let (mut s, _) = setup(TaskConfig::default());
    let mut alice = s.connect(0, ConnectOptions::tenant("acme").auth("alice")).await;
    let mut alice_again = s.connect(0, ConnectOptions::tenant("acme").auth("alice")).await;
    let mut bob = s.connect(0, ConnectOptions::tenant("acme").auth("bob")).await;
    let mut other = s.connect(0, ConnectOptions::tenant("globex").auth("alice")).await;
    let id = task_id(&alice.call(1, "tools/call", call("sleepy", json!({"seconds": 60}), with_ext())).await);

    // 2026-07-28 has no sessions: the same principal on another connection sees it.
    assert_eq!(get(&mut alice_again, 1, &id).await["result"]["taskId"], json!(id));
    for peer in [&mut bob, &mut other] {
        for (n, method) in [(1, "tasks/get"), (2, "tasks/cancel")] {
            let hidden = peer.call(n, method, json!({"_meta": with_ext(), "taskId": id})).await;
            assert_eq!(hidden["error"]["code"], -32602, "{method}: {hidden}");
            assert!(hidden["error"]["message"].as_str().unwrap().contains("not found"));
        }
    }
    assert_eq!(get(&mut alice, 2, &id).await["result"]["status"], "working", "nobody else cancelled it");
    s.finish(vec![alice, alice_again, bob, other]).await;
}

#[tokio::test(start_paused = true)]
async fn input_inside_a_task_parks_it_until_every_request_is_answered() {
    let (mut s, _) = setup(TaskConfig::default());
    let mut peer = s.connect(0, ConnectOptions::default()).await;
    let id = task_id(&peer.call(1, "tools/call", call("ask_twice", json!({}), with_ext())).await);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let parked = get(&mut peer, 2, &id).await;
    assert_eq!(parked["result"]["status"], "input_required", "{parked}");
    let asked = parked["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(asked.keys().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(asked["a"]["method"], "elicitation/create");

    let update = |answers: Value| json!({"_meta": with_ext(), "taskId": id, "inputResponses": answers});
    // A sampling answer to an elicitation is refused whole.
    let wrong = json!({"a": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}});
    assert_eq!(peer.call(3, "tasks/update", update(wrong)).await["error"]["code"], -32602);
    // One answer (plus a key nobody asked, ignored): still parked, on the other key only.
    let first = json!({"a": {"action": "accept", "content": {"ok": true}}, "zzz": {"ignored": true}});
    assert_eq!(peer.call(4, "tasks/update", update(first)).await["result"], json!({"resultType": "complete"}));
    let half = get(&mut peer, 5, &id).await;
    assert_eq!(half["result"]["status"], "input_required", "{half}");
    assert_eq!(half["result"]["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["b"]);

    let second = json!({"b": {"action": "accept", "content": {"ok": true}}});
    assert_eq!(peer.call(6, "tasks/update", update(second)).await["result"]["resultType"], "complete");
    tokio::time::sleep(Duration::from_millis(10)).await;
    let done = get(&mut peer, 7, &id).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["content"][0]["text"], "both answered");
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn input_gathered_inline_first_then_the_call_becomes_a_task() {
    let (mut s, _) = setup(TaskConfig::default());
    let mut peer = s.connect(0, ConnectOptions::default()).await;
    let first = peer.call(1, "tools/call", call("ask_first", json!({}), with_ext())).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert!(first["result"].get("taskId").is_none());
    let state = first["result"]["requestState"].clone();
    let answers = json!({
        "a": {"action": "accept", "content": {"ok": true}},
        "b": {"action": "accept", "content": {"ok": true}},
    });
    let mut retry = call("ask_first", json!({}), with_ext());
    retry["inputResponses"] = answers;
    retry["requestState"] = state;
    let created = peer.call(2, "tools/call", retry.clone()).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    assert!(created["result"].get("requestState").is_none());
    let id = task_id(&created);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let done = get(&mut peer, 3, &id).await;
    assert_eq!(done["result"]["result"]["content"][0]["text"], "both answered", "{done}");

    // A tampered state is refused before any task exists.
    retry["requestState"] = json!("forged.state");
    assert_eq!(peer.call(4, "tools/call", retry).await["error"]["code"], -32602);
    s.finish(vec![peer]).await;
}

#[tokio::test(start_paused = true)]
async fn a_listen_naming_a_task_hears_its_status_changes() {
    let (mut s, _) = setup(TaskConfig::default());
    let mut peer = s.connect(0, ConnectOptions::tenant("acme").auth("alice")).await;
    let mut eve = s.connect(0, ConnectOptions::tenant("acme").auth("eve")).await;
    let id = task_id(&peer.call(1, "tools/call", call("ask_twice", json!({}), with_ext())).await);

    // Another principal's listen does not get the task honoured.
    let listen = |meta: Value, ids: Value| json!({"_meta": meta, "notifications": {"taskIds": ids}});
    eve.send(json!({"jsonrpc": "2.0", "id": "eve", "method": "subscriptions/listen", "params": listen(with_ext(), json!([id]))}));
    let ack = eve.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert!(ack["params"]["notifications"].get("taskIds").is_none(), "{ack}");
    // Without the extension declared, naming tasks is refused.
    let refused = eve.call(2, "subscriptions/listen", listen(without_ext(), json!([id]))).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");

    let params = listen(with_ext(), json!([id, "0123456789abcdef0123456789abcdef"]));
    peer.send(json!({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen", "params": params}));
    let ack = peer.recv().await;
    assert_eq!(ack["params"]["notifications"], json!({"taskIds": [id]}), "only the caller's known task: {ack}");

    let cancel = json!({"_meta": with_ext(), "taskId": id});
    peer.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": cancel}));
    let (mut acked, mut heard) = (false, None);
    while !acked || heard.is_none() {
        let message = peer.recv().await;
        if message["id"] == 3 {
            acked = true;
        } else if message["method"] == "notifications/tasks" {
            heard = Some(message);
        }
    }
    let heard = heard.unwrap();
    assert_eq!(heard["params"]["taskId"], json!(id), "{heard}");
    assert_eq!(heard["params"]["status"], "cancelled");
    assert_eq!(heard["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub");
    s.finish(vec![peer, eve]).await;
}

/// A raw handler whose tool policy allows tasks but whose capabilities do not advertise
/// the extension: the runtime serves what is advertised, so calls run inline.
struct Unadvertised;

impl arbor_server::ServerHandler for Unadvertised {
    fn info(&self) -> arbor_server::ServerInfo {
        arbor_server::ServerInfo::new("unadvertised", "1")
    }

    fn capabilities(&self) -> arbor_protocol::model::capabilities::ServerCapabilities {
        arbor_protocol::model::capabilities::ServerCapabilities::default()
            .with_tools(arbor_protocol::model::capabilities::ToolsCapability::default())
    }

    fn tool_task_policy(&self, _tool: &str) -> arbor_server::TaskPolicy {
        arbor_server::TaskPolicy::new(TaskSupport::Required)
    }

    async fn call_tool(
        &self,
        _params: arbor_protocol::model::tools::CallToolRequestParams,
        _cx: RequestContext,
    ) -> Result<Reply<CallToolResult>, arbor_server::McpError> {
        Ok(Reply::Complete(CallToolResult::from_text("inline")))
    }
}

#[tokio::test(start_paused = true)]
async fn a_server_that_does_not_advertise_the_extension_runs_every_call_inline() {
    let server = Server::new(Unadvertised);
    let (server_side, client_side) = Transport::memory_pair();
    let connection = server.connect(server_side, ConnectOptions::default()).await.unwrap();
    let mut peer = ScriptedPeer::new(client_side);
    let inline = peer.call(1, "tools/call", call("any", json!({}), with_ext())).await;
    assert_eq!(inline["result"]["content"][0]["text"], "inline", "{inline}");
    let not_offered = get(&mut peer, 2, "0123456789abcdef0123456789abcdef").await;
    assert_eq!(not_offered["error"]["code"], -32601, "{not_offered}");
    peer.close().await;
    connection.closed().await;
    server.shutdown().await;
}
