//! The shared-state benchmark (issue 18): each task-store operation on Redis
//! (`arbor_cluster::RedisTaskStore`) against its in-memory twin (`MemoryTaskStore`), same
//! run: p50 and p99 latency, and this process's CPU per operation; and a `forward` (the
//! `tasks/update` input or `tasks/cancel` of a task running on another node) between two
//! stores on the same Redis against handing the signal to the local runs directly, which
//! is what one node does.
//!
//! ```sh
//! cargo run --release --example bench_cluster_stores                # 5,000 operations each
//! cargo run --release --example bench_cluster_stores -- --ops 20000
//! ```
//!
//! It starts a throwaway `redis-server` on loopback (`tests::redis`; it must be installed).
//! Records of 500 per owner. One task at a time, so latency is one round trip plus the store's work; the CPU is the
//! process's (user + system, from `/proc/self/stat`, 10 ms ticks, so runs are long enough
//! to count hundreds of ticks): the client side only, not `redis-server`'s; for `forward`
//! both nodes are in this process, so it is the sender's and the owner's together. The
//! owner's runs take every signal at once (no task work), so the figure is the routing's
//! alone. It is a benchmark: it prints figures and never fails on them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_cluster::{RedisTaskStore, RedisTaskStoreOptions};
use arbor_server::tasks::{Delivery, MemoryTaskStore, TaskChange, TaskConfig, TaskOwner, TaskRuns, TaskSignal};
use arbor_server::{Requester, TaskRecord, TaskStore};
use futures::future::BoxFuture;

#[path = "common/sampling.rs"]
mod sampling;
use sampling::{cpu, pct};

/// Runs that take every signal at once: the owner's side without any task work.
struct Taken;

impl TaskRuns for Taken {
    fn deliver<'a>(&'a self, _id: &'a str, _signal: TaskSignal) -> BoxFuture<'a, Delivery> {
        Box::pin(async { Delivery::Applied })
    }
}

/// `n` forwards of one input from `sender` to the node holding `n` tasks' leases, and
/// the same signals handed to `runs` directly (one node: no store on the path).
async fn forwards(nodes: [&RedisTaskStore; 2], runs: &Arc<Taken>, n: usize, tag: &str) -> [Figures; 2] {
    let [owner_node, sender] = nodes;
    let ids: Vec<String> = (0..n).map(|i| format!("{tag}-{i:08}")).collect();
    for (i, id) in ids.iter().enumerate() {
        // 500 records per owner, within the per-owner cap, as in `run`.
        let principal = format!("{tag}-{}", i / 500);
        let owner = TaskOwner { tenant: "bench".into(), requester: Requester::new(Some(&principal), None) };
        let record = TaskRecord::new(id.clone(), owner, Duration::from_secs(600), Duration::from_secs(1));
        owner_node.create(record).await.expect("created");
    }
    let input = || {
        let answers = serde_json::json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
        TaskSignal::Input(answers.as_object().cloned().unwrap_or_default())
    };
    let local = measure(n, |i| {
        let (runs, id) = (runs.clone(), ids[i].clone());
        async move {
            assert_eq!(runs.deliver(&id, input()).await, Delivery::Applied);
        }
    })
    .await;
    let routed = measure(n, |i| {
        let id = ids[i].clone();
        async move {
            assert_eq!(sender.forward(&id, input()).await.expect("forwarded"), Delivery::Applied);
        }
    })
    .await;
    [local, routed]
}

/// One table row: an operation's in-memory figures beside its Redis figures.
fn print_row(op: &str, m: &Figures, r: &Figures) {
    println!(
        "{op:<10} | {:>6.2}µs {:>6.2}µs {:>7.1}µs | {:>7.1}µs {:>7.1}µs {:>7.1}µs | {:>9.0}",
        m.p50 as f64 / 1e3,
        m.p99 as f64 / 1e3,
        m.cpu_us,
        r.p50 as f64 / 1e3,
        r.p99 as f64 / 1e3,
        r.cpu_us,
        r.p50 as f64 / m.p50.max(1) as f64
    );
}

/// Latencies in ns; CPU in µs per operation.
struct Figures {
    p50: u64,
    p99: u64,
    cpu_us: f64,
}

/// Runs `op` `n` times, one at a time; its latencies and CPU per operation.
async fn measure<F, Fut>(n: usize, mut op: F) -> Figures
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut latencies = Vec::with_capacity(n);
    let cpu_before = cpu();
    for i in 0..n {
        let start = Instant::now();
        op(i).await;
        latencies.push(start.elapsed().as_nanos() as u64);
    }
    let cpu_used = cpu().saturating_sub(cpu_before);
    latencies.sort_unstable();
    Figures { p50: pct(&latencies, 0.5), p99: pct(&latencies, 0.99), cpu_us: cpu_used.as_secs_f64() * 1e6 / n as f64 }
}

/// create, get, change, list: each operation over `n` fresh records.
async fn run(store: Arc<dyn TaskStore>, n: usize, tag: &str) -> Vec<(&'static str, Figures)> {
    // 500 records per owner: within the default per-owner cap (1,000), and a full page to list.
    let owner_of = |i: usize| {
        let principal = format!("{tag}-{}", i / 500);
        TaskOwner { tenant: "bench".into(), requester: Requester::new(Some(&principal), None) }
    };
    let owner = owner_of(0);
    let ids: Vec<String> = (0..n).map(|i| format!("{tag}-{i:08}")).collect();
    let record =
        |i: usize| TaskRecord::new(ids[i].clone(), owner_of(i), Duration::from_secs(600), Duration::from_secs(1));
    let mut out = Vec::new();
    out.push((
        "create",
        measure(n, |i| {
            let (store, record) = (store.clone(), record(i));
            async move { store.create(record).await.expect("created") }
        })
        .await,
    ));
    out.push((
        "get",
        measure(n, |i| {
            let (store, owner, id) = (store.clone(), owner_of(i), ids[i].clone());
            async move {
                store.get(&owner, &id).await.expect("found");
            }
        })
        .await,
    ));
    out.push((
        "change",
        measure(n, |i| {
            let (store, id) = (store.clone(), ids[i].clone());
            async move {
                store.change(&id, TaskChange::Completed(Default::default())).await.expect("changed");
            }
        })
        .await,
    ));
    out.push((
        "list (50)",
        measure(n / 10, |_| {
            let (store, owner) = (store.clone(), owner.clone());
            async move {
                store.list(&owner, None, 50).await.expect("listed");
            }
        })
        .await,
    ));
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .iter()
        .position(|a| a == "--ops")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let redis = tests::redis::RedisServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let config = TaskConfig::default();
        let memory: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::new(&config));
        let options = RedisTaskStoreOptions::default().caps_of(&config);
        let on_redis: Arc<dyn TaskStore> =
            Arc::new(RedisTaskStore::connect(&redis.url(), options).await.expect("redis"));
        // Warm-up: connections, allocator pools.
        let _ = run(memory.clone(), 500, "warm-m").await;
        let _ = run(on_redis.clone(), 500, "warm-r").await;
        let mem = run(memory, n, "mem").await;
        let red = run(on_redis, n, "redis").await;
        // Two nodes under a prefix of their own: the caps count only their records.
        let two = || RedisTaskStoreOptions::default().prefix("forward:");
        let owner_node = RedisTaskStore::connect(&redis.url(), two()).await.expect("redis");
        let sender = RedisTaskStore::connect(&redis.url(), two()).await.expect("redis");
        let runs = Arc::new(Taken);
        let weak: std::sync::Weak<Taken> = Arc::downgrade(&runs);
        owner_node.attach_runs(weak);
        let _ = forwards([&owner_node, &sender], &runs, 500, "warm-f").await;
        let [local, routed] = forwards([&owner_node, &sender], &runs, n, "forward").await;
        println!("{n} operations each (list: {}), one at a time, current-thread runtime, loopback Redis", n / 10);
        println!(
            "{:<10} | {:>8} {:>8} {:>9} | {:>8} {:>8} {:>9} | {:>9}",
            "operation", "mem p50", "mem p99", "mem cpu", "redis p50", "redis p99", "redis cpu", "p50 ratio"
        );
        for ((op, m), (_, r)) in mem.iter().zip(red.iter()) {
            print_row(op, m, r);
        }
        print_row("forward", &local, &routed);
        println!("forward: mem = the signal handed to the local runs; redis = to another node and its ack back");
    });
}
