//! Per-tenant handlers, hot-swapped (`Server::set_tenant_handler`): a request runs, start
//! to end, on the tenant handler it was admitted with; requests admitted after a swap run
//! on the new one; `list_changed` reaches the swapped tenant's clients only (legacy
//! sessions and 2026-07-28 listens alike); the observe view says which version each
//! in-flight request runs. Every count is asserted, never a time: slow tools wait on a
//! gate the test opens, and silence is a bounded wait on the paused clock.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_bus::{Bus, LocalBus};
use arbor_otp::Gauge;
use arbor_server::observe::{ViewKind, ViewNode};
use arbor_server::router::{NoArgs, Router, ToolRoute};
use arbor_server::{ConnectOptions, Connection, ListKind, Server, ServerConfig, ServerHandler, Transport};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use crate::support::{modern_meta, ScriptedPeer};

/// The shared tool set: `which` answers "shared", `ping` "pong". Dynamic (a handle was
/// taken), so the server advertises `tools.listChanged`.
fn shared_router() -> Router {
    let router = Router::new("shared", "1.0.0")
        .tool("which", "Says which tool set answered", |_: NoArgs| async { "shared" })
        .tool("ping", "Answers pong", |_: NoArgs| async { "pong" });
    let _ = router.handle();
    router
}

/// `shared` with its `which` replaced by one answering `answer`.
fn with_which(shared: &Router, route: ToolRoute) -> Router {
    shared.fork().without_tool("which").tool_route(route)
}

fn answering(answer: &'static str) -> ToolRoute {
    ToolRoute::new("which", move |_: NoArgs| async move { answer }).description("Says which tool set answered")
}

/// A `which` that counts its calls, then waits for the gate to open (close) and answers "v1".
fn gated(gate: &Arc<Semaphore>, started: &Arc<AtomicUsize>) -> ToolRoute {
    let (gate, started) = (gate.clone(), started.clone());
    ToolRoute::new("which", move |_: NoArgs| {
        let (gate, started) = (gate.clone(), started.clone());
        async move {
            started.fetch_add(1, Ordering::SeqCst);
            // Closed, not given permits: every waiter wakes, and later calls pass at once.
            let _ = gate.acquire().await;
            "v1"
        }
    })
    .description("Says which tool set answered, when let through")
}

struct Setup {
    server: Server,
    bus: Arc<LocalBus>,
    gauge: Gauge,
    connections: Vec<Connection>,
}

impl Setup {
    fn new(handler: impl ServerHandler) -> Setup {
        let gauge = Gauge::new();
        let bus = Arc::new(LocalBus::new());
        let server = Server::with_config(handler, ServerConfig::default().gauge(gauge.clone())).with_bus(bus.clone());
        Setup { server, bus, gauge, connections: Vec::new() }
    }

    async fn connect(&mut self, tenant: &str) -> ScriptedPeer {
        let (server_side, client_side) = Transport::memory_pair();
        self.connections.push(self.server.connect(server_side, ConnectOptions::tenant(tenant)).await.unwrap());
        ScriptedPeer::new(client_side)
    }

    async fn finish(self, peers: Vec<ScriptedPeer>) {
        for peer in &peers {
            peer.close().await;
        }
        for connection in &self.connections {
            connection.closed().await;
        }
        self.server.shutdown().await;
        assert_eq!(self.bus.subscriber_count(), 0, "bus subscriptions leaked");
        assert_eq!(self.gauge.alive_tasks(), 0, "tasks leaked");
        assert_eq!(self.gauge.alive_actors(), 0, "actors leaked");
    }
}

fn call_which(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"_meta": modern_meta(json!({})), "name": "which", "arguments": {}}})
}

/// The text a `tools/call` response carries, or the whole response when it is not one.
fn answer(response: &Value) -> String {
    match response["result"]["content"][0]["text"].as_str() {
        Some(text) => text.to_owned(),
        None => response.to_string(),
    }
}

fn tool_names(response: &Value) -> Vec<String> {
    let tools = response["result"]["tools"].as_array().unwrap_or_else(|| panic!("not a tool list: {response}"));
    tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

/// Waits (bounded, on the paused clock) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("{what}: not within the bound");
}

/// The request nodes under `tenant`'s connections in a view.
fn requests<'a>(root: &'a ViewNode, tenant: &str) -> Vec<&'a ViewNode> {
    let connections = root.find(&[&format!("tenant:{tenant}"), "connections"]).expect("the tenant's connections");
    let nodes = connections.children.iter().flat_map(|c| &c.children);
    nodes.filter(|n| n.kind == ViewKind::Request).collect()
}

/// Tenant B's traffic until `stop`: `tools/list` and `tools/call which`, counted in
/// `rounds`; returns its peer and how many answers were not the shared tool set's.
async fn steady_traffic(mut b: ScriptedPeer, stop: Arc<AtomicBool>, rounds: Arc<AtomicUsize>) -> (ScriptedPeer, usize) {
    let (mut errors, mut id) = (0, 0);
    while !stop.load(Ordering::SeqCst) {
        id += 2;
        let listed = b.call(id, "tools/list", json!({"_meta": modern_meta(json!({}))})).await;
        let called = b.call(id + 1, "tools/call", call_which(0)["params"].clone()).await;
        errors += usize::from(tool_names(&listed) != ["which", "ping"]);
        errors += usize::from(answer(&called) != "shared");
        rounds.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    (b, errors)
}

#[tokio::test(start_paused = true)]
async fn requests_running_at_a_swap_finish_on_the_old_handler_and_later_ones_run_on_the_new() {
    const N: u64 = 200;
    let shared = shared_router();
    let mut s = Setup::new(shared.clone());
    let (gate, started) = (Arc::new(Semaphore::new(0)), Arc::new(AtomicUsize::new(0)));
    // Set before the server serves.
    assert_eq!(s.server.set_tenant_handler("a", with_which(&shared, gated(&gate, &started))), 1);
    let mut a = s.connect("a").await;
    let b = s.connect("b").await;

    // Tenant B, on the server's handler, calls and lists throughout, a round per tick of
    // the paused clock (so the clock still moves while it runs).
    let (stop, b_rounds) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let steady = tokio::spawn(steady_traffic(b, stop.clone(), b_rounds.clone()));

    for id in 1..=N {
        a.send(call_which(id));
    }
    until("every first call running", || started.load(Ordering::SeqCst) == N as usize).await;
    let rounds_at_swap = b_rounds.load(Ordering::SeqCst);
    assert!(rounds_at_swap > 0, "tenant B made no request while A's were in flight");
    let v2 = with_which(&shared, answering("v2"));
    assert_eq!(s.server.set_tenant_handler("a", v2), 2);
    assert_eq!(s.server.tenant_handler_version("a"), 2);

    // The view during the swap: every listed request of A runs version 1, while the
    // tenant runs version 2 (a connection lists at most 100 of its requests).
    let view = s.server.observe().await.unwrap();
    let running = requests(&view.root, "a");
    assert_eq!(running.len(), 100);
    assert!(running.iter().all(|r| r.handler_version == Some(1)), "{running:?}");
    let load = |tenant: &str| view.tenants.iter().find(|l| l.tenant == tenant).unwrap().handler_version;
    assert_eq!((load("a"), load("b")), (2, 0));

    for id in N + 1..=2 * N {
        a.send(call_which(id));
    }
    gate.close();
    let mut answers = BTreeMap::new();
    for _ in 0..2 * N {
        let response = a.recv_response().await;
        answers.insert(response["id"].as_u64().unwrap(), answer(&response));
    }
    assert_eq!(answers.len(), 2 * N as usize);
    let first: Vec<_> = answers.range(1..=N).filter(|(_, a)| *a != "v1").collect();
    let later: Vec<_> = answers.range(N + 1..).filter(|(_, a)| *a != "v2").collect();
    assert!(first.is_empty() && later.is_empty(), "first {first:?}, later {later:?}");
    assert_eq!(started.load(Ordering::SeqCst), N as usize, "no later call reached version 1");

    stop.store(true, Ordering::SeqCst);
    let (b, errors) = steady.await.unwrap();
    assert!(b_rounds.load(Ordering::SeqCst) > rounds_at_swap, "tenant B made no request after the swap");
    assert_eq!(errors, 0, "tenant B saw another tool set or an error");
    s.finish(vec![a, b]).await;
}

/// Every message `peer` receives within a bounded wait, by method; a listen's must carry
/// its subscription id `"l"`.
async fn heard(peer: &mut ScriptedPeer) -> Vec<String> {
    let mut methods = Vec::new();
    while let Ok(message) = tokio::time::timeout(Duration::from_millis(200), peer.recv()).await {
        let id = &message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"];
        assert!(id.is_null() || *id == "l", "{message}");
        methods.push(message["method"].as_str().unwrap_or("a response").to_owned());
    }
    methods
}

/// What each of `peers` heard: `[tenant A's session, A's listen, B's session, B's listen]`.
async fn all_heard(peers: &mut [ScriptedPeer]) -> Vec<usize> {
    let mut counts = Vec::new();
    for peer in peers.iter_mut() {
        let methods = heard(peer).await;
        assert!(methods.iter().all(|m| m == "notifications/tools/list_changed"), "{methods:?}");
        counts.push(methods.len());
    }
    counts
}

#[tokio::test(start_paused = true)]
async fn list_changed_reaches_the_swapped_tenants_sessions_and_listens_only() {
    let shared = shared_router();
    let mut s = Setup::new(shared.clone());
    let mut peers = Vec::new();
    for tenant in ["a", "b"] {
        let mut session = s.connect(tenant).await;
        session.initialize("2025-11-25", json!({})).await;
        let mut listen = s.connect(tenant).await;
        let params = json!({"_meta": modern_meta(json!({})), "notifications": {"toolsListChanged": true}});
        listen.send(json!({"jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen", "params": params}));
        let ack = listen.recv().await;
        assert_eq!(ack["params"]["notifications"], json!({"toolsListChanged": true}), "{ack}");
        peers.extend([session, listen]);
    }
    // Each of the four streams follows the global tools topic and its tenant's.
    until("every stream subscribed", || s.bus.subscriber_count() == 8).await;

    let mine = shared.fork().tool("extra", "Only tenant A's", |_: NoArgs| async { "extra" });
    assert_eq!(s.server.set_tenant_handler("a", mine.clone()), 1);
    assert_eq!(all_heard(&mut peers).await, [1, 1, 0, 0], "a swap");
    let listed = peers[0].call(10, "tools/list", json!({})).await;
    assert_eq!(tool_names(&listed), ["which", "ping", "extra"]);
    let listed = peers[2].call(10, "tools/list", json!({})).await;
    assert_eq!(tool_names(&listed), ["which", "ping"]);

    // The tenant's router announces its own changes to the tenant alone.
    mine.handle().add_tool(ToolRoute::new("later", |_: NoArgs| async { "later" }).description("Added to A's router"));
    assert_eq!(all_heard(&mut peers).await, [1, 1, 0, 0], "a change of A's router");
    // The shared router's still reach every tenant.
    shared.handle().add_tool(ToolRoute::new("shared_later", |_: NoArgs| async { "x" }).description("Shared"));
    assert_eq!(all_heard(&mut peers).await, [1, 1, 1, 1], "a change of the shared router");

    // A clear is a swap too; the router swapped out announces nothing any more.
    assert_eq!(s.server.clear_tenant_handler("a"), 2);
    assert_eq!(all_heard(&mut peers).await, [1, 1, 0, 0], "a clear");
    mine.handle().remove_tool("extra");
    assert_eq!(all_heard(&mut peers).await, [0, 0, 0, 0], "a change of a router swapped out");
    s.finish(peers).await;
}

#[tokio::test(start_paused = true)]
async fn clearing_a_tenant_handler_returns_the_tenant_to_the_servers() {
    let shared = shared_router();
    let mut s = Setup::new(shared.clone());
    let mut a = s.connect("a").await;
    let mut b = s.connect("b").await;
    let mut id = 0;
    let mut which = async |peer: &mut ScriptedPeer| {
        id += 1;
        answer(&peer.call(id, "tools/call", call_which(0)["params"].clone()).await)
    };
    let versions = async |s: &Setup| {
        let loads = s.server.tenant_loads().await;
        loads.iter().map(|l| (l.tenant.clone(), l.handler_version)).collect::<Vec<_>>()
    };
    assert_eq!((which(&mut a).await, s.server.tenant_handler_version("a")), ("shared".into(), 0));
    // Connected before the tenant had a handler of its own: it runs the new one all the same.
    assert_eq!(s.server.set_tenant_handler("a", with_which(&shared, answering("mine"))), 1);
    assert_eq!((which(&mut a).await, which(&mut b).await), ("mine".into(), "shared".into()));
    assert_eq!(versions(&s).await, [("a".into(), 1), ("b".into(), 0)]);
    assert_eq!(s.server.clear_tenant_handler("a"), 2);
    assert_eq!((which(&mut a).await, which(&mut b).await), ("shared".into(), "shared".into()));
    assert_eq!(versions(&s).await, [("a".into(), 2), ("b".into(), 0)]);
    // Versions only grow: the next handler is 3, not 1 again.
    assert_eq!(s.server.set_tenant_handler("a", with_which(&shared, answering("again"))), 3);
    assert_eq!(which(&mut a).await, "again");
    s.finish(vec![a, b]).await;
}

#[tokio::test(start_paused = true)]
async fn a_task_runs_on_the_handler_of_the_request_that_created_it() {
    let (gate, started) = (Arc::new(Semaphore::new(0)), Arc::new(AtomicUsize::new(0)));
    let tasks = |route: ToolRoute| route.task_support(arbor_server::TaskSupport::Optional);
    let shared = Router::new("shared", "1.0.0").tool_route(tasks(answering("shared")));
    let mut s = Setup::new(shared.clone());
    s.server.set_tenant_handler("a", with_which(&shared, tasks(gated(&gate, &started))));
    let mut a = s.connect("a").await;
    a.initialize("2025-11-25", json!({})).await;
    let created = a.call(1, "tools/call", crate::support::task_call("which", json!({}), json!(60_000))).await;
    let task = crate::support::created_id(&created);
    until("the task's run started", || started.load(Ordering::SeqCst) == 1).await;
    s.server.set_tenant_handler("a", with_which(&shared, tasks(answering("v2"))));
    gate.close();
    let result = a.call(2, "tasks/result", json!({"taskId": task})).await;
    assert_eq!(answer(&result), "v1");
    // A new task runs on the new handler.
    let created = a.call(3, "tools/call", crate::support::task_call("which", json!({}), json!(60_000))).await;
    let task = crate::support::created_id(&created);
    assert_eq!(answer(&a.call(4, "tasks/result", json!({"taskId": task})).await), "v2");
    s.finish(vec![a]).await;
}

#[test]
fn a_fork_has_lists_and_announcements_of_its_own() {
    let original = shared_router();
    let fork = original.fork();
    let (mut original_changes, mut fork_changes) = (original.list_changes().unwrap(), fork.list_changes().unwrap());
    original.handle().add_tool(ToolRoute::new("x", |_: NoArgs| async { "x" }).description("Only the original's"));
    fork.handle().remove_tool("ping");
    let fork = fork.tool("only_fork", "Only the fork's", |_: NoArgs| async { "fork" });
    assert_eq!(original.handle().tool_names(), ["which", "ping", "x"]);
    assert_eq!(fork.handle().tool_names(), ["which", "only_fork"]);
    // Each announces its own changes only.
    assert_eq!(original_changes.try_recv(), Some(ListKind::Tools));
    assert_eq!(original_changes.try_recv(), None);
    assert_eq!(fork_changes.try_recv(), Some(ListKind::Tools));
    assert_eq!((fork_changes.try_recv(), fork_changes.try_recv()), (Some(ListKind::Tools), None));
    // A clone shares its router's lists; a fork of the fork is a third set.
    let clone = fork.clone().without_tool("which");
    assert_eq!(fork.handle().tool_names(), ["only_fork"]);
    assert_eq!(clone.fork().without_tool("only_fork").handle().tool_names(), Vec::<String>::new());
    assert_eq!(fork.handle().tool_names(), ["only_fork"]);
}
