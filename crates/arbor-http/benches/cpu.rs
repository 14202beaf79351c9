//! Server CPU per `tools/call` over loopback HTTP, side by side in one run: a bare axum
//! handler that parses the JSON-RPC body and echoes it (the ceiling), Arbor modern
//! (2026-07-28, stateless), Arbor legacy (2025-11-25 session), and both eras again with
//! OAuth on (a bearer token of a realistic JWT's size, verified once and then served from
//! the authenticator's cache: the steady state of an authenticated client), with the
//! ratio authenticated / unauthenticated per era; then heap per idle legacy session. The server runs on its own current-thread runtime and thread; its CPU is the
//! process's minus the client thread's.
//!
//! `cargo bench -p arbor-http --bench cpu` (`ARBOR_BENCH_REQUESTS`, `ARBOR_BENCH_CLIENTS`;
//! `ARBOR_BENCH_KIND=bare|modern|legacy|modern+auth|legacy+auth` runs those CPU kinds only (a
//! comma-separated list), `=memory` the heap figures only; `ARBOR_BENCH_ROUNDS` (default 2).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use arbor_http::auth::{AuthConfig, Principal, StaticVerifier};
use arbor_http::{HttpConfig, HttpServer};
use arbor_server::{Router, Server};
use futures::StreamExt;
use serde_json::{json, Value};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    message: String,
}

/// Counts the heap bytes live that were allocated (and freed) by the server's thread.
struct Counting;

static SERVER_HEAP: std::sync::atomic::AtomicIsize = std::sync::atomic::AtomicIsize::new(0);

thread_local! {
    static ON_SERVER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn on_server() -> bool {
    ON_SERVER.try_with(|s| s.get()).unwrap_or(false)
}

unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if on_server() {
            SERVER_HEAP.fetch_add(layout.size() as isize, std::sync::atomic::Ordering::Relaxed);
        }
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        if on_server() {
            SERVER_HEAP.fetch_sub(layout.size() as isize, std::sync::atomic::Ordering::Relaxed);
        }
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if on_server() {
            SERVER_HEAP.fetch_add(new_size as isize - layout.size() as isize, std::sync::atomic::Ordering::Relaxed);
        }
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn heap() -> isize {
    SERVER_HEAP.load(std::sync::atomic::Ordering::Relaxed)
}

/// The process's resident set in KiB (server and client threads together).
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64 / 1024
}

fn cpu(which: libc::c_int) -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(which, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Starts a server on its own thread; returns its address.
fn start(kind: &'static str) -> SocketAddr {
    start_with(kind, HttpConfig::default()).0
}

fn start_with(kind: &'static str, config: HttpConfig) -> (SocketAddr, Option<HttpServer>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name(format!("srv-{kind}")).spawn(move || {
        ON_SERVER.with(|s| s.set(true));
        if std::env::var("ARBOR_BENCH_TIDS").is_ok() {
            eprintln!("server {kind} tid {}", unsafe { libc::gettid() });
        }
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let http = None;
            let router = match kind {
                "bare" => axum::Router::new().route(
                    "/sse",
                    axum::routing::get(|| async {
                        let first = futures::stream::once(async { Ok::<_, std::convert::Infallible>(axum::body::Bytes::from_static(b"id: 0\ndata: \n\n")) });
                        ([("content-type", "text/event-stream")], axum::body::Body::from_stream(first.chain(futures::stream::pending())))
                    }),
                ).route(
                    "/mcp",
                    axum::routing::post(|body: axum::body::Bytes| async move {
                        let v: Value = serde_json::from_slice(&body).unwrap();
                        let out = json!({"jsonrpc": "2.0", "id": v["id"], "result": {"content": [{"type": "text", "text": v["params"]["arguments"]["message"]}]}});
                        ([("content-type", "application/json")], serde_json::to_vec(&out).unwrap())
                    }),
                ),
                _ => {
                    let router = Router::new("bench", "1").tool("echo", "echo", |a: EchoArgs| async move { a.message });
                    // Arbor as shipped: `Bound::run` (HTTP/1.1, TCP_NODELAY).
                    drop(listener);
                    let server = HttpServer::with_config(Server::new(router), config.bind(addr));
                    let bound = server.clone().bind().await.unwrap();
                    tx.send((bound.local_addr(), Some(server))).unwrap();
                    bound.run().await.unwrap();
                    return;
                }
            };
            tx.send((addr, http)).unwrap();
            if std::env::var("ARBOR_BENCH_H1").is_ok() {
                loop {
                    let (tcp, _) = listener.accept().await.unwrap();
                    let _ = tcp.set_nodelay(true);
                    let service = hyper_util::service::TowerToHyperService::new(router.clone());
                    tokio::spawn(async move {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                            .await;
                    });
                }
            }
            use axum::serve::ListenerExt;
            let listener = listener.tap_io(|t| {
                let _ = t.set_nodelay(true);
            });
            axum::serve(listener, router).await.unwrap();
        });
    });
    spawned.unwrap();
    rx.recv().unwrap()
}

/// A bearer token as long as a typical RS256 access token (about 800 characters).
fn bench_token() -> String {
    "eyJ".to_owned() + &"a".repeat(800)
}

/// OAuth settings for the authenticated kinds: a principal with a JWT's usual claims.
fn auth_config(addr: SocketAddr) -> AuthConfig {
    let mut claims = serde_json::Map::new();
    for (k, v) in [("iss", "https://as.example"), ("sub", "user-1234"), ("client_id", "bench"), ("scope", "mcp:tools")]
    {
        claims.insert(k.into(), json!(v));
    }
    claims.insert("aud".into(), json!(format!("http://{addr}/mcp")));
    claims.insert("exp".into(), json!(4_000_000_000u64));
    let principal = Principal::new("https://as.example", "user-1234")
        .with_scopes(["mcp:tools"])
        .with_client_id("bench")
        .with_claims(claims);
    let verifier = StaticVerifier::new().token(bench_token(), principal);
    AuthConfig::new(format!("http://{addr}/mcp"), "https://as.example", verifier).required_scopes(["mcp:tools"])
}

async fn drive(addr: SocketAddr, kind: &str, clients: usize, requests: usize) -> (Duration, Duration) {
    let client = reqwest::Client::builder().pool_max_idle_per_host(clients).tcp_nodelay(true).build().unwrap();
    let url = format!("http://{addr}/mcp");
    let token = kind.strip_suffix("+auth").map(|_| bench_token());
    let kind = kind.trim_end_matches("+auth");
    let bearer = |req: reqwest::RequestBuilder| match &token {
        Some(token) => req.bearer_auth(token),
        None => req,
    };
    let mut session = None;
    if kind == "legacy" {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}});
        let r = bearer(client.post(&url))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init.to_string())
            .send()
            .await
            .unwrap();
        let id = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let _ = r.bytes().await;
        let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        let _ = bearer(client.post(&url))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &id)
            .body(note.to_string())
            .send()
            .await
            .unwrap()
            .bytes()
            .await;
        session = Some(id);
    }
    let one = |i: usize| {
        let mut params = json!({"name": "echo", "arguments": {"message": "hello"}});
        let mut req = bearer(client.post(&url))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        match kind {
            "modern" => {
                params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
                req = req
                    .header("mcp-protocol-version", "2026-07-28")
                    .header("mcp-method", "tools/call")
                    .header("mcp-name", "echo");
            }
            "legacy" => {
                req =
                    req.header("mcp-protocol-version", "2025-11-25").header("mcp-session-id", session.clone().unwrap());
            }
            _ => {}
        }
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}).to_string();
        async move {
            let r = req.body(body).send().await.unwrap();
            assert!(r.status().is_success());
            let b = r.bytes().await.unwrap();
            assert!(b.windows(5).any(|w| w == b"hello"));
        }
    };
    // Warm up.
    futures::stream::iter(0..1000).map(one).buffer_unordered(clients).collect::<Vec<_>>().await;
    let (p0, c0, t0) = (cpu(libc::CLOCK_PROCESS_CPUTIME_ID), cpu(libc::CLOCK_THREAD_CPUTIME_ID), Instant::now());
    futures::stream::iter(0..requests).map(one).buffer_unordered(clients).collect::<Vec<_>>().await;
    let (p1, c1, elapsed) = (cpu(libc::CLOCK_PROCESS_CPUTIME_ID), cpu(libc::CLOCK_THREAD_CPUTIME_ID), t0.elapsed());
    let server = (p1 - p0).saturating_sub(c1 - c0);
    (server / requests as u32, elapsed)
}

fn main() {
    let requests: usize = std::env::var("ARBOR_BENCH_REQUESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let clients: usize = std::env::var("ARBOR_BENCH_CLIENTS").ok().and_then(|v| v.parse().ok()).unwrap_or(16);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    if std::env::var("ARBOR_BENCH_TIDS").is_ok() {
        eprintln!("client tid {}", unsafe { libc::gettid() });
    }
    let bare = start("bare");
    let arbor = start("arbor");
    // The authenticated server (the static verifier checks no audience, so the resource
    // need not name the port it gets).
    let authed = start_with("arbor-auth", HttpConfig::default().auth(auth_config(([127, 0, 0, 1], 0).into()))).0;
    let only = std::env::var("ARBOR_BENCH_KIND").ok();
    if only.is_none() || only.as_deref() == Some("memory") {
        endpoint_cost();
        rt.block_on(memory());
    }
    if only.as_deref() == Some("memory") {
        return;
    }
    let rounds: usize = std::env::var("ARBOR_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
    for round in 0..rounds {
        let mut per_kind = std::collections::HashMap::new();
        let kinds =
            [("bare", bare), ("modern", arbor), ("modern+auth", authed), ("legacy", arbor), ("legacy+auth", authed)];
        for (kind, addr) in kinds {
            if only.as_deref().is_some_and(|o| !o.split(',').any(|k| k == kind)) {
                continue;
            }
            let (per, elapsed) = rt.block_on(drive(addr, kind, clients, requests));
            per_kind.insert(kind, per.as_secs_f64());
            println!(
                "round {round} {kind:>11}: {:>6.2} us server CPU/request, {:>7.0} req/s ({clients} clients)",
                per.as_secs_f64() * 1e6,
                requests as f64 / elapsed.as_secs_f64()
            );
        }
        for era in ["modern", "legacy"] {
            let auth = format!("{era}+auth");
            if let (Some(plain), Some(authed)) = (per_kind.get(era), per_kind.get(auth.as_str())) {
                println!("round {round} {era}: authenticated / unauthenticated server CPU = {:.3}", authed / plain);
            }
        }
    }
}

async fn init(client: &reqwest::Client, url: &str) -> String {
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}});
    let r = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    let id = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let _ = r.bytes().await;
    let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let r = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &id)
        .body(note.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    id
}

/// Heap per idle legacy session and per open standalone stream, then reaping.
async fn memory() {
    let sessions: usize = std::env::var("ARBOR_BENCH_SESSIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    // Every session comes from 127.0.0.1: the per-peer cap (1,000 by default) is lifted,
    // the global one is not.
    let defaults = HttpConfig::default();
    let config = HttpConfig {
        session_idle_timeout: Duration::from_secs(3),
        max_sessions_per_peer: defaults.max_sessions,
        ..defaults
    };
    let (addr, http) = start_with("arbor", config);
    let http = http.unwrap();
    let client = reqwest::Client::builder().pool_max_idle_per_host(16).build().unwrap();
    let url = format!("http://{addr}/mcp");
    let _ = init(&client, &url).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let base = heap();
    let base_rss = rss_kib();
    let ids: Vec<String> =
        futures::stream::iter(0..sessions).map(|_| init(&client, &url)).buffer_unordered(16).collect().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let held = heap();
    println!(
        "idle legacy sessions: {} held, {:.0} bytes of server heap each",
        http.stats().sessions,
        (held - base) as f64 / sessions as f64
    );
    let streams = 500.min(ids.len());
    let mut open = Vec::new();
    for id in &ids[..streams] {
        let r =
            client.get(&url).header("accept", "text/event-stream").header("mcp-session-id", id).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let mut body = r.bytes_stream();
        let _priming = body.next().await;
        open.push(body);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let with_streams = heap();
    println!(
        "open standalone SSE streams: {}, {:.0} bytes of server heap each",
        http.stats().streams_open,
        (with_streams - held) as f64 / streams as f64
    );
    drop(open);
    // The same for a bare axum SSE handler: what the HTTP stack itself costs per stream.
    let bare = start("bare");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before_bare = heap();
    let mut open = Vec::new();
    for _ in 0..streams {
        let r = client.get(format!("http://{bare}/sse")).send().await.unwrap();
        let mut body = r.bytes_stream();
        let _priming = body.next().await;
        open.push(body);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    println!("bare axum SSE streams: {:.0} bytes of server heap each", (heap() - before_bare) as f64 / streams as f64);
    drop(open);
    let t0 = Instant::now();
    while http.stats().sessions > 0 && t0.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let peak_rss = rss_kib();
    // The reaper asks malloc to give the reaped sessions' pages back once their endpoints
    // have stopped; give it a moment.
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!("process RSS: {base_rss} KiB at start, {peak_rss} KiB when reaped, {} KiB 2 s later", rss_kib());
    let after = heap();
    println!(
        "after reaping: {} sessions, server heap {:+.1} KiB vs start ({:.1} MiB at start, {:.1} MiB more at peak)",
        http.stats().sessions,
        (after - base) as f64 / 1024.0,
        base as f64 / 1048576.0,
        (with_streams - base) as f64 / 1048576.0
    );
}

/// Heap of a bare endpoint (the session's connection actor), for comparison.
fn endpoint_cost() {
    std::thread::spawn(|| {
        ON_SERVER.with(|s| s.set(true));
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let router = Router::new("bench", "1").tool("echo", "echo", |a: EchoArgs| async move { a.message });
            let server = Server::new(router);
            let warm =
                server.open_endpoint(Default::default(), arbor_server::exchange::Route::discard()).await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            let base = heap();
            let mut eps = Vec::new();
            for _ in 0..1000 {
                eps.push(
                    server.open_endpoint(Default::default(), arbor_server::exchange::Route::discard()).await.unwrap(),
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            println!("bare endpoint: {:.0} bytes of heap each", (heap() - base) as f64 / 1000.0);
            for ep in &eps {
                ep.close();
            }
            for ep in eps.drain(..) {
                ep.closed().await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            println!("after closing them: {:+.0} bytes of heap per endpoint kept", (heap() - base) as f64 / 1000.0);
            // Once more: retention that grows again is a leak, not a table's capacity.
            for _ in 0..1000 {
                eps.push(
                    server.open_endpoint(Default::default(), arbor_server::exchange::Route::discard()).await.unwrap(),
                );
            }
            for ep in eps.drain(..) {
                ep.close();
                ep.closed().await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            println!(
                "after a second round: {:+.0} bytes of heap per endpoint of the first round kept",
                (heap() - base) as f64 / 1000.0
            );
            drop(warm);
            server.shutdown().await;
        });
    })
    .join()
    .unwrap();
}
