//! `arbor_client` calling `tools/call` (`echo`, `{"message": "hello world"}`) in a closed
//! loop, measuring the client process's own CPU per call: the Arbor half of the
//! client-overhead comparison (issue 7). Its rmcp twin is `rmcp-client-drive` in
//! `bench/peers` (a separate workspace, so the product never depends on rmcp); both take
//! the same options and print the same `JSON {...}` line, and `scripts/bench-client` runs
//! them interleaved against the same server (`examples/bench_server`).
//!
//! ```sh
//! cargo build --release -p arbor-client --example bench_client
//! target/release/examples/bench_client stdio [OPTIONS] -- SERVER-COMMAND ARGS...
//! target/release/examples/bench_client http --url http://127.0.0.1:N/mcp [--server-pid PID] [OPTIONS]
//! ```
//!
//! Options: `--modern` (2026-07-28, `EraMode::ForceModern`; default `ForceLegacy`, the
//! `initialize` handshake: no detection probe either way), `--concurrency C` (calls in
//! flight, one task each, default 1), `--warmup S` (default 1), `--duration S` (default 4),
//! `--label NAME`, `--current-thread` (default multi-thread, one worker per usable core).
//!
//! CPU comes from `/proc/self/stat` (user + system of all this process's threads, not the
//! spawned server's) at the start and end of the measured window, the server's from
//! `/proc/PID/stat` (the child for stdio, `--server-pid` for HTTP). It is a measuring
//! tool, not an example of good client code: the loop does nothing but call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_client::{Client, ClientOptions, EraMode, HttpTarget, StdioCommand};
use serde_json::json;

const MESSAGE: &str = "hello world";

struct Args {
    transport: String,
    url: String,
    command: Vec<String>,
    modern: bool,
    concurrency: usize,
    warmup: f64,
    duration: f64,
    label: String,
    current_thread: bool,
    server_pid: Option<String>,
}

fn parse_args() -> Args {
    let all: Vec<String> = std::env::args().skip(1).collect();
    let (mine, command) = match all.iter().position(|a| a == "--") {
        Some(i) => (all[..i].to_vec(), all[i + 1..].to_vec()),
        None => (all, Vec::new()),
    };
    let opt = |f: &str| mine.iter().position(|a| a == f).and_then(|i| mine.get(i + 1)).cloned();
    let flag = |f: &str| mine.iter().any(|a| a == f);
    let transport = mine.first().cloned().unwrap_or_default();
    assert!(transport == "stdio" || transport == "http", "usage: bench_client stdio|http [options] [-- command]");
    let modern = flag("--modern");
    Args {
        label: opt("--label")
            .unwrap_or_else(|| format!("arbor-{transport}-{}", if modern { "modern" } else { "legacy" })),
        transport,
        url: opt("--url").unwrap_or_else(|| "http://127.0.0.1:18001/mcp".into()),
        command,
        modern,
        concurrency: opt("--concurrency").map(|s| s.parse().expect("--concurrency N")).unwrap_or(1),
        warmup: opt("--warmup").map(|s| s.parse().expect("--warmup S")).unwrap_or(1.0),
        duration: opt("--duration").map(|s| s.parse().expect("--duration S")).unwrap_or(4.0),
        current_thread: flag("--current-thread"),
        server_pid: opt("--server-pid"),
    }
}

/// User + system CPU ticks (USER_HZ, 100/s) of a process, all its threads.
fn proc_cpu_ticks(pid: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = s[s.rfind(')')? + 2..].split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// The first child of this process (the spawned stdio server).
fn child_pid() -> Option<String> {
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        if let Ok(s) = std::fs::read_to_string(task.path().join("children")) {
            if let Some(p) = s.split_whitespace().next() {
                return Some(p.to_string());
            }
        }
    }
    None
}

fn percentile(sorted: &[u32], q: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

async fn connect(args: &Args) -> Result<Client, Box<dyn std::error::Error>> {
    let era = if args.modern { EraMode::ForceModern } else { EraMode::ForceLegacy };
    let options = ClientOptions::new("arbor-bench-client", "0.1.0").era(era);
    Ok(if args.transport == "stdio" {
        let (program, rest) = args.command.split_first().ok_or("stdio needs -- SERVER-COMMAND")?;
        Client::connect_stdio(StdioCommand::new(program).args(rest.iter().cloned()), options).await?
    } else {
        Client::connect_http(HttpTarget::new(args.url.clone()), options).await?
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args();
    let rt = if args.current_thread {
        tokio::runtime::Builder::new_current_thread().enable_all().build()?
    } else {
        tokio::runtime::Builder::new_multi_thread().enable_all().build()?
    };
    rt.block_on(async move {
        let client = connect(&args).await?;
        let server_pid = if args.transport == "stdio" { child_pid() } else { args.server_pid.clone() };
        // one call outside the window, checked, so a broken setup fails loudly
        let first = client.call_tool("echo", json!({ "message": MESSAGE })).await?;
        let text = serde_json::to_string(&first)?;
        if !text.contains(MESSAGE) {
            return Err(format!("unexpected echo result: {text}").into());
        }

        let start = Instant::now();
        let rec_start = start + Duration::from_secs_f64(args.warmup);
        let rec_end = rec_start + Duration::from_secs_f64(args.duration);
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for _ in 0..args.concurrency {
            let client = client.clone();
            let stop = stop.clone();
            tasks.push(tokio::spawn(async move {
                let mut lat: Vec<u32> = Vec::with_capacity(1 << 16);
                let mut errors = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let t0 = Instant::now();
                    let r = client.call_tool("echo", json!({ "message": MESSAGE })).await;
                    let t1 = Instant::now();
                    match r {
                        Ok(_) if t0 >= rec_start && t1 <= rec_end => lat.push((t1 - t0).as_micros() as u32),
                        Ok(_) => {}
                        Err(e) => {
                            errors += 1;
                            if errors < 5 {
                                eprintln!("call failed: {e}");
                            }
                        }
                    }
                    if t1 >= rec_end {
                        break;
                    }
                }
                (lat, errors)
            }));
        }
        tokio::time::sleep_until(rec_start.into()).await;
        let self0 = proc_cpu_ticks("self");
        let srv0 = server_pid.as_deref().and_then(proc_cpu_ticks);
        tokio::time::sleep_until(rec_end.into()).await;
        let self1 = proc_cpu_ticks("self");
        let srv1 = server_pid.as_deref().and_then(proc_cpu_ticks);
        stop.store(true, Ordering::Relaxed);
        let mut lat = Vec::new();
        let mut errors = 0;
        for t in tasks {
            let (l, e) = t.await?;
            lat.extend(l);
            errors += e;
        }
        report(&args, lat, errors, (self0, self1), (srv0, srv1));
        // The process exits here: the child server sees its stdin close.
        std::process::exit(if errors > 0 { 1 } else { 0 });
    })
}

fn report(
    args: &Args,
    mut lat: Vec<u32>,
    errors: u64,
    me: (Option<u64>, Option<u64>),
    srv: (Option<u64>, Option<u64>),
) {
    lat.sort_unstable();
    let n = lat.len();
    let rps = n as f64 / args.duration;
    let per_call = |t: (Option<u64>, Option<u64>)| match t {
        (Some(a), Some(b)) if n > 0 => ((b - a) as f64 / 100.0 * 1e6 / n as f64, (b - a) as f64 / args.duration),
        _ => (f64::NAN, f64::NAN),
    };
    let (cli_us, cli_pct) = per_call(me);
    let (srv_us, _) = per_call(srv);
    let era = if args.modern { "modern" } else { "legacy" };
    println!(
        "{:<24} {} {era} c={} calls={n} rps={rps:.0} p50={}us p99={}us client_us/call={cli_us:.2} client_cpu={cli_pct:.0}% server_us/call={srv_us:.2} err={errors}",
        args.label,
        args.transport,
        args.concurrency,
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
    );
    println!(
        "JSON {{\"label\":\"{}\",\"client\":\"arbor\",\"transport\":\"{}\",\"era\":\"{era}\",\"concurrency\":{},\"calls\":{n},\"rps\":{rps:.1},\"p50_us\":{},\"p99_us\":{},\"client_cpu_us_per_call\":{cli_us:.3},\"client_cpu_pct\":{cli_pct:.1},\"server_cpu_us_per_call\":{srv_us:.3},\"errors\":{errors}}}",
        args.label,
        args.transport,
        args.concurrency,
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
    );
}
