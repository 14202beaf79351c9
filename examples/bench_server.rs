//! The benchmark server: one `echo` tool (`{"message": string}`, answered with the message
//! as text), the same surface as the rmcp peer `bench/peers` builds (`rmcp-echo`), served
//! over Streamable HTTP (both eras on `/mcp`) or stdio. `scripts/bench-http` and
//! `scripts/bench-client` run it in release.
//!
//! ```sh
//! cargo run --release --example bench_server -- --port 18400                 # HTTP
//! cargo run --release --example bench_server -- --port 0 --idle-timeout-ms 5000
//! cargo run --release --example bench_server -- --stdio
//! cargo run --release --example bench_server -- --port 18400 --threads 0     # current-thread runtime
//! cargo run --release --example bench_server -- --port 18400 --telemetry     # metrics and spans on
//! cargo run --release --example bench_server -- --port 18400 --tasks         # echo may run as a task
//! cargo run --release --example bench_server -- --port 18400 --tenants       # tenancy on
//! ```
//!
//! `--tenants` is the tenancy-on side of `scripts/bench-http --tenancy`: a tenant policy
//! whose tenant `bench` has every limit set (rates, in-flight, sessions), high enough that
//! the benchmark is never refused, so each request pays the whole tenant path: the
//! `x-arbor-tenant` header read and checked, the tenant's token buckets and quotas, its
//! own endpoint and counters.
//!
//! `--tasks` is the server of `scripts/bench-tasks`: `echo` supports tasks
//! (`TaskSupport::Optional`: a plain call runs inline, a task-augmented one becomes a task),
//! and the store is sized for a benchmark's stream of tasks from one client (a 5 s TTL,
//! caps of a million records) so that no call is refused for the per-owner cap.
//!
//! `--telemetry` is the telemetry-on side of `scripts/bench-http --telemetry`: the
//! Prometheus recorder installed (`/metrics` served) and a `tracing` subscriber that is
//! interested in every span and event and builds each one (the registry plus a layer
//! visiting every field, as an exporting layer would), exporting nowhere.
//!
//! It is not a demo (see `demo_server`): nothing but the tool, no tracing subscriber
//! unless `RUST_LOG` is set (rmcp-echo installs none either, so neither pays for logging).
//! The HTTP endpoint is `arbor_http` with its defaults (loopback checks, `TCP_NODELAY`,
//! 10-minute idle sessions) except what the options change and the per-peer session cap,
//! lifted (all its clients are 127.0.0.1; the memory runs hold 10,000 sessions).
//! Invariant: the bound URL is printed on stderr (`bench_server: listening on http://…`)
//! before any request is served.

/// With `--features mimalloc`, this binary allocates through mimalloc (see the feature's
/// note in `examples/Cargo.toml`); the libraries it links never pick an allocator.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use arbor_http::HttpConfig;
use arbor_server::router::{Router, ToolRoute};
use arbor_server::{Server, ServerConfig, TaskConfig, TaskSupport};
use serde::Deserialize;

#[path = "common/http.rs"]
mod http;
#[path = "common/malloc.rs"]
mod malloc;

const USAGE: &str = "usage: bench_server [--port N | --stdio] [--idle-timeout-ms N] [--threads N]\n\
    Serves one `echo` tool for the benchmarks over Streamable HTTP at http://127.0.0.1:N/mcp.\n\
    --port N             listen on 127.0.0.1:N (default 0: a free port, printed on stderr)\n\
    --stdio              serve one client on stdin/stdout instead\n\
    --idle-timeout-ms N  close legacy HTTP sessions idle this long (default 600000)\n\
    --threads N          tokio worker threads (0: a current-thread runtime; default: one per usable core)\n\
    --telemetry          metrics (Prometheus recorder, /metrics) and the MCP spans built (a no-op sink)\n\
    --tasks              echo may run as a task (2025-11-25 params.task, the 2026-07-28 extension)\n\
    --tenants            a tenant policy (tenant `bench`, every limit set), the tenant read from x-arbor-tenant";

#[derive(Deserialize, schemars::JsonSchema)]
struct Echo {
    /// Text to echo back.
    message: String,
}

struct Options {
    stdio: bool,
    port: u16,
    idle_timeout: Option<Duration>,
    threads: Option<usize>,
    telemetry: bool,
    tasks: bool,
    tenants: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let mut o = Options {
        stdio: false,
        port: 0,
        idle_timeout: None,
        threads: None,
        telemetry: false,
        tasks: false,
        tenants: false,
    };
    let number = |flag: &str, v: Option<String>| -> Result<u64, String> {
        let v = v.ok_or(format!("{flag} needs a number"))?;
        v.parse().map_err(|_| format!("{flag}: `{v}` is not a number"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--stdio" => o.stdio = true,
            "--telemetry" => o.telemetry = true,
            "--tasks" => o.tasks = true,
            "--tenants" => o.tenants = true,
            "--port" => {
                o.port = u16::try_from(number("--port", args.next())?).map_err(|_| "--port: too large".to_string())?
            }
            "--idle-timeout-ms" => {
                o.idle_timeout = Some(Duration::from_millis(number("--idle-timeout-ms", args.next())?))
            }
            "--threads" => o.threads = Some(number("--threads", args.next())? as usize),
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(Some(o))
}

fn main() -> ExitCode {
    malloc::one_arena();
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(Some(o)) => o,
        Ok(None) => {
            eprintln!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(why) => {
            eprintln!("bench_server: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if options.telemetry {
        use tracing_subscriber::layer::SubscriberExt;
        // The subscriber `arbor_server::telemetry::otlp::init` installs, with this layer in
        // the exporter's place: the runtime's MCP spans at DEBUG, everything else at INFO,
        // filtered by the subscriber's (global) filter.
        let filter = tracing_subscriber::filter::Targets::new()
            .with_target(arbor_server::telemetry::TARGET, tracing::Level::DEBUG)
            .with_default(tracing::Level::INFO);
        let subscriber = tracing_subscriber::registry().with(filter).with(telemetry::EverySpan);
        if let Err(e) = tracing::subscriber::set_global_default(subscriber) {
            eprintln!("bench_server: cannot install the tracing subscriber: {e}");
            return ExitCode::FAILURE;
        }
    } else if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .init();
    }
    let runtime = match options.threads {
        Some(0) => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        Some(n) => tokio::runtime::Builder::new_multi_thread().worker_threads(n).enable_all().build(),
        None => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
    };
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bench_server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(serve(options))
}

async fn serve(options: Options) -> ExitCode {
    let router = Router::new("arbor-bench-server", env!("CARGO_PKG_VERSION"));
    let server = if options.tenants {
        let echo = |args: Echo| async move { args.message };
        Server::with_config(
            router.tool("echo", "Echo the message back", echo),
            ServerConfig::default().tenant_policy(bench_tenants()),
        )
    } else if options.tasks {
        let echo = ToolRoute::new("echo", |args: Echo| async move { args.message })
            .description("Echo the message back")
            .task_support(TaskSupport::Optional);
        let tasks = TaskConfig {
            ttl: Duration::from_secs(5),
            max_tasks: 1_000_000,
            max_tasks_per_owner: 1_000_000,
            ..TaskConfig::default()
        };
        Server::with_config(router.tool_route(echo), ServerConfig::default().tasks(tasks))
    } else {
        Server::new(router.tool("echo", "Echo the message back", |args: Echo| async move { args.message }))
    };
    if options.stdio {
        return match server.serve_stdio().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("bench_server: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let mut config = HttpConfig::default().bind(SocketAddr::from(([127, 0, 0, 1], options.port)));
    if options.telemetry {
        match arbor_http::metrics::install_prometheus() {
            Ok(handle) => config.metrics = Some(handle),
            Err(e) => {
                eprintln!("bench_server: cannot install the metrics recorder: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Some(idle) = options.idle_timeout {
        config.session_idle_timeout = idle;
    }
    if options.tenants {
        config.tenant_header = Some(axum::http::HeaderName::from_static("x-arbor-tenant"));
    }
    // Every benchmark client is on 127.0.0.1: the per-peer cap (1,000 by default) would
    // refuse the memory runs' 2,000 and 10,000 sessions, which the global caps still bound.
    config.max_sessions_per_peer = config.max_sessions;
    http::serve("bench_server", server, config).await
}

/// `--tenants`: tenant `bench` with every limit the policy has, none of them reached by a
/// benchmark's load, so that the figures are the cost of the checks and not of refusals.
fn bench_tenants() -> arbor_server::tenant::TenantPolicy {
    let policy = r#"
        max_tenants = 16
        [tenants.bench]
        rate = { per_second = 1000000000.0, burst = 1000000000 }
        principal_rate = { per_second = 1000000000.0, burst = 1000000000 }
        max_in_flight = 100000
        max_sessions = 100000
        max_subscriptions = 100000
        max_tasks = 100000
        max_body_bytes = 1048576
        restart_budget = { max_restarts = 1000000, max_seconds = 1, quarantine_seconds = 1 }
    "#;
    arbor_server::tenant::TenantPolicy::from_toml(policy).expect("the benchmark's tenant policy")
}

/// The telemetry-on subscriber's layer: visits every field of every span and event its
/// filter lets through, as a layer exporting them would before handing them to a sink.
mod telemetry {
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Subscriber};
    use tracing_subscriber::layer::{Context, Layer};

    pub struct EverySpan;

    /// Writes each field as `name=value` into a buffer and drops it (the no-op sink). Like
    /// an exporting layer (`tracing-opentelemetry` keeps a string as a string and a number
    /// as a number), it takes strings and numbers as they are and formats only what has no
    /// type of its own with `Debug`; formatting a string with `Debug` escapes it character
    /// by character, a cost of this sink rather than of the spans. Each field is written
    /// alone, replacing the last, into a buffer made with room for any usual one (256
    /// bytes): grown from empty as longer fields came, its `realloc`s were 1,280
    /// instructions per request, a cost of this sink's `String` rather than of the spans.
    struct Fields(String);

    impl Fields {
        fn new() -> Fields {
            Fields(String::with_capacity(256))
        }

        fn put(&mut self, field: &Field, value: impl std::fmt::Display) {
            use std::fmt::Write;
            self.0.clear();
            let _ = write!(self.0, "{}={value}", field.name());
            std::hint::black_box(&self.0);
        }
    }

    impl Visit for Fields {
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.clear();
            self.0.push_str(field.name());
            self.0.push('=');
            self.0.push_str(value);
            std::hint::black_box(&self.0);
        }

        fn record_i64(&mut self, field: &Field, value: i64) {
            self.put(field, value);
        }

        fn record_u64(&mut self, field: &Field, value: u64) {
            self.put(field, value);
        }

        fn record_f64(&mut self, field: &Field, value: f64) {
            self.put(field, value);
        }

        fn record_bool(&mut self, field: &Field, value: bool) {
            self.put(field, value);
        }

        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            use std::fmt::Write;
            self.0.clear();
            let _ = write!(self.0, "{}={value:?}", field.name());
            std::hint::black_box(&self.0);
        }
    }

    impl<S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>> Layer<S> for EverySpan {
        fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _cx: Context<'_, S>) {
            attrs.record(&mut Fields::new());
        }

        fn on_record(&self, _id: &Id, values: &Record<'_>, _cx: Context<'_, S>) {
            values.record(&mut Fields::new());
        }

        fn on_event(&self, event: &Event<'_>, _cx: Context<'_, S>) {
            event.record(&mut Fields::new());
        }
    }
}
