//! A router mounted in an application of one's own: its `Host` policy comes from where the
//! application is reached (`mounted_at`, `allowed_hosts`, the listener `arbor_http::serve`
//! was given; loopback names when nothing says), `serve` sets `TCP_NODELAY` and stamps
//! the peer on every request, and `HttpServer::shutdown` stops the endpoint in order in
//! one call (streams end, POSTs 503, nothing left counted).

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::time::Duration;

use arbor_http::{HttpConfig, HttpServer, HttpStats};
use arbor_otp::Gauge;
use arbor_server::router::NoArgs;
use arbor_server::{Router, Server, ServerConfig};
use axum::extract::ConnectInfo;
use serde_json::{json, Value};

use crate::support::{SseReader, MODERN, PATIENCE};

fn server(gauge: Option<Gauge>) -> Server {
    let router = Router::new("mounted", "1.0.0").tool("ping", "Answers pong", |_: NoArgs| async { "pong" });
    let config = match gauge {
        Some(gauge) => ServerConfig::default().gauge(gauge),
        None => ServerConfig::default(),
    };
    Server::with_config(router, config)
}

/// A mounted endpoint, its application served on 127.0.0.1:0.
struct Mounted {
    url: String,
    port: u16,
    http: HttpServer,
    client: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// `config`'s router in an application with `GET /peer`, served by `arbor_http::serve`
/// (`ours`) or by plain `axum::serve` (no connect info, no listener address).
async fn mount(config: HttpConfig, ours: bool, gauge: Option<Gauge>) -> Mounted {
    let http = HttpServer::with_config(server(gauge), config);
    let app = axum::Router::new()
        .route(
            "/peer",
            axum::routing::get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.to_string() }),
        )
        .merge(http.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = if ours {
        let serve = arbor_http::serve(listener, app).with_graceful_shutdown(async move {
            let _ = stopped.await;
        });
        tokio::spawn(serve.into_future())
    } else {
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
        })
    };
    let client = reqwest::Client::builder().timeout(PATIENCE).build().unwrap();
    Mounted { url: format!("http://{addr}/mcp"), port: addr.port(), http, client, stop: Some(stop), served }
}

impl Mounted {
    /// A 2026-07-28 `tools/call ping` with `Host: host`.
    async fn ping_as(&self, host: &str) -> u16 {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}}});
        let response = self
            .client
            .post(&self.url)
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "tools/call")
            .header("mcp-name", "ping")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let answer: Value = response.json().await.unwrap_or(Value::Null);
        if status == 200 {
            assert_eq!(answer["result"]["content"][0]["text"], "pong", "{answer}");
        } else {
            assert!(answer["error"]["code"].is_i64(), "a JSON-RPC error body: {answer}");
        }
        status
    }

    /// A legacy session (initialize, initialized) with its standalone GET stream open.
    async fn open_session_stream(&self) -> SseReader {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let post = |body: Value| {
            self.client
                .post(&self.url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body.to_string())
        };
        let response = post(init).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(post(initialized).header("mcp-session-id", &session).send().await.unwrap().status(), 202);
        let get = self
            .client
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .send()
            .await
            .unwrap();
        assert_eq!(get.status(), 200);
        SseReader::new(get)
    }

    async fn finish(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let served = tokio::time::timeout(PATIENCE, &mut self.served).await.expect("the app stopped in time");
        served.unwrap().unwrap();
        self.http.shutdown().await;
    }
}

#[tokio::test]
async fn a_mounted_router_admits_the_host_it_is_reached_at_and_refuses_a_foreign_one() {
    // Nothing says where (plain axum::serve, no setting): loopback names only, as before.
    let m = mount(HttpConfig::default(), false, None).await;
    assert_eq!(m.ping_as(&format!("localhost:{}", m.port)).await, 200);
    assert_eq!(m.ping_as(&format!("127.0.0.1:{}", m.port)).await, 200);
    assert_eq!(m.ping_as("evil.example.com").await, 403);
    m.finish().await;

    // `bind` says a public address but a mounted router never binds it: `mounted_at` says
    // where the app really is (loopback here), so a rebinding name is refused (it used to
    // pass unchecked, `bind` being non-loopback).
    let probe = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = HttpConfig::default().bind("0.0.0.0:3000".parse().unwrap());
    let m = mount(config.mounted_at(probe.local_addr().unwrap()), false, None).await;
    assert_eq!(m.ping_as(&format!("127.0.0.1:{}", m.port)).await, 200);
    assert_eq!(m.ping_as("evil.example.com").await, 403);
    m.finish().await;

    // An app reached at a network address by its name: `mounted_at` an unspecified address
    // admits it (the loopback-only default would refuse it).
    let m = mount(HttpConfig::default().mounted_at("0.0.0.0:8080".parse().unwrap()), false, None).await;
    assert_eq!(m.ping_as("mcp.internal.example:8080").await, 200);
    m.finish().await;

    // Named hosts win over any address: exactly those.
    let config = HttpConfig::default().mounted_at("0.0.0.0:8080".parse().unwrap()).allowed_hosts(["MCP.example.com"]);
    let m = mount(config, false, None).await;
    assert_eq!(m.ping_as("mcp.example.com:8443").await, 200);
    assert_eq!(m.ping_as("evil.example.com").await, 403);
    assert_eq!(m.ping_as(&format!("localhost:{}", m.port)).await, 403);
    m.finish().await;

    // Served by arbor_http::serve: the listener's (loopback) address decides, whatever
    // `bind` says.
    let config = HttpConfig::default().bind("0.0.0.0:3000".parse().unwrap());
    let m = mount(config, true, None).await;
    assert_eq!(m.ping_as(&format!("localhost:{}", m.port)).await, 200);
    assert_eq!(m.ping_as("evil.example.com").await, 403);
    m.finish().await;
}

/// The server side of the connection from `client` in this process, as a std socket
/// that is not closed when dropped.
fn server_side(server_port: u16, client: SocketAddr) -> Option<std::mem::ManuallyDrop<std::net::TcpStream>> {
    use std::os::fd::FromRawFd;
    let fds = std::fs::read_dir("/proc/self/fd").ok()?;
    for entry in fds.take(4096).flatten() {
        let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        // SAFETY: the descriptor is borrowed, never closed (ManuallyDrop); on one that is not a
        // TCP socket the address queries below just fail.
        let socket = std::mem::ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(fd) });
        let ours = socket.local_addr().is_ok_and(|a| a.port() == server_port);
        if ours && socket.peer_addr().is_ok_and(|p| p == client) {
            return Some(socket);
        }
    }
    None
}

#[tokio::test]
async fn serve_sets_nodelay_and_stamps_the_peer_on_every_request() {
    let m = mount(HttpConfig::default(), true, None).await;
    // A raw connection, so its local address (the server's peer) is known.
    let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", m.port)).await.unwrap();
    let me = tcp.local_addr().unwrap();
    // The server's side, looked at before the request (after it, it may be closed): the
    // option is set right after `accept`, so wait (bounded) until it is seen set.
    let mut nodelay = None;
    for _ in 0..200 {
        nodelay = server_side(m.port, me).map(|socket| socket.nodelay().unwrap());
        if nodelay == Some(true) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let request = format!("GET /peer HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n", m.port);
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(PATIENCE, tcp.read_to_end(&mut answer)).await.expect("answered in time").unwrap();
    let answer = String::from_utf8(answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with(&me.to_string()), "the handler saw the peer {me}: {answer}");
    assert_eq!(nodelay, Some(true), "the accepted socket has TCP_NODELAY");
    // And the MCP endpoint behind it serves as usual.
    assert_eq!(m.ping_as(&format!("127.0.0.1:{}", m.port)).await, 200);
    m.finish().await;
}

#[tokio::test]
async fn one_call_shuts_a_mounted_endpoint_down_and_leaves_nothing_counted() {
    let gauge = Gauge::new();
    let m = mount(HttpConfig::default(), true, Some(gauge.clone())).await;
    let host = format!("127.0.0.1:{}", m.port);
    assert_eq!(m.ping_as(&host).await, 200);

    // A legacy session with its standalone stream open.
    let mut stream = m.open_session_stream().await;
    let before = m.http.stats();
    eprintln!("before shutdown: {before:?}, gauge {gauge:?}");
    assert_eq!(before.sessions, 1);
    assert_eq!(before.streams_open, 1);
    assert!(before.modern_endpoints >= 1, "{before:?}");
    assert!(gauge.alive_actors() > 0);

    tokio::time::timeout(PATIENCE, m.http.shutdown()).await.expect("shutdown ended in time");
    // The stream ended (no event, then its end), and nothing is counted any more.
    let mut events = 0;
    while tokio::time::timeout(PATIENCE, stream.next()).await.expect("the stream ended in time").is_some() {
        events += 1;
        assert!(events < 16, "the stream keeps going after shutdown");
    }
    assert_eq!(m.http.stats(), HttpStats::default());
    let mut alive = (gauge.alive_actors(), gauge.alive_tasks());
    for _ in 0..200 {
        if alive == (0, 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        alive = (gauge.alive_actors(), gauge.alive_tasks());
    }
    eprintln!("after shutdown: {:?}, gauge actors and tasks {alive:?}", m.http.stats());
    assert_eq!(alive, (0, 0), "the server's gauge is empty");
    // The app still serves; the endpoint answers 503 now, with a JSON-RPC error.
    assert_eq!(m.ping_as(&host).await, 503);
    m.finish().await;
}

#[tokio::test]
async fn an_idle_stream_of_a_router_served_by_plain_axum_ends_at_shutdown_not_at_the_grace() {
    // Nothing of arbor's serves the connection: only the endpoint's shutdown itself can
    // wake the idle stream's body (no event, no keep-alive for 15 s, no accept loop's stop).
    let config = HttpConfig { shutdown_grace: Duration::from_secs(60), ..HttpConfig::default() };
    let m = mount(config, false, None).await;
    let mut stream = m.open_session_stream().await;
    while m.http.stats().streams_open == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let started = std::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(5), m.http.shutdown()).await.expect("shutdown ended before the grace");
    assert!(stream.next().await.is_none(), "the stream ended");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(m.http.stats().streams_open, 0);
    m.finish().await;
}
