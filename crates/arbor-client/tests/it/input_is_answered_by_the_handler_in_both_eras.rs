//! Input the server needs comes back to the client's handler in both eras: as an MRTR
//! `input_required` result in 2026-07-28 (answered in the calling task, then the request
//! retried with the answers, the echoed `requestState` and a new id), as a server-to-client
//! `elicitation/create` request tied to the call in the legacy era.

use std::sync::Arc;

use arbor_client::{CallOptions, ClientOptions, EraMode};
use arbor_protocol::version::Era;
use serde_json::json;

use crate::support::{AnsweringHandler, Fixture};

fn text(result: &arbor_protocol::model::tools::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn modern_input_required_is_answered_and_retried_with_the_request_state() {
    let fixture = Fixture::new();
    let client =
        fixture.client_with(ClientOptions::default().era(EraMode::ForceModern).handler(AnsweringHandler)).await;
    assert_eq!(client.era(), Some(Era::Modern));
    let result = client.call_tool("ask", json!({})).await.unwrap();
    // The server's handler sees the answer and the state it sealed in round one.
    assert_eq!(text(&result), "hello Ada ({\"round\":1})");
}

#[tokio::test]
async fn modern_input_without_a_handler_is_a_protocol_error_from_the_server() {
    // No handler: the client declares no elicitation, so the server refuses (-32021)
    // rather than asking.
    let fixture = Fixture::new();
    let client = fixture.client(EraMode::ForceModern).await;
    let err = client.call_tool("ask", json!({})).await.unwrap_err();
    assert_eq!(err.rpc_code().map(|c| c.as_i64()), Some(-32021), "{err}");
}

#[tokio::test]
async fn legacy_elicitation_goes_through_the_handler_runtime_with_the_calls_assigns() {
    let fixture = Fixture::new();
    let client =
        fixture.client_with(ClientOptions::default().era(EraMode::ForceLegacy).handler(AnsweringHandler)).await;
    assert_eq!(client.era(), Some(Era::Legacy));
    let result = client.call_tool("ask", json!({})).await.unwrap();
    assert_eq!(text(&result), "hello Ada ({\"round\":1})");
    let assigns = Arc::new(json!({"name": "Grace"}).as_object().unwrap().clone());
    let result = client.call_tool_with("ask", json!({}), CallOptions::new().assigns(assigns)).await.unwrap();
    assert_eq!(text(&result), "hello Grace ({\"round\":1})", "the handler saw the call's assigns");
}
