//! The fault kit's server side: the `fault` tool that acts out a [`Fault`], and a
//! [`Fleet`] of in-memory connections to one server whose requests a [`Ledger`] accounts
//! for.
//!
//! The kit itself (`tests::kit`) speaks JSON only; this is where its faults meet
//! arbor-server's runtime (a real panic, a future that never ends under the server's
//! deadline, a busy loop in a blocking section) and where the live counts come from: the
//! gauge and `Server::observe`. It is not a scenario: each scenario test drives a fleet.
//!
//! Invariant: a fleet's baseline is taken after its connections are initialized and
//! before any faulted request, and [`Fleet::finish`] compares the live counts with it
//! only once nothing is owed, then closes everything and checks nothing outlived it.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use arbor_otp::Gauge;
use arbor_protocol::error::McpError;
use arbor_protocol::model::tools::CallToolResult;
use arbor_server::{ConnectOptions, Connection, Reply, Server, ServerConfig, Transport};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::ledger::{Ledger, Live, Summary};
use tests::kit::plan::Fault;

use crate::support::{ScriptedPeer, TestHandler};

/// Acts out the fault in a `fault` call's arguments; a call that carries a `trace` (see
/// [`traced`]) is noted as started first.
pub async fn act(arguments: Value) -> Result<Reply<CallToolResult>, McpError> {
    let Some(fault) = Fault::from_arguments(&arguments) else {
        return Err(McpError::invalid_params(format!("no fault in {arguments}")));
    };
    if let Some(trace) = arguments.get("trace").and_then(Value::as_str) {
        STARTED.lock().get_or_insert_with(HashSet::new).insert(trace.to_owned());
    }
    match fault {
        Fault::None => {}
        Fault::Panic => panic!("injected panic"),
        Fault::Error => return Err(McpError::invalid_params("injected error")),
        Fault::Hang => std::future::pending().await,
        Fault::Busy { ms } => busy(Duration::from_millis(ms)).await,
        Fault::Delay { ms } => tokio::time::sleep(Duration::from_millis(ms)).await,
    }
    Ok(CallToolResult::from_text("survived").into())
}

/// Spins for `wall` of wall time where the runtime allows a handler to block: in
/// `block_in_place` on a multi-threaded runtime (its worker's other tasks move away), else
/// on the blocking pool.
async fn busy(wall: Duration) {
    let spin = move || {
        let end = std::time::Instant::now() + wall;
        while std::time::Instant::now() < end {
            std::hint::spin_loop();
        }
    };
    match tokio::runtime::Handle::current().runtime_flavor() {
        tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(spin),
        _ => tokio::task::spawn_blocking(spin).await.expect("the busy loop ran"),
    }
}

/// The traces of the `fault` calls whose handler started, over the whole test binary
/// (traces name their test, so tests running side by side do not mix).
static STARTED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// A `tools/call` of the `fault` tool carrying `fault` and `trace`, a name unique in the
/// binary: [`started`] then says whether its handler ran, so a test can tell a request
/// that was never read from one that ran and must be answered.
pub fn traced(id: &Value, fault: Fault, trace: &str) -> Value {
    let mut arguments = fault.arguments();
    arguments["trace"] = json!(trace);
    tests::kit::peer::call(id, "fault", arguments)
}

/// Whether the handler of the call traced `trace` started.
pub fn started(trace: &str) -> bool {
    STARTED.lock().as_ref().is_some_and(|s| s.contains(trace))
}

/// A `tools/call` of the `fault` tool carrying `fault`.
pub fn fault_call(id: &Value, fault: Fault) -> Value {
    tests::kit::peer::call(id, "fault", fault.arguments())
}

/// What carries a fleet's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// The in-memory transport (bounded in-memory pipes): runs on the paused clock.
    Memory,
    /// Two OS pipes per connection, as a stdio server has: real file descriptors, so a
    /// dropped peer closes them. Not for the paused clock, which would jump ahead while
    /// the runtime waits on the pipes.
    #[cfg(unix)]
    Pipes,
}

impl Wire {
    /// A connected (server side, client side) pair.
    fn pair(self) -> (Transport, Transport) {
        match self {
            Wire::Memory => Transport::memory_pair(),
            #[cfg(unix)]
            Wire::Pipes => {
                use tokio::net::unix::pipe;
                let (to_server, server_reads) = pipe::pipe().expect("a pipe");
                let (to_client, client_reads) = pipe::pipe().expect("a pipe");
                (Transport::new(server_reads, to_client), Transport::new(client_reads, to_server))
            }
        }
    }
}

/// `peer` initialized (2025-11-25), and known to have started its session's
/// `list_changed` stream: the ping behind `notifications/initialized` is answered only after
/// the connection handled it, so a baseline taken now counts the stream.
async fn ready(mut peer: ScriptedPeer) -> ScriptedPeer {
    peer.initialize("2025-11-25", json!({})).await;
    assert_eq!(peer.call(0, "ping", json!({})).await["result"], json!({}));
    peer
}

/// `peer` speaking 2026-07-28 (no handshake): known to be served once a
/// `server/discover` carrying the terms is answered.
async fn ready_modern(mut peer: ScriptedPeer) -> ScriptedPeer {
    let meta = tests::peer::modern_meta(json!({}), None);
    let discover = peer.call(0, "server/discover", json!({"_meta": meta})).await;
    assert!(discover["result"]["supportedVersions"].is_array(), "{discover}");
    peer
}

/// What a fleet's connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// Initialized at 2025-11-25 (its session's `list_changed` stream started).
    Legacy,
    /// 2026-07-28: no handshake, the terms in every request's `_meta`.
    Modern,
}

/// One server, its connections and the ledger of everything sent on them.
pub struct Fleet {
    pub server: Server,
    pub gauge: Gauge,
    pub connections: Vec<Connection>,
    pub ledger: Arc<Mutex<Ledger>>,
    baseline: Live,
    wire: Wire,
    max_frame: Option<usize>,
    modern: bool,
}

impl Fleet {
    /// A server with `config`, `n` initialized (2025-11-25) in-memory connections, and the
    /// baseline.
    pub async fn start(name: &str, config: ServerConfig, n: usize) -> (Fleet, Vec<ScriptedPeer>) {
        Fleet::start_on(name, config, n, Wire::Memory).await
    }

    /// [`Fleet::start`] with its connections carried by `wire`.
    pub async fn start_on(name: &str, config: ServerConfig, n: usize, wire: Wire) -> (Fleet, Vec<ScriptedPeer>) {
        let build = |config| Server::with_config(TestHandler::new(), config);
        Fleet::start_full(name, config, &vec![Era::Legacy; n], wire, None, build).await
    }

    /// [`Fleet::start_on`] with each connection's frames capped at `max_frame` bytes.
    pub async fn start_framed(
        name: &str,
        config: ServerConfig,
        n: usize,
        wire: Wire,
        max_frame: usize,
    ) -> (Fleet, Vec<ScriptedPeer>) {
        let build = |config| Server::with_config(TestHandler::new(), config);
        Fleet::start_full(name, config, &vec![Era::Legacy; n], wire, Some(max_frame), build).await
    }

    /// [`Fleet::start`] serving the server `build` makes of the configuration it is given
    /// (a `Router`, say, where the test handler would answer for itself).
    pub async fn start_serving(
        name: &str,
        config: ServerConfig,
        n: usize,
        build: impl FnOnce(ServerConfig) -> Server,
    ) -> (Fleet, Vec<ScriptedPeer>) {
        Fleet::start_full(name, config, &vec![Era::Legacy; n], Wire::Memory, None, build).await
    }

    /// [`Fleet::start_serving`] with 2026-07-28 peers: no handshake, every request
    /// carries its terms.
    pub async fn start_modern(
        name: &str,
        config: ServerConfig,
        n: usize,
        build: impl FnOnce(ServerConfig) -> Server,
    ) -> (Fleet, Vec<ScriptedPeer>) {
        Fleet::start_full(name, config, &vec![Era::Modern; n], Wire::Memory, None, build).await
    }

    /// [`Fleet::start_serving`] with one in-memory connection per entry of `eras`, each
    /// of that era (a fleet of both eras on one server).
    pub async fn start_eras(
        name: &str,
        config: ServerConfig,
        eras: &[Era],
        build: impl FnOnce(ServerConfig) -> Server,
    ) -> (Fleet, Vec<ScriptedPeer>) {
        Fleet::start_full(name, config, eras, Wire::Memory, None, build).await
    }

    async fn start_full(
        name: &str,
        config: ServerConfig,
        eras: &[Era],
        wire: Wire,
        max_frame: Option<usize>,
        build: impl FnOnce(ServerConfig) -> Server,
    ) -> (Fleet, Vec<ScriptedPeer>) {
        let gauge = Gauge::new();
        let server = build(config.gauge(gauge.clone()));
        let mut connections = Vec::new();
        let mut peers = Vec::new();
        // A connection made later (`connect`) is modern when every one here is.
        let modern = !eras.is_empty() && eras.iter().all(|era| *era == Era::Modern);
        for era in eras {
            let (server_side, client_side) = wire.pair();
            let server_side = match max_frame {
                Some(max) => server_side.with_max_frame_bytes(max),
                None => server_side,
            };
            connections.push(server.connect(server_side, ConnectOptions::default()).await.unwrap());
            let peer = ScriptedPeer::new(client_side);
            peers.push(match era {
                Era::Modern => ready_modern(peer).await,
                Era::Legacy => ready(peer).await,
            });
        }
        let mut fleet = Fleet {
            server,
            gauge,
            connections,
            ledger: Arc::new(Mutex::new(Ledger::new(name))),
            baseline: Live::default(),
            wire,
            max_frame,
            modern,
        };
        fleet.baseline = fleet.live().await;
        (fleet, peers)
    }

    /// Changes the baseline the run must come back to, for a fault that rightly ends
    /// what was live at the start (a closed bus ends every stream).
    pub fn rebase(&mut self, change: impl FnOnce(&mut Live)) {
        change(&mut self.baseline);
    }

    /// Another initialized connection, made after the baseline (it must be gone by the
    /// end); returns its number in the ledger and its peer.
    pub async fn connect(&mut self) -> (usize, ScriptedPeer) {
        let (server_side, client_side) = self.wire.pair();
        let server_side = match self.max_frame {
            Some(max) => server_side.with_max_frame_bytes(max),
            None => server_side,
        };
        self.connections.push(self.server.connect(server_side, ConnectOptions::default()).await.unwrap());
        let peer = ScriptedPeer::new(client_side);
        let peer = if self.modern { ready_modern(peer).await } else { ready(peer).await };
        (self.connections.len() - 1, peer)
    }

    /// The live counts now.
    pub async fn live(&self) -> Live {
        let view = serde_json::to_value(self.server.observe().await.expect("a connection was made")).unwrap();
        Live::from_view(&view, self.gauge.alive_actors(), self.gauge.alive_tasks())
    }

    /// Reads `peer`'s messages into the ledger (as connection `conn`) until it owes
    /// nothing; returns the peer.
    pub async fn drain(ledger: Arc<Mutex<Ledger>>, conn: usize, mut peer: ScriptedPeer) -> ScriptedPeer {
        while ledger.lock().owed(conn) > 0 {
            let message = peer.recv().await;
            ledger.lock().received(conn, &message);
        }
        peer
    }

    /// Waits (bounded) for the live counts to come back to the baseline: a request's task
    /// ends a moment after its answer is written, a cancelled one after its stop.
    async fn settle(&self) -> Live {
        for _ in 0..200 {
            let live = self.live().await;
            if live == self.baseline {
                return live;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.live().await
    }

    /// Waits for every driver (each returns its peer), then [`Fleet::finish`].
    pub async fn finish_drivers(self, drivers: Vec<tokio::task::JoinHandle<ScriptedPeer>>) -> Summary {
        let mut peers = Vec::new();
        for driver in drivers {
            peers.push(driver.await.expect("the driver ran"));
        }
        self.finish(peers).await
    }

    /// Checks the ledger against the baseline, then closes `peers` (those still open),
    /// shuts the server down and checks that no actor or task outlived it.
    pub async fn finish(self, peers: Vec<ScriptedPeer>) -> Summary {
        let after = self.settle().await;
        let ledger = Arc::try_unwrap(self.ledger).expect("every driver is done").into_inner();
        let summary = ledger.finish(self.baseline, after);
        for peer in &peers {
            peer.close().await;
        }
        for connection in &self.connections {
            connection.closed().await;
        }
        self.server.shutdown().await;
        assert_eq!(self.gauge.alive_tasks(), 0, "request tasks leaked");
        assert_eq!(self.gauge.alive_actors(), 0, "actors leaked");
        summary
    }
}
