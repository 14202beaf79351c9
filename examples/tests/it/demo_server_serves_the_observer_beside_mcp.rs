//! `demo_server` serves the live supervision-tree observer at `/observer` beside `/mcp`:
//! the page, and a JSON snapshot that shows the session a client just opened.

use serde_json::Value;

use crate::http::{Client, ServerProcess};

#[tokio::test]
async fn demo_server_serves_the_observer_beside_mcp() {
    let server = ServerProcess::spawn("demo_server", &["--feed-interval-ms", "0"]).await;
    let base = server.url.trim_end_matches("/mcp").to_owned();
    let _session = Client::new(&server.url).open_session().await;

    let http = reqwest::Client::new();
    let page = http.get(format!("{base}/observer")).send().await.expect("GET /observer");
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("Arbor observer"));
    let snapshot: Value =
        http.get(format!("{base}/observer/snapshot")).send().await.expect("GET snapshot").json().await.unwrap();
    let tenants = snapshot["tenants"].as_array().expect("tenants");
    let default = tenants.iter().find(|t| t["tenant"] == "default").expect("the default tenant");
    assert!(default["connections"].as_u64().unwrap() >= 1, "{snapshot}");
    assert!(snapshot.to_string().contains("2025-"), "the legacy session shows: {snapshot}");

    assert!(server.stop().await.success(), "a clean exit on SIGTERM");
}
