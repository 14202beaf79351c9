//! `conformance_server --port 0` is set up for SEP-1699 polling (what the suite's
//! `server-sse-polling` measures): a 2025-11-25 POST still unanswered turns into an SSE
//! stream with a priming event, the server closes it, and the result comes on the GET
//! that resumes after the last event id.

use serde_json::json;

use crate::http::{Client, ServerProcess, Sse};

#[tokio::test]
async fn a_slow_call_is_cut_after_its_priming_event_and_answered_on_the_resumed_stream() {
    let server = ServerProcess::spawn("conformance_server", &[]).await;
    let client = Client::new(&server.url);
    let session = client.open_session().await;

    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "test_reconnection", "arguments": {}}});
    let response = client.legacy(Some(&session), call).await;
    assert_eq!(response.status(), 200);
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    assert!(content_type.starts_with("text/event-stream"), "a slow call becomes a stream, got {content_type}");
    let mut first = Sse::new(response);
    let before_cut = first.until_end().await;
    assert!(before_cut.iter().all(|m| m.get("id").is_none()), "answered before the cut: {before_cut:?}");
    let resume_from = first.last_event_id.clone().expect("a priming event id to resume from");

    let mut resumed = client.resume(&session, &resume_from).await;
    let answer = loop {
        let message = resumed.next().await.unwrap();
        if message.get("id").is_some() {
            break message;
        }
    };
    assert_eq!(answer["id"], 7, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("Reconnection test completed"), "{answer}");

    drop(resumed);
    assert!(server.stop().await.success());
}
