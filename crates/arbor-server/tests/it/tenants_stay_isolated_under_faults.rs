//! Tenant isolation, proven by counts: tenant A suffers one fault per test (a panic storm,
//! hung handlers past their deadline, a rate flood at 10x its limit, a stalled subscriber
//! with 10,000 updates published, a restart storm past its budget) while tenant B runs
//! steady traffic (two connections, 500 pipelined calls each). B gets every answer and no error; each of A's requests gets exactly one
//! answer of an allowed kind (the ledger); the live actor and task counts return to their
//! baseline. (A router swap under load is `a_tenant_handler_swap_is_atomic_per_request`.)

use std::collections::HashMap;
use std::time::Duration;

use crate::support::{Harness, ScriptedPeer};
use arbor_server::tenant::{RateLimit, RestartBudget, TenantPolicy, TenantQuota};
use arbor_server::{ConnectOptions, Connection, ServerConfig};
use serde_json::{json, Value};

/// B's steady traffic: this many echo calls, pipelined on each of its connections.
const B_CALLS: i64 = 500;
const B_CONNECTIONS: usize = 2;

/// How one request ended, as its answer says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Outcome {
    Success,
    /// -32000: a typed refusal (rate, quarantine, a bound).
    Refused,
    /// -32603: a panic, or the tenant's escalation.
    Failed,
    /// -32603 naming the deadline.
    TimedOut,
}

/// Every request sent and the one answer each got.
#[derive(Default, Debug)]
struct Ledger {
    answers: HashMap<i64, Outcome>,
}

impl Ledger {
    /// Records `answer`; panics on a second answer to one id.
    fn record(&mut self, answer: &Value) {
        let id = answer["id"].as_i64().unwrap_or_else(|| panic!("an answer without an id: {answer}"));
        let outcome = match answer["error"]["code"].as_i64() {
            None if answer.get("result").is_some() => Outcome::Success,
            Some(-32000) => Outcome::Refused,
            Some(-32603) if answer["error"]["data"]["reason"] == "timeout" => Outcome::TimedOut,
            Some(-32603) => Outcome::Failed,
            _ => panic!("an answer of no allowed kind: {answer}"),
        };
        assert!(self.answers.insert(id, outcome).is_none(), "a second answer to {id}: {answer}");
    }

    fn count(&self, outcome: Outcome) -> usize {
        self.answers.values().filter(|o| **o == outcome).count()
    }

    /// Reads answers from `peer` until every id of `ids` has one (notifications skipped).
    async fn collect(&mut self, peer: &mut ScriptedPeer, ids: impl IntoIterator<Item = i64>) {
        let mut waiting: std::collections::HashSet<i64> = ids.into_iter().collect();
        while !waiting.is_empty() {
            let message = peer.recv().await;
            if message.get("id").is_none() {
                continue;
            }
            waiting.remove(&message["id"].as_i64().unwrap());
            self.record(&message);
        }
    }
}

fn call(id: i64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {"message": "hi"}}})
}

/// A's `n` calls of `tool(id)`, all sent at once, and the ledger of their answers.
async fn pipelined(a: &mut ScriptedPeer, n: i64, tool: impl Fn(i64) -> &'static str) -> Ledger {
    let mut ledger = Ledger::default();
    for id in 1..=n {
        a.send(call(id, tool(id)));
    }
    ledger.collect(a, 1..=n).await;
    ledger
}

/// Tenant B's connections, initialized.
async fn tenant_b(h: &Harness) -> Vec<(Connection, ScriptedPeer)> {
    let mut b = Vec::new();
    for _ in 0..B_CONNECTIONS {
        let (conn, mut peer) = h.connect(ConnectOptions::tenant("b")).await;
        peer.initialize("2025-11-25", json!({})).await;
        b.push((conn, peer));
    }
    b
}

/// B's steady traffic on its connections: every call must succeed.
async fn steady(b: &mut [(Connection, ScriptedPeer)]) {
    let runs = b.iter_mut().map(|(_, peer)| async move {
        let mut ledger = Ledger::default();
        for id in 1..=B_CALLS {
            peer.send(call(id, "echo"));
            // A pause every few calls, so B's traffic spans A's fault instead of preceding it.
            if id % 50 == 0 {
                tokio::task::yield_now().await;
            }
        }
        ledger.collect(peer, 1..=B_CALLS).await;
        ledger
    });
    for ledger in futures::future::join_all(runs).await {
        assert_eq!(ledger.count(Outcome::Success), B_CALLS as usize, "B lost answers or got errors: {ledger:?}");
    }
}

/// A's connection and B's, a baseline of live actors and tasks taken once all are open.
struct Scene {
    h: Harness,
    a: (Connection, ScriptedPeer),
    b: Vec<(Connection, ScriptedPeer)>,
    baseline: (usize, usize),
}

impl Scene {
    async fn new(policy: TenantPolicy) -> Scene {
        let h = Harness::with_config(ServerConfig::default().tenant_policy(policy)).await;
        let (conn, mut peer) = h.connect(ConnectOptions::tenant("a")).await;
        peer.initialize("2025-11-25", json!({})).await;
        let mut b = tenant_b(&h).await;
        // One request on each connection first: what a connection starts on its first
        // request (its writer's batching, a worker) is part of the baseline.
        peer.call(0, "tools/call", json!({"name": "echo", "arguments": {"message": "hi"}})).await;
        for (_, peer) in &mut b {
            peer.call(0, "tools/call", json!({"name": "echo", "arguments": {"message": "hi"}})).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let baseline = (h.gauge.alive_actors(), h.gauge.alive_tasks());
        Scene { h, a: (conn, peer), b, baseline }
    }

    /// The live counts are back to the baseline; then everything is closed and checked.
    async fn finish(mut self) {
        let gauge = &self.h.gauge;
        let baseline = self.baseline;
        // Requests and streams end a moment after their answers: poll (bounded) for it.
        for _ in 0..1000 {
            if (gauge.alive_actors(), gauge.alive_tasks()) == baseline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), baseline, "live (actors, tasks) vs the baseline");
        self.a.1.close().await;
        self.a.0.closed().await;
        for (conn, peer) in self.b.drain(..) {
            peer.close().await;
            conn.closed().await;
        }
        self.h.finish().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_panic_storm_in_one_tenant_costs_the_other_nothing() {
    let mut scene = Scene::new(TenantPolicy::default()).await;
    let fault = pipelined(&mut scene.a.1, 1000, |id| if id % 5 == 0 { "panic" } else { "echo" });
    let (ledger, ()) = tokio::join!(fault, steady(&mut scene.b));
    assert_eq!(ledger.answers.len(), 1000);
    assert_eq!(ledger.count(Outcome::Failed), 200, "{ledger:?}");
    assert_eq!(ledger.count(Outcome::Success), 800);
    scene.finish().await;
}

#[tokio::test(start_paused = true)]
async fn hung_handlers_past_their_deadline_in_one_tenant_cost_the_other_nothing() {
    let mut scene = Scene::new(TenantPolicy::default()).await;
    // `hang_briefly` never answers; its deadline is 1 s.
    let fault = pipelined(&mut scene.a.1, 200, |id| if id % 2 == 0 { "hang_briefly" } else { "echo" });
    let (ledger, ()) = tokio::join!(fault, steady(&mut scene.b));
    assert_eq!(ledger.count(Outcome::TimedOut), 100, "{ledger:?}");
    assert_eq!(ledger.count(Outcome::Success), 100);
    scene.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_rate_flood_at_ten_times_the_limit_is_refused_for_that_tenant_only() {
    let policy = TenantPolicy::default().tenant("a", TenantQuota::new().rate(RateLimit::new(100.0, 100)));
    let mut scene = Scene::new(policy).await;
    let fault = pipelined(&mut scene.a.1, 1000, |_| "echo");
    let (ledger, ()) = tokio::join!(fault, steady(&mut scene.b));
    assert_eq!(ledger.answers.len(), 1000);
    let (ok, refused) = (ledger.count(Outcome::Success), ledger.count(Outcome::Refused));
    assert_eq!(ok + refused, 1000, "{ledger:?}");
    // The burst, plus what the paused clock let refill while the flood was read.
    assert!((100..=200).contains(&ok), "{ok} served");
    let load = scene.h.server.tenant_loads().await.into_iter().find(|l| l.tenant == "a").unwrap();
    assert_eq!(load.refused.rate_limited as usize, refused);
    scene.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_stalled_subscriber_with_ten_thousand_updates_costs_the_other_tenant_nothing() {
    let mut scene = Scene::new(TenantPolicy::default()).await;
    let a = &mut scene.a.1;
    assert_eq!(a.call(1, "resources/subscribe", json!({"uri": "file:///hot"})).await["result"], json!({}));
    // A reads nothing while 10,000 updates are published and B runs.
    let publish = async {
        for _ in 0..10_000 {
            scene.h.server.notify_resource_updated("file:///hot").unwrap();
            tokio::task::yield_now().await;
        }
    };
    let ((), ()) = tokio::join!(publish, steady(&mut scene.b));
    // A's own request is still answered, once, after whatever the bounded queue kept.
    a.send(call(2, "echo"));
    let mut updates = 0;
    let mut ledger = Ledger::default();
    loop {
        let message = a.recv().await;
        if message.get("id").is_none() {
            assert_eq!(message["method"], "notifications/resources/updated");
            updates += 1;
            continue;
        }
        ledger.record(&message);
        break;
    }
    assert_eq!(ledger.count(Outcome::Success), 1);
    // What the output held before it stopped taking more (8 MiB unread), then what the
    // bounded, coalescing bus queue kept: never more than was published.
    assert!((1..=10_000).contains(&updates), "{updates} updates delivered");
    let done = a.call(3, "resources/unsubscribe", json!({"uri": "file:///hot"})).await;
    assert_eq!(done["result"], json!({}), "{done}");
    scene.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_restart_storm_past_the_budget_quarantines_that_tenant_only() {
    let budget = RestartBudget::new(5, Duration::from_secs(10), Duration::from_secs(30));
    let mut scene = Scene::new(TenantPolicy::default().tenant("a", TenantQuota::new().restart_budget(budget))).await;
    let fault = async {
        let mut ledger = Ledger::default();
        let (mut conn, mut peer) = (scene.a.0.clone(), std::mem::replace(&mut scene.a.1, placeholder()));
        let mut reconnected = false;
        for id in 1..=50 {
            peer.send(call(id, "panic"));
            ledger.collect(&mut peer, [id]).await;
            let escalated = scene.h.server.tenant_loads().await.iter().any(|l| l.tenant == "a" && l.escalations > 0);
            if escalated && !reconnected {
                reconnected = true;
                // The escalation stops the tenant's connections: wait for it, then reconnect.
                conn.closed().await;
                let (fresh, mut fresh_peer) = scene.h.connect(ConnectOptions::tenant("a")).await;
                fresh_peer.initialize("2025-11-25", json!({})).await;
                (conn, peer) = (fresh, fresh_peer);
            }
        }
        (ledger, conn, peer)
    };
    let ((ledger, conn, peer), ()) = tokio::join!(fault, steady(&mut scene.b));
    scene.a = (conn, peer);
    assert_eq!(ledger.answers.len(), 50);
    assert_eq!(ledger.count(Outcome::Failed), 6, "five within the budget, the sixth escalates: {ledger:?}");
    assert_eq!(ledger.count(Outcome::Refused), 44, "the rest refused by the quarantine");
    let load = scene.h.server.tenant_loads().await.into_iter().find(|l| l.tenant == "a").unwrap();
    assert_eq!((load.escalations, load.refused.quarantined), (1, 44));
    let b = scene.h.server.tenant_loads().await.into_iter().find(|l| l.tenant == "b").unwrap();
    assert_eq!((b.escalations, b.refused.quarantined, b.refused.overloaded), (0, 0, 0));
    // After the cool-down A is served again.
    tokio::time::advance(Duration::from_secs(30)).await;
    let answer = scene.a.1.call(100, "tools/call", json!({"name": "echo", "arguments": {"message": "hi"}})).await;
    assert_eq!(answer["result"]["content"][0]["text"], "hi");
    scene.finish().await;
}

/// A peer on a closed in-memory pair, standing in while the real one is borrowed.
fn placeholder() -> ScriptedPeer {
    ScriptedPeer::new(arbor_server::Transport::memory_pair().0)
}
