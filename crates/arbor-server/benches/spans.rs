//! What the spans cost (`cargo bench -p arbor-mcp-server --bench spans`): `tools/call`
//! round trips from 16 in-memory connections at once, both eras, with telemetry off (no
//! subscriber) and on (a `tracing-subscriber` registry with `tracing-opentelemetry`'s
//! layer exporting every runtime span, `arbor::mcp` at DEBUG, to opentelemetry_sdk's
//! in-memory exporter through the batch processor), one after the other in one process,
//! reported as process CPU time per call (user + system, `/proc/self/stat`) and the ratio.
//!
//! The peers are raw frames (no client runtime), so the CPU is the server's plus the cost
//! of writing and reading one line per call. Each mode has its own runtime and server;
//! off runs first, then the global subscriber is installed (it cannot be removed). Not
//! criterion: one ratio of CPU times is wanted. `SPANS_CALLS` (per connection and round, default 4000)
//! and `SPANS_ROUNDS` (default 3) change the sizes.

use std::time::Instant;

use arbor_server::router::NoArgs;
use arbor_server::{ConnectOptions, Router, Server, Transport};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;

const CONNECTIONS: usize = 16;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// User plus system CPU time of the process, in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

async fn one_connection(server: &Server, modern: bool, calls: usize) {
    let (server_side, client_side) = Transport::memory_pair();
    let connection = server.connect(server_side, ConnectOptions::default()).await.unwrap();
    let (mut reader, writer) = client_side.into_parts();
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"#;
    if !modern {
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
        writer.send(init.as_bytes()).unwrap();
        reader.recv().await.unwrap();
        writer.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
    }
    let meta = if modern { meta } else { "" };
    for id in 1..=calls {
        let frame = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{{meta}"name":"hello","arguments":{{}}}}}}"#
        );
        writer.send(frame.as_bytes()).unwrap();
        match reader.recv().await {
            Ok(Some(Ok(_))) => {}
            other => panic!("no answer: {other:?}"),
        }
    }
    writer.close().await;
    connection.closed().await;
}

fn run(server: &Server, runtime: &tokio::runtime::Runtime, modern: bool, calls: usize) -> f64 {
    let before = cpu_seconds();
    runtime.block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..CONNECTIONS {
            let server = server.clone();
            tasks.push(tokio::spawn(async move { one_connection(&server, modern, calls).await }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    });
    (cpu_seconds() - before) / (CONNECTIONS * calls) as f64
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
}

fn main() {
    let calls = env("SPANS_CALLS", 4000);
    let rounds = env("SPANS_ROUNDS", 3);
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter.clone()).build();
    let filter = Targets::new().with_target(arbor_server::telemetry::TARGET, tracing::Level::DEBUG);
    let mut layer = Some(tracing_opentelemetry::layer().with_tracer(provider.tracer("bench")).with_filter(filter));
    let started = Instant::now();
    let eras = [("2026-07-28", true), ("2025-11-25", false)];
    // Off first, then the subscriber is installed (a global default cannot be removed) and
    // the same runs are repeated; a fresh runtime and server per mode.
    let mut results = [[0.0f64; 2]; 2];
    let mut exported = [[0usize; 2]; 2];
    for mode in 0..2 {
        if let Some(layer) = (mode == 1).then(|| layer.take()).flatten() {
            tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).unwrap();
        }
        let rt = runtime();
        let server = Server::new(Router::new("bench", "1").tool("hello", "says hello", |_: NoArgs| async { "hi" }));
        for (e, (_, modern)) in eras.iter().enumerate() {
            for _ in 0..rounds {
                results[mode][e] += run(&server, &rt, *modern, calls) / rounds as f64;
                let _ = provider.force_flush();
                exported[mode][e] += exporter.get_finished_spans().map_or(0, |s| s.len());
                exporter.reset();
            }
        }
        rt.block_on(server.shutdown());
    }
    for (e, (era, _)) in eras.iter().enumerate() {
        let (off, on) = (results[0][e], results[1][e]);
        println!(
            "{era}: {CONNECTIONS} connections x {calls} calls x {rounds} rounds: CPU per call off {:.2} us, \
             spans on {:.2} us, ratio {:.3} (spans exported: off {}, on {})",
            off * 1e6,
            on * 1e6,
            on / off,
            exported[0][e],
            exported[1][e]
        );
    }
    eprintln!("({:.1} s)", started.elapsed().as_secs_f64());
    let _ = provider.shutdown();
}
