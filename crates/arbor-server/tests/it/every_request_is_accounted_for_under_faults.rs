//! Handler faults by seed, a thousand requests and more per scenario, each accounted for
//! by the kit's ledger: panics, errors, hangs past the deadline, busy loops in blocking
//! sections, and overload at ten times the bound.

use std::time::Duration;

use arbor_server::observe::MAX_INBOX_BURSTS;
use arbor_server::ServerConfig;
use serde_json::json;
use tests::kit::ledger::{Kind, Summary};
use tests::kit::plan::{Fault, FaultPlan};
use tests::kit::Seed;
use tests::peer::Exchange;

use crate::kit::{fault_call, Fleet, Wire};

/// Sends `per_conn` calls with faults drawn from `plan` on each of `conns` connections,
/// all pipelined, reads every answer into the ledger, checks each connection still
/// answers, and finishes the fleet.
async fn run_plan(name: &str, config: ServerConfig, conns: usize, per_conn: usize, plan: FaultPlan) -> Summary {
    run_plan_on(name, config, conns, per_conn, plan, Wire::Memory).await
}

/// [`run_plan`] with the connections carried by `wire`.
async fn run_plan_on(
    name: &str,
    config: ServerConfig,
    conns: usize,
    per_conn: usize,
    plan: FaultPlan,
    wire: Wire,
) -> Summary {
    let seed = Seed::for_test(name);
    let (fleet, peers) = Fleet::start_on(name, config, conns, wire).await;
    let mut drivers = Vec::new();
    for (conn, peer) in peers.into_iter().enumerate() {
        let mut rng = seed.rng(conn as u64);
        for n in 0..per_conn {
            let id = json!(1000 + n);
            let fault = plan.pick(&mut rng);
            fleet.ledger.lock().sent(conn, &id, &[fault.expect()]);
            peer.send(fault_call(&id, fault));
        }
        drivers.push(tokio::spawn(Fleet::drain(fleet.ledger.clone(), conn, peer)));
    }
    let mut peers = Vec::new();
    for driver in drivers {
        let mut peer = driver.await.expect("the driver ran");
        assert_eq!(peer.call(1, "ping", json!({})).await["result"], json!({}), "the connection survived");
        peers.push(peer);
    }
    fleet.finish(peers).await
}

#[tokio::test(start_paused = true)]
async fn handler_panics_cost_only_their_own_requests() {
    let plan = FaultPlan::new().with(Fault::Panic, 1).with(Fault::None, 2).with(Fault::Delay { ms: 5 }, 1);
    let summary = run_plan("handler panics", ServerConfig::default(), 8, 150, plan).await;
    assert!(summary.outcomes[&Kind::Error(-32603)] > 0 && summary.outcomes[&Kind::Result] > 0);
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_panics_errors_and_busy_loops_over_os_pipes_are_answered_once_each() {
    let plan = FaultPlan::new()
        .with(Fault::Panic, 1)
        .with(Fault::Error, 1)
        .with(Fault::Busy { ms: 1 }, 1)
        .with(Fault::Delay { ms: 5 }, 1)
        .with(Fault::None, 2);
    let summary = run_plan_on("handler faults over OS pipes", ServerConfig::default(), 8, 150, plan, Wire::Pipes).await;
    assert!(summary.outcomes[&Kind::Error(-32603)] > 0 && summary.outcomes[&Kind::Error(-32602)] > 0);
}

#[tokio::test(start_paused = true)]
async fn handler_errors_are_answered_as_errors() {
    let plan = FaultPlan::new().with(Fault::Error, 1).with(Fault::None, 1);
    let summary = run_plan("handler errors", ServerConfig::default(), 8, 150, plan).await;
    assert!(summary.outcomes[&Kind::Error(-32602)] > 0 && summary.outcomes[&Kind::Result] > 0);
}

#[tokio::test(start_paused = true)]
async fn hangs_end_at_the_deadline_with_a_timeout() {
    let config = ServerConfig::default().default_deadline(Duration::from_secs(5));
    let plan = FaultPlan::new().with(Fault::Hang, 1).with(Fault::Delay { ms: 100 }, 1).with(Fault::None, 1);
    let summary = run_plan("hangs past the deadline", config, 8, 150, plan).await;
    assert!(summary.outcomes[&Kind::Timeout] > 0 && summary.outcomes[&Kind::Result] > 0);
}

#[tokio::test(start_paused = true)]
async fn overload_at_ten_times_the_bound_is_refused_with_a_type() {
    // 100 calls that never end on each connection, whose bound is 10: the first 10 run
    // until the deadline, the 90 behind them are refused at once.
    let config = ServerConfig::default().max_in_flight_per_connection(10).default_deadline(Duration::from_secs(5));
    let plan = FaultPlan::new().with(Fault::Hang, 1);
    let name = "overload at 10x the connection bound";
    let seed = Seed::for_test(name);
    let (fleet, mut peers) = Fleet::start(name, config, 10).await;
    for (conn, peer) in peers.iter_mut().enumerate() {
        let mut rng = seed.rng(conn as u64);
        for n in 0..100 {
            let id = json!(1000 + n);
            let fault = plan.pick(&mut rng);
            fleet.ledger.lock().sent(conn, &id, &[Kind::Timeout, Kind::Refused]);
            peer.send(fault_call(&id, fault));
        }
    }
    // While the flood is read, each connection's inbox (bursts its reader queued and the
    // connection has not taken) stays within its bound: the rest waits in the pipe.
    let mut deepest = 0;
    let mut sampled = 0;
    for _ in 0..20 {
        let view = serde_json::to_value(fleet.server.observe().await.expect("connections were made")).unwrap();
        for inbox in inboxes(&view) {
            sampled += 1;
            deepest = deepest.max(inbox);
        }
        tokio::task::yield_now().await;
    }
    println!("[kit] {name}: {sampled} inbox samples, deepest {deepest} of {MAX_INBOX_BURSTS} bursts");
    assert!(sampled >= 20 * 10, "every connection shows its inbox ({sampled} samples)");
    assert!(deepest <= MAX_INBOX_BURSTS, "an inbox held {deepest} bursts");
    // The refusals come at once, long before the deadline; with all 900 in, the server
    // holds exactly the bound in flight and has queued nothing behind it.
    for (conn, peer) in peers.iter_mut().enumerate() {
        for _ in 0..90 {
            let refused = peer.recv().await;
            assert_eq!(fleet.ledger.lock().received(conn, &refused), Some(Kind::Refused), "{refused}");
        }
    }
    let view = serde_json::to_value(fleet.server.observe().await.expect("connections were made")).unwrap();
    assert!(inboxes(&view).iter().all(|n| *n == 0), "every inbox is empty once all is read: {:?}", inboxes(&view));
    let peak = fleet.live().await;
    assert_eq!(peak.requests, 100, "in flight at the peak: {peak:?}");
    let mut drivers = Vec::new();
    for (conn, peer) in peers.into_iter().enumerate() {
        drivers.push(tokio::spawn(Fleet::drain(fleet.ledger.clone(), conn, peer)));
    }
    let summary = fleet.finish_drivers(drivers).await;
    assert_eq!(summary.outcomes[&Kind::Timeout], 100, "exactly the bound ran on each connection");
    assert_eq!(summary.outcomes[&Kind::Refused], 900);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_loops_in_blocking_sections_leave_other_sessions_responsive() {
    let name = "blocking busy loops";
    let seed = Seed::for_test(name);
    let (fleet, mut peers) = Fleet::start(name, ServerConfig::default(), 5).await;
    let mut probe = peers.pop().expect("the probe session");
    let probe_conn = peers.len();
    let plan = FaultPlan::new().with(Fault::Busy { ms: 2 }, 3).with(Fault::None, 1);
    let mut drivers = Vec::new();
    for (conn, peer) in peers.into_iter().enumerate() {
        let mut rng = seed.rng(conn as u64);
        for n in 0..250 {
            let id = json!(1000 + n);
            let fault = plan.pick(&mut rng);
            fleet.ledger.lock().sent(conn, &id, &[fault.expect()]);
            peer.send(fault_call(&id, fault));
        }
        drivers.push(tokio::spawn(Fleet::drain(fleet.ledger.clone(), conn, peer)));
    }
    // Another session's pings are answered while the busy calls are still running: each
    // is answered before the last busy call is.
    let mut answered_while_busy = 0;
    for n in 0..50 {
        let id = json!(format!("probe-{n}"));
        fleet.ledger.lock().sent(probe_conn, &id, &[Kind::Result]);
        let answer = Exchange::call(&mut probe, id, "ping", json!({})).await;
        let mut ledger = fleet.ledger.lock();
        ledger.received(probe_conn, &answer);
        let busy_owed: usize = (0..probe_conn).map(|c| ledger.owed(c)).sum();
        answered_while_busy += usize::from(busy_owed > 0);
    }
    let mut peers = Vec::new();
    for driver in drivers {
        peers.push(driver.await.expect("the driver ran"));
    }
    peers.push(probe);
    let summary = fleet.finish(peers).await;
    assert_eq!(answered_while_busy, 50, "every probe ping was answered while busy calls were in flight");
    assert!(summary.requests >= 1000);
}

/// The inbox of every connection node in an observed tree (as JSON).
fn inboxes(view: &serde_json::Value) -> Vec<usize> {
    let mut found = Vec::new();
    let mut stack = vec![view];
    while let Some(node) = stack.pop() {
        if node["kind"] == "connection" {
            if let Some(n) = node["inbox"].as_u64() {
                found.push(n as usize);
            }
        }
        if let Some(children) = node["children"].as_array() {
            stack.extend(children);
        }
        if let Some(root) = node.get("root") {
            stack.push(root);
        }
    }
    found
}
