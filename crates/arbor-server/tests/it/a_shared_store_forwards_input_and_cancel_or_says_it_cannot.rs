//! The forwarding seam (`TaskStore::forward`, `TaskStore::attach_runs`, `TaskRuns`), raw
//! JSON over the in-memory transport on the paused clock, two servers sharing one store.
//! The default store forwards nothing, as before the seam: `tasks/update` through the
//! server not running the task is -32603 "the task's run is not on this server", and
//! `tasks/cancel` there cancels the record alone. A store that forwards (here `Relay`, an
//! in-process stand-in for a cluster store) has the input applied by the running server's
//! own `tasks/update` code (the result is computed with it; a wrong kind is -32602,
//! nothing recorded) and its cancel stops the run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use arbor_protocol::model::tools::CallToolResult;
use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::tasks::{Delivery, TaskChange, TaskConfig, TaskOwner, TaskPage, TaskRuns, TaskSignal};
use arbor_server::{
    ConnectOptions, InputRequired, MemoryTaskStore, Reply, RequestContext, Router, Server, TaskRecord, TaskStore,
    TaskStoreError, TaskSupport,
};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::support::{modern_meta, ScriptedPeer, TaskSetup};

const EXT: &str = "io.modelcontextprotocol/tasks";

fn meta() -> Value {
    modern_meta(json!({"elicitation": {}, "extensions": {EXT: {}}}))
}

/// Set when a `waits` run's future is dropped (its run stopped) before it finished.
#[derive(Clone, Default)]
struct Stopped(Arc<AtomicBool>);

struct SetOnDrop(Stopped);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0 .0.store(true, Ordering::SeqCst);
    }
}

/// `greet` asks for a name and greets it; `waits` waits for ever.
fn router(stopped: Stopped) -> Router {
    let greet = ToolRoute::new("greet", |_: NoArgs, cx: RequestContext| async move {
        match cx.input_responses().and_then(|r| r.get("name")).map(|r| serde_json::to_value(r).unwrap()) {
            Some(answer) => Reply::Complete(CallToolResult::from_text(format!("hello {}", answer["content"]["name"]))),
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
    let waits = ToolRoute::new("waits", move |_: NoArgs| {
        let guard = SetOnDrop(stopped.clone());
        async move {
            let _guard = guard;
            std::future::pending::<String>().await
        }
    });
    Router::new("forwarding", "1")
        .tool_route(greet.description("greets").task_support(TaskSupport::Optional))
        .tool_route(waits.description("waits").task_support(TaskSupport::Optional))
}

/// A memory store that forwards a signal to every attached server's runs in turn, as a
/// cluster store does across nodes.
struct Relay {
    inner: MemoryTaskStore,
    runs: Mutex<Vec<Weak<dyn TaskRuns>>>,
}

impl TaskStore for Relay {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        self.inner.create(record)
    }
    fn get<'a>(&'a self, owner: &'a TaskOwner, id: &'a str) -> BoxFuture<'a, Result<TaskRecord, TaskStoreError>> {
        self.inner.get(owner, id)
    }
    fn change<'a>(&'a self, id: &'a str, c: TaskChange) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        self.inner.change(id, c)
    }
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        self.inner.remove(id)
    }
    fn wait<'a>(&'a self, owner: &'a TaskOwner, id: &'a str) -> BoxFuture<'a, Result<TaskRecord, TaskStoreError>> {
        self.inner.wait(owner, id)
    }
    fn list<'a>(
        &'a self,
        owner: &'a TaskOwner,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<TaskPage, TaskStoreError>> {
        self.inner.list(owner, cursor, limit)
    }
    fn forward<'a>(&'a self, id: &'a str, signal: TaskSignal) -> BoxFuture<'a, Result<Delivery, TaskStoreError>> {
        Box::pin(async move {
            let runs: Vec<_> = self.runs.lock().iter().filter_map(Weak::upgrade).collect();
            for runs in runs {
                match runs.deliver(id, signal.clone()).await {
                    Delivery::NotRunning => continue,
                    taken => return Ok(taken),
                }
            }
            Ok(Delivery::NotRunning)
        })
    }
    fn attach_runs(&self, runs: Weak<dyn TaskRuns>) {
        self.runs.lock().push(runs);
    }
}

fn setup(store: Arc<dyn TaskStore>, stopped: Stopped) -> TaskSetup {
    TaskSetup::new(2, |config| {
        Server::with_config(router(stopped.clone()), config.tasks(TaskConfig::default())).with_task_store(store.clone())
    })
}

async fn create(peer: &mut ScriptedPeer, tool: &str) -> String {
    let created = peer.call(1, "tools/call", json!({"_meta": meta(), "name": tool, "arguments": {}})).await;
    created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_owned()
}

async fn status(peer: &mut ScriptedPeer, id: &str) -> Value {
    peer.call(50, "tasks/get", json!({"_meta": meta(), "taskId": id})).await["result"].clone()
}

fn update(id: &str, answers: Value) -> Value {
    json!({"_meta": meta(), "taskId": id, "inputResponses": answers})
}

const ADA: &str = r#"{"name": {"action": "accept", "content": {"name": "Ada"}}}"#;

#[tokio::test(start_paused = true)]
async fn the_default_store_forwards_nothing_as_before() {
    let stopped = Stopped::default();
    let mut s = setup(Arc::new(MemoryTaskStore::new(&TaskConfig::default())), stopped.clone());
    let alice = || ConnectOptions::tenant("acme").auth("alice");
    let (mut on_a, mut on_b) = (s.connect(0, alice()).await, s.connect(1, alice()).await);

    let id = create(&mut on_a, "greet").await;
    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    assert_eq!(status(&mut on_b, &id).await["status"], "input_required");
    let refused = on_b.call(2, "tasks/update", update(&id, serde_json::from_str(ADA).unwrap())).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert_eq!(refused["error"]["message"], "Internal error: the task's run is not on this server");
    let taken = on_a.call(3, "tasks/update", update(&id, serde_json::from_str(ADA).unwrap())).await;
    assert_eq!(taken["result"]["resultType"], "complete", "{taken}");

    // A cancel through b cancels the record; nothing reaches a's run.
    let waiting = create(&mut on_a, "waits").await;
    let ack = on_b.call(4, "tasks/cancel", json!({"_meta": meta(), "taskId": waiting})).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert_eq!(status(&mut on_a, &waiting).await["status"], "cancelled");
    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    assert!(!stopped.0.load(Ordering::SeqCst), "the default store cannot reach the run");
    s.finish(vec![on_a, on_b]).await;
}

#[tokio::test(start_paused = true)]
async fn a_forwarding_store_has_the_running_server_apply_input_and_cancel() {
    let stopped = Stopped::default();
    let relay = Relay { inner: MemoryTaskStore::new(&TaskConfig::default()), runs: Mutex::default() };
    let mut s = setup(Arc::new(relay), stopped.clone());
    let alice = || ConnectOptions::tenant("acme").auth("alice");
    let (mut on_a, mut on_b) = (s.connect(0, alice()).await, s.connect(1, alice()).await);

    let id = create(&mut on_a, "greet").await;
    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    let wrong = json!({"name": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}});
    let refused = on_b.call(2, "tasks/update", update(&id, wrong)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(status(&mut on_b, &id).await["status"], "input_required", "nothing recorded");
    let taken = on_b.call(3, "tasks/update", update(&id, serde_json::from_str(ADA).unwrap())).await;
    assert_eq!(taken["result"]["resultType"], "complete", "{taken}");
    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    let done = status(&mut on_b, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "hello \"Ada\"");

    let waiting = create(&mut on_a, "waits").await;
    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    let ack = on_b.call(4, "tasks/cancel", json!({"_meta": meta(), "taskId": waiting})).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    assert!(stopped.0.load(Ordering::SeqCst), "a's run was stopped");
    assert_eq!(status(&mut on_a, &waiting).await["status"], "cancelled");
    s.finish(vec![on_a, on_b]).await;
}
