//! Misbehaving clients by seed, a thousand requests and more per scenario, each accounted
//! for by the kit's ledger: reused ids, cancels before, during, racing, after and for
//! unknown ids, clients that hang up at random points, and slow readers.

use std::time::Duration;

use arbor_server::ServerConfig;
use serde_json::{json, Value};
use tests::kit::ledger::{Cancel, Kind};
use tests::kit::peer::{cancel, cut_point, CancelRace, SlowReads};
use tests::kit::plan::Fault;
use tests::kit::Seed;

use crate::kit::{fault_call, Fleet, Wire};
use crate::support::ScriptedPeer;

/// Sends a ping with `id` and reads every message before its answer into the ledger.
async fn sync(
    fleet_ledger: &std::sync::Arc<parking_lot::Mutex<tests::kit::ledger::Ledger>>,
    conn: usize,
    peer: &mut ScriptedPeer,
    id: &str,
) {
    let id = json!(id);
    fleet_ledger.lock().sent(conn, &id, &[Kind::Result]);
    peer.send(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
    loop {
        let message = peer.recv().await;
        fleet_ledger.lock().received(conn, &message);
        if message.get("method").is_none() && message["id"] == id {
            return;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_reused_id_is_refused_while_in_flight_and_served_once_finished() {
    let name = "duplicate ids";
    let seed = Seed::for_test(name);
    let config = ServerConfig::default().default_deadline(Duration::from_secs(5));
    let (fleet, peers) = Fleet::start(name, config, 8).await;
    let mut drivers = Vec::new();
    for (conn, peer) in peers.into_iter().enumerate() {
        let ledger = fleet.ledger.clone();
        let mut rng = seed.rng(conn as u64);
        drivers.push(tokio::spawn(async move {
            let mut finished = Vec::new();
            for n in 0..80 {
                let id = json!(1000 + n);
                if rng.bool() {
                    // Reused while the first is still running: the second is refused, and
                    // whatever it carried never runs.
                    let carried = [Fault::None, Fault::Panic, Fault::Error][rng.usize(..3)];
                    ledger.lock().sent(conn, &id, &[Kind::Timeout]);
                    peer.send(fault_call(&id, Fault::Hang));
                    ledger.lock().sent(conn, &id, &[Kind::Error(-32600)]);
                    peer.send(fault_call(&id, carried));
                } else {
                    ledger.lock().sent(conn, &id, &[Kind::Result]);
                    peer.send(fault_call(&id, Fault::None));
                    finished.push(id);
                }
            }
            let peer = Fleet::drain(ledger.clone(), conn, peer).await;
            // Reused once the first is answered: a new request like any other.
            for id in finished {
                ledger.lock().sent(conn, &id, &[Kind::Result]);
                peer.send(fault_call(&id, Fault::None));
            }
            Fleet::drain(ledger, conn, peer).await
        }));
    }
    let summary = fleet.finish_drivers(drivers).await;
    assert!(summary.requests >= 1000, "{summary}");
    assert!(summary.outcomes[&Kind::Error(-32600)] > 0 && summary.outcomes[&Kind::Timeout] > 0);
}

#[tokio::test(start_paused = true)]
async fn cancels_before_during_racing_after_and_unknown_are_each_honoured() {
    let name = "cancel races";
    let seed = Seed::for_test(name);
    let deadline = Duration::from_secs(60);
    let (fleet, peers) = Fleet::start(name, ServerConfig::default().default_deadline(deadline), 8).await;
    let mut drivers = Vec::new();
    for (conn, mut peer) in peers.into_iter().enumerate() {
        let ledger = fleet.ledger.clone();
        let mut rng = seed.rng(conn as u64);
        drivers.push(tokio::spawn(async move {
            let (mut during, mut after) = (Vec::new(), Vec::new());
            for n in 0..170 {
                let id = json!(1000 + n);
                match CancelRace::pick(&mut rng) {
                    CancelRace::Before => {
                        peer.send(cancel(&id));
                        ledger.lock().sent(conn, &id, &[Kind::Result]);
                        peer.send(fault_call(&id, Fault::None));
                    }
                    CancelRace::During => {
                        ledger.lock().sent(conn, &id, &[]);
                        peer.send(fault_call(&id, Fault::Hang));
                        during.push(id);
                    }
                    CancelRace::Racing => {
                        ledger.lock().sent(conn, &id, &[Kind::Result]);
                        peer.send(fault_call(&id, Fault::None));
                        peer.send(cancel(&id));
                        ledger.lock().cancelled(conn, &id, Cancel::Raced);
                    }
                    CancelRace::After => {
                        ledger.lock().sent(conn, &id, &[Kind::Result]);
                        peer.send(fault_call(&id, Fault::None));
                        after.push(id);
                    }
                    CancelRace::Unknown => peer.send(cancel(&json!(format!("never-sent-{n}")))),
                }
            }
            // Once the ping is answered, every request before it is running (the
            // connection routes in order): the hanging ones' cancels are accepted.
            sync(&ledger, conn, &mut peer, "sync").await;
            for id in &during {
                ledger.lock().cancelled(conn, id, Cancel::Accepted);
                peer.send(cancel(id));
            }
            let mut peer = Fleet::drain(ledger.clone(), conn, peer).await;
            for id in &after {
                ledger.lock().cancelled(conn, id, Cancel::Raced);
                peer.send(cancel(id));
            }
            // Past the deadline, a hang that ignored its cancel would have answered with a
            // timeout before this ping's answer.
            tokio::time::sleep(deadline + Duration::from_secs(1)).await;
            sync(&ledger, conn, &mut peer, "final").await;
            peer
        }));
    }
    let summary = fleet.finish_drivers(drivers).await;
    assert!(summary.requests >= 1000, "{summary}");
    assert!(summary.cancelled_unanswered > 0, "{summary}");
}

/// Connections that send a random number of calls, read a random number of answers and
/// hang up, until 1,000 calls were sent; one connection stays open throughout, so the
/// baseline is the server with it alone.
async fn hang_ups(name: &str, wire: Wire) {
    let seed = Seed::for_test(name);
    let (mut fleet, anchors) = Fleet::start_on(name, ServerConfig::default(), 1, wire).await;
    let mut rng = seed.rng(0);
    let mut drivers = Vec::new();
    while fleet.ledger.lock().len() < 1000 {
        let (conn, peer) = fleet.connect().await;
        let total = 100;
        let cut = cut_point(&mut rng, total);
        let reads = rng.usize(..=cut);
        for n in 0..cut {
            let id: Value = json!(1000 + n);
            let fault = if rng.bool() { Fault::Delay { ms: rng.u64(..50) } } else { Fault::None };
            fleet.ledger.lock().sent(conn, &id, &[Kind::Result]);
            peer.send(fault_call(&id, fault));
        }
        let ledger = fleet.ledger.clone();
        drivers.push(tokio::spawn(async move {
            let mut peer = peer;
            for _ in 0..reads {
                let message = peer.recv().await;
                ledger.lock().received(conn, &message);
            }
            // Hangs up both ways with answers still owed.
            ledger.lock().abandoned(conn);
            drop(peer);
        }));
    }
    for driver in drivers {
        driver.await.expect("the driver ran");
    }
    let summary = fleet.finish(anchors).await;
    assert!(summary.requests >= 1000 && summary.disconnected > 0, "{summary}");
}

#[tokio::test(start_paused = true)]
async fn clients_that_hang_up_at_random_points_leave_nothing_behind() {
    hang_ups("client disconnects", Wire::Memory).await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_hang_up_their_os_pipes_at_random_points_leave_nothing_behind() {
    hang_ups("client disconnects over OS pipes", Wire::Pipes).await;
}

#[tokio::test(start_paused = true)]
async fn slow_readers_get_every_answer_and_every_progress_note_once() {
    let name = "slow readers";
    let seed = Seed::for_test(name);
    let (fleet, peers) = Fleet::start(name, ServerConfig::default(), 4).await;
    let mut drivers = Vec::new();
    for (conn, mut peer) in peers.into_iter().enumerate() {
        let ledger = fleet.ledger.clone();
        let mut rng = seed.rng(conn as u64);
        let pace = SlowReads::pick(&mut rng);
        for n in 0..250 {
            let id = json!(1000 + n);
            ledger.lock().sent(conn, &id, &[Kind::Result]);
            // Two progress notes and a result each, all pipelined: the server's output runs
            // ahead of a reader that keeps stopping.
            peer.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"_meta": {"progressToken": id}, "name": "progress"}}));
        }
        drivers.push(tokio::spawn(async move {
            let (mut read, mut notes) = (0, std::collections::HashMap::<String, usize>::new());
            while ledger.lock().owed(conn) > 0 {
                let message = peer.recv().await;
                read += 1;
                if message["method"] == "notifications/progress" {
                    *notes.entry(message["params"]["progressToken"].to_string()).or_default() += 1;
                } else {
                    let token = message["id"].to_string();
                    assert_eq!(notes.get(&token), Some(&2), "both notes before the answer: {message}");
                }
                ledger.lock().received(conn, &message);
                if let Some(pause) = pace.pause_after(read) {
                    tokio::time::sleep(pause).await;
                }
            }
            peer
        }));
    }
    let summary = fleet.finish_drivers(drivers).await;
    assert_eq!(summary.outcomes.get(&Kind::Result), Some(&1000), "{summary}");
}
