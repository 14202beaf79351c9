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

/// Answers after 30 s: a user taking their time.
struct SlowUser;

impl arbor_client::handler::ElicitationHandler for SlowUser {
    async fn handle_elicitation(
        &self,
        params: arbor_protocol::model::elicitation::ElicitRequestParams,
        ctx: &arbor_client::handler::ElicitationContext,
    ) -> Result<arbor_protocol::model::elicitation::ElicitResult, arbor_protocol::error::McpError> {
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        crate::support::Answers.handle_elicitation(params, ctx).await
    }
}

struct SlowHandler;

impl arbor_client::handler::ClientHandler for SlowHandler {
    fn elicitation(&self) -> Option<&impl arbor_client::handler::ElicitationHandler> {
        Some(&SlowUser)
    }
}

#[tokio::test(start_paused = true)]
async fn a_legacy_server_request_pauses_its_calls_deadline_within_the_maximum() {
    use arbor_client::ClientError;
    use std::time::Duration;
    let fixture = Fixture::new();
    let client = fixture.client_with(ClientOptions::default().era(EraMode::ForceLegacy).handler(SlowHandler)).await;
    // 30 s of user think time against a 5 s timeout: the deadline is paused meanwhile.
    let options = CallOptions::new().timeout(Duration::from_secs(5));
    let result = client.call_tool_with("ask", json!({}), options).await.unwrap();
    assert_eq!(text(&result), "hello Ada ({\"round\":1})");
    // Paused, but never past the maximum total.
    let options = CallOptions::new().timeout(Duration::from_secs(5)).max_total_timeout(Duration::from_secs(20));
    let err = client.call_tool_with("ask", json!({}), options).await.unwrap_err();
    assert!(matches!(err, ClientError::Timeout(d) if d == Duration::from_secs(20)), "{err}");
}

/// Refuses every elicitation with an error.
struct Refuser;

impl arbor_client::handler::ElicitationHandler for Refuser {
    async fn handle_elicitation(
        &self,
        _: arbor_protocol::model::elicitation::ElicitRequestParams,
        _: &arbor_client::handler::ElicitationContext,
    ) -> Result<arbor_protocol::model::elicitation::ElicitResult, arbor_protocol::error::McpError> {
        Err(arbor_protocol::error::McpError::internal("no user at the keyboard"))
    }
}

struct RefusingHandler;

impl arbor_client::handler::ClientHandler for RefusingHandler {
    fn elicitation(&self) -> Option<&impl arbor_client::handler::ElicitationHandler> {
        Some(&Refuser)
    }
}

#[tokio::test]
async fn modern_input_rounds_are_bounded_and_handler_errors_are_typed() {
    use arbor_client::ClientError;
    let fixture = Fixture::new();
    let options = ClientOptions::default().era(EraMode::ForceModern).handler(AnsweringHandler).max_input_rounds(3);
    let client = fixture.client_with(options).await;
    let err = client.call_tool("ask_forever", json!({})).await.unwrap_err();
    assert!(matches!(err, ClientError::TooManyInputRounds(3)), "{err}");

    let refusing =
        fixture.client_with(ClientOptions::default().era(EraMode::ForceModern).handler(RefusingHandler)).await;
    let err = refusing.call_tool("ask", json!({})).await.unwrap_err();
    assert!(matches!(err, ClientError::InputHandler(_)), "{err}");
}
