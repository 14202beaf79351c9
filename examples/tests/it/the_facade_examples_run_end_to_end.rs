//! The examples written against the `arbor` facade alone, run as their own processes:
//! `mounted_app` (a server mounted in an axum app plus the client that calls it) must
//! print the answer of every call it makes and exit 0, and `quickstart` must serve its
//! typed tool, its resource and its live update to a real client of either era.
//!
//! Every wait is bounded (the process is killed when its handle drops), so a hung example
//! fails the test instead of hanging it.

use std::process::Stdio;
use std::time::Duration;

use arbor_client::{Client, ClientOptions, EraMode, HttpTarget};
use arbor_protocol::model::content::ResourceContents;
use arbor_protocol::model::subscriptions::SubscriptionFilter;
use futures::StreamExt;
use serde_json::json;

use crate::http::ServerProcess;
use crate::support::example;

/// How long one example run, or one awaited notification, may take.
const WAIT: Duration = Duration::from_secs(60);

#[tokio::test]
async fn mounted_app_serves_and_calls_every_kind_of_handler_through_axum() {
    let child = tokio::process::Command::new(example("mounted_app"))
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("starting mounted_app");
    let output = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("mounted_app did not finish in time")
        .expect("waiting for mounted_app");
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("{stdout}");
    assert!(output.status.success(), "mounted_app failed: {:?}", output.status);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "era: Some(Modern)",
            "add: 5",
            "shout: HELLO",
            "post: posted",
            "updated: notes://latest",
            "latest: buy milk",
            "note 1: buy milk",
            "prompt: Review these notes in a kind tone.",
        ]
    );
}

/// The text of a resource read.
fn first_text(read: &arbor_protocol::model::resources::ReadResourceResult) -> String {
    match read.contents.first() {
        Some(ResourceContents::Text(t)) => t.text.clone(),
        other => panic!("expected text contents, got {other:?}"),
    }
}

#[tokio::test]
async fn quickstart_serves_its_tool_resource_and_live_update_in_both_eras() {
    let server = ServerProcess::spawn("quickstart", &[]).await;
    for era in [EraMode::ForceModern, EraMode::ForceLegacy] {
        let options = ClientOptions::new("quickstart-test", "1.0.0").era(era);
        let client = Client::connect_http(HttpTarget::new(&server.url), options).await.expect("connecting");
        let sum = client.call_tool("add", json!({"a": 2, "b": 3.5})).await.expect("add");
        assert_eq!(sum.is_error, None, "{era:?}: {sum:?}");
        assert_eq!(sum.text(), "5.5", "{era:?}");
        // A bad argument is a tool error the model can read, not a broken connection.
        let bad = client.call_tool("add", json!({"a": "two"})).await;
        assert!(bad.is_err() || bad.as_ref().is_ok_and(|r| r.is_error == Some(true)), "{era:?}: {bad:?}");

        // The live update arrives through whichever mechanism the era has.
        let update = match era {
            EraMode::ForceModern => {
                let filter =
                    SubscriptionFilter::default().with_resource_subscriptions(vec!["clock://ticks".to_owned()]);
                let mut listen = client.listen(filter).await.expect("listen");
                tokio::time::timeout(WAIT, listen.next()).await.expect("a tick within the wait")
            }
            _ => {
                let mut sub = client.subscribe_resource("clock://ticks").await.expect("subscribe");
                tokio::time::timeout(WAIT, sub.next()).await.expect("a tick within the wait")
            }
        };
        let update = update.expect("the stream stayed open");
        assert_eq!(update.method, "notifications/resources/updated", "{era:?}");
        assert_eq!(update.params.as_ref().and_then(|p| p.get("uri")), Some(&json!("clock://ticks")), "{era:?}");
        let ticks: u64 =
            first_text(&client.read_resource("clock://ticks").await.expect("read")).parse().expect("a count");
        assert!(ticks >= 1, "{era:?}: a tick was announced, so at least one has happened ({ticks})");
        client.close().await;
    }
    server.stop().await;
}
