//! `/readyz` over a real Redis bus: ready while Redis is up, still ready while it has been
//! gone for less than the bus grace, 503 ("bus reconnecting") past it, ready again once the
//! bus has reconnected; `/healthz` says live throughout (the tree is fine, only the bus is
//! not). In process: an `HttpServer` with a `RedisBus`, a real `redis-server` killed and
//! started again on its port.

use std::sync::Arc;
use std::time::Duration;

use arbor_bus::{Bus, BusHealth, RedisBus, RedisBusOptions};
use arbor_http::{HealthConfig, HttpConfig, HttpServer};
use arbor_server::router::NoArgs;
use arbor_server::{Router, Server};
use serde_json::Value;
use tests::redis::RedisServer;

const WAIT: Duration = Duration::from_secs(20);

/// A server on 127.0.0.1:0 whose bus is `bus`, probes on with `grace`; its base URL.
async fn serve(bus: Arc<dyn Bus>, grace: Duration) -> (String, arbor_http::ShutdownHandle) {
    let router = Router::new("ready", "1.0.0").tool("ping", "pong", |_: NoArgs| async { "pong" });
    let server = Server::new(router).with_bus(bus);
    let config =
        HttpConfig::default().bind("127.0.0.1:0".parse().unwrap()).health(HealthConfig::default().bus_grace(grace));
    let bound = HttpServer::with_config(server, config).bind().await.unwrap();
    let base = format!("http://{}", bound.local_addr());
    let stop = bound.shutdown_handle();
    tokio::spawn(bound.run());
    (base, stop)
}

async fn probe(http: &reqwest::Client, base: &str, path: &str) -> (u16, Value) {
    let response = http.get(format!("{base}{path}")).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// Polls `/readyz` until its status is `status`; its body then.
async fn ready_becomes(http: &reqwest::Client, base: &str, status: u16) -> Value {
    tokio::time::timeout(WAIT, async {
        loop {
            let (now, body) = probe(http, base, "/readyz").await;
            if now == status {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("/readyz did not turn {status} in time"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_turns_503_past_the_grace_while_redis_is_down_and_back_once_it_returns() {
    let mut redis = RedisServer::start();
    let options = RedisBusOptions {
        reconnect_min: Duration::from_millis(20),
        reconnect_max: Duration::from_millis(200),
        ..RedisBusOptions::default()
    };
    let bus = RedisBus::connect(&redis.url(), options).await.unwrap();
    // Two servers on the same node: one with no grace, one with an hour of it.
    let (strict, stop_strict) = serve(Arc::new(bus.clone()), Duration::ZERO).await;
    let (patient, stop_patient) = serve(Arc::new(bus.clone()), Duration::from_secs(3600)).await;
    let http = reqwest::Client::builder().timeout(WAIT).build().unwrap();
    assert_eq!(bus.health(), BusHealth::Up);
    assert_eq!(ready_becomes(&http, &strict, 200).await["status"], "ready");
    assert_eq!(ready_becomes(&http, &patient, 200).await["status"], "ready");

    redis.kill();
    let why = ready_becomes(&http, &strict, 503).await;
    assert_eq!(why["reason"], "bus reconnecting", "{why}");
    assert!(why["downForMs"].is_u64(), "{why}");
    assert!(matches!(bus.health(), BusHealth::Reconnecting { .. }), "{:?}", bus.health());
    // Within its grace the other server stays ready; both stay live.
    assert_eq!(probe(&http, &patient, "/readyz").await.0, 200);
    assert_eq!(probe(&http, &strict, "/healthz").await, (200, serde_json::json!({"status": "live"})));

    redis.restart();
    assert_eq!(ready_becomes(&http, &strict, 200).await["status"], "ready");
    assert_eq!(bus.health(), BusHealth::Up);
    assert!(bus.stats().reconnects >= 1);

    stop_strict.shutdown();
    stop_patient.shutdown();
    bus.close();
    assert_eq!(bus.health(), BusHealth::Closed);
}
