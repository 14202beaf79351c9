//! `demo_server` serves its metrics at `/metrics` beside `/mcp`: scraped under load (200
//! concurrent `tools/call`, half 2026-07-28, half in ten legacy sessions; then 200 slow
//! calls filling the tenant and one call refused), the Prometheus text parsed strictly and
//! every count asserted exactly: the conventions' histogram counts per method, era and
//! tool, the conventions' buckets, admitted and refused requests with the reason, the
//! in-flight gauge during and after the load, the legacy sessions' gauge and durations
//! once they are closed.

use std::time::Duration;

use futures::future::join_all;
use serde_json::json;

use crate::http::{answer, Client, ServerProcess};
use crate::prometheus::{parse, Page};

const OPERATION: &str = "mcp_server_operation_duration_seconds";
const TENANT: (&str, &str) = ("arbor_tenant", "default");

async fn scrape(http: &reqwest::Client, url: &str) -> Page {
    let response = http.get(url).send().await.expect("GET /metrics");
    assert_eq!(response.status(), 200);
    let kind = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    parse(&response.text().await.expect("the page"))
}

/// Scrapes until `done` holds of the page (bounded), and returns that page.
async fn scrape_until(http: &reqwest::Client, url: &str, what: &str, done: impl Fn(&Page) -> bool) -> Page {
    for _ in 0..300 {
        let page = scrape(http, url).await;
        if done(&page) {
            return page;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}: not seen on /metrics within 15 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_server_metrics_count_every_call_of_both_eras_and_each_refusal() {
    let server =
        ServerProcess::spawn("demo_server", &["--feed-interval-ms", "0", "--max-in-flight-per-tenant", "200"]).await;
    let metrics = server.url.replace("/mcp", "/metrics");
    let http = reqwest::Client::new();
    let client = Client::new(&server.url);

    let sessions = join_all((0..10).map(|_| client.open_session())).await;
    let page = scrape(&http, &metrics).await;
    assert_eq!(page.sum("arbor_server_sessions", &[TENANT]), 10.0, "ten legacy sessions are live");

    // 200 at once: 100 of each era, the legacy ones spread over the sessions.
    let modern = (0..100).map(|i| {
        let client = &client;
        async move {
            let call = json!({"name": "echo", "arguments": {"message": format!("m{i}")}});
            let a = answer(client.modern(json!(i), "tools/call", call).await).await;
            assert_eq!(a["result"]["content"][0]["text"], format!("m{i}"), "{a}");
        }
    });
    let legacy = (0..100).map(|i| {
        let (client, session) = (&client, &sessions[i % sessions.len()]);
        async move {
            let call = json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"message": format!("l{i}")}}});
            let a = answer(client.legacy(Some(session), call).await).await;
            assert_eq!(a["result"]["content"][0]["text"], format!("l{i}"), "{a}");
        }
    });
    futures::future::join(join_all(modern), join_all(legacy)).await;

    // An unknown tool: the caller's mistake, with a status code but no error.type.
    let unknown = answer(client.modern(json!("u"), "tools/call", json!({"name": "nope", "arguments": {}})).await).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    // The tenant filled with 200 slow calls, seen in flight on the page, then one more
    // call refused at once.
    let slow = join_all((0..200).map(|i| {
        let client = &client;
        async move {
            let call = json!({"name": "slow_count", "arguments": {"to": 1, "interval_ms": 2000}});
            answer(client.modern(json!(format!("s{i}")), "tools/call", call).await).await
        }
    }));
    let refused = async {
        scrape_until(&http, &metrics, "200 requests in flight", |p| {
            p.sum("arbor_server_requests_in_flight", &[TENANT]) == 200.0
        })
        .await;
        let call = json!({"name": "echo", "arguments": {"message": "one too many"}});
        answer(client.modern(json!("over"), "tools/call", call).await).await
    };
    let (slow, refused) = futures::future::join(slow, refused).await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert_eq!(refused["error"]["data"]["reason"], "overloaded", "{refused}");
    for a in &slow {
        assert_eq!(a["result"]["content"][0]["text"], "Counted to 1", "{a}");
    }

    for session in &sessions {
        let closed = http
            .delete(&server.url)
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .expect("DELETE");
        assert!(closed.status().is_success(), "DELETE answered {}", closed.status());
    }
    let page = scrape_until(&http, &metrics, "the sessions gone", |p| {
        p.sum("arbor_server_sessions", &[]) == 0.0 && p.sum("mcp_server_session_duration_seconds_count", &[]) == 10.0
    })
    .await;

    let count = |with: &[(&str, &str)]| page.sum(&format!("{OPERATION}_count"), with);
    let call = ("mcp_method_name", "tools/call");
    let tcp = ("network_transport", "tcp");
    let echo = ("gen_ai_tool_name", "echo");
    assert_eq!(count(&[call, echo, tcp, ("mcp_protocol_version", "2026-07-28")]), 100.0);
    assert_eq!(count(&[call, echo, tcp, ("mcp_protocol_version", "2025-11-25")]), 100.0);
    assert_eq!(count(&[call, ("gen_ai_tool_name", "slow_count"), ("mcp_protocol_version", "2026-07-28")]), 200.0);
    let unknown = [call, ("gen_ai_tool_name", "nope"), ("rpc_response_status_code", "-32602")];
    assert_eq!(count(&unknown), 1.0);
    assert!(page.matching(&format!("{OPERATION}_count"), &unknown).all(|s| !s.labels.contains_key("error_type")));
    assert_eq!(count(&[]), 401.0, "every admitted request timed once, the refused one not");
    assert!(page.matching(&format!("{OPERATION}_count"), &[echo]).all(|s| !s.labels.contains_key("error_type")));

    // The conventions' buckets, cumulative, ending with the count.
    let buckets: Vec<_> = page
        .matching(&format!("{OPERATION}_bucket"), &[echo, ("mcp_protocol_version", "2026-07-28")])
        .map(|s| (s.labels["le"].clone(), s.value))
        .collect();
    let les: Vec<_> = buckets.iter().map(|(le, _)| le.as_str()).collect();
    assert_eq!(
        les,
        ["0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "30", "60", "120", "300", "+Inf"],
        "{buckets:?}"
    );
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1) && buckets.last().unwrap().1 == 100.0, "{buckets:?}");
    assert_eq!(page.types.get(OPERATION).map(String::as_str), Some("histogram"));

    assert_eq!(page.sum("arbor_server_requests_admitted_total", &[TENANT]), 401.0);
    assert_eq!(page.sum("arbor_server_requests_refused_total", &[TENANT, ("arbor_refusal_reason", "overloaded")]), 1.0);
    assert_eq!(page.sum("arbor_server_requests_refused_total", &[]), 1.0);
    assert_eq!(page.sum("arbor_server_requests_in_flight", &[TENANT]), 0.0);
    assert_eq!(page.sum("arbor_server_subscriptions", &[]), 0.0);
    assert_eq!(page.sum("arbor_http_streams", &[]), 0.0, "every SSE body closed");
    assert_eq!(page.sum("arbor_server_handler_panics_total", &[]), 0.0);
    let legacy_sessions = [("mcp_protocol_version", "2025-11-25"), tcp];
    assert_eq!(page.sum("mcp_server_session_duration_seconds_count", &legacy_sessions), 10.0);

    assert!(server.stop().await.success(), "a clean exit on SIGTERM");
}

#[tokio::test]
async fn demo_server_without_metrics_serves_no_metrics_page() {
    let server = ServerProcess::spawn("demo_server", &["--feed-interval-ms", "0", "--no-metrics"]).await;
    let response = reqwest::get(server.url.replace("/mcp", "/metrics")).await.expect("GET /metrics");
    assert_eq!(response.status(), 404);
    assert!(server.stop().await.success());
}
