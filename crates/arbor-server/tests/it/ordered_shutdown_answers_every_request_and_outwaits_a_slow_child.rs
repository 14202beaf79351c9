//! Ordered shutdown with a slow child, on the paused clock: two tenants ("fast" started
//! first, then "slow"), four in-memory connections each, over a thousand fault calls in
//! flight, and a subscription handler whose `handle_close` never returns on the "slow"
//! tenant's streams (a child that ignores being told to stop). The server drains
//! (`Server::start_drain`), then shuts down (`Server::shutdown`).
//!
//! What must hold: every request gets exactly one answer, its own result or the drain's
//! -32603, as the kit's ledger checks; the root stops its tenants in reverse start order,
//! so the "slow" tenant's streams are told first and the "fast" tenant's only once the
//! slow streams' close grace has run out and they were killed (their `handle_close` never
//! finishes); every connection's stream ends after its answers; and nothing is left alive.

use std::sync::Arc;
use std::time::Duration;

use arbor_bus::BusMessage;
use arbor_otp::Gauge;
use arbor_protocol::model::subscriptions::SubscriptionFilter;
use arbor_server::{Channel, ConnectOptions, Flow, Server, ServerConfig, Subscribe, SubscriptionHandler, Transport};
use parking_lot::Mutex;
use serde_json::json;
use tests::kit::ledger::{Kind, Ledger, Live};
use tests::kit::plan::{Fault, FaultPlan};
use tests::kit::Seed;
use tokio::time::Instant;

use crate::kit::fault_call;
use crate::support::{ScriptedPeer, TestHandler};

const PER_TENANT: usize = 4;
const PER_CONN: usize = 130;
const DRAIN: Duration = Duration::from_secs(3);
/// The connections' close grace for their streams (`STREAM_CLOSE_GRACE`).
const STREAM_GRACE: Duration = Duration::from_secs(5);

/// Notes when each stream's `handle_close` begins and ends, by tenant; on the "slow"
/// tenant it never ends by itself.
#[derive(Clone, Default)]
struct Closer {
    log: Arc<Mutex<Vec<Closing>>>,
}

/// A stream's tenant, `close` (begun) or `closed` (done), and when.
type Closing = (String, &'static str, Instant);

impl SubscriptionHandler for Closer {
    type State = ();

    async fn subscribe(&self, _: &SubscriptionFilter, _: &Channel) -> Subscribe<()> {
        Subscribe::Accept(())
    }

    async fn handle_message(&self, _: Arc<BusMessage>, _: &Channel, _: &mut ()) -> Flow {
        Flow::Stream
    }

    async fn handle_close(&self, channel: &Channel, _: ()) {
        let tenant = channel.connection().tenant.clone();
        self.log.lock().push((tenant.clone(), "close", Instant::now()));
        if tenant == "slow" {
            // Notes the moment the runtime drops this close, unfinished: the stream killed.
            let _killed = Killed { tenant: tenant.clone(), log: self.log.clone() };
            std::future::pending::<()>().await;
        }
        self.log.lock().push((tenant, "closed", Instant::now()));
    }
}

/// Dropped with a slow `handle_close` that never finished: notes `killed`.
struct Killed {
    tenant: String,
    log: Arc<Mutex<Vec<Closing>>>,
}

impl Drop for Killed {
    fn drop(&mut self) {
        self.log.lock().push((self.tenant.clone(), "killed", Instant::now()));
    }
}

/// How a call with `fault` ends when the drain's deadline is `DRAIN`.
fn expect(fault: Fault) -> Kind {
    match fault {
        Fault::Delay { ms } if Duration::from_millis(ms) < DRAIN => Kind::Result,
        Fault::None => Kind::Result,
        // Still running at the drain's deadline: the drain's -32603 (no `timeoutMs`).
        _ => Kind::Error(-32603),
    }
}

#[tokio::test(start_paused = true)]
async fn a_drained_shutdown_answers_every_request_and_outwaits_a_slow_child_in_reverse_order() {
    let name = "ordered shutdown with a slow child";
    let seed = Seed::for_test(name);
    let gauge = Gauge::new();
    let closer = Closer::default();
    let server = Server::with_config(TestHandler::new(), ServerConfig::default().gauge(gauge.clone()))
        .subscription_handler(closer.clone());
    let mut peers = Vec::new();
    for tenant in ["fast", "slow"] {
        for _ in 0..PER_TENANT {
            let (server_side, client_side) = Transport::memory_pair();
            server.connect(server_side, ConnectOptions::tenant(tenant)).await.unwrap();
            let mut peer = ScriptedPeer::new(client_side);
            peer.initialize("2025-11-25", json!({})).await;
            // Answered after `notifications/initialized` was handled: the session's stream runs.
            assert_eq!(peer.call(0, "ping", json!({})).await["result"], json!({}));
            peers.push(peer);
        }
    }
    let ledger = Arc::new(Mutex::new(Ledger::new(name)));
    let plan = FaultPlan::new()
        .with(Fault::None, 2)
        .with(Fault::Delay { ms: 1000 }, 2)
        .with(Fault::Delay { ms: 10_000 }, 1)
        .with(Fault::Hang, 1);
    for (conn, peer) in peers.iter().enumerate() {
        let mut rng = seed.rng(conn as u64);
        for n in 0..PER_CONN {
            let id = json!(1000 + n);
            let fault = plan.pick(&mut rng);
            ledger.lock().sent(conn, &id, &[expect(fault)]);
            peer.send(fault_call(&id, fault));
        }
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
    let in_flight = server.in_flight().await;
    assert!(in_flight > 0, "requests are running when the drain begins");

    // The drain: each request ends with its own result or, at the deadline, the drain's.
    let drained = Instant::now();
    server.start_drain(DRAIN);
    let readers = peers.into_iter().enumerate().map(|(conn, mut peer)| {
        let ledger = ledger.clone();
        tokio::spawn(async move {
            while ledger.lock().owed(conn) > 0 {
                let message = peer.recv().await;
                ledger.lock().received(conn, &message);
            }
            peer
        })
    });
    let mut peers = Vec::new();
    for reader in readers.collect::<Vec<_>>() {
        peers.push(reader.await.expect("the reader ran"));
    }
    assert_eq!(server.in_flight().await, 0);
    assert!(Instant::now() - drained <= DRAIN + Duration::from_millis(10), "the drain kept its deadline");

    // The shutdown: tenants in reverse start order, the slow streams waited for up to
    // their grace, then killed.
    let began = Instant::now();
    server.shutdown().await;
    let took = Instant::now() - began;
    let log = closer.log.lock().clone();
    let at = |tenant: &str, what: &str| -> Vec<Duration> {
        log.iter().filter(|(t, w, _)| t == tenant && *w == what).map(|(_, _, i)| *i - began).collect()
    };
    assert_eq!(at("slow", "close"), vec![Duration::ZERO; PER_TENANT], "the last tenant started is told first");
    assert!(at("slow", "closed").is_empty(), "the slow streams never finished");
    assert_eq!(at("slow", "killed"), vec![STREAM_GRACE; PER_TENANT], "they were killed at their grace");
    let killed_last = log.iter().rposition(|(t, w, _)| t == "slow" && *w == "killed");
    let fast_first = log.iter().position(|(t, _, _)| t == "fast");
    assert!(killed_last < fast_first, "the slow streams were gone before the earlier tenant was told: {log:?}");
    assert_eq!(at("fast", "close"), vec![STREAM_GRACE; PER_TENANT], "the earlier tenant only after the grace");
    assert_eq!(at("fast", "closed"), vec![STREAM_GRACE; PER_TENANT]);
    assert_eq!(took, STREAM_GRACE, "one grace for the slow tenant's streams, none for the fast");

    // Each connection's output ends after its answers, with nothing more.
    for (conn, mut peer) in peers.into_iter().enumerate() {
        while let Some(message) = peer.recv_or_end().await {
            assert!(
                ledger.lock().received(conn, &message).is_none(),
                "conn {conn}: an answer after its last: {message}"
            );
        }
    }
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let after = Live { actors: gauge.alive_actors(), tasks: gauge.alive_tasks(), ..Live::default() };
    let ledger = Arc::try_unwrap(ledger).expect("every reader is done").into_inner();
    let summary = ledger.finish(Live::default(), after);
    println!("[kit] {name}: {in_flight} in flight when the drain began; shutdown took {took:?} of paused clock");
    assert!(summary.requests >= 1000);
    assert!(summary.outcomes.get(&Kind::Error(-32603)).is_some_and(|n| *n > 0), "{summary}");
    assert!(summary.outcomes.get(&Kind::Result).is_some_and(|n| *n > 0), "{summary}");
}

#[tokio::test(start_paused = true)]
async fn a_slow_child_is_gone_when_the_shutdown_returns() {
    // The slow streams are on the only tenant, so nothing is stopped after them: the
    // shutdown must still not return before they are.
    let gauge = Gauge::new();
    let closer = Closer::default();
    let server = Server::with_config(TestHandler::new(), ServerConfig::default().gauge(gauge.clone()))
        .subscription_handler(closer.clone());
    let mut peers = Vec::new();
    for _ in 0..2 {
        let (server_side, client_side) = Transport::memory_pair();
        server.connect(server_side, ConnectOptions::tenant("slow")).await.unwrap();
        let mut peer = ScriptedPeer::new(client_side);
        peer.initialize("2025-11-25", json!({})).await;
        assert_eq!(peer.call(0, "ping", json!({})).await["result"], json!({}));
        peers.push(peer);
    }
    let began = Instant::now();
    server.shutdown().await;
    let killed: Vec<Duration> =
        closer.log.lock().iter().filter(|(_, w, _)| *w == "killed").map(|(_, _, at)| *at - began).collect();
    assert_eq!(
        killed,
        vec![STREAM_GRACE; 2],
        "each slow stream was stopped at its grace, before the shutdown returned"
    );
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
    for mut peer in peers {
        assert_eq!(peer.recv_or_end().await, None, "the connection's output ended");
    }
}
