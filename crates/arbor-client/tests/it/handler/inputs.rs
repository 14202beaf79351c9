//! Modern era: `answer_inputs` for the `inputRequests` of an `input_required` result.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use arbor_client::handler::{CallLink, ClientLimits, InputHandlerError, InputKind};
use serde_json::{json, Map, Value};

use super::support::{rig, Behave, TestHandler, TestLink};

/// The spec's example (2026-07-28 `InputRequests`), plus a roots request.
fn example() -> Map<String, Value> {
    let v = json!({
        "github_login": {"method": "elicitation/create", "params": {"mode": "form",
            "message": "Please provide your GitHub username",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}},
        "capital_of_france": {"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
            "maxTokens": 100}},
        "workspace": {"method": "roots/list"}
    });
    v.as_object().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn every_input_request_is_answered_in_the_calling_task() {
    let r = rig(TestHandler::all, ClientLimits::default()).await;
    let link = TestLink::new(3);
    *r.handler.link.lock() = Some(link.clone());
    let as_link: Arc<dyn CallLink> = link.clone();
    let responses = r.runtime.answer_inputs(&example(), Some(as_link)).await.expect("answered");
    assert_eq!(
        Value::Object(responses),
        json!({
            "github_login": {"action": "accept", "content": {"name": "octocat"}},
            "capital_of_france": {"role": "assistant", "content": {"type": "text", "text": "The capital of France is Paris."},
                "model": "test-model", "stopReason": "endTurn"},
            "workspace": {"roots": [{"uri": "file:///work/repo", "name": "repo"}]}
        })
    );
    let seen = r.handler.seen();
    assert_eq!(seen.len(), 3);
    for s in &seen {
        assert_eq!(s.paused, 1, "{}: the retried call's deadline is paused", s.kind);
        assert_eq!(s.assigns.as_deref().unwrap()["user"], "alice");
        assert_eq!(s.related, None, "modern input has no related request id");
    }
    assert_eq!(link.paused.load(Ordering::SeqCst), 0);
    assert_eq!(r.runtime.requests_in_flight(), 0, "no task was spawned");
}

#[tokio::test(start_paused = true)]
async fn a_handler_error_aborts_with_a_typed_error() {
    let r = rig(TestHandler::all, ClientLimits::default()).await;
    *r.handler.behave.lock() = Behave::Fail;
    let err = r.runtime.answer_inputs(&example(), None).await.unwrap_err();
    let first = example().keys().next().unwrap().clone();
    match err {
        InputHandlerError::Handler { key, error } => {
            assert_eq!(key, first, "callbacks run in the map's order; the first one failed");
            assert_eq!(error.code().as_i64(), -42);
        }
        other => panic!("wanted Handler, got {other:?}"),
    }
    assert_eq!(r.handler.calls(), 1, "nothing ran after the failure");
}

#[tokio::test(start_paused = true)]
async fn panics_and_timeouts_are_typed_errors() {
    let r = rig(TestHandler::all, ClientLimits::default()).await;
    let one = |key: &str, v: Value| -> Map<String, Value> { [(key.to_owned(), v)].into_iter().collect() };
    *r.handler.behave.lock() = Behave::Panic;
    let err = r.runtime.answer_inputs(&one("r", json!({"method": "roots/list"})), None).await.unwrap_err();
    assert!(matches!(err, InputHandlerError::Panicked { ref key, .. } if key == "r"), "{err:?}");
    *r.handler.behave.lock() = Behave::Pend;
    let err = r.runtime.answer_inputs(&one("r", json!({"method": "roots/list"})), None).await.unwrap_err();
    assert_eq!(err, InputHandlerError::TimedOut { key: "r".into(), after: Duration::from_secs(60) });
    // Both callbacks ended early: one unwound, one was dropped at its timeout.
    assert_eq!(r.handler.abandoned.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn refusals_come_before_any_callback() {
    // Only sampling declared: the elicitation in the example is a protocol error, and the
    // sampling request in the same round never reaches its callback (all are checked first).
    let r = rig(|tx| TestHandler { sampling: true, ..TestHandler::new(tx) }, ClientLimits::default()).await;
    let err = r.runtime.answer_inputs(&example(), None).await.unwrap_err();
    assert_eq!(err, InputHandlerError::Undeclared { key: "github_login".into(), kind: InputKind::Elicitation });
    assert_eq!(r.handler.calls(), 0);

    let r = rig(TestHandler::all, ClientLimits::default()).await;
    type Check = fn(&InputHandlerError) -> bool;
    let cases: Vec<(Value, Check)> = vec![
        (json!({"method": "tools/call", "params": {}}), |e| matches!(e, InputHandlerError::InvalidRequest { .. })),
        (json!({"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 0}}), |e| {
            matches!(e, InputHandlerError::InvalidRequest { .. })
        }),
        (
            json!({"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "http://x.org/"}}),
            |e| matches!(e, InputHandlerError::InvalidRequest { .. }),
        ),
        (
            json!({"method": "sampling/createMessage", "params": {"maxTokens": 5, "messages": (0..6).map(|i| json!(
                {"role": "assistant", "content": {"type": "tool_use", "id": format!("t{i}"), "name": "x", "input": {}}})).collect::<Vec<_>>()}}),
            |e| matches!(e, InputHandlerError::Refused { code: -1, .. }),
        ),
    ];
    for (request, check) in cases {
        let requests: Map<String, Value> = [("k".to_owned(), request.clone())].into_iter().collect();
        let err = r.runtime.answer_inputs(&requests, None).await.unwrap_err();
        assert!(check(&err), "{request}: {err:?}");
    }
    assert_eq!(r.handler.calls(), 0);

    // An answer off the schema is not sent.
    *r.handler.elicit_answer.lock() = json!({"action": "accept", "content": {}});
    let mut requests = example();
    requests.remove("capital_of_france");
    let err = r.runtime.answer_inputs(&requests, None).await.unwrap_err();
    assert!(matches!(err, InputHandlerError::InvalidAnswer { ref key, .. } if key == "github_login"), "{err:?}");
}

#[tokio::test(start_paused = true)]
async fn modern_input_shares_the_rate_limit() {
    let r = rig(TestHandler::all, ClientLimits::default()).await;
    let many: Map<String, Value> = (0..21).map(|i| (format!("k{i:02}"), json!({"method": "roots/list"}))).collect();
    let err = r.runtime.answer_inputs(&many, None).await.unwrap_err();
    assert_eq!(err, InputHandlerError::RateLimited { key: "k20".into() });
    assert_eq!(r.handler.calls(), 0, "refused before any callback");
    tokio::time::advance(Duration::from_secs(2)).await;
    let few: Map<String, Value> = (0..3).map(|i| (format!("k{i}"), json!({"method": "roots/list"}))).collect();
    assert_eq!(r.runtime.answer_inputs(&few, None).await.unwrap().len(), 3);
}
