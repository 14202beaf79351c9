//! Client-hosted 2025-11-25 tasks against a scripted server: the `tasks` capability is
//! declared only when enabled (and only for the kinds the handler serves); a
//! task-augmented `elicitation/create` is answered with a `CreateTaskResult` and followed
//! with `tasks/get`, the blocking `tasks/result`, `tasks/list` and `tasks/cancel`; TTLs are
//! clamped and reported. And `TaskHandle::statuses` yields a status pushed by
//! `notifications/tasks/status` before its next poll.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_client::handler::{HandlerBuilder, HostedTasks};
use arbor_client::ClientOptions;
use arbor_protocol::error::McpError;
use arbor_protocol::model::elicitation::{ElicitResult, ElicitationMode};
use arbor_protocol::model::tasks::TaskStatus;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use crate::scripted::{connect, Script};

/// Counts a handler future dropped before it finished.
struct Dropped(Arc<AtomicUsize>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// What the test handler does, chosen by the elicitation's message: `gated` waits for a
/// permit, `fail` fails with -42, `panic` panics, `hang` never answers (and counts being stopped), and
/// anything else is accepted at once.
struct Rig {
    gate: Arc<Semaphore>,
    started: Arc<AtomicUsize>,
    stopped: Arc<AtomicUsize>,
}

impl Rig {
    fn new() -> Rig {
        Rig { gate: Arc::new(Semaphore::new(0)), started: Arc::default(), stopped: Arc::default() }
    }

    fn handler(&self, sampling: bool) -> Arc<HandlerBuilder> {
        let (gate, started, stopped) = (self.gate.clone(), self.started.clone(), self.stopped.clone());
        let builder = HandlerBuilder::new().elicitation(vec![ElicitationMode::Form], move |params, _| {
            let (gate, started, stopped) = (gate.clone(), started.clone(), stopped.clone());
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                let params = serde_json::to_value(&params).unwrap();
                match params["message"].as_str().unwrap_or_default() {
                    "gated" => gate.acquire().await.unwrap().forget(),
                    "panic" => panic!("the handler blew up"),
                    "fail" => return Err(McpError::Other { code: -42, message: "user said no".into(), data: None }),
                    "hang" => {
                        let _counted = Dropped(stopped);
                        futures::future::pending::<()>().await;
                    }
                    _ => {}
                }
                Ok(ElicitResult::accept(json!({"name": "octocat"}).as_object().unwrap().clone()))
            }
        });
        let builder = if sampling {
            builder.sampling(|_, _| async { Err(McpError::internal("not in these tests")) })
        } else {
            builder
        };
        builder.build()
    }

    fn options(&self, tasks: Option<HostedTasks>) -> ClientOptions {
        let options = ClientOptions::new("hosting-client", "1").handler_arc(self.handler(false));
        match tasks {
            Some(config) => options.host_tasks(config),
            None => options,
        }
    }
}

/// Params of a form elicitation saying `message`, with `task` when given.
fn elicit(message: &str, task: Option<Value>) -> Value {
    let mut params = json!({"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}});
    if let Some(task) = task {
        params["task"] = task;
    }
    params
}

/// Asks for a task-augmented elicitation; returns the created task.
async fn create(script: &mut Script, id: i64, message: &str, ttl: Option<i64>) -> Value {
    let task = ttl.map_or_else(|| json!({}), |t| json!({"ttl": t}));
    let created = script.request(id, "elicitation/create", elicit(message, Some(task))).await;
    assert!(created.get("result").is_some(), "{created}");
    created["result"]["task"].clone()
}

fn error_code(frame: &Value) -> i64 {
    frame["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {frame}"))
}

async fn status_of(script: &mut Script, id: i64, task: &str) -> Value {
    let got = script.request(id, "tasks/get", json!({"taskId": task})).await;
    got["result"]["status"].clone()
}

#[tokio::test]
async fn the_tasks_capability_is_declared_only_when_enabled_and_for_the_kinds_served() {
    let rig = Rig::new();
    let (_client, _script, init) = connect(rig.options(None)).await;
    assert_eq!(init["capabilities"], json!({"elicitation": {"form": {}}}), "off by default");

    let (_client, _script, init) = connect(rig.options(Some(HostedTasks::default()))).await;
    assert_eq!(
        init["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"elicitation": {"create": {}}}})
    );

    let options =
        ClientOptions::new("hosting-client", "1").handler_arc(rig.handler(true)).host_tasks(HostedTasks::default());
    let (_client, _script, init) = connect(options).await;
    assert_eq!(
        init["capabilities"]["tasks"]["requests"],
        json!({"sampling": {"createMessage": {}}, "elicitation": {"create": {}}})
    );
}

#[tokio::test]
async fn without_hosting_or_without_params_task_the_request_is_answered_inline() {
    let rig = Rig::new();
    let (_client, mut script, _) = connect(rig.options(None)).await;
    let inline = script.request(1, "elicitation/create", elicit("hi", Some(json!({"ttl": 1000})))).await;
    assert_eq!(inline["result"]["action"], "accept", "params.task ignored when off: {inline}");
    let refused = script.request(2, "tasks/get", json!({"taskId": "x"})).await;
    assert_eq!(error_code(&refused), -32601, "no tasks/* when off");

    let (_client, mut script, _) = connect(rig.options(Some(HostedTasks::default()))).await;
    let inline = script.request(1, "elicitation/create", elicit("hi", None)).await;
    assert_eq!(inline["result"]["content"]["name"], "octocat", "{inline}");
    assert!(inline["result"].get("task").is_none());
}

#[tokio::test]
async fn a_task_augmented_elicitation_is_created_then_polled_and_its_result_awaited() {
    let rig = Rig::new();
    let (_client, mut script, _) = connect(rig.options(Some(HostedTasks::default()))).await;
    let task = create(&mut script, 1, "gated", Some(60_000)).await;
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "128 random bits in hex: {id}");
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60_000);
    assert_eq!(task["pollInterval"], 1000);
    assert!(task["createdAt"].as_str().unwrap().ends_with('Z'));
    assert!(task["lastUpdatedAt"].is_string());

    // tasks/result blocks while the handler runs: tasks/get is answered meanwhile.
    script.ask(2, "tasks/result", json!({"taskId": id}));
    assert_eq!(status_of(&mut script, 3, &id).await, "working");
    rig.gate.add_permits(1);
    let result = script.response(2).await;
    assert_eq!(result["result"]["action"], "accept", "{result}");
    assert_eq!(result["result"]["content"]["name"], "octocat");
    assert_eq!(result["result"]["_meta"]["io.modelcontextprotocol/related-task"], json!({"taskId": id}));
    assert_eq!(status_of(&mut script, 4, &id).await, "completed");

    // Each change was announced with the whole task, without related-task meta.
    let announced: Vec<&Value> = script.notes.iter().filter(|n| n["method"] == "notifications/tasks/status").collect();
    let last = announced.last().unwrap_or_else(|| panic!("no status notification: {:?}", script.notes));
    assert_eq!(last["params"]["taskId"], json!(id));
    assert_eq!(last["params"]["status"], "completed");
    assert!(last["params"].get("_meta").is_none());
}

#[tokio::test]
async fn a_failing_or_panicking_handler_fails_the_task_and_its_result_is_the_error() {
    let rig = Rig::new();
    let (_client, mut script, _) = connect(rig.options(Some(HostedTasks::default()))).await;
    let task = create(&mut script, 1, "fail", Some(60_000)).await;
    let id = task["taskId"].as_str().unwrap();
    let result = script.request(2, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(error_code(&result), -42, "{result}");
    assert_eq!(result["error"]["message"], "user said no");
    let got = script.request(3, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "failed");
    assert_eq!(got["result"]["statusMessage"], "user said no");

    let task = create(&mut script, 4, "panic", Some(60_000)).await;
    let result = script.request(5, "tasks/result", json!({"taskId": task["taskId"]})).await;
    assert_eq!(error_code(&result), -32603, "a panic fails the task: {result}");
    assert_eq!(status_of(&mut script, 6, task["taskId"].as_str().unwrap()).await, "failed");
}

#[tokio::test]
async fn cancelling_a_running_task_stops_its_handler_and_a_terminal_or_unknown_one_is_refused() {
    let rig = Rig::new();
    let (_client, mut script, _) = connect(rig.options(Some(HostedTasks::default()))).await;
    let task = create(&mut script, 1, "hang", Some(60_000)).await;
    let id = task["taskId"].as_str().unwrap();
    // The handler has started (and not been stopped) before it is cancelled.
    tests::poll::until("the handler ran", Duration::from_secs(5), || rig.started.load(Ordering::SeqCst) == 1).await;
    assert_eq!(rig.stopped.load(Ordering::SeqCst), 0);

    let cancelled = script.request(2, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["result"]["taskId"], json!(id));
    tests::poll::until("the handler was stopped", Duration::from_secs(5), || rig.stopped.load(Ordering::SeqCst) == 1)
        .await;
    assert_eq!(status_of(&mut script, 3, id).await, "cancelled");

    let again = script.request(4, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(error_code(&again), -32602, "cancelling a terminal task: {again}");
    let result = script.request(5, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(error_code(&result), -32602, "a cancelled task has no result");

    for (n, method) in [(6, "tasks/get"), (7, "tasks/result"), (8, "tasks/cancel")] {
        let unknown = script.request(n, method, json!({"taskId": "no-such-task"})).await;
        assert_eq!(error_code(&unknown), -32602, "{method} of an unknown id: {unknown}");
    }
    let completed = create(&mut script, 9, "quick", None).await;
    let done = completed["taskId"].as_str().unwrap();
    script.request(10, "tasks/result", json!({"taskId": done})).await;
    let refused = script.request(11, "tasks/cancel", json!({"taskId": done})).await;
    assert_eq!(error_code(&refused), -32602, "cancelling a completed task");
}

#[tokio::test]
async fn tasks_are_listed_in_pages_and_bounded_in_number() {
    let rig = Rig::new();
    let config = HostedTasks { page_size: 2, max_tasks: 3, ..HostedTasks::default() };
    let (_client, mut script, _) = connect(rig.options(Some(config))).await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let task = create(&mut script, n + 1, "gated", Some(60_000)).await;
        ids.push(task["taskId"].as_str().unwrap().to_owned());
    }
    let busy = script.request(4, "elicitation/create", elicit("gated", Some(json!({"ttl": 60_000})))).await;
    assert_eq!(error_code(&busy), -32000, "over max_tasks: {busy}");

    let first = script.request(5, "tasks/list", json!({})).await;
    let page: Vec<&str> =
        first["result"]["tasks"].as_array().unwrap().iter().map(|t| t["taskId"].as_str().unwrap()).collect();
    assert_eq!(page, [&ids[0], &ids[1]]);
    let cursor = first["result"]["nextCursor"].clone();
    assert!(cursor.is_string(), "{first}");
    let second = script.request(6, "tasks/list", json!({"cursor": cursor})).await;
    let page: Vec<&str> =
        second["result"]["tasks"].as_array().unwrap().iter().map(|t| t["taskId"].as_str().unwrap()).collect();
    assert_eq!(page, [&ids[2]]);
    assert!(second["result"].get("nextCursor").is_none(), "{second}");
    let bad = script.request(7, "tasks/list", json!({"cursor": "nonsense"})).await;
    assert_eq!(error_code(&bad), -32602);
    rig.gate.add_permits(3);
}

#[tokio::test]
async fn ttls_are_clamped_to_the_clients_bounds_and_reported() {
    let rig = Rig::new();
    let config = HostedTasks { max_ttl: Duration::from_secs(120), ..HostedTasks::default() };
    let (_client, mut script, _) = connect(rig.options(Some(config))).await;
    let zero = create(&mut script, 1, "quick", Some(0)).await;
    assert_eq!(zero["ttl"], HostedTasks::MIN_TTL.as_millis() as i64, "ttl 0: {zero}");
    let huge = create(&mut script, 2, "quick", Some(1_000_000_000_000)).await;
    assert_eq!(huge["ttl"], 120_000, "ttl 10^12: {huge}");
    let unasked = create(&mut script, 3, "quick", None).await;
    assert_eq!(unasked["ttl"], 120_000, "no ttl: {unasked}");
    // The ttl in force is the one tasks/get shows.
    let got = script.request(4, "tasks/get", json!({"taskId": huge["taskId"]})).await;
    assert_eq!(got["result"]["ttl"], 120_000);
}

/// `statuses()` of a task whose server suggests polling once a minute yields the status
/// pushed by `notifications/tasks/status` at once: the script answers one `tasks/get`
/// only, and a second poll would fail the test.
#[tokio::test(start_paused = true)]
async fn statuses_yield_a_pushed_status_before_the_next_poll() {
    let (client, mut script, _) = connect(ClientOptions::new("follower", "1")).await;
    let task = json!({"taskId": "t-1", "status": "working", "createdAt": "2025-11-25T00:00:00.000Z",
        "lastUpdatedAt": "2025-11-25T00:00:00.000Z", "ttl": 600_000, "pollInterval": 60_000});
    let calling = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool_as_task("work", json!({}), None).await }
    });
    let call = script.next_request().await;
    assert_eq!(call["method"], "tools/call");
    assert_eq!(call["params"]["task"], json!({}));
    script.send(json!({"jsonrpc": "2.0", "id": call["id"], "result": {"task": task}}));
    let handle = calling.await.unwrap().expect("a task");

    let mut statuses = Box::pin(handle.statuses());
    let first = tokio::spawn(async move {
        let first = statuses.next().await;
        (first, statuses)
    });
    let get = script.next_request().await;
    assert_eq!(get["method"], "tasks/get");
    script.send(json!({"jsonrpc": "2.0", "id": get["id"], "result": task}));
    let (first, mut statuses) = first.await.unwrap();
    assert_eq!(first.unwrap().unwrap(), TaskStatus::Working);

    let started = tokio::time::Instant::now();
    let mut done = task.clone();
    done["status"] = json!("completed");
    script.send(json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": done}));
    let next = tokio::select! {
        next = statuses.next() => next,
        frame = script.next_request() => panic!("the client polled again instead: {frame}"),
    };
    assert_eq!(next.unwrap().unwrap(), TaskStatus::Completed);
    assert!(started.elapsed() < Duration::from_secs(60), "yielded before the next poll was due");
    assert!(statuses.next().await.is_none(), "the stream ends at the terminal status");
}
