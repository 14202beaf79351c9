//! The tenant isolation benchmark: tenant B's latency while tenant A suffers a fault,
//! against B's latency with A idle, in the same run.
//!
//! ```sh
//! cargo run --release --example bench_tenant_isolation                # 2 s per phase, 3 rounds (~2 min)
//! cargo run --release --example bench_tenant_isolation -- --secs 3 --rounds 5
//! ```
//!
//! One process, one server, the in-memory transport (no sockets: what is measured is the
//! runtime, not the kernel), a multi-threaded runtime on 2 workers. B is steady traffic:
//! 4 connections, each one `echo` call every 2 ms, timed call by call. Each round runs, for
//! each fault, three phases and reports B's p50 and p99 in each: A idle; A healthy (the
//! fault's traffic at the same pace, without the fault); A faulting. A's faults, each in a
//! tenant of its own, paced (open loop, per millisecond): a panic storm (10,000 calls/s,
//! 20% panic), hung handlers (2,000 calls/s that never answer, stopped by their 100 ms
//! deadline), a rate flood at 10x A's limit (10,000 calls/s against 1,000/s; healthy: at
//! the limit), a stalled subscriber (64 sessions subscribed and never read while 10,000
//! updates/s are published; healthy: they read), and a restart storm (1,000 panics/s
//! against a budget of 5 crashes in 10 s with a 1 s quarantine, reconnecting when
//! stopped). The target (issue 17): B's p99 during A's faults at most 2x its fault-free
//! p99; both fault-free baselines are printed (A healthy, A idle), with the median over
//! rounds. It is a benchmark: it prints figures and never fails on them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_server::router::{Router, ToolRoute};
use arbor_server::tenant::{RateLimit, RestartBudget, TenantPolicy, TenantQuota};
use arbor_server::{ConnectOptions, Server, ServerConfig, Transport};
use arbor_transport::{FrameReader, FrameWriter};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize, schemars::JsonSchema)]
struct Message {
    message: String,
}

fn router() -> Router {
    Router::new("isolation", "1")
        .tool_route(ToolRoute::new("echo", |m: Message| async move { m.message }).description("echo"))
        .tool_route(
            ToolRoute::new("panic", |_: Message| async move {
                if std::hint::black_box(true) {
                    panic!("a planned crash");
                }
                String::new()
            })
            .description("panics"),
        )
        .tool_route(
            ToolRoute::new("hang", |_: Message| async move {
                std::future::pending::<()>().await;
                String::new()
            })
            .description("never answers")
            .deadline(Duration::from_millis(100)),
        )
        .resource("file:///hot", "hot", "updated all the time", "text/plain", || async { "hot".to_owned() })
        .subscriptions()
}

/// A raw JSON-RPC peer over the in-memory transport.
struct Peer {
    reader: FrameReader,
    writer: FrameWriter,
    next: i64,
}

impl Peer {
    async fn connect(server: &Server, tenant: &str) -> Option<Peer> {
        let (server_side, client_side) = Transport::memory_pair();
        server.connect(server_side, ConnectOptions::tenant(tenant)).await.ok()?;
        let (reader, writer) = client_side.into_parts();
        let mut peer = Peer { reader, writer, next: 0 };
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}});
        peer.call("initialize", init).await?;
        peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        Some(peer)
    }

    fn send(&self, message: &Value) -> bool {
        self.writer.send(message.to_string().as_bytes()).is_ok()
    }

    /// Sends a request; its id.
    fn request(&mut self, method: &str, params: Value) -> Option<i64> {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).then_some(id)
    }

    /// The next response (notifications skipped); `None` when the connection ended.
    async fn response(&mut self) -> Option<Value> {
        loop {
            let frame = self.reader.recv().await.ok()??.ok()?;
            let value: Value = serde_json::from_slice(&frame).ok()?;
            if value.get("id").is_some() {
                return Some(value);
            }
        }
    }

    async fn call(&mut self, method: &str, params: Value) -> Option<Value> {
        self.request(method, params)?;
        self.response().await
    }

    async fn tool(&mut self, name: &str) -> Option<Value> {
        self.call("tools/call", json!({"name": name, "arguments": {"message": "hi"}})).await
    }
}

#[derive(Clone, Copy, Debug)]
enum Fault {
    PanicStorm,
    Hung,
    RateFlood,
    StalledSubscriber,
    RestartStorm,
}

impl Fault {
    const ALL: [Fault; 5] =
        [Fault::PanicStorm, Fault::Hung, Fault::RateFlood, Fault::StalledSubscriber, Fault::RestartStorm];

    fn name(self) -> &'static str {
        match self {
            Fault::PanicStorm => "panic storm (20%)",
            Fault::Hung => "hung past deadline",
            Fault::RateFlood => "rate flood at 10x",
            Fault::StalledSubscriber => "stalled subscriber",
            Fault::RestartStorm => "restart storm",
        }
    }

    /// A's tenant for this fault: each has its own, so one fault's policy (a rate, a
    /// budget) does not shape another's traffic.
    fn tenant(self) -> &'static str {
        match self {
            Fault::PanicStorm => "a-panic",
            Fault::Hung => "a-hung",
            Fault::RateFlood => "a-flood",
            Fault::StalledSubscriber => "a-stalled",
            Fault::RestartStorm => "a-storm",
        }
    }

    /// A's calls per millisecond, and the tool of each (by its index), faulty or healthy.
    fn traffic(self, faulty: bool) -> (u64, fn(u64) -> &'static str) {
        match (self, faulty) {
            (Fault::PanicStorm, true) => (10, |n| if n % 5 == 0 { "panic" } else { "echo" }),
            (Fault::PanicStorm, false) => (10, |_| "echo"),
            (Fault::Hung, true) => (2, |_| "hang"),
            (Fault::Hung, false) => (2, |_| "echo"),
            // 10,000/s against a limit of 1,000/s; healthy is at the limit.
            (Fault::RateFlood, true) => (10, |_| "echo"),
            (Fault::RateFlood, false) => (1, |_| "echo"),
            (Fault::StalledSubscriber, _) => (1, |_| "echo"),
            (Fault::RestartStorm, true) => (1, |_| "panic"),
            (Fault::RestartStorm, false) => (1, |_| "echo"),
        }
    }
}

/// A's traffic for this fault (`faulty`) or its healthy twin at the same pace, until
/// `stop`; returns A's calls sent and answered.
async fn run_a(fault: Fault, faulty: bool, server: Server, stop: Arc<AtomicBool>) -> (u64, u64) {
    let tenant = fault.tenant();
    let answered = Arc::new(AtomicU64::new(0));
    // Stalled subscribers keep their reader unread (dropping it would close them).
    let mut subscribers: Vec<(Option<FrameReader>, FrameWriter)> = Vec::new();
    if let Fault::StalledSubscriber = fault {
        // 64 sessions subscribed to the hot resource; stalled ones never read again,
        // healthy ones read everything.
        for _ in 0..64 {
            let Some(mut peer) = Peer::connect(&server, tenant).await else { continue };
            peer.call("resources/subscribe", json!({"uri": "file:///hot"})).await;
            if faulty {
                subscribers.push((Some(peer.reader), peer.writer));
            } else {
                let mut reader = peer.reader;
                tokio::spawn(async move { while let Ok(Some(_)) = reader.recv().await {} });
                subscribers.push((None, peer.writer));
            }
        }
    }
    let (per_ms, tool) = fault.traffic(faulty);
    let mut sent = 0u64;
    let mut ticks = tokio::time::interval(Duration::from_millis(1));
    'connect: while !stop.load(Ordering::Relaxed) {
        let Some(peer) = Peer::connect(&server, tenant).await else { break };
        let (mut reader, writer) = (peer.reader, peer.writer);
        let counted = answered.clone();
        let drain = tokio::spawn(async move {
            while let Ok(Some(_)) = reader.recv().await {
                counted.fetch_add(1, Ordering::Relaxed);
            }
        });
        while !stop.load(Ordering::Relaxed) {
            ticks.tick().await;
            if let Fault::StalledSubscriber = fault {
                for _ in 0..10 {
                    let _ = server.notify_resource_updated("file:///hot");
                }
            }
            for _ in 0..per_ms {
                sent += 1;
                let call = json!({"jsonrpc": "2.0", "id": sent, "method": "tools/call",
                    "params": {"name": tool(sent), "arguments": {"message": "hi"}}});
                if writer.send(call.to_string().as_bytes()).is_err() || drain.is_finished() {
                    // Stopped by an escalation: connect again (refused while quarantined).
                    continue 'connect;
                }
            }
        }
        writer.close().await;
        let _ = drain.await;
    }
    for (_reader, writer) in subscribers {
        writer.close().await;
    }
    (sent, answered.load(Ordering::Relaxed))
}

/// B's steady traffic for `secs`: 4 loops, each one `echo` call every 2 ms (2,000 calls/s
/// in all), each timed; its latencies (µs, sorted) and its errors.
async fn run_b(server: &Server, secs: f64) -> (Vec<u64>, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let mut loops = Vec::new();
    for _ in 0..4 {
        let mut peer = Peer::connect(server, "b").await.expect("B connects");
        let stop = stop.clone();
        loops.push(tokio::spawn(async move {
            let (mut latencies, mut errors) = (Vec::new(), 0u64);
            let mut ticks = tokio::time::interval(Duration::from_millis(2));
            while !stop.load(Ordering::Relaxed) {
                ticks.tick().await;
                let start = Instant::now();
                let answer = peer.tool("echo").await;
                latencies.push(start.elapsed().as_micros() as u64);
                if answer.is_none_or(|a| a.get("error").is_some()) {
                    errors += 1;
                }
            }
            peer.writer.close().await;
            (latencies, errors)
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let (mut all, mut errors) = (Vec::new(), 0);
    for l in loops {
        let (latencies, e) = l.await.unwrap();
        all.extend(latencies);
        errors += e;
    }
    all.sort_unstable();
    (all, errors)
}

/// B measured while A runs `fault` (or its healthy twin; or nothing).
async fn phase(server: &Server, secs: f64, a: Option<(Fault, bool)>) -> (Vec<u64>, u64, (u64, u64)) {
    let stop = Arc::new(AtomicBool::new(false));
    let a_task = a.map(|(fault, faulty)| tokio::spawn(run_a(fault, faulty, server.clone(), stop.clone())));
    // A's traffic starts first: B is measured while it is going on.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (latencies, errors) = run_b(server, secs).await;
    stop.store(true, Ordering::Relaxed);
    let a_counts = match a_task {
        Some(task) => task.await.unwrap(),
        None => (0, 0),
    };
    // Let A's hung calls reach their deadline and a quarantine (1 s) end before the next phase.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    (latencies, errors, a_counts)
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn arg(name: &str, default: f64) -> f64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let secs = arg("--secs", 2.0);
    let rounds = arg("--rounds", 3.0) as usize;
    // The planned panics are not news; the runtime still turns each into a -32603.
    std::panic::set_hook(Box::new(|_| {}));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async move {
        let policy = TenantPolicy::default()
            .tenant("a-flood", TenantQuota::new().rate(RateLimit::new(1000.0, 100)))
            .tenant(
                "a-storm",
                TenantQuota::new()
                    .restart_budget(RestartBudget::new(5, Duration::from_secs(10), Duration::from_secs(1))),
            );
        let server = Server::with_config(router(), ServerConfig::default().tenant_policy(policy));
        // Warm-up: the tenants' subtrees, the allocator's pools.
        let _ = run_b(&server, 0.5).await;
        println!("B: 2,000 echo calls/s (4 loops, one call per 2 ms each); {secs} s per phase; {rounds} rounds");
        println!("each fault: B with A idle | A healthy at the same pace | A faulting; p50/p99 in µs");
        println!(
            "{:<20} {:>6} {:>6} | {:>6} {:>6} | {:>6} {:>6} {:>6} | {:>8} {:>8}",
            "fault", "idle50", "idle99", "ok50", "ok99", "bad50", "bad99", "errors", "bad/ok", "bad/idle"
        );
        let (mut worst_ok, mut worst_idle, mut total_errors) = (0f64, 0f64, 0u64);
        let mut ratios: Vec<(Fault, f64, f64)> = Vec::new();
        for round in 0..rounds {
            for fault in Fault::ALL {
                let (idle, e1, _) = phase(&server, secs, None).await;
                let (healthy, e2, _) = phase(&server, secs, Some((fault, false))).await;
                let (faulty, e3, (a_sent, a_answered)) = phase(&server, secs, Some((fault, true))).await;
                let p99 = |v: &[u64]| pct(v, 0.99).max(1) as f64;
                let (vs_ok, vs_idle) = (p99(&faulty) / p99(&healthy), p99(&faulty) / p99(&idle));
                worst_ok = worst_ok.max(vs_ok);
                worst_idle = worst_idle.max(vs_idle);
                total_errors += e1 + e2 + e3;
                ratios.push((fault, vs_ok, vs_idle));
                println!(
                    "{:<20} {:>6} {:>6} | {:>6} {:>6} | {:>6} {:>6} {:>6} | {:>8.2} {:>8.2}  (round {}, B calls {}, A sent {a_sent}, answered {a_answered})",
                    fault.name(),
                    pct(&idle, 0.5),
                    pct(&idle, 0.99),
                    pct(&healthy, 0.5),
                    pct(&healthy, 0.99),
                    pct(&faulty, 0.5),
                    pct(&faulty, 0.99),
                    e3,
                    vs_ok,
                    vs_idle,
                    round + 1,
                    faulty.len(),
                );
            }
        }
        println!("median over rounds of B's p99 during the fault / fault-free:");
        for fault in Fault::ALL {
            let mut ok: Vec<f64> = ratios.iter().filter(|r| r.0.name() == fault.name()).map(|r| r.1).collect();
            let mut idle: Vec<f64> = ratios.iter().filter(|r| r.0.name() == fault.name()).map(|r| r.2).collect();
            ok.sort_by(f64::total_cmp);
            idle.sort_by(f64::total_cmp);
            println!(
                "  {:<20} vs A healthy {:>5.2}   vs A idle {:>5.2}",
                fault.name(),
                ok[ok.len() / 2],
                idle[idle.len() / 2]
            );
        }
        println!(
            "worst single round: vs A healthy {worst_ok:.2}, vs A idle {worst_idle:.2} (target <= 2.00); B errors: {total_errors}"
        );
        server.shutdown().await;
    });
}
