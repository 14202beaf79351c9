//! Reaping gives memory back: endpoints opened and closed by the hundred leave no table
//! sized for them behind. Each connection's request and subscription task supervisors are
//! registered in the tree's gauge (a weak entry that keeps the supervisor's allocation
//! until pruned); after they all close, the list holds at most a handful of entries and
//! its capacity is back to a small bound, without another connection having to open.

use arbor_otp::Gauge;
use arbor_server::exchange::Route;
use arbor_server::{ConnectOptions, Router, Server, ServerConfig};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    message: String,
}

#[tokio::test]
async fn closed_endpoints_leave_no_task_supervisor_table_behind() {
    const N: usize = 300;
    let gauge = Gauge::new();
    let router = Router::new("reap", "1").tool("echo", "echo", |a: EchoArgs| async move { a.message });
    let server = Server::with_config(router, ServerConfig::default().gauge(gauge.clone()));
    let (_, base_capacity) = gauge.task_source_slots();
    let mut endpoints = Vec::new();
    for _ in 0..N {
        endpoints.push(server.open_endpoint(ConnectOptions::default(), Route::discard()).await.expect("open"));
    }
    let (held, held_capacity) = gauge.task_source_slots();
    // Two task supervisors per endpoint (requests, subscriptions), none of them actors.
    assert!(held >= 2 * N, "{held} entries for {N} endpoints");
    assert!(held_capacity >= 2 * N);
    assert_eq!(gauge.alive_actors(), 4 + N, "root, tasks, tenant, connections, and one actor per endpoint");
    for endpoint in &endpoints {
        endpoint.close();
    }
    for endpoint in endpoints.drain(..) {
        endpoint.closed().await;
    }
    // The supervisors see their children's exits before they answer a snapshot.
    let _ = server.snapshot().await;
    assert_eq!(gauge.alive_actors(), 4);
    let (left, capacity) = gauge.task_source_slots();
    assert!(left <= 16, "{left} entries left after {N} endpoints closed");
    assert!(capacity <= 128.max(base_capacity), "capacity {capacity} kept after {N} endpoints closed");
    server.shutdown().await;
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
}
