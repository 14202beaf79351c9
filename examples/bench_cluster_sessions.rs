//! The shared legacy session benchmark (issue 18): what a legacy session costs when it is
//! shared through Redis (`arbor_cluster::RedisSessionStore`), against one node alone, same
//! run.
//!
//! ```sh
//! cargo run --release --example bench_cluster_sessions                  # 300 sessions
//! cargo run --release --example bench_cluster_sessions -- --sessions 1000
//! ```
//!
//! Three HTTP nodes in this process, each with its own server: `alone` (no store), and
//! `home` and `other` sharing one throwaway `redis-server` (`tests::redis`; it must be
//! installed). For each session: `initialize` (on `alone`, or on `home`), then its first
//! request (`tools/call add`) on the same node (`alone`) or on the other node, which adopts
//! the session (`other`), then `--steady` more requests there. Reported per phase: p50 and
//! p99 latency, this process's CPU per request (client and servers together, `/proc/self/stat`),
//! and the Redis commands per request (`INFO stats`' `total_commands_processed`, whose
//! own call is subtracted). The claim checked: the first request on an adopted session
//! costs one Redis round trip (loading the record) and the next ones none. It is a
//! benchmark: it prints figures and never fails on them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor::prelude::*;
use arbor_cluster::{RedisSessionStore, RedisSessionStoreOptions};
use serde_json::{json, Value};

#[path = "common/sampling.rs"]
mod sampling;
use sampling::{cpu, pct};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: f64,
    /// The second addend.
    b: f64,
}

/// Adds two numbers.
#[tool(read_only)]
async fn add(args: AddArgs) -> String {
    (args.a + args.b).to_string()
}

/// One phase's samples: latencies (ns), CPU, Redis commands.
#[derive(Default)]
struct Phase {
    latencies: Vec<u64>,
    cpu: Duration,
    commands: u64,
}

impl Phase {
    fn print(&mut self, name: &str) {
        self.latencies.sort_unstable();
        let n = self.latencies.len().max(1) as f64;
        println!(
            "{name:<34} {:>6} req  p50 {:>7.1} µs  p99 {:>7.1} µs  cpu {:>6.1} µs/req  redis {:>5.2} cmd/req",
            self.latencies.len(),
            pct(&self.latencies, 0.5) as f64 / 1e3,
            pct(&self.latencies, 0.99) as f64 / 1e3,
            self.cpu.as_secs_f64() * 1e6 / n,
            self.commands as f64 / n,
        );
    }
}

/// Redis's count of commands processed (this `INFO` call included).
async fn commands(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query_async(conn).await.expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix("total_commands_processed:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("total_commands_processed")
}

async fn node(store: Option<Arc<dyn arbor_http::cluster::SessionStore>>) -> String {
    let router = Router::new("bench", "0.1.0").tool_route(add::route());
    let mut config = HttpConfig::default().bind(([127, 0, 0, 1], 0).into());
    config.session_store = store;
    let bound = HttpServer::with_config(Server::new(router), config).bind().await.expect("bind");
    let url = format!("http://{}/mcp", bound.local_addr());
    tokio::spawn(bound.run());
    url
}

async fn post(http: &reqwest::Client, url: &str, session: Option<&str>, body: Value) -> (Option<String>, Value) {
    let mut request = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .json(&body);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25");
    }
    let response = request.send().await.expect("POST");
    let id = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let status = response.status();
    let bytes = response.bytes().await.expect("a body");
    let value =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| panic!("{status}: {}", String::from_utf8_lossy(&bytes)));
    (id, value)
}

async fn open(http: &reqwest::Client, url: &str) -> String {
    let params =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}});
    let (id, _) =
        post(http, url, None, json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})).await;
    id.expect("a session id")
}

fn call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "add", "arguments": {"a": id, "b": 1}}})
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (mut sessions, mut steady) = (300usize, 10usize);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--sessions" => sessions = args.next().and_then(|v| v.parse().ok()).expect("--sessions N"),
            "--steady" => steady = args.next().and_then(|v| v.parse().ok()).expect("--steady N"),
            other => panic!("unknown argument {other}"),
        }
    }
    let redis_server = tests::redis::RedisServer::start();
    let url = redis_server.url();
    let connect = |name: &str| {
        let options = RedisSessionStoreOptions { node: Some(name.to_owned()), ..Default::default() };
        RedisSessionStore::connect(&url, options)
    };
    let home_store: Arc<dyn arbor_http::cluster::SessionStore> = Arc::new(connect("home").await.expect("redis"));
    let other_store: Arc<dyn arbor_http::cluster::SessionStore> = Arc::new(connect("other").await.expect("redis"));
    let (alone, home, other) = (node(None).await, node(Some(home_store)).await, node(Some(other_store)).await);
    let http = reqwest::Client::new();
    let mut redis =
        redis::Client::open(redis_server.url()).unwrap().get_multiplexed_async_connection().await.expect("redis");

    // Warm-up: connections, allocator, JIT-free but cold caches.
    for _ in 0..20 {
        let s = open(&http, &alone).await;
        post(&http, &alone, Some(&s), call(1)).await;
        let s = open(&http, &home).await;
        post(&http, &other, Some(&s), call(1)).await;
    }

    let mut phases: Vec<(&str, Phase)> = [
        "initialize, one node",
        "initialize, shared",
        "first request, same node",
        "first request, adopting node",
        "next requests, same node",
        "next requests, adopted session",
    ]
    .into_iter()
    .map(|name| (name, Phase::default()))
    .collect();

    for round in 0..sessions {
        for (shared, (open_at, serve_at)) in [(false, (&alone, &alone)), (true, (&home, &other))] {
            let base = usize::from(shared);
            let measure = |phase: &mut Phase, start: Instant, cpu0: Duration, cmds: u64| {
                phase.latencies.push(start.elapsed().as_nanos() as u64);
                phase.cpu += cpu().saturating_sub(cpu0);
                phase.commands += cmds;
            };
            let (c0, cpu0, t0) = (commands(&mut redis).await, cpu(), Instant::now());
            let session = open(&http, open_at).await;
            let cmds = commands(&mut redis).await - c0 - 1;
            measure(&mut phases[base].1, t0, cpu0, cmds);

            let (c0, cpu0, t0) = (commands(&mut redis).await, cpu(), Instant::now());
            let (_, first) = post(&http, serve_at, Some(&session), call(round as u64)).await;
            let cmds = commands(&mut redis).await - c0 - 1;
            assert!(first.get("result").is_some(), "{first}");
            measure(&mut phases[2 + base].1, t0, cpu0, cmds);

            for n in 0..steady {
                let (c0, cpu0, t0) = (commands(&mut redis).await, cpu(), Instant::now());
                post(&http, serve_at, Some(&session), call(n as u64)).await;
                let cmds = commands(&mut redis).await - c0 - 1;
                measure(&mut phases[4 + base].1, t0, cpu0, cmds);
            }
        }
    }
    println!("bench_cluster_sessions: {sessions} sessions, {steady} steady requests each, 2025-11-25 JSON answers");
    for (name, phase) in &mut phases {
        phase.print(name);
    }
}
