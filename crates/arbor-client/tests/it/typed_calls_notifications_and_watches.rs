//! The typed surface over the wire: `call_tool_as` and the result helpers, progress as
//! numbers, the typed notification enum (with the raw form kept), `watch_resource` in
//! both eras over an in-memory pair and over Streamable HTTP, and typed errors with
//! their `source()` chain.

use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use arbor_client::{
    CallOptions, Client, ClientError, ClientOptions, ConnectError, EraMode, HttpTarget, ListKind, Notification,
    OpenError, ServerNotice,
};
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::methods::MethodName;
use arbor_protocol::model::tools::StructuredError;
use futures::StreamExt;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::support::{Fixture, HttpFixture};

const ERAS: [EraMode; 2] = [EraMode::ForceLegacy, EraMode::ForceModern];

#[derive(Serialize)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(Debug, Deserialize, PartialEq)]
struct Sum {
    sum: i64,
}

#[derive(Debug, Deserialize)]
struct Wrong {
    #[allow(dead_code)]
    total: String,
}

/// Waits (bounded: 5 s) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    tests::poll::until(what, Duration::from_secs(5), done).await;
}

#[tokio::test]
async fn call_tool_as_reads_the_structured_output_and_names_what_is_wrong() {
    let fixture = Fixture::new();
    for era in ERAS {
        let client = fixture.client(era).await;
        let sum: Sum = client.call_tool_as::<Add, Sum>("sum", &Add { a: 2, b: 3 }).await.unwrap();
        assert_eq!(sum, Sum { sum: 5 }, "{era:?}");
        // A single text block holding JSON stands in for structured content.
        assert_eq!(client.call_tool_as::<_, Sum>("sum_text", &json!({})).await.unwrap(), Sum { sum: 7 });

        let failed = client.call_tool_as::<_, Sum>("fails", &json!({})).await.unwrap_err();
        match &failed {
            ClientError::Structured { tool, source: StructuredError::ToolFailed(text) } => {
                assert_eq!(tool, "fails");
                assert_eq!(text, "no\nsuch luck");
            }
            other => panic!("{era:?}: {other:?}"),
        }
        let not_json = client.call_tool_as::<_, Sum>("echo", &json!({"message": "hi"})).await.unwrap_err();
        assert!(matches!(not_json, ClientError::Structured { source: StructuredError::Decode(_), .. }), "{not_json}");
        let shape = client.call_tool_as::<_, Wrong>("sum", &Add { a: 1, b: 1 }).await.unwrap_err();
        // The chain: the call's error, then what was wrong with the result, then serde's.
        let cause = shape.source().expect("a source");
        assert!(cause.downcast_ref::<StructuredError>().is_some(), "{cause}");
        assert!(cause.source().and_then(|c| c.downcast_ref::<serde_json::Error>()).is_some());
        assert!(shape.to_string().contains("\"sum\""), "the error names the tool: {shape}");

        let refused = client.call_tool_as::<_, Sum>("sum", &5).await.unwrap_err();
        assert!(matches!(refused, ClientError::ArgumentsNotAnObject), "{refused}");

        // The text helper joins the text blocks with a newline.
        assert_eq!(client.call_tool("echo", json!({"message": "hi"})).await.unwrap().text(), "hi");
        assert_eq!(client.call_tool("fails", json!({})).await.unwrap().text(), "no\nsuch luck");
        client.close().await;
    }
}

#[tokio::test]
async fn progress_reaches_the_callback_as_numbers() {
    let fixture = Fixture::new();
    for era in ERAS {
        let client = fixture.client(era).await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let options = CallOptions::new().on_progress(move |p| sink.lock().push((p.progress, p.total, p.fraction())));
        client.call_tool_with("slow", json!({"steps": 3, "every": 0}), options).await.unwrap();
        let third = 1.0 / 3.0;
        let want =
            vec![(1.0, Some(3.0), Some(third)), (2.0, Some(3.0), Some(2.0 * third)), (3.0, Some(3.0), Some(1.0))];
        assert_eq!(*seen.lock(), want, "{era:?}");
        client.close().await;
    }
}

#[tokio::test]
async fn progress_nobody_asked_for_through_a_callback_is_a_notification() {
    let fixture = Fixture::new();
    for era in ERAS {
        let client = fixture.client(era).await;
        let mut typed = client.notifications();
        // The caller names its own token, so no call's callback consumes the updates.
        let params = json!({"name": "slow", "arguments": {"steps": 2, "every": 0}, "_meta": {"progressToken": "mine"}});
        client.request_value(MethodName::CallTool, params, &CallOptions::new()).await.unwrap();
        let mut seen = Vec::new();
        while seen.len() < 2 {
            let note = tokio::time::timeout(Duration::from_secs(5), typed.next()).await.expect("a progress notice");
            match note.unwrap() {
                Notification::Progress(p) => {
                    assert_eq!(p.progress_token, RequestId::from("mine"), "{era:?}");
                    seen.push(p.progress.as_f64());
                }
                other => panic!("{era:?}: expected progress, got {other:?}"),
            }
        }
        assert_eq!(seen, vec![Some(1.0), Some(2.0)], "{era:?}");
        client.close().await;
    }
}

#[tokio::test]
async fn notifications_are_typed_and_the_raw_form_is_kept() {
    let fixture = Fixture::new();
    let client = fixture.client(EraMode::ForceLegacy).await;
    let mut typed = client.notifications();
    let mut raw = client.raw_notifications();
    // A round trip first: the session subscribes to list changes once it is open.
    client.list_tools(None).await.unwrap();
    fixture.server.notify_list_changed(arbor_server::ListKind::Tools).unwrap();
    let note = tokio::time::timeout(Duration::from_secs(5), typed.next()).await.expect("a typed notice").unwrap();
    assert_eq!(note, Notification::ListChanged(ListKind::Tools));
    let notice = tokio::time::timeout(Duration::from_secs(5), raw.next()).await.expect("a raw notice").unwrap();
    assert_eq!(notice.method, "notifications/tools/list_changed");

    // Reading a notice: known methods get their type; anything else is kept whole.
    let updated =
        ServerNotice { method: "notifications/resources/updated".into(), params: Some(json!({"uri": "test://x"})) };
    assert!(matches!(Notification::from(updated), Notification::ResourceUpdated(p) if p.uri == "test://x"));
    let progress = ServerNotice {
        method: "notifications/progress".into(),
        params: Some(json!({"progressToken": 1, "progress": 0.5, "total": 2})),
    };
    assert!(matches!(Notification::from(progress), Notification::Progress(p) if p.progress.as_f64() == Some(0.5)));
    for notice in [
        ServerNotice { method: "x-vendor/ping".into(), params: Some(json!({"n": 1})) },
        // A known method whose params do not fit its type.
        ServerNotice { method: "notifications/resources/updated".into(), params: Some(json!({"uri": 7})) },
        ServerNotice { method: "notifications/message".into(), params: None },
    ] {
        let read = Notification::from(notice.clone());
        assert_eq!(read.method(), notice.method);
        assert_eq!(read, Notification::Other(notice));
    }
    client.close().await;
}

/// Watches `test://x` and `test://y` on `client`, updates both, and checks each watch sees
/// its own URI's update; dropping both gives the server's bus subscriptions back.
async fn watch_both(client: &Client, fixture: &Fixture, label: &str) {
    let bus = fixture.server.bus();
    // A round trip first: the session's own subscriptions (list changes) are made by then.
    client.list_tools(None).await.unwrap();
    let baseline = bus.subscriber_count();
    let mut x = client.watch_resource("test://x").await.unwrap();
    let mut y = client.watch_resource("test://y").await.unwrap();
    assert_eq!(x.is_listen(), client.era() == Some(arbor_protocol::version::Era::Modern), "{label}");
    assert_eq!(x.uri(), "test://x");
    until("the server subscribed", || bus.subscriber_count() > baseline).await;
    eprintln!("{label}: bus subscribers {baseline} -> {}", bus.subscriber_count());
    fixture.server.notify_resource_updated("test://y").unwrap();
    fixture.server.notify_resource_updated("test://x").unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), x.next()).await.expect("x's update").unwrap();
    assert_eq!(got.uri, "test://x", "{label}");
    let got = tokio::time::timeout(Duration::from_secs(5), y.next()).await.expect("y's update").unwrap();
    assert_eq!(got.uri, "test://y", "{label}");
    drop(x);
    drop(y);
    until("the watches ended on the server", || bus.subscriber_count() == baseline).await;
    eprintln!("{label}: bus subscribers back to {baseline} after the drop");
    // The connection carries on.
    assert_eq!(client.list_tools(None).await.unwrap().tools.len(), 2, "{label}");
}

#[tokio::test]
async fn a_resource_is_watched_in_either_era_and_dropping_the_watch_unsubscribes() {
    let fixture = Fixture::new();
    for era in ERAS {
        let client = fixture.client(era).await;
        watch_both(&client, &fixture, &format!("memory {era:?}")).await;
        if era == EraMode::ForceLegacy {
            until("resources/unsubscribe", || fixture.seen.unsubscribed.lock().len() == 2).await;
            let mut uris = fixture.seen.unsubscribed.lock().clone();
            uris.sort();
            assert_eq!(uris, ["test://x", "test://y"]);
        }
        client.close().await;
    }
}

#[tokio::test]
async fn a_resource_is_watched_over_streamable_http_in_either_era() {
    let http = HttpFixture::start().await;
    for era in ERAS {
        let client = http.client(ClientOptions::new("watcher", "1.0.0").era(era)).await;
        watch_both(&client, &http.fixture, &format!("http {era:?}")).await;
        client.close().await;
    }
}

#[tokio::test]
async fn connect_errors_are_typed_with_their_source() {
    // The call path moves a `Result<_, ClientError>`: its size is the largest variant's.
    let sizes = (std::mem::size_of::<ClientError>(), std::mem::size_of::<arbor_protocol::error::McpError>());
    eprintln!("size_of ClientError = {}, McpError = {}", sizes.0, sizes.1);
    let err = Client::connect_http(HttpTarget::new("not a url"), ClientOptions::default()).await.unwrap_err();
    assert!(matches!(err, ConnectError::Transport(OpenError::Url(_))), "{err}");
    let cause = err.source().expect("the open error");
    assert!(cause.source().and_then(|c| c.downcast_ref::<url::ParseError>()).is_some(), "{cause}");
    let target = HttpTarget::new("http://127.0.0.1:9/mcp").header("bad header", "secret-token");
    let err = Client::connect_http(target, ClientOptions::default()).await.unwrap_err();
    assert!(matches!(&err, ConnectError::Transport(OpenError::Header { name }) if name == "bad header"), "{err}");
    assert!(!err.to_string().contains("secret-token"), "a header's value is never shown: {err}");
}
