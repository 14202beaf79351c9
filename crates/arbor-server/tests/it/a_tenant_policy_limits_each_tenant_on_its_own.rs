//! `ServerConfig::tenants` over byte streams: each limit of a `TenantPolicy` refuses at
//! once with the error naming it, for its tenant only; a restart budget escalates and
//! quarantines a crashing tenant while its neighbour is served.

use std::time::Duration;

use crate::support::{created_id, sleepy, task_call, Harness, ScriptedPeer};
use arbor_server::observe::ViewKind;
use arbor_server::tenant::{RateLimit, RestartBudget, TenantPolicy, TenantQuota};
use arbor_server::{ConnectError, ConnectOptions, Router, Server, ServerConfig, Transport};
use serde_json::{json, Value};

fn echo(peer: &mut ScriptedPeer, id: i64) -> impl std::future::Future<Output = Value> + '_ {
    peer.call(id, "tools/call", json!({"name": "echo", "arguments": {"message": "hi"}}))
}

fn served(answer: &Value) -> bool {
    answer["result"]["content"][0]["text"] == "hi"
}

async fn initialized(h: &Harness, options: ConnectOptions) -> (arbor_server::Connection, ScriptedPeer) {
    let (conn, mut peer) = h.connect(options).await;
    peer.initialize("2025-11-25", json!({})).await;
    (conn, peer)
}

#[tokio::test(start_paused = true)]
async fn a_tenants_rate_refuses_past_its_burst_and_names_the_limit() {
    let policy = TenantPolicy::default().tenant("a", TenantQuota::new().rate(RateLimit::new(1.0, 3)));
    let h = Harness::with_config(ServerConfig::default().tenant_policy(policy)).await;
    let (a_conn, mut a) = initialized(&h, ConnectOptions::tenant("a")).await;
    let (b_conn, mut b) = initialized(&h, ConnectOptions::tenant("b")).await;
    let mut answers = Vec::new();
    for id in 1..=5 {
        answers.push(echo(&mut a, id).await);
    }
    assert_eq!(answers.iter().filter(|a| served(a)).count(), 3, "the burst: {answers:?}");
    let refused = &answers[3];
    assert_eq!(refused["error"]["code"], -32000);
    assert_eq!(refused["error"]["data"]["reason"], "rate_limited");
    assert_eq!(refused["error"]["data"]["limit"], "tenant_rate");
    let retry = refused["error"]["data"]["retryAfterMs"].as_u64().unwrap();
    assert!(retry > 0 && retry <= 1000, "{retry}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("1 requests/s (burst 3)"), "{refused}");
    // Tenant b has no rate: all of its requests are served meanwhile.
    for id in 1..=20 {
        assert!(served(&echo(&mut b, id).await));
    }
    // A token comes back after a second.
    tokio::time::advance(Duration::from_millis(1000)).await;
    assert!(served(&echo(&mut a, 6).await));
    assert!(!served(&echo(&mut a, 7).await));
    let load = h.server.tenant_loads().await.into_iter().find(|l| l.tenant == "a").unwrap();
    assert_eq!(load.refused.rate_limited, 3);
    for (peer, conn) in [(a, a_conn), (b, b_conn)] {
        peer.close().await;
        conn.closed().await;
    }
    h.finish().await;
}

#[tokio::test(start_paused = true)]
async fn each_principal_has_its_own_rate_within_the_tenant() {
    let policy = TenantPolicy::default().defaults(TenantQuota::new().principal_rate(RateLimit::new(1.0, 2)));
    let h = Harness::with_config(ServerConfig::default().tenant_policy(policy)).await;
    let (c1, mut alice) = initialized(&h, ConnectOptions::tenant("a").auth("alice")).await;
    let (c2, mut bob) = initialized(&h, ConnectOptions::tenant("a").auth("bob")).await;
    let mut alice_served = 0;
    for id in 1..=6 {
        alice_served += usize::from(served(&echo(&mut alice, id).await));
    }
    assert_eq!(alice_served, 2);
    let refused = echo(&mut alice, 7).await;
    assert_eq!(refused["error"]["data"]["limit"], "principal_rate");
    // Bob's bucket is his own.
    assert!(served(&echo(&mut bob, 1).await) && served(&echo(&mut bob, 2).await));
    for (peer, conn) in [(alice, c1), (bob, c2)] {
        peer.close().await;
        conn.closed().await;
    }
    h.finish().await;
}

#[tokio::test(start_paused = true)]
async fn in_flight_sessions_and_subscriptions_are_bounded_per_tenant() {
    let quota = TenantQuota::new().max_in_flight(1).max_sessions(2);
    let policy = TenantPolicy::default().tenant("a", quota).tenant("s", TenantQuota::new().max_subscriptions(1));
    let h = Harness::with_config(ServerConfig::default().tenant_policy(policy)).await;
    let (a1_conn, mut a1) = initialized(&h, ConnectOptions::tenant("a")).await;
    let (a2_conn, mut a2) = initialized(&h, ConnectOptions::tenant("a")).await;
    // The third session of `a` is refused; another tenant opens as many as it likes.
    let (side, _client) = Transport::memory_pair();
    match h.server.connect(side, ConnectOptions::tenant("a")).await {
        Err(ConnectError::Refused(refusal)) => {
            assert_eq!(refusal.limit(), "tenant_sessions");
            assert_eq!(refusal.status(), 503);
        }
        other => panic!("a third session was not refused: {:?}", other.map(|_| ())),
    }
    let (b_conn, mut b) = initialized(&h, ConnectOptions::tenant("b")).await;
    // One request in flight for the whole tenant.
    a1.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hang"}}));
    a1.call(2, "ping", json!({})).await;
    let refused = echo(&mut a2, 1).await;
    assert_eq!(refused["error"]["data"]["scope"], "tenant");
    assert_eq!(refused["error"]["data"]["limit"], 1);
    assert!(served(&echo(&mut b, 1).await));
    // One subscription stream for the whole tenant `s`, over all its sessions.
    let (s1_conn, mut s1) = initialized(&h, ConnectOptions::tenant("s")).await;
    let (s2_conn, mut s2) = initialized(&h, ConnectOptions::tenant("s")).await;
    let first = s1.call(2, "resources/subscribe", json!({"uri": "file:///one"})).await;
    assert_eq!(first["result"], json!({}), "{first}");
    let second = s2.call(3, "resources/subscribe", json!({"uri": "file:///two"})).await;
    assert_eq!(second["error"]["code"], -32000, "{second}");
    assert_eq!(second["error"]["data"]["scope"], "tenant");
    assert_eq!(b.call(2, "resources/subscribe", json!({"uri": "file:///two"})).await["result"], json!({}));
    // Closing a session gives its place back.
    a1.close().await;
    a1_conn.closed().await;
    let (a3_conn, a3) = initialized(&h, ConnectOptions::tenant("a")).await;
    for (peer, conn) in [(a2, a2_conn), (a3, a3_conn), (b, b_conn), (s1, s1_conn), (s2, s2_conn)] {
        peer.close().await;
        conn.closed().await;
    }
    h.finish().await;
}

#[tokio::test(start_paused = true)]
async fn running_tasks_are_bounded_per_tenant() {
    let gauge = arbor_otp::Gauge::new();
    let policy = TenantPolicy::default().tenant("a", TenantQuota::new().max_tasks(2));
    let config = ServerConfig::default().tenant_policy(policy).gauge(gauge.clone());
    let router = Router::new("tasks", "1").tool_route(sleepy());
    let server = Server::with_config(router, config);
    let mut peers = Vec::new();
    let mut conns = Vec::new();
    for tenant in ["a", "b"] {
        let (side, client) = Transport::memory_pair();
        conns.push(server.connect(side, ConnectOptions::tenant(tenant)).await.unwrap());
        let mut peer = ScriptedPeer::new(client);
        peer.initialize("2025-11-25", json!({})).await;
        peers.push(peer);
    }
    let call = |ttl| task_call("sleepy", json!({"seconds": 30}), json!(ttl));
    let mut a_created = 0;
    let mut a_refused = Vec::new();
    for id in 1..=4 {
        let answer = peers[0].call(id, "tools/call", call(60_000)).await;
        match answer.get("error") {
            None => {
                created_id(&answer);
                a_created += 1;
            }
            Some(_) => a_refused.push(answer),
        }
    }
    assert_eq!(a_created, 2);
    assert_eq!(a_refused[0]["error"]["code"], -32000);
    assert_eq!(a_refused[0]["error"]["data"]["scope"], "tenant", "{}", a_refused[0]);
    for id in 1..=4 {
        created_id(&peers[1].call(id, "tools/call", call(60_000)).await);
    }
    assert_eq!(server.tenant_loads().await.iter().find(|l| l.tenant == "a").unwrap().tasks_running, 2);
    for peer in &peers {
        peer.close().await;
    }
    for conn in &conns {
        conn.closed().await;
    }
    server.shutdown().await;
    assert_eq!(gauge.alive_tasks(), 0, "tasks leaked");
    assert_eq!(gauge.alive_actors(), 0, "actors leaked");
}

#[tokio::test(start_paused = true)]
async fn a_tenant_crashing_past_its_budget_is_escalated_and_quarantined_alone() {
    let budget = RestartBudget::new(3, Duration::from_secs(10), Duration::from_secs(30));
    let policy = TenantPolicy::default().tenant("a", TenantQuota::new().restart_budget(budget));
    let h = Harness::with_config(ServerConfig::default().tenant_policy(policy)).await;
    let (a_conn, mut a) = initialized(&h, ConnectOptions::tenant("a")).await;
    let (hung_conn, mut hung) = initialized(&h, ConnectOptions::tenant("a")).await;
    let (b_conn, mut b) = initialized(&h, ConnectOptions::tenant("b")).await;
    hung.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hang"}}));
    hung.call(2, "ping", json!({})).await;
    // Three crashes are within the budget; each costs its request a -32603.
    for id in 1..=3 {
        let answer = a.call(id, "tools/call", json!({"name": "panic"})).await;
        assert_eq!(answer["error"]["code"], -32603);
        assert!(served(&echo(&mut b, id).await));
    }
    assert!(served(&echo(&mut a, 10).await), "still within the budget");
    // The fourth escalates: the request running elsewhere in the tenant is answered first,
    // once, naming why; then the tenant's connections stop with its subtree.
    let answer = a.call(4, "tools/call", json!({"name": "panic"})).await;
    assert_eq!(answer["error"]["code"], -32603);
    let stopped = hung.recv_response().await;
    assert_eq!(stopped["id"], 1);
    assert_eq!(stopped["error"]["code"], -32603);
    assert_eq!(stopped["error"]["data"]["reason"], "tenant_escalated");
    a_conn.closed().await;
    hung_conn.closed().await;
    // The root restarted the tenant's supervisor; the view shows it quarantined.
    let view = h.server.observe().await.unwrap();
    let node = view.root.find(&["tenant:a"]).expect("the tenant restarted");
    assert_eq!(node.state, "quarantined");
    assert!(node.detail.as_deref().unwrap().contains("crashed 4 times within 10 s"), "{:?}", node.detail);
    assert_eq!(view.root.restarts, 1, "one restart, charged to the root");
    let load = view.tenants.iter().find(|l| l.tenant == "a").unwrap();
    assert_eq!(load.escalations, 1);
    assert!(load.quarantined_ms.unwrap() > 0);
    // A new connection of the tenant is refused with the reason and the time left.
    let (a2_conn, mut a2) = initialized(&h, ConnectOptions::tenant("a")).await;
    let refused = echo(&mut a2, 1).await;
    assert_eq!(refused["error"]["code"], -32000);
    assert_eq!(refused["error"]["data"]["reason"], "quarantined");
    let left = refused["error"]["data"]["retryAfterMs"].as_u64().unwrap();
    assert!(left > 0 && left <= 30_000, "{left}");
    assert!(refused["error"]["message"].as_str().unwrap().starts_with("Tenant quarantined: its handlers crashed"));
    // Its neighbour never noticed; its connection is the same one.
    for id in 10..=30 {
        assert!(served(&echo(&mut b, id).await));
    }
    assert_eq!(view.root.count(ViewKind::Connection), 2, "b's and a's new one");
    // After the cool-down the tenant is served again.
    tokio::time::advance(Duration::from_secs(30)).await;
    assert!(served(&echo(&mut a2, 2).await));
    a.close().await;
    hung.close().await;
    for (peer, conn) in [(a2, a2_conn), (b, b_conn)] {
        peer.close().await;
        conn.closed().await;
    }
    h.finish().await;
}
