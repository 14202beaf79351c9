//! A response's result is read with the pending request's result type; for methods
//! that may answer `input_required` or a task, `resultType` picks the variant.

use arbor_protocol::jsonrpc::{decode_raw, RawMessage};
use arbor_protocol::method::decode_result;
use arbor_protocol::methods::{CallTool, ListTools};
use arbor_protocol::model::common::ResultType;
use arbor_protocol::model::mrtr::Outcome;

fn call_tool(result: &str) -> Outcome<arbor_protocol::model::tools::CallToolResult> {
    let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
    let RawMessage::Response { result, .. } = decode_raw(frame.as_bytes()).unwrap() else { panic!("not a response") };
    decode_result::<CallTool>(result).unwrap()
}

#[test]
fn result_type_picks_the_variant() {
    assert!(matches!(call_tool(r#"{"content":[]}"#), Outcome::Complete(r) if r.result_type.is_none()));
    assert!(matches!(
        call_tool(r#"{"content":[],"resultType":"complete"}"#),
        Outcome::Complete(r) if r.result_type == Some(ResultType::Complete)
    ));
    assert!(matches!(
        call_tool(r#"{"requestState":"s","resultType":"input_required"}"#),
        Outcome::InputRequired(r) if r.request_state.as_deref() == Some("s")
    ));
    let task = r#""taskId":"t","status":"working","createdAt":"a","lastUpdatedAt":"b""#;
    assert!(matches!(
        call_tool(&format!(r#"{{{task},"ttlMs":null,"resultType":"task"}}"#)),
        Outcome::Task(t) if t.task_id == "t" && t.ttl_ms == Some(None)
    ));
    assert!(matches!(
        call_tool(&format!(r#"{{"task":{{{task},"ttl":1000}}}}"#)),
        Outcome::ExperimentalTask(t) if t.task.ttl == Some(Some(1000))
    ));
}

#[test]
fn a_result_that_does_not_fit_is_a_typed_error() {
    let frame = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":"not a list"}}"#;
    let RawMessage::Response { result, .. } = decode_raw(frame).unwrap() else { panic!("not a response") };
    let e = decode_result::<ListTools>(result).unwrap_err();
    assert_eq!(e.method, arbor_protocol::methods::MethodName::ListTools);
    let frame = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":7}}"#;
    let RawMessage::Response { result, .. } = decode_raw(frame).unwrap() else { panic!("not a response") };
    assert!(decode_result::<CallTool>(result).is_err());
}
