//! The rmcp 3.11 client calling `tools/call` (`echo`, `{"message": "hello world"}`) in a
//! closed loop, measuring the client process's own CPU per call: the rmcp half of the
//! client-overhead comparison (issue 7). Its Arbor twin is `crates/arbor-client/examples/
//! bench_client.rs` in the main workspace, with the same options and the same output, so
//! `scripts/bench-client` runs them interleaved against the same server.
//!
//!   rmcp-client-drive stdio [OPTIONS] -- SERVER-COMMAND ARGS...   # spawns the server
//!   rmcp-client-drive http --url http://127.0.0.1:N/mcp [--server-pid PID] [OPTIONS]
//!
//! Options: `--modern` (2026-07-28: `server/discover`, `_meta` on every call; default the
//! `initialize` handshake), `--concurrency C` (calls in flight, one task each, default 1),
//! `--warmup S` (default 1), `--duration S` (default 4), `--label NAME`,
//! `--current-thread` (a current-thread runtime; default multi-thread, one worker per
//! core the process may run on).
//!
//! CPU is read from `/proc/self/stat` (user + system of every thread of this process,
//! the spawned server excluded) at the start and end of the measured window; the
//! server's from `/proc/PID/stat` (the child for stdio, `--server-pid` for HTTP).
//! Output: a human line and a `JSON {...}` line. Not a load generator for servers: one
//! client connection, whose own cost is what is measured.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};

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
    assert!(transport == "stdio" || transport == "http", "usage: rmcp-client-drive stdio|http [options] [-- command]");
    let modern = flag("--modern");
    Args {
        label: opt("--label")
            .unwrap_or_else(|| format!("rmcp-{transport}-{}", if modern { "modern" } else { "legacy" })),
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
    let dir = std::fs::read_dir("/proc/self/task").ok()?;
    for task in dir.flatten() {
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

type Client = RunningService<RoleClient, ()>;

async fn connect(args: &Args) -> Result<Client, Box<dyn std::error::Error>> {
    let lifecycle = if args.modern {
        ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
    } else {
        ClientLifecycleMode::Initialize
    };
    Ok(if args.transport == "stdio" {
        let (program, rest) = args.command.split_first().ok_or("stdio needs -- SERVER-COMMAND")?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(rest);
        ().serve_with_lifecycle(TokioChildProcess::new(cmd)?, lifecycle).await?
    } else {
        ().serve_with_lifecycle(StreamableHttpClientTransport::from_uri(args.url.as_str()), lifecycle).await?
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
        let mut arguments = serde_json::Map::new();
        arguments.insert("message".into(), MESSAGE.into());
        // one call outside the window, checked, so a broken setup fails loudly
        let first = client.call_tool(CallToolRequestParams::new("echo").with_arguments(arguments.clone())).await?;
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
            let peer = client.peer().clone();
            let arguments = arguments.clone();
            let stop = stop.clone();
            tasks.push(tokio::spawn(async move {
                let mut lat: Vec<u32> = Vec::with_capacity(1 << 16);
                let mut errors = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let t0 = Instant::now();
                    let r = peer.call_tool(CallToolRequestParams::new("echo").with_arguments(arguments.clone())).await;
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
        "JSON {{\"label\":\"{}\",\"client\":\"rmcp\",\"transport\":\"{}\",\"era\":\"{era}\",\"concurrency\":{},\"calls\":{n},\"rps\":{rps:.1},\"p50_us\":{},\"p99_us\":{},\"client_cpu_us_per_call\":{cli_us:.3},\"client_cpu_pct\":{cli_pct:.1},\"server_cpu_us_per_call\":{srv_us:.3},\"errors\":{errors}}}",
        args.label,
        args.transport,
        args.concurrency,
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
    );
}
