//! Fan-out figures of the bus, printed side by side with a bare `tokio::sync::broadcast`
//! measured in the same run (`cargo bench -p arbor-bus --bench fanout`).
//!
//! - `fan-out latency`: one publish reaching 10,000 subscriptions of one topic, each read
//!   by its own task: time from just before `publish` until the last task has the message
//!   (p50/p99 over repetitions), and the cost of the `publish` call alone.
//! - `sustained`: 10,000 subscriptions with reader tasks; a publisher publishes back to back
//!   (one topic: every message to all 10,000; many topics: one subscription per topic).
//! - `redis`: the same fan-out with the publish made on another node, through a real
//!   `redis-server` started for the run (skipped, saying so, when it is not installed).
//! - `memory`: heap bytes per idle subscription, counted by a global allocator, for the
//!   subscription alone and with a task parked in `recv` (what a reader adds).
//!
//! Not criterion: the figures wanted are percentiles and byte counts, not a mean.
//! Set `FANOUT_SUBS` / `FANOUT_ROUNDS` to change the sizes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_bus::{Bus, BusMessage, LocalBus, SubscribeOptions};
use serde_json::json;
use tokio::sync::{broadcast, Notify};

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

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Counts receptions of a round; the last one notifies.
struct Round {
    received: AtomicUsize,
    target: usize,
    done: Notify,
}

impl Round {
    fn hit(&self) {
        if self.received.fetch_add(1, Ordering::AcqRel) + 1 == self.target {
            self.done.notify_one();
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "  {name:<28} p50 {:>9.3?}  p99 {:>9.3?}  min {:>9.3?}  max {:>9.3?}",
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        samples[0],
        samples[samples.len() - 1]
    );
}

async fn fan_out_latency(subs: usize, rounds: usize) {
    println!(
        "fan-out latency: one publish to {subs} subscriptions of one topic, a task per subscription, {rounds} rounds"
    );
    let round = Arc::new(Round { received: AtomicUsize::new(0), target: subs, done: Notify::new() });

    // arbor-bus
    let bus = LocalBus::new();
    let mut readers = Vec::new();
    for _ in 0..subs {
        let mut sub = bus.subscribe("feed", SubscribeOptions::default());
        let round = round.clone();
        readers.push(tokio::spawn(async move {
            while sub.recv().await.is_some() {
                round.hit();
            }
        }));
    }
    let (mut total, mut call) = (Vec::new(), Vec::new());
    for i in 0..rounds + 10 {
        round.received.store(0, Ordering::Release);
        let start = Instant::now();
        bus.publish(BusMessage::new("feed", json!({"n": i}))).unwrap();
        let published = start.elapsed();
        round.done.notified().await;
        if i >= 10 {
            total.push(start.elapsed());
            call.push(published);
        }
    }
    report("arbor-bus LocalBus", total);
    report("  of which the publish call", call);
    bus.close();
    for r in readers {
        r.await.unwrap();
    }

    // bare tokio broadcast
    let (tx, _) = broadcast::channel::<Arc<serde_json::Value>>(256);
    let mut readers = Vec::new();
    for _ in 0..subs {
        let mut rx = tx.subscribe();
        let round = round.clone();
        readers.push(tokio::spawn(async move {
            while rx.recv().await.is_ok() {
                round.hit();
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (mut total, mut call) = (Vec::new(), Vec::new());
    for i in 0..rounds + 10 {
        round.received.store(0, Ordering::Release);
        let start = Instant::now();
        tx.send(Arc::new(json!({"n": i}))).unwrap();
        let published = start.elapsed();
        round.done.notified().await;
        if i >= 10 {
            total.push(start.elapsed());
            call.push(published);
        }
    }
    report("tokio broadcast", total);
    report("  of which the send call", call);
    drop(tx);
    for r in readers {
        r.await.unwrap();
    }
}

async fn sustained(subs: usize) {
    let messages = 200usize;
    println!("sustained: {subs} subscriptions with reader tasks");
    // One topic: every message goes to all subscriptions. Readers keep up or drop (counted).
    let bus = LocalBus::new();
    let delivered = Arc::new(AtomicUsize::new(0));
    let gaps = Arc::new(AtomicUsize::new(0));
    let mut readers = Vec::new();
    for _ in 0..subs {
        let mut sub = bus.subscribe("feed", SubscribeOptions::default());
        let (delivered, gaps) = (delivered.clone(), gaps.clone());
        readers.push(tokio::spawn(async move {
            while let Some(event) = sub.recv().await {
                match event {
                    arbor_bus::BusEvent::Message(_) => delivered.fetch_add(1, Ordering::Relaxed),
                    arbor_bus::BusEvent::Gap { .. } => gaps.fetch_add(1, Ordering::Relaxed),
                };
            }
        }));
    }
    let start = Instant::now();
    for i in 0..messages {
        bus.publish(BusMessage::new("feed", json!(i))).unwrap();
        // Let readers run between publishes, as a publisher task on a busy server would.
        tokio::task::yield_now().await;
    }
    let published = start.elapsed();
    while delivered.load(Ordering::Relaxed) + gaps.load(Ordering::Relaxed) < messages * subs / 2
        && start.elapsed() < Duration::from_secs(30)
    {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    bus.close();
    for r in readers {
        r.await.unwrap();
    }
    let all = start.elapsed();
    let n = delivered.load(Ordering::Relaxed);
    println!(
        "  one topic      {messages} publishes in {published:.2?} ({:.0}/s); {n} deliveries in {all:.2?} ({:.2} M/s), {} drop gaps",
        messages as f64 / published.as_secs_f64(),
        n as f64 / all.as_secs_f64() / 1e6,
        gaps.load(Ordering::Relaxed)
    );

    // Many topics: one subscription per topic, publishing round robin.
    let bus = LocalBus::new();
    let delivered = Arc::new(AtomicUsize::new(0));
    let mut readers = Vec::new();
    for t in 0..subs {
        let mut sub = bus.subscribe(&format!("topic-{t}"), SubscribeOptions::default());
        let delivered = delivered.clone();
        readers.push(tokio::spawn(async move {
            while sub.recv().await.is_some() {
                delivered.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let topics: Vec<Arc<str>> = (0..subs).map(|t| Arc::from(format!("topic-{t}"))).collect();
    let total = 1_000_000usize;
    let start = Instant::now();
    for i in 0..total {
        bus.publish(BusMessage::new(topics[i % subs].clone(), serde_json::Value::Null)).unwrap();
        if i % 256 == 0 {
            tokio::task::yield_now().await;
        }
    }
    let published = start.elapsed();
    bus.close();
    for r in readers {
        r.await.unwrap();
    }
    println!(
        "  {subs} topics   {total} publishes in {published:.2?} ({:.2} M/s), {} delivered",
        total as f64 / published.as_secs_f64() / 1e6,
        delivered.load(Ordering::Relaxed)
    );
    // Nobody listening: the cost of a publish to an unfollowed topic.
    let start = Instant::now();
    for _ in 0..total {
        bus.publish(BusMessage::new(topics[0].clone(), serde_json::Value::Null)).ok();
    }
    println!("  closed bus     publish refused in {:.0?} each", start.elapsed() / total as u32);
    let bus = LocalBus::new();
    let start = Instant::now();
    for _ in 0..total {
        bus.publish(BusMessage::new(topics[0].clone(), serde_json::Value::Null)).unwrap();
    }
    println!("  no subscriber  publish in {:.0?} each", start.elapsed() / total as u32);
}

async fn memory(subs: usize) {
    println!("memory per idle subscription ({subs} subscriptions, heap bytes from a counting allocator)");
    let bus = LocalBus::new();
    let before = ALLOCATED.load(Ordering::SeqCst);
    let held: Vec<_> = (0..subs).map(|_| bus.subscribe("feed", SubscribeOptions::default())).collect();
    let one_topic = ALLOCATED.load(Ordering::SeqCst) - before;
    // The `Vec` holding them is the benchmark's, not the bus's.
    let vec = (held.capacity() * std::mem::size_of::<arbor_bus::Subscription>()) as isize;
    println!("  one topic                      {:>6} B", (one_topic - vec) / subs as isize);
    drop(held);

    let names: Vec<String> = (0..subs).map(|t| format!("topic-{t:05}")).collect();
    let before = ALLOCATED.load(Ordering::SeqCst);
    let held: Vec<_> = names.iter().map(|t| bus.subscribe(t, SubscribeOptions::default())).collect();
    let many = ALLOCATED.load(Ordering::SeqCst) - before;
    println!("  a topic each                   {:>6} B (topic entry included)", (many - vec) / subs as isize);
    drop(held);

    let before = ALLOCATED.load(Ordering::SeqCst);
    let tasks: Vec<_> = (0..subs)
        .map(|_| {
            let mut sub = bus.subscribe("feed", SubscribeOptions::default());
            tokio::spawn(async move { while sub.recv().await.is_some() {} })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let with_tasks = ALLOCATED.load(Ordering::SeqCst) - before;
    let vec = (tasks.capacity() * std::mem::size_of::<tokio::task::JoinHandle<()>>()) as isize;
    println!("  with a task parked in recv     {:>6} B", (with_tasks - vec) / subs as isize);
    bus.close();
    for t in tasks {
        t.await.unwrap();
    }

    let (tx, _) = broadcast::channel::<Arc<serde_json::Value>>(256);
    let before = ALLOCATED.load(Ordering::SeqCst);
    let held: Vec<_> = (0..subs).map(|_| tx.subscribe()).collect();
    let receivers = ALLOCATED.load(Ordering::SeqCst) - before;
    let vec = (held.capacity() * std::mem::size_of::<broadcast::Receiver<Arc<serde_json::Value>>>()) as isize;
    println!(
        "  tokio broadcast receiver       {:>6} B (the channel's 256 slots shared)",
        (receivers - vec) / subs as isize
    );
}

async fn redis_fan_out(subs: usize, rounds: usize) {
    use arbor_bus::{RedisBus, RedisBusOptions};
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = std::process::Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .stdout(std::process::Stdio::null())
        .spawn();
    let Ok(mut server) = server else {
        println!("redis: skipped (no redis-server on PATH)");
        return;
    };
    println!("redis: one publish on node B to {subs} subscriptions on node A, {rounds} rounds");
    let url = format!("redis://127.0.0.1:{port}/");
    let connect = || async {
        for _ in 0..100 {
            if let Ok(bus) = RedisBus::connect(&url, RedisBusOptions::default()).await {
                return bus;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("redis-server did not start");
    };
    let (a, b) = (connect().await, connect().await);
    let round = Arc::new(Round { received: AtomicUsize::new(0), target: subs, done: Notify::new() });
    let mut readers = Vec::new();
    for _ in 0..subs {
        let mut sub = a.subscribe("feed", SubscribeOptions::default());
        let round = round.clone();
        readers.push(tokio::spawn(async move {
            while sub.recv().await.is_some() {
                round.hit();
            }
        }));
    }
    a.settled().await;
    let mut total = Vec::new();
    for i in 0..rounds + 10 {
        round.received.store(0, Ordering::Release);
        let start = Instant::now();
        b.publish(BusMessage::new("feed", json!({"n": i}))).unwrap();
        round.done.notified().await;
        if i >= 10 {
            total.push(start.elapsed());
        }
    }
    report("RedisBus, node to node", total);
    a.close();
    for r in readers {
        r.await.unwrap();
    }
    let _ = server.kill();
    let _ = server.wait();
}

fn main() {
    let subs = env("FANOUT_SUBS", 10_000);
    let rounds = env("FANOUT_ROUNDS", 300);
    println!("arbor-bus fan-out benchmark, {} cores", std::thread::available_parallelism().map_or(0, |n| n.get()));
    for (name, rt) in [
        ("multi-thread runtime", tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()),
        ("current-thread runtime", tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()),
    ] {
        println!("== {name}");
        // Measure from inside a task, as a server's publisher would run.
        rt.block_on(async move {
            tokio::spawn(async move {
                fan_out_latency(subs, rounds).await;
                sustained(subs).await;
                redis_fan_out(subs, rounds / 3).await;
            })
            .await
            .unwrap();
        });
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(memory(subs));
}
