//! `demo_server --port 0` serves Streamable HTTP on a free port it prints on stderr: a
//! 2026-07-28 call and a legacy session on the same endpoint, its loopback `Host` check,
//! and a clean exit on SIGTERM.

use serde_json::json;

use crate::http::{answer, Client, ServerProcess};

#[tokio::test]
async fn demo_server_serves_both_eras_over_http_and_stops_on_sigterm() {
    let server = ServerProcess::spawn("demo_server", &["--feed-interval-ms", "0"]).await;
    assert!(server.url.starts_with("http://127.0.0.1:") && server.url.ends_with("/mcp"), "{}", server.url);
    let client = Client::new(&server.url);

    // 2026-07-28: no session, every request stands alone.
    let echoed =
        answer(client.modern(json!(1), "tools/call", json!({"name": "echo", "arguments": {"message": "héllo"}})).await)
            .await;
    assert_eq!(echoed["result"]["content"][0]["text"], "héllo", "{echoed}");
    assert_eq!(echoed["result"]["resultType"], "complete", "{echoed}");

    // Legacy: a session, then a call in it; the answer carries no 2026 bookkeeping.
    let session = client.open_session().await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}});
    let added = answer(client.legacy(Some(&session), call).await).await;
    assert_eq!(added["result"]["content"][0]["text"], "5", "{added}");
    assert!(added["result"].get("resultType").is_none(), "{added}");

    // A foreign Host (DNS rebinding) is refused before anything is served.
    let port = server.url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/mcp");
    let foreign = reqwest::Client::new()
        .post(&server.url)
        .header("host", format!("evil.example:{port}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string())
        .send()
        .await
        .expect("POST");
    assert!(foreign.status().is_client_error(), "foreign Host answered {}", foreign.status());

    assert!(server.stop().await.success(), "a clean exit on SIGTERM");
}
