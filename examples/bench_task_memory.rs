//! The tasks memory benchmark: what 10,000 completed tasks held until their TTL cost, and
//! whether all of it comes back once they have expired and the store has swept them.
//!
//! ```sh
//! cargo run --release --example bench_task_memory                 # 10,000 tasks, 10 s TTL, 2 cycles
//! cargo run --release --example bench_task_memory -- --tasks 10000 --ttl-ms 10000 --cycles 3
//! ```
//!
//! It counts bytes, not pages: a counting global allocator around the system one keeps the
//! live heap (bytes allocated and not yet freed, by anyone in the process). One process
//! holds both ends, Arbor's server and Arbor's client over the in-memory transport, a
//! 2025-11-25 session; the client's allocations for a finished request are freed, so the
//! difference between two quiet points is what the server keeps. The server's `echo` has
//! task support `optional`; its store is capped at exactly `--tasks` records (so that the
//! first task created after the TTL finds the store full and sweeps it: the store sweeps
//! when it grows or reaches a bound, and drops an expired record lazily when looked up,
//! there is no timer).
//!
//! Each cycle prints the live heap at four points: before (after a warm-up of plain
//! calls), held (every task completed, its result fetched with `tasks/result`, still
//! within its TTL), expired (the TTL passed, nothing asked of the server since), swept
//! (one more task created, which swept the expired records; that one task is still held).
//! `--exit-held` exits as soon as the last cycle's tasks are all held (its `held` figure),
//! dropping nothing, so that `heaptrack bench_task_memory --exit-held` reports what the
//! held tasks cost, by the stack that allocated it (as leaked).
//!
//! Before the tasks, each cycle makes as many plain calls as a control (what requests
//! alone leave behind). It is a benchmark, not a test: it prints figures and never fails
//! on them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::ExitCode;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use arbor_client::{Client, ClientOptions, EraCache, EraMode, ServerTarget};
use arbor_server::router::{Router, ToolRoute};
use arbor_server::{ConnectOptions, Server, ServerConfig, TaskConfig, TaskSupport, Transport};
use serde::Deserialize;
use serde_json::json;

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counter is only arithmetic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[derive(Deserialize, schemars::JsonSchema)]
struct Echo {
    /// Text to echo back.
    message: String,
}

struct Options {
    tasks: usize,
    ttl: Duration,
    cycles: usize,
    /// `--exit-held`: exit at once once the last cycle's tasks are held, dropping nothing.
    exit_held: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options { tasks: 10_000, ttl: Duration::from_secs(10), cycles: 2, exit_held: false };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |flag: &str| -> Result<u64, String> {
            let v = args.next().ok_or(format!("{flag} needs a number"))?;
            v.parse().map_err(|_| format!("{flag}: `{v}` is not a number"))
        };
        match arg.as_str() {
            "--tasks" => o.tasks = number("--tasks")?.max(1) as usize,
            "--ttl-ms" => o.ttl = Duration::from_millis(number("--ttl-ms")?.max(1000)),
            "--cycles" => o.cycles = number("--cycles")?.max(1) as usize,
            "--exit-held" => o.exit_held = true,
            other => return Err(format!("unknown argument `{other}` (--tasks N --ttl-ms N --cycles N --exit-held)")),
        }
    }
    Ok(o)
}

/// The live heap once the runtime has had a moment to finish what it was doing (the
/// reports of finished tasks, dropped connections' tails).
async fn quiet_live() -> isize {
    tokio::time::sleep(Duration::from_millis(300)).await;
    LIVE.load(Ordering::Relaxed)
}

/// One task, start to result.
async fn one_task(client: &Client, n: usize) -> Result<(), String> {
    let message = format!("task {n}");
    let handle =
        client.call_tool_as_task("echo", json!({ "message": message }), None).await.map_err(|e| e.to_string())?;
    if handle.id().is_none() {
        return Err("the server answered inline".into());
    }
    let result = handle.result().await.map_err(|e| e.to_string())?;
    let text = serde_json::to_value(&result).map_err(|e| e.to_string())?["content"][0]["text"].clone();
    if text != json!(message) {
        return Err(format!("task {n}: wrong result {text}"));
    }
    Ok(())
}

fn kib(bytes: isize) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

async fn run(o: Options) -> Result<(), String> {
    let echo = ToolRoute::new("echo", |args: Echo| async move { args.message })
        .description("Echo the message back")
        .task_support(TaskSupport::Optional);
    let tasks = TaskConfig { ttl: o.ttl, max_tasks: o.tasks, max_tasks_per_owner: o.tasks, ..TaskConfig::default() };
    let server = Server::with_config(
        Router::new("bench-task-memory", env!("CARGO_PKG_VERSION")).tool_route(echo),
        ServerConfig::default().tasks(tasks),
    );
    let target = {
        let server = server.clone();
        ServerTarget::transport_factory(None, move || {
            let server = server.clone();
            async move {
                let (server_side, client_side) = Transport::memory_pair();
                server.connect(server_side, ConnectOptions::default()).await.map_err(std::io::Error::other)?;
                Ok(client_side)
            }
        })
    };
    let options = ClientOptions::new("bench-task-memory", "0").era(EraMode::ForceLegacy).era_cache(EraCache::new());
    let client = Client::connect(target, options).await.map_err(|e| e.to_string())?;
    // Warm-up: plain calls, so pools, lazily built statics and the connection's buffers
    // are in place before the first measurement.
    for n in 0..500 {
        client.call_tool("echo", json!({ "message": format!("warm {n}") })).await.map_err(|e| e.to_string())?;
    }
    println!(
        "{} tasks per cycle, TTL {} ms, a 2025-11-25 session over the in-memory transport",
        o.tasks,
        o.ttl.as_millis()
    );
    for cycle in 1..=o.cycles {
        if cycle > 1 {
            // The last cycle's sweeping task must expire too, or the store (capped at
            // `--tasks`) could not take this cycle's tasks.
            tokio::time::sleep(o.ttl).await;
        }
        // A control: as many plain calls, which should leave nothing behind.
        let plain_before = quiet_live().await;
        for n in 0..o.tasks {
            client.call_tool("echo", json!({ "message": format!("plain {n}") })).await.map_err(|e| e.to_string())?;
        }
        let plain_after = quiet_live().await;
        println!("cycle {cycle}: {} plain tools/call left {} bytes", o.tasks, plain_after - plain_before);
        let before = quiet_live().await;
        let started = Instant::now();
        for n in 0..o.tasks {
            one_task(&client, n).await?;
        }
        let took = started.elapsed();
        let held = quiet_live().await;
        if o.exit_held && cycle == o.cycles {
            // Nothing dropped: under heaptrack, what the process holds is reported as
            // leaked, with the stacks that allocated it.
            println!("held {} (+{} for {} tasks); exiting as asked", kib(held), kib(held - before), o.tasks);
            std::process::exit(0);
        }
        if took + Duration::from_millis(300) >= o.ttl {
            // The first tasks would have expired (and been swept) before `held` was read.
            return Err(format!("creating the tasks took {took:?}, not within the TTL: raise --ttl-ms"));
        }
        // Every task's TTL runs from its own creation: wait out the last one's.
        tokio::time::sleep(o.ttl + Duration::from_millis(200)).await;
        let expired = quiet_live().await;
        // The store is at its bound: this creation sweeps every expired record first.
        one_task(&client, o.tasks).await?;
        let swept = quiet_live().await;
        let per_task = (held - before) as f64 / o.tasks as f64;
        println!(
            "cycle {cycle}: before {}  held {} (+{}, {per_task:.0} B per task; created in {took:.2?})  \
             expired, not swept {} (+{})  swept {} (+{}, {} B more than before)",
            kib(before),
            kib(held),
            kib(held - before),
            kib(expired),
            kib(expired - before),
            kib(swept),
            kib(swept - before),
            swept - before,
        );
        println!(
            "PER_TASK cycle {cycle}: {per_task:.0} bytes (target <= 2048); left after the sweep: {} bytes",
            swept - before
        );
    }
    client.close().await;
    Ok(())
}

fn main() -> ExitCode {
    let options = match parse_args() {
        Ok(o) => o,
        Err(why) => {
            eprintln!("bench_task_memory: {why}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bench_task_memory: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("bench_task_memory: {why}");
            ExitCode::FAILURE
        }
    }
}
