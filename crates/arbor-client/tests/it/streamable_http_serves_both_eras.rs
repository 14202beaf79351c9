//! Over Streamable HTTP, against our own HTTP server (`arbor-http`) on a loopback port:
//! detection, typed calls, progress and server requests on POST streams, MRTR, the
//! modern headers (`Mcp-Param-*` learned from `tools/list`, refreshed on -32020, invalid
//! tools dropped), cancellation (closing the stream in the modern era,
//! `notifications/cancelled` in the legacy era) and listen streams.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_client::{CallOptions, ClientOptions, EraMode};
use arbor_protocol::version::{Era, ProtocolVersion};
use futures::StreamExt;
use serde_json::json;

use crate::cancelling_a_call_tells_the_server::wait_stopped;
use crate::support::{AnsweringHandler, HttpFixture, TOOLS};

fn text(r: &arbor_protocol::model::tools::CallToolResult) -> String {
    serde_json::to_value(&r.content).unwrap()[0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn both_eras_are_spoken_over_http() {
    let http = HttpFixture::start().await;
    for (mode, era) in [(EraMode::Detect, Era::Modern), (EraMode::ForceLegacy, Era::Legacy)] {
        let client = http.client(ClientOptions::default().era(mode).handler(AnsweringHandler)).await;
        assert_eq!(client.era(), Some(era), "{mode:?}");
        if era == Era::Legacy {
            assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2025_11_25));
        }
        assert_eq!(text(&client.call_tool("echo", json!({"message": "over http"})).await.unwrap()), "over http");
        let read = client.read_resource("test://x").await.unwrap();
        assert_eq!(serde_json::to_value(&read.contents).unwrap()[0]["text"], "hello");
        client.ping().await.unwrap();

        // Progress arrives on the call's own response stream.
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let options = CallOptions::new().on_progress(move |_| {
            c.fetch_add(1, Ordering::SeqCst);
        });
        let done = client.call_tool_with("slow", json!({"steps": 2, "every": 0}), options).await.unwrap();
        assert_eq!(text(&done), "done");
        assert_eq!(count.load(Ordering::SeqCst), 2, "{mode:?}");

        // Input: MRTR in the modern era, elicitation/create on the POST stream in the legacy one.
        assert_eq!(text(&client.call_tool("ask", json!({})).await.unwrap()), "hello Ada ({\"round\":1})", "{mode:?}");
        assert_eq!(client.malformed_messages(), 0, "{mode:?}");
        client.close().await;
    }
}

#[tokio::test]
async fn modern_param_headers_are_learned_refreshed_and_invalid_tools_dropped() {
    let http = HttpFixture::start().await;
    let client = http.client(ClientOptions::default().era(EraMode::ForceModern)).await;
    // Not listed yet: the first attempt lacks Mcp-Param-Region, the server answers -32020,
    // the client reads tools/list and retries once.
    let served = client.call_tool("region", json!({"region": "eu west ☀"})).await.unwrap();
    assert_eq!(text(&served), "served in eu west ☀");
    let names: Vec<String> = client.list_all_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    let expected: Vec<&str> = TOOLS.iter().copied().filter(|t| *t != "bad_header").collect();
    assert_eq!(names, expected, "the tool annotating a number is dropped");
    assert_eq!(text(&client.call_tool("region", json!({"region": "us"})).await.unwrap()), "served in us");
}

#[tokio::test]
async fn a_dropped_call_is_cancelled_in_both_eras() {
    let http = HttpFixture::start().await;
    let mut expected = 0;
    for mode in [EraMode::ForceModern, EraMode::ForceLegacy] {
        let client = http.client(ClientOptions::default().era(mode)).await;
        let call = client.call_tool("hang", json!({}));
        assert!(tokio::time::timeout(Duration::from_millis(200), call).await.is_err());
        expected += 1;
        wait_stopped(&http.fixture, expected).await;
        assert_eq!(text(&client.call_tool("echo", json!({"message": "still here"})).await.unwrap()), "still here");
    }
}

#[tokio::test]
async fn listen_and_resource_subscriptions_stream_over_http() {
    let http = HttpFixture::start().await;
    let modern = http.client(ClientOptions::default().era(EraMode::ForceModern)).await;
    let filter = serde_json::from_value(json!({"resourceSubscriptions": ["test://x"]})).unwrap();
    let mut listen = modern.listen(filter).await.unwrap();
    let legacy = http.client(ClientOptions::default().era(EraMode::ForceLegacy)).await;
    let mut sub = legacy.subscribe_resource("test://x").await.unwrap();
    http.fixture.server.notify_resource_updated("test://x").unwrap();
    let a = tokio::time::timeout(Duration::from_secs(5), listen.next()).await.unwrap().unwrap();
    assert_eq!(a.params.unwrap()["uri"], "test://x");
    let b = tokio::time::timeout(Duration::from_secs(5), sub.next()).await.unwrap().unwrap();
    assert_eq!(b.params.unwrap()["uri"], "test://x");
    drop(listen);
    legacy.close().await;
}

/// Answers the next request that carries a session id with 404, as a server does once
/// the session expired.
async fn expire_once(
    axum::extract::State(flag): axum::extract::State<Arc<std::sync::atomic::AtomicBool>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if request.headers().contains_key("mcp-session-id") && flag.swap(false, Ordering::SeqCst) {
        return axum::response::IntoResponse::into_response(axum::http::StatusCode::NOT_FOUND);
    }
    next.run(request).await
}

#[tokio::test]
async fn an_expired_legacy_session_is_reported_and_initialized_again() {
    let fixture = crate::support::Fixture::new();
    let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let router = arbor_http::HttpServer::new(fixture.server.clone())
        .router()
        .layer(axum::middleware::from_fn_with_state(flag.clone(), expire_once));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let served = tokio::spawn(async move { axum::serve(listener, router).await });
    let options = ClientOptions::default().era(EraMode::ForceLegacy).era_cache(arbor_client::EraCache::new());
    let client = arbor_client::Client::connect_http(arbor_client::HttpTarget::new(url), options).await.unwrap();
    assert_eq!(text(&client.call_tool("echo", json!({"message": "a"})).await.unwrap()), "a");

    flag.store(true, Ordering::SeqCst);
    let err = client.call_tool("echo", json!({"message": "b"})).await.unwrap_err();
    assert!(matches!(err, arbor_client::ClientError::SessionExpired), "{err}");
    // The client initializes a new session by itself; calls succeed again.
    let mut again = None;
    for _ in 0..200 {
        if let Ok(r) = client.call_tool("echo", json!({"message": "c"})).await {
            again = Some(text(&r));
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(again.as_deref(), Some("c"));
    client.close().await;
    served.abort();
}

#[tokio::test]
async fn a_legacy_only_http_server_is_detected_and_spoken_to_in_its_era() {
    use arbor_server::{Server, ServerConfig};
    let fixture = crate::support::Fixture::new();
    let versions = ProtocolVersion::ALL.into_iter().filter(|v| v.era() == Era::Legacy);
    let server = Server::with_config(
        crate::support::TestServer { seen: fixture.seen.clone() },
        ServerConfig::default().supported_versions(versions),
    );
    let config = arbor_http::HttpConfig { bind: "127.0.0.1:0".parse().unwrap(), ..Default::default() };
    let bound = arbor_http::HttpServer::with_config(server, config).bind().await.unwrap();
    let url = format!("http://{}/mcp", bound.local_addr());
    let shutdown = bound.shutdown_handle();
    tokio::spawn(bound.run());
    let options = ClientOptions::default().era_cache(arbor_client::EraCache::new());
    let client = arbor_client::Client::connect_http(arbor_client::HttpTarget::new(url), options).await.unwrap();
    assert_eq!(client.era(), Some(Era::Legacy), "the probe's refusal is not modern-only: fall back");
    assert_eq!(text(&client.call_tool("echo", json!({"message": "legacy"})).await.unwrap()), "legacy");
    client.close().await;
    shutdown.shutdown();
}
