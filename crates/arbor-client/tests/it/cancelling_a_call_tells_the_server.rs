//! A call the caller gives up on (its future dropped, or its `CancellationToken` cancelled) is
//! cancelled on the server: `notifications/cancelled` on a stream link, in both eras. The
//! server's handler stopping is what is observed.

use std::time::Duration;

use arbor_client::{CallOptions, CancellationToken, ClientError, EraMode};
use serde_json::json;

use crate::support::Fixture;

/// Waits (bounded) until the server saw `n` handlers stopped.
pub(crate) async fn wait_stopped(fixture: &Fixture, n: usize) {
    for _ in 0..500 {
        if fixture.seen.stopped.lock().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the server saw {:?} stopped, wanted {n}", fixture.seen.stopped.lock());
}

#[tokio::test]
async fn dropping_a_call_cancels_it_in_both_eras() {
    let fixture = Fixture::new();
    let mut expected = 0;
    for era in [EraMode::ForceLegacy, EraMode::ForceModern] {
        let client = fixture.client(era).await;
        let call = client.call_tool("hang", json!({}));
        assert!(tokio::time::timeout(Duration::from_millis(100), call).await.is_err());
        expected += 1;
        wait_stopped(&fixture, expected).await;
        // The connection is still fine.
        assert!(client.call_tool("echo", json!({"message": "x"})).await.is_ok());
    }
}

#[tokio::test]
async fn a_cancel_token_ends_the_call_with_cancelled() {
    let fixture = Fixture::new();
    let client = fixture.client(EraMode::ForceModern).await;
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let err = client.call_tool_with("hang", json!({}), CallOptions::new().cancel_token(token)).await.unwrap_err();
    assert!(matches!(err, ClientError::Cancelled), "{err}");
    wait_stopped(&fixture, 1).await;
}

#[tokio::test]
async fn cancelling_a_parent_token_cancels_the_call_and_tells_the_server_in_both_eras() {
    let fixture = Fixture::new();
    let mut expected = 0;
    for era in [EraMode::ForceLegacy, EraMode::ForceModern] {
        let client = fixture.client(era).await;
        // The call holds a child: cancelling the caller's own token reaches it.
        let parent = CancellationToken::new();
        let options = CallOptions::new().cancel_token(parent.child_token());
        let trigger = parent.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            trigger.cancel();
        });
        let err = client.call_tool_with("hang", json!({}), options).await.unwrap_err();
        assert!(matches!(err, ClientError::Cancelled), "{err}");
        expected += 1;
        wait_stopped(&fixture, expected).await;
        // The connection is still fine, and a fresh token does not cancel anything.
        let options = CallOptions::new().cancel_token(CancellationToken::new());
        assert!(client.call_tool_with("echo", json!({"message": "x"}), options).await.is_ok());
    }
}
