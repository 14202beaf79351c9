//! The soak run (issue 19): a server under moderate load for a long time, with legacy
//! sessions churned, many resource subscriptions held open, handler faults and periodic
//! Redis restarts; the server's memory sampled at a fixed interval must be flat after the
//! warm-up, and every request must get exactly one outcome. A script, not CI:
//!
//! ```sh
//! scripts/soak                       # one hour: 10,000 sessions churned, 100,000 subscriptions
//! scripts/soak --minutes 5 --subscriptions 10000 --sample-secs 15   # a short check
//! ```
//!
//! Two processes: this driver, and the server it starts (`soak --serve`, this same binary):
//! a `Router` with `echo`, a `flaky` tool (by seed: 2% panics, 5% errors, 1% runs past its
//! 2 s deadline, else a short delay) and `--resources` resources that may be subscribed, on
//! a Redis bus (a throwaway `redis-server`, restarted every `--redis-restart-secs`), which
//! publishes an update of a random resource every 100 ms. The driver holds
//! `--subscriptions` subscriptions over `subscriptions / resources` legacy sessions,
//! churns `--sessions` sessions over the run (initialize, a few calls, DELETE), and sends
//! calls at `--rate` per second. Every request is entered in a ledger: an answer (result or
//! JSON-RPC error), or a violation (no answer within 30 s, a transport error, a 5xx). It is
//! not a benchmark and asserts nothing about time: it prints each memory sample, the slope
//! of the RSS after the warm-up (least squares over the last 80% of the samples), and
//! exits non-zero on a ledger violation or a slope that would add more than 10% to the
//! warm RSS over the run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor::prelude::*;
use arbor_server::bus::{Bus, RedisBus, RedisBusOptions};
use serde_json::{json, Value};

/// What the driver asks for.
#[derive(Clone, Debug)]
struct Options {
    minutes: u64,
    sessions: u64,
    subscriptions: u64,
    resources: u64,
    rate: u64,
    sample_secs: u64,
    redis_restart_secs: u64,
    seed: u64,
}

fn parse() -> (bool, Options, Option<String>, Option<String>) {
    let mut o = Options {
        minutes: 60,
        sessions: 10_000,
        subscriptions: 100_000,
        resources: 100,
        rate: 200,
        sample_secs: 60,
        redis_restart_secs: 300,
        seed: std::process::id().into(),
    };
    let (mut serve, mut redis, mut port_file) = (false, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut num =
            || args.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or_else(|| panic!("{arg} needs a number"));
        match arg.as_str() {
            "--serve" => serve = true,
            "--minutes" => o.minutes = num(),
            "--sessions" => o.sessions = num(),
            "--subscriptions" => o.subscriptions = num(),
            "--resources" => o.resources = num(),
            "--rate" => o.rate = num(),
            "--sample-secs" => o.sample_secs = num(),
            "--redis-restart-secs" => o.redis_restart_secs = num(),
            "--seed" => o.seed = num(),
            "--redis" => redis = args.next(),
            "--port-file" => port_file = args.next(),
            other => panic!("unknown argument {other}"),
        }
    }
    (serve, o, redis, port_file)
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    message: String,
}

#[derive(Deserialize, JsonSchema)]
struct FlakyArgs {
    /// Decides the fault: the same roll is the same fault.
    roll: u64,
}

/// A handler that faults by its argument: 2% panic, 5% error, 1% past the deadline.
async fn flaky(args: FlakyArgs) -> Result<String, arbor_server::router::ToolError> {
    match args.roll % 100 {
        0 | 1 => panic!("soak: an injected panic"),
        2..=6 => Err(arbor_server::router::ToolError::failed("soak: an injected error")),
        7 => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok("late".into())
        }
        _ => {
            tokio::time::sleep(Duration::from_millis(args.roll % 5)).await;
            Ok("ok".into())
        }
    }
}

async fn serve(o: Options, redis: String, port_file: String) {
    let bus: Arc<dyn Bus> = Arc::new(RedisBus::connect(&redis, RedisBusOptions::default()).await.expect("the bus"));
    let mut router = Router::new("soak", "0.1.0")
        .subscriptions()
        .tool_route(
            arbor_server::router::ToolRoute::new("echo", |a: EchoArgs| async move { a.message }).description("Echo."),
        )
        .tool_route(arbor_server::router::ToolRoute::new("flaky", flaky).description("Faults by its roll."));
    for i in 0..o.resources {
        router = router.resource(
            format!("soak://r/{i}"),
            format!("r{i}"),
            "A soak resource.",
            "text/plain",
            move || async move { format!("resource {i}") },
        );
    }
    let config = ServerConfig {
        default_deadline: Duration::from_secs(2),
        max_subscriptions_per_requester: usize::MAX / 2,
        max_in_flight_per_requester: 100_000,
        max_in_flight_per_tenant: 100_000,
        ..Default::default()
    };
    let server = Server::with_config(router, config).with_bus(bus);
    let updates = server.clone();
    let resources = o.resources.max(1);
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_millis(100));
        let mut n = 0u64;
        loop {
            every.tick().await;
            n += 1;
            let _ = updates.notify_resource_updated(&format!("soak://r/{}", n % resources));
        }
    });
    let mut http = HttpConfig::default().bind(([127, 0, 0, 1], 0).into());
    http.max_sessions_per_peer = 1_000_000;
    http.session_idle_timeout = Duration::from_secs(120);
    let bound = HttpServer::with_config(server, http).bind().await.expect("bind");
    std::fs::write(&port_file, bound.local_addr().port().to_string()).expect("port file");
    bound.run().await.expect("serve");
}

fn main() {
    let (is_server, o, redis, port_file) = parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    if is_server {
        runtime.block_on(serve(o, redis.expect("--redis"), port_file.expect("--port-file")));
        return;
    }
    std::process::exit(runtime.block_on(drive(o)));
}

#[path = "soak_driver.rs"]
mod driver;
use driver::drive;

#[path = "common/sampling.rs"]
mod sampling;
pub use sampling::rss_kib;

/// The JSON-RPC body of a legacy request.
pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Ids for every request of the run.
pub static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// When the run started (for the samples' minute marks).
pub fn elapsed_min(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() / 60.0
}
