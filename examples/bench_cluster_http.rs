//! The cluster call benchmark (issue 18): a 2026-07-28 `tools/call` of `echo` through a
//! `demo_server --redis URL --cluster` node against the same call on a single
//! `demo_server` without Redis, same run: p50 and p99 latency, and the server's CPU per
//! request (its process's utime + stime from `/proc/PID/stat`, before and after a fixed
//! number of requests), with the ratios cluster / single. The issue's target: the cluster
//! call costs no more server CPU per request than the single node, since no Redis is on
//! its path (the keyring is read once a second, the bus only carries published messages).
//!
//! ```sh
//! cargo run --release --example bench_cluster_http                          # 5 reps of 5,000 calls
//! cargo run --release --example bench_cluster_http -- --calls 20000 --reps 3 --clients 16
//! target/release/examples/bench_cluster_http --no-build   # demo_server as already built
//! ```
//!
//! It starts a throwaway `redis-server` (`tests::redis`; it must be installed) and both
//! servers (`target/<profile>/examples/demo_server`, built first with `cargo build`), with
//! `RUST_LOG=warn`, `--no-metrics`, no feed ticks; each server pinned to core 0 when
//! `taskset` is there, so their CPU figures are not spread over the client's core. Each
//! repetition measures both, in alternating order, one sequential client (one keep-alive
//! connection: latency) then `--clients` concurrent ones (CPU under load). CPU comes in
//! 10 ms ticks, so the runs are long enough to count hundreds. It is a benchmark: it
//! prints figures and never fails on them.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

/// One server under test.
struct Server {
    name: &'static str,
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The demo server's path, built now (a no-op when up to date) in this binary's profile
/// unless `build` is false (`--no-build`: as it is, say while another build holds cargo's
/// lock).
fn demo_server(build: bool) -> PathBuf {
    let exe = std::env::current_exe().expect("this binary's path");
    let dir = exe.parent().expect("target/<profile>/examples").to_path_buf();
    if !build {
        return dir.join("demo_server");
    }
    let release = dir.parent().and_then(|p| p.file_name()).is_some_and(|p| p == "release");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build.args(["build", "--quiet", "-p", "examples", "--example", "demo_server"]);
    if release {
        build.arg("--release");
    }
    let status = build.status().expect("running cargo build");
    assert!(status.success(), "cargo build --example demo_server failed");
    dir.join("demo_server")
}

/// Starts `demo_server --port 0 ARGS` (on core 0 if `taskset` is there) and reads its URL.
fn spawn(name: &'static str, binary: &PathBuf, args: &[&str]) -> Server {
    use std::io::{BufRead, BufReader};
    let pinned = std::path::Path::new("/usr/bin/taskset").exists();
    let mut command = if pinned {
        let mut c = Command::new("/usr/bin/taskset");
        c.args(["-c", "0"]).arg(binary);
        c
    } else {
        Command::new(binary)
    };
    let mut child = command
        .args(["--port", "0", "--no-metrics", "--feed-interval-ms", "0"])
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting demo_server");
    let mut lines = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
    let url = loop {
        let line = lines.next().expect("demo_server exited before saying where it listens").expect("stderr");
        if let Some(url) = line.strip_prefix("demo_server: listening on ") {
            break url.trim().to_owned();
        }
    };
    // Keep draining its stderr so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Server { name, child, url }
}

/// A process's CPU time so far (user + system), from `/proc/PID/stat`.
fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name (which may hold spaces) start after the last ')'.
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or_default().split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// One 2026-07-28 `tools/call` of `echo`, with the headers the revision requires.
async fn call(http: &reqwest::Client, url: &str, id: u64) {
    let meta = tests::peer::modern_meta(json!({}), Some(json!({"name": "bench", "version": "0.0.0"})));
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "hello world"}, "_meta": meta}
    });
    let response = tests::peer::http::post(http, url, &body)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
        .send()
        .await
        .expect("a call");
    assert_eq!(response.status(), 200, "a call answered");
    let answer: serde_json::Value = response.json().await.expect("a JSON answer");
    assert_eq!(answer["result"]["content"][0]["text"], "hello world", "{answer}");
}

/// `calls` calls by `clients` concurrent clients (each its own connection); every
/// latency in ns, and the server's CPU per call in µs.
async fn measure(server: &Server, calls: usize, clients: usize) -> (Vec<u64>, f64) {
    let pid = server.child.id();
    let before = cpu_of(pid);
    let per_client = calls / clients;
    let url = Arc::new(server.url.clone());
    let runs: Vec<_> = (0..clients)
        .map(|c| {
            let url = url.clone();
            tokio::spawn(async move {
                let http = reqwest::Client::builder().pool_max_idle_per_host(1).build().unwrap();
                let mut latencies = Vec::with_capacity(per_client);
                for i in 0..per_client {
                    let start = Instant::now();
                    call(&http, &url, (c * per_client + i) as u64).await;
                    latencies.push(start.elapsed().as_nanos() as u64);
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(calls);
    for run in runs {
        latencies.extend(run.await.expect("a client"));
    }
    let used = cpu_of(pid).saturating_sub(before);
    latencies.sort_unstable();
    (latencies, used.as_secs_f64() * 1e6 / (per_client * clients) as f64)
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    sorted.get(((sorted.len().max(1) - 1) as f64 * p).round() as usize).copied().unwrap_or(0) as f64 / 1e3
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn flag(args: &[String], name: &str, default: usize) -> usize {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (calls, reps, clients) = (flag(&args, "--calls", 5000), flag(&args, "--reps", 5), flag(&args, "--clients", 16));
    let binary = demo_server(!args.iter().any(|a| a == "--no-build"));
    let redis = tests::redis::RedisServer::start();
    let url = redis.url();
    let servers = [spawn("single", &binary, &[]), spawn("cluster", &binary, &["--redis", &url, "--cluster"])];
    // The client: a current-thread runtime, so it stays on one core beside the servers'.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // Per server: p50s, p99s, CPU per call (one client); CPU per call and calls/s (many).
    let mut figures: Vec<[Vec<f64>; 5]> = vec![Default::default(), Default::default()];
    runtime.block_on(async {
        for server in &servers {
            let _ = measure(server, 500, 1).await; // warm-up: connections, allocator pools
        }
        for rep in 0..reps {
            // Alternate which server goes first, so neither always runs on a warmer machine.
            let order = if rep % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                let (latencies, cpu) = measure(&servers[i], calls, 1).await;
                figures[i][0].push(pct(&latencies, 0.5));
                figures[i][1].push(pct(&latencies, 0.99));
                figures[i][2].push(cpu);
                let start = Instant::now();
                let (_, cpu) = measure(&servers[i], calls, clients).await;
                figures[i][3].push(cpu);
                figures[i][4].push(calls as f64 / start.elapsed().as_secs_f64());
            }
        }
    });
    println!(
        "2026-07-28 tools/call echo, {calls} calls per measurement, {reps} reps (medians); \
         servers pinned to core 0: {}",
        std::path::Path::new("/usr/bin/taskset").exists()
    );
    println!(
        "{:<8} | {:>9} {:>9} {:>12} | {:>14} {:>10}",
        "server",
        "p50",
        "p99",
        "CPU/call",
        format!("CPU/call @{clients}"),
        "calls/s"
    );
    let medians: Vec<[f64; 5]> = figures.iter().map(|f| std::array::from_fn(|k| median(f[k].clone()))).collect();
    for (server, m) in servers.iter().zip(&medians) {
        println!(
            "{:<8} | {:>7.1}µs {:>7.1}µs {:>10.1}µs | {:>12.1}µs {:>10.0}",
            server.name, m[0], m[1], m[2], m[3], m[4]
        );
    }
    let ratio = |k: usize| medians[1][k] / medians[0][k].max(f64::MIN_POSITIVE);
    println!(
        "cluster / single: p50 {:.2}, p99 {:.2}, CPU/call {:.2}, CPU/call @{clients} {:.2}, calls/s {:.2}",
        ratio(0),
        ratio(1),
        ratio(2),
        ratio(3),
        ratio(4)
    );
    for (server, f) in servers.iter().zip(&figures) {
        let each = |k: usize| f[k].iter().map(|v| format!("{v:.1}")).collect::<Vec<_>>().join(" ");
        println!("{} per rep: p50 [{}] CPU/call [{}] CPU/call @{clients} [{}]", server.name, each(0), each(2), each(3));
    }
    drop(servers);
    drop(redis);
}
