//! Requests in flight while the part of the tree that serves them is restarted, each
//! accounted for by the kit's ledger, over a thousand requests per test on the paused
//! clock. The two crash paths arbor-server has:
//!
//! - A tenant past its restart budget (handler panics, `tenant/budget.rs`) is escalated:
//!   every request whose handler ran is answered (its result, its panic's -32603, or the
//!   escalation's -32603), requests read after the quarantine began are refused, then the
//!   tenant's supervisor stops (its connections with it) and the root restarts it. What
//!   the connection had not read yet is never answered, because the stream ends: a
//!   request whose handler started is never among those.
//! - `Server::inject_crash` stops a tenant's connections supervisor as a crash would: the
//!   tenant supervisor restarts it, and four crashes within its intensity (3 per 5 s)
//!   make the tenant supervisor itself give up and the root restart it. The crashed
//!   connections' streams end; each request is answered at most once, with its result.
//!
//! After every round fresh connections are served; at the end the live counts are back
//! to the baseline.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use arbor_server::tenant::{RestartBudget, TenantPolicy, TenantQuota};
use arbor_server::ServerConfig;
use parking_lot::Mutex;
use serde_json::json;
use tests::kit::ledger::{Kind, Ledger, Summary};
use tests::kit::plan::{Fault, FaultPlan};
use tests::kit::Seed;

use crate::kit::{started, traced, Fleet};
use crate::support::ScriptedPeer;

const CONNS: usize = 8;
const PER_CONN: usize = 40;

/// Reads `peer` into the ledger until the server ends the connection; returns the ids
/// answered. From the end on, its unanswered requests are owed nothing.
async fn read_to_end(ledger: Arc<Mutex<Ledger>>, conn: usize, mut peer: ScriptedPeer) -> HashSet<String> {
    let mut answered = HashSet::new();
    while let Some(message) = peer.recv_or_end().await {
        if ledger.lock().received(conn, &message).is_some() {
            answered.insert(message["id"].to_string());
        }
    }
    ledger.lock().abandoned(conn);
    answered
}

/// What one round left unanswered.
#[derive(Debug, Default)]
struct Unanswered {
    /// Never read by the server: no handler ran.
    unread: usize,
    /// Their handler ran, but the connection was stopped under them.
    ran: usize,
}

/// A run's fixed parts: its name (traces start with it), seed, fault plan and the kinds
/// any call may end in besides its fault's own.
struct Run<'a> {
    name: &'a str,
    seed: Seed,
    plan: FaultPlan,
    expect: &'a [Kind],
}

/// One round: `PER_CONN` calls pipelined on each connection, faults drawn from the plan;
/// `crash` runs once they are sent; every connection is then read to its end.
async fn round(
    fleet: &Fleet,
    run: &Run<'_>,
    round: usize,
    peers: Vec<(usize, ScriptedPeer)>,
    crash: impl std::future::Future<Output = ()>,
) -> Unanswered {
    let mut drivers = Vec::new();
    for (conn, peer) in peers {
        let mut rng = run.seed.rng((round * 1000 + conn) as u64);
        let mut traces = Vec::new();
        for n in 0..PER_CONN {
            let id = json!(n);
            let fault = run.plan.pick(&mut rng);
            let mut kinds = run.expect.to_vec();
            kinds.push(fault.expect());
            let trace = format!("{}/{conn}/{n}", run.name);
            fleet.ledger.lock().sent(conn, &id, &kinds);
            peer.send(traced(&id, fault, &trace));
            traces.push((id.to_string(), trace));
        }
        drivers.push((traces, tokio::spawn(read_to_end(fleet.ledger.clone(), conn, peer))));
    }
    crash.await;
    let mut left = Unanswered::default();
    for (traces, driver) in drivers {
        let answered = driver.await.expect("the reader ran");
        for (_, trace) in traces.iter().filter(|(id, _)| !answered.contains(id)) {
            if started(trace) {
                left.ran += 1;
            } else {
                left.unread += 1;
            }
        }
    }
    left
}

/// `CONNS` fresh initialized connections.
async fn reconnect(fleet: &mut Fleet) -> Vec<(usize, ScriptedPeer)> {
    let mut peers = Vec::new();
    for _ in 0..CONNS {
        peers.push(fleet.connect().await);
    }
    peers
}

#[tokio::test(start_paused = true)]
async fn requests_in_flight_when_their_tenant_escalates_are_answered_once_or_never_read() {
    let name = "requests across tenant escalations";
    let seed = Seed::for_test(name);
    let budget = RestartBudget::new(5, Duration::from_secs(10), Duration::from_secs(30));
    let config = ServerConfig::default()
        .default_deadline(Duration::from_secs(60))
        .tenant_policy(TenantPolicy::default().defaults(TenantQuota::new().restart_budget(budget)));
    let (mut fleet, first) = Fleet::start(name, config, CONNS).await;
    let mut peers: Vec<_> = first.into_iter().enumerate().collect();
    // Hangs end only by the escalation; a panic in nine calls escalates within each round.
    let plan = FaultPlan::new()
        .with(Fault::None, 4)
        .with(Fault::Delay { ms: 50 }, 3)
        .with(Fault::Hang, 1)
        .with(Fault::Panic, 1);
    // Besides its own outcome, any call may be stopped by the escalation (-32603) or
    // refused by the quarantine (-32000).
    let expect = [Kind::Error(-32603), Kind::Refused, Kind::Error(-32000)];
    let run = Run { name, seed, plan, expect: &expect };
    let mut unread = 0;
    for r in 0..4 {
        let left = round(&fleet, &run, r, std::mem::take(&mut peers), async {}).await;
        assert_eq!(left.ran, 0, "round {r}: a request whose handler ran was never answered");
        unread += left.unread;
        let load = fleet.server.tenant_loads().await.into_iter().find(|l| l.tenant == "default").unwrap();
        assert_eq!(load.escalations, r as u64 + 1, "round {r}: the tenant escalated once");
        // The quarantine ends; the restarted tenant serves fresh connections.
        tokio::time::advance(Duration::from_secs(30)).await;
        peers = reconnect(&mut fleet).await;
    }
    let snapshot = fleet.server.snapshot().await.expect("the tree");
    assert_eq!(snapshot.restart_count, 4, "the root restarted the tenant once per escalation");
    let summary = finish(fleet, peers).await;
    println!("[kit] {name}: {unread} never read (the stream ended first)");
    assert!(summary.requests >= 1000);
    assert_eq!(summary.disconnected, unread);
    assert!(summary.outcomes.get(&Kind::Error(-32603)).is_some_and(|n| *n > 0), "{summary}");
}

#[tokio::test(start_paused = true)]
async fn requests_on_crashed_connections_end_with_their_stream_and_the_restarted_tenant_serves() {
    let name = "requests across injected crashes";
    let seed = Seed::for_test(name);
    let (mut fleet, first) = Fleet::start(name, ServerConfig::default(), CONNS).await;
    let mut peers: Vec<_> = first.into_iter().enumerate().collect();
    let plan = FaultPlan::new()
        .with(Fault::None, 2)
        .with(Fault::Delay { ms: 10 }, 1)
        .with(Fault::Delay { ms: 100 }, 1)
        .with(Fault::Delay { ms: 1000 }, 1);
    let run = Run { name, seed, plan, expect: &[] };
    let (mut unread, mut ran) = (0, 0);
    for r in 0..5 {
        let server = fleet.server.clone();
        let crash = async move {
            // Some calls have answered, the longer delays are still running.
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert!(server.inject_crash("default", "restart storm").await, "round {r}: a crash was injected");
        };
        let left = round(&fleet, &run, r, std::mem::take(&mut peers), crash).await;
        assert!(left.ran > 0, "round {r}: the crash hit requests in flight");
        (unread, ran) = (unread + left.unread, ran + left.ran);
        peers = reconnect(&mut fleet).await;
        let restarts = fleet.server.snapshot().await.expect("the tree").restart_count;
        // Four restarts of the connections supervisor within 5 s are one too many for the
        // tenant supervisor (3 per 5 s): it gives up and the root restarts it.
        assert_eq!(restarts, u64::from(r >= 3), "round {r}: the root's restarts");
    }
    let summary = finish(fleet, peers).await;
    println!("[kit] {name}: {unread} never read, {ran} stopped running with their connection");
    assert!(summary.requests >= 1000);
    assert_eq!(summary.disconnected, unread + ran);
    assert!(summary.outcomes.get(&Kind::Result).is_some_and(|n| *n > 0), "{summary}");
}

/// Finishes the fleet: the ledger, the baseline, then nothing left alive.
async fn finish(fleet: Fleet, peers: Vec<(usize, ScriptedPeer)>) -> Summary {
    fleet.finish(peers.into_iter().map(|(_, p)| p).collect()).await
}
