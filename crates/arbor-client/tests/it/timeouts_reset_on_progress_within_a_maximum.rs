//! A call's timeout, on tokio's paused clock: progress resets it (when enabled), the
//! maximum total bounds it whatever the progress, and a timed-out call is cancelled
//! towards the server.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_client::{CallOptions, ClientError, EraMode};
use serde_json::json;

use crate::support::Fixture;

/// `slow` sends 5 progress notifications 40 s apart (200 s in all) against a 60 s timeout.
const SLOW: fn() -> serde_json::Value = || json!({"steps": 5, "every": 40});

#[tokio::test(start_paused = true)]
async fn progress_resets_the_timeout_in_both_eras() {
    let fixture = Fixture::new();
    for era in [EraMode::ForceLegacy, EraMode::ForceModern] {
        let client = fixture.client(era).await;
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        let options = CallOptions::new().timeout(Duration::from_secs(60)).on_progress(move |p| {
            counter.fetch_add(1, Ordering::SeqCst);
            assert_eq!(p.total, Some(5.0));
        });
        let result = client.call_tool_with("slow", SLOW(), options).await.unwrap();
        assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "done", "{era:?}");
        assert_eq!(seen.load(Ordering::SeqCst), 5, "{era:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn without_reset_the_first_timeout_ends_the_call_and_cancels_it() {
    let fixture = Fixture::new();
    let client = fixture.client(EraMode::ForceLegacy).await;
    let options = CallOptions::new().timeout(Duration::from_secs(60)).reset_on_progress(false).on_progress(|_| {});
    let err = client.call_tool_with("slow", SLOW(), options).await.unwrap_err();
    assert!(matches!(err, ClientError::Timeout(d) if d == Duration::from_secs(60)), "{err}");
    // Nothing is left pending: the next call works and late progress is ignored.
    assert!(client.call_tool("echo", json!({"message": "x"})).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn the_maximum_total_bounds_a_call_whatever_its_progress() {
    let fixture = Fixture::new();
    let client = fixture.client(EraMode::ForceModern).await;
    let started = tokio::time::Instant::now();
    let options = CallOptions::new()
        .timeout(Duration::from_secs(60))
        .max_total_timeout(Duration::from_secs(100))
        .on_progress(|_| {});
    let err = client.call_tool_with("slow", SLOW(), options).await.unwrap_err();
    assert!(matches!(err, ClientError::Timeout(d) if d == Duration::from_secs(100)), "{err}");
    assert_eq!(started.elapsed().as_secs(), 100);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_cancels_the_request_on_the_server() {
    let fixture = Fixture::new();
    let client = fixture.client(EraMode::ForceLegacy).await;
    let err = client.call_tool_with("hang", json!({}), CallOptions::new().timeout(Duration::from_secs(5))).await;
    assert!(matches!(err, Err(ClientError::Timeout(_))));
    crate::cancelling_a_call_tells_the_server::wait_stopped(&fixture, 1).await;
}
