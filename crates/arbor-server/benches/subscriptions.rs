//! End-to-end subscription figures through the server on one node
//! (`cargo bench -p arbor-server --bench subscriptions`).
//!
//! 100 in-memory connections × 100 `subscriptions/listen` streams (2026-07-28,
//! `resourceSubscriptions: ["demo://feed"]`) = 10,000 listens, every one acknowledged, then:
//!
//! - `memory`: heap bytes (a counting global allocator) after opening the listens on the
//!   already connected connections minus before, divided by their number: what an idle
//!   stream costs beyond its connection, client side's consumed acks included (none kept).
//! - `fan-out`: one `Server::notify_resource_updated` until every one of the 10,000
//!   `notifications/resources/updated` has been read by the client ends (p50/p99).
//! - `sustained`: back-to-back publishes with 10 of the 100 connections not reading; how
//!   many notifications reached the readers per second, how many were coalesced (the
//!   default overflow policy of the runtime's topics), and the peak heap growth meanwhile,
//!   against the bound that the stalled connections may hold.
//!
//! Not criterion: percentiles and byte counts are wanted. `SUBS_CONNECTIONS`,
//! `SUBS_PER_CONNECTION`, `SUBS_ROUNDS`, `SUBS_PUBLISHES` change the sizes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_protocol::error::McpError;
use arbor_protocol::model::capabilities::{ResourcesCapability, ServerCapabilities};
use arbor_protocol::model::resources::ResourceSubscriptionParams;
use arbor_server::bus::LocalBus;
use arbor_server::{
    ConnectOptions, Connection, RequestContext, Server, ServerConfig, ServerHandler, ServerInfo, Transport,
};
use arbor_transport::FrameWriter;
use serde_json::json;
use tokio::sync::Notify;

struct Counting;

static ALLOCATED: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator and only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        ALLOCATED.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const FEED: &str = "demo://feed";
const SLOW_CONNECTIONS: usize = 10;
/// `MAX_UNREAD_OUTPUT` (arbor-server) plus the in-memory pipe (256 KiB): what one stalled
/// connection may hold of output before its streams stop writing.
const UNREAD_BOUND: usize = 8 * 1024 * 1024 + 256 * 1024;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn heap() -> isize {
    ALLOCATED.load(Ordering::Relaxed)
}

/// A handler that only offers resource subscriptions and accepts every one.
struct Feed;

impl ServerHandler for Feed {
    fn info(&self) -> ServerInfo {
        ServerInfo::new("arbor-bench", "0.0.1")
    }

    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities::default().with_resources(ResourcesCapability::default().with_subscribe(true))
    }

    async fn subscribe(&self, _: ResourceSubscriptionParams, _: RequestContext) -> Result<(), McpError> {
        Ok(())
    }
}

/// Counts frames of one kind; notifies once `target` is reached.
#[derive(Default)]
struct Counter {
    count: AtomicUsize,
    target: AtomicUsize,
    done: Notify,
}

impl Counter {
    fn hit(&self) {
        let n = self.count.fetch_add(1, Ordering::AcqRel) + 1;
        if n == self.target.load(Ordering::Acquire) {
            self.done.notify_one();
        }
    }

    /// Waits until the count reaches `target` (set before the work that reaches it).
    async fn reach(&self, target: usize) {
        self.target.store(target, Ordering::Release);
        if self.count.load(Ordering::Acquire) >= target {
            return;
        }
        tokio::time::timeout(Duration::from_secs(30), self.done.notified())
            .await
            .unwrap_or_else(|_| panic!("stuck at {} of {target}", self.count.load(Ordering::Acquire)));
    }

    fn get(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }
}

/// The client end of one connection: a reader task that counts acks and updates.
struct Client {
    writer: FrameWriter,
    paused: Arc<AtomicBool>,
    updates: Arc<Counter>,
    _connection: Connection,
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

async fn connect(server: &Server, acks: Arc<Counter>, all_updates: Arc<Counter>) -> Client {
    let (server_side, client_side) = Transport::memory_pair();
    let connection = server.connect(server_side, ConnectOptions::default()).await.unwrap();
    let (mut reader, writer) = client_side.into_parts();
    let paused = Arc::new(AtomicBool::new(false));
    let updates = Arc::new(Counter::default());
    let (p, u) = (paused.clone(), updates.clone());
    tokio::spawn(async move {
        loop {
            while p.load(Ordering::Acquire) {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            let Ok(Some(Ok(frame))) = reader.recv().await else { return };
            if contains(&frame, b"notifications/resources/updated") {
                u.hit();
                all_updates.hit();
            } else if contains(&frame, b"notifications/subscriptions/acknowledged") {
                acks.hit();
            } else {
                panic!("unexpected frame: {}", String::from_utf8_lossy(&frame));
            }
        }
    });
    Client { writer, paused, updates, _connection: connection }
}

fn listen(writer: &FrameWriter, id: usize) {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let params = json!({"_meta": meta, "notifications": {"resourceSubscriptions": [FEED]}});
    let request = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": params});
    writer.send(request.to_string().as_bytes()).unwrap();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Waits until `counter` has not moved for `quiet`.
async fn settle(counter: &Counter, quiet: Duration) {
    let mut last = counter.get();
    loop {
        tokio::time::sleep(quiet).await;
        let now = counter.get();
        if now == last {
            return;
        }
        last = now;
    }
}

fn main() {
    let connections = env("SUBS_CONNECTIONS", 100);
    let per_connection = env("SUBS_PER_CONNECTION", 100);
    let rounds = env("SUBS_ROUNDS", 30);
    let publishes = env("SUBS_PUBLISHES", 1000);
    let total = connections * per_connection;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("arbor-server subscriptions, end to end ({threads} cores, multi-thread runtime)");
    println!("  {connections} in-memory connections × {per_connection} listens = {total} streams on {FEED}\n");
    runtime.block_on(run(connections, per_connection, rounds, publishes));
}

async fn run(connections: usize, per_connection: usize, rounds: usize, publishes: usize) {
    let total = connections * per_connection;
    let bus = Arc::new(LocalBus::new());
    let config = ServerConfig::default().max_subscriptions_per_connection(per_connection.max(256));
    let server = Server::with_config(Feed, config).with_bus(bus.clone());
    let acks = Arc::new(Counter::default());
    let all = Arc::new(Counter::default());
    let mut clients = Vec::with_capacity(connections);
    for _ in 0..connections {
        clients.push(connect(&server, acks.clone(), all.clone()).await);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;

    // (c) Memory per idle listen, beyond the connection.
    let before = heap();
    let opened = Instant::now();
    for client in &clients {
        for id in 0..per_connection {
            listen(&client.writer, id);
        }
    }
    acks.reach(total).await;
    let open_time = opened.elapsed();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let per_listen = (heap() - before) as f64 / total as f64;
    println!("{:<44} {:>14}", "measure", "figure");
    println!("{:-<60}", "");
    println!("{:<44} {:>11.1?}", format!("open + acknowledge {total} listens"), open_time);
    println!("{:<44} {:>8.0} B  (target ≤ 4096)", "heap per idle listen (beyond connection)", per_listen);

    // (a) Fan-out of one update to every listen, read by the client ends.
    let mut samples = Vec::with_capacity(rounds);
    for round in 0..=rounds {
        let target = all.get() + total;
        let start = Instant::now();
        server.notify_resource_updated(FEED).unwrap();
        all.reach(target).await;
        if round > 0 {
            // Round 0 warms up.
            samples.push(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    samples.sort();
    println!(
        "{:<44} {:>11.2?}  p99 {:.2?}  min {:.2?}  max {:.2?}  ({rounds} rounds)",
        format!("fan-out to {total}: p50"),
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        samples[0],
        samples[samples.len() - 1],
    );

    // (b) Sustained publishing, a tenth of the connections not reading.
    let slow = SLOW_CONNECTIONS.min(connections);
    for client in &clients[..slow] {
        client.paused.store(true, Ordering::Release);
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let fast_before: usize = clients[slow..].iter().map(|c| c.updates.get()).sum();
    let slow_before: Vec<usize> = clients[..slow].iter().map(|c| c.updates.get()).collect();
    let heap_before = heap();
    let peak = Arc::new(AtomicIsize::new(heap_before));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (peak.clone(), sampling.clone());
        tokio::spawn(async move {
            while sampling.load(Ordering::Acquire) {
                peak.fetch_max(heap(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
    };
    let start = Instant::now();
    for _ in 0..publishes {
        server.notify_resource_updated(FEED).unwrap();
        tokio::task::yield_now().await;
    }
    let publish_time = start.elapsed();
    settle(&all, Duration::from_millis(100)).await;
    // The settle's final quiet period is not delivery time.
    let elapsed = start.elapsed().saturating_sub(Duration::from_millis(100));
    sampling.store(false, Ordering::Release);
    sampler.await.unwrap();
    let fast_listens = (connections - slow) * per_connection;
    let fast_delivered: usize = clients[slow..].iter().map(|c| c.updates.get()).sum::<usize>() - fast_before;
    let fast_offered = fast_listens * publishes;
    let growth = peak.load(Ordering::Relaxed) - heap_before;
    let bound = slow * UNREAD_BOUND;
    // The stalled connections read again: each listen must still hear the last update.
    for client in &clients[..slow] {
        client.paused.store(false, Ordering::Release);
    }
    settle(&all, Duration::from_millis(200)).await;
    let slow_delivered: usize = clients[..slow].iter().zip(&slow_before).map(|(c, b)| c.updates.get() - b).sum();
    let slow_listens = slow * per_connection;
    let slow_offered = slow_listens * publishes;
    println!(
        "{:<44} {:>11.0}/s  ({publishes} in {publish_time:.1?})",
        format!("sustained: publishes, {total} listens open"),
        publishes as f64 / publish_time.as_secs_f64()
    );
    println!(
        "{:<44} {:>11.0}/s  ({fast_delivered} of {fast_offered} in {elapsed:.1?})",
        format!("  delivered to {fast_listens} reading listens"),
        fast_delivered as f64 / elapsed.as_secs_f64()
    );
    println!(
        "{:<44} {:>13}  ({:.1}%)",
        "  coalesced for reading listens",
        fast_offered - fast_delivered,
        100.0 * (fast_offered - fast_delivered) as f64 / fast_offered as f64
    );
    println!(
        "{:<44} {:>13}  of {slow_offered} ({} coalesced, {:.1}%)",
        format!("  delivered to {slow_listens} stalled listens"),
        slow_delivered,
        slow_offered - slow_delivered,
        100.0 * (slow_offered - slow_delivered) as f64 / slow_offered as f64
    );
    println!(
        "{:<44} {:>9.1} MiB  (bound {:.1} MiB for {slow} stalled connections: {})",
        "  peak heap growth while publishing",
        growth as f64 / (1024.0 * 1024.0),
        bound as f64 / (1024.0 * 1024.0),
        if growth <= bound as isize { "held" } else { "EXCEEDED" }
    );
    let every_slow_listen_heard = slow_delivered >= slow_listens;
    println!(
        "{:<44} {:>13}",
        "  stalled listens heard the update after",
        if every_slow_listen_heard { "yes" } else { "NO" }
    );

    for client in &clients {
        client.writer.close().await;
    }
    drop(clients);
    server.shutdown().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    use arbor_server::bus::Bus;
    assert_eq!(bus.subscriber_count(), 0, "bus subscriptions leaked");
    assert!(every_slow_listen_heard, "a stalled listen lost the last update");
}
