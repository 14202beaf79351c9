//! The same typed calls work whichever era the server is spoken in: forced legacy,
//! forced modern, and detected (our dual-era server detects as modern).

use arbor_client::{ClientError, EraMode, ListKind, Notification};
use arbor_protocol::methods::ListTools;
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::version::{Era, ProtocolVersion};
use futures::StreamExt;
use serde_json::json;

use crate::support::{Fixture, TOOLS};

#[tokio::test]
async fn each_era_serves_tools_resources_and_pages() {
    let fixture = Fixture::new();
    for (mode, era, version) in [
        (EraMode::ForceLegacy, Era::Legacy, ProtocolVersion::V2025_11_25),
        (EraMode::ForceModern, Era::Modern, ProtocolVersion::V2026_07_28),
        (EraMode::Detect, Era::Modern, ProtocolVersion::V2026_07_28),
    ] {
        let client = fixture.client(mode).await;
        assert_eq!(client.era(), Some(era), "{mode:?}");
        assert_eq!(client.protocol_version(), Some(version));
        assert_eq!(client.server_info().map(|i| i.name).as_deref(), Some("arbor-client-test"), "{mode:?}");
        assert!(client.server_capabilities().unwrap().tools.is_some());

        // Pagination: one page by hand, then all of them.
        let first = client.list_tools(None).await.unwrap();
        assert_eq!(first.tools.len(), 2);
        assert_eq!(first.next_cursor.as_deref(), Some("2"));
        let all: Vec<String> = client.list_all_tools().await.unwrap().into_iter().map(|t| t.name).collect();
        assert_eq!(all, TOOLS, "{mode:?}");
        // The generic form is the same call.
        let generic = client.request::<ListTools>(Default::default()).await.unwrap();
        assert_eq!(generic.tools.len(), 2);

        let echoed = client.call_tool("echo", json!({"message": "hi"})).await.unwrap();
        assert_eq!(serde_json::to_value(&echoed.content).unwrap()[0]["text"], "hi");
        let read = client.read_resource("test://x").await.unwrap();
        assert_eq!(serde_json::to_value(&read.contents).unwrap()[0]["text"], "hello");
        client.ping().await.unwrap();

        let unknown = client.call_tool("nope", json!({})).await.unwrap_err();
        assert!(matches!(unknown, ClientError::Rpc(_)), "{unknown}");
        assert_eq!(unknown.rpc_code().map(|c| c.as_i64()), Some(-32602));
        assert_eq!(client.malformed_messages(), 0);
        client.close().await;
        assert!(matches!(client.call_tool("echo", json!({})).await, Err(ClientError::Disconnected)));
    }
}

#[tokio::test]
async fn methods_of_the_other_era_are_refused_locally() {
    let fixture = Fixture::new();
    let modern = fixture.client(EraMode::ForceModern).await;
    let err = modern.set_level(arbor_protocol::model::logging::LoggingLevel::Info).await.unwrap_err();
    assert!(matches!(err, ClientError::Unsupported { method: "logging/setLevel", era: "modern" }), "{err}");
    assert!(matches!(modern.subscribe_resource("test://x").await, Err(ClientError::Unsupported { .. })));
    let legacy = fixture.client(EraMode::ForceLegacy).await;
    let err = legacy.listen(Default::default()).await.unwrap_err();
    assert!(matches!(err, ClientError::Unsupported { method: "subscriptions/listen", .. }), "{err}");
    // Legacy subscriptions deliver `resources/updated` for their URI only.
    let mut sub = legacy.subscribe_resource("test://x").await.unwrap();
    let mut other = legacy.subscribe_resource("test://y").await.unwrap();
    fixture.server.notify_resource_updated("test://x").unwrap();
    let got = sub.next().await.unwrap();
    assert_eq!(got.params.unwrap()["uri"], "test://x");
    fixture.server.notify_resource_updated("test://y").unwrap();
    assert_eq!(other.next().await.unwrap().params.unwrap()["uri"], "test://y");
}

#[tokio::test]
async fn a_modern_listen_streams_what_it_subscribed_to_and_ends_on_drop() {
    let fixture = Fixture::new();
    let client = fixture.client(EraMode::ForceModern).await;
    let filter = serde_json::from_value(json!({"resourceSubscriptions": ["test://x"]})).unwrap();
    let mut sub = client.listen(filter).await.unwrap();
    assert_eq!(sub.acknowledged().resource_subscriptions.as_deref(), Some(&["test://x".to_owned()][..]));
    fixture.server.notify_resource_updated("test://x").unwrap();
    let got = sub.next().await.unwrap();
    assert_eq!(got.method, "notifications/resources/updated");
    let params = got.params.unwrap();
    assert_eq!(params["uri"], "test://x");
    assert_eq!(params["_meta"]["io.modelcontextprotocol/subscriptionId"], serde_json::to_value(sub.id()).unwrap());
    drop(sub);
    // The connection stays usable after the stream ended.
    assert_eq!(client.list_tools(None).await.unwrap().tools.len(), 2);
}

#[tokio::test]
async fn server_notifications_reach_subscribers_with_logs_sanitised() {
    use std::time::Duration;
    let fixture = Fixture::new();
    let client = fixture.client(EraMode::ForceLegacy).await;
    let mut notes = client.notifications();
    assert_eq!(client.call_tool("log", json!({})).await.unwrap().content.len(), 1);
    let log = tokio::time::timeout(Duration::from_secs(5), notes.next()).await.expect("a log notification").unwrap();
    assert_eq!(log.method(), "notifications/message");
    let Notification::LoggingMessage(params) = log else { panic!("a typed log: {log:?}") };
    assert_eq!(params.level, LoggingLevel::Warning);
    assert_eq!(params.data, "careful now", "control and bidi characters are stripped: {params:?}");
    fixture.server.notify_list_changed(arbor_server::ListKind::Tools).unwrap();
    let note = tokio::time::timeout(Duration::from_secs(5), notes.next()).await.expect("list_changed").unwrap();
    assert_eq!(note, Notification::ListChanged(ListKind::Tools));
    assert_eq!(note.method(), "notifications/tools/list_changed");
}

#[tokio::test]
async fn a_modern_call_opts_into_logs_per_request() {
    use arbor_client::CallOptions;
    use arbor_protocol::model::logging::LoggingLevel;
    use std::time::Duration;
    let fixture = Fixture::new();
    let client = fixture.client(EraMode::ForceModern).await;
    let mut notes = client.notifications();
    // Without the opt-in the server sends no log for the request.
    client.call_tool("log", json!({})).await.unwrap();
    client.call_tool_with("log", json!({}), CallOptions::new().log_level(LoggingLevel::Info)).await.unwrap();
    let log = tokio::time::timeout(Duration::from_secs(5), notes.next()).await.expect("a log").unwrap();
    assert!(matches!(&log, Notification::LoggingMessage(p) if p.data == "careful now"), "{log:?}");
    assert!(tokio::time::timeout(Duration::from_millis(100), notes.next()).await.is_err(), "only one log came");
}

#[tokio::test]
async fn a_single_use_transport_cannot_be_restarted_but_a_factory_can() {
    let fixture = Fixture::new();
    let (server_side, client_side) = arbor_server::Transport::memory_pair();
    fixture.server.connect(server_side, arbor_server::ConnectOptions::default()).await.unwrap();
    let options = arbor_client::ClientOptions::default().era_cache(arbor_client::EraCache::new());
    let once = arbor_client::Client::connect_transport(client_side, options).await.unwrap();
    let err = once.restart().await.unwrap_err();
    assert!(matches!(err, arbor_client::ConnectError::NotRestartable), "{err}");
    assert!(matches!(once.ping().await, Err(ClientError::Disconnected)));
    let again = fixture.client(EraMode::ForceLegacy).await;
    again.restart().await.unwrap();
    again.ping().await.unwrap();
}
