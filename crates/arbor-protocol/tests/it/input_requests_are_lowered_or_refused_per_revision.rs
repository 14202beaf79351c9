//! Input requests lowered for a legacy revision ask the same question in that revision's
//! terms and validate against its schema, or are refused (-32603) when it cannot ask it.

use crate::spec_schemas::assert_valid;
use arbor_protocol::era::lower::input_request;
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::ErrorObject;
use arbor_protocol::model::mrtr::InputRequest;
use arbor_protocol::version::ProtocolVersion;
use serde_json::{json, Value};

fn lowered(request: Value, version: ProtocolVersion) -> Result<Value, McpError> {
    let mut request: InputRequest = serde_json::from_value(request).unwrap();
    input_request("q", &mut request, version)?;
    Ok(serde_json::to_value(&request).unwrap())
}

fn elicit(field: Value) -> Value {
    json!({"method": "elicitation/create", "params": {"mode": "form", "message": "m",
        "requestedSchema": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"f": field}}}})
}

fn refused(result: Result<Value, McpError>, needle: &str) {
    let err = ErrorObject::from(&result.expect_err("refused"));
    assert_eq!(err.code, -32603);
    assert!(err.message.contains(needle) && err.message.contains("`q`"), "{}", err.message);
}

#[test]
fn titled_single_select_becomes_enum_names_and_validates_in_2025_06_18() {
    let field = json!({"type": "string", "default": "a", "oneOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]});
    let v = lowered(elicit(field.clone()), ProtocolVersion::V2025_06_18).unwrap();
    let params = &v["params"];
    assert_eq!(
        params["requestedSchema"]["properties"]["f"],
        json!({"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]})
    );
    assert!(params.get("mode").is_none() && params["requestedSchema"].get("$schema").is_none(), "{v}");
    let mut message = json!({"jsonrpc": "2.0", "id": 1});
    message.as_object_mut().unwrap().extend(v.as_object().unwrap().clone());
    assert_valid("2025-06-18", "ElicitRequest", &message);
    // The revisions that have the form keep it as it is.
    for version in [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28] {
        assert_eq!(lowered(elicit(field.clone()), version).unwrap(), elicit(field.clone()));
    }
}

#[test]
fn multi_select_cannot_be_asked_before_2025_11_25() {
    for items in [json!({"type": "string", "enum": ["a"]}), json!({"anyOf": [{"const": "a", "title": "A"}]})] {
        let field = json!({"type": "array", "items": items});
        refused(lowered(elicit(field.clone()), ProtocolVersion::V2025_06_18), "multi-select enum field (`f`)");
        assert!(lowered(elicit(field), ProtocolVersion::V2025_11_25).is_ok());
    }
}

#[test]
fn sampling_blocks_a_revision_lacks_are_refused() {
    let sample = |content: Value| json!({"method": "sampling/createMessage", "params": {"maxTokens": 5, "messages": [{"role": "user", "content": content}]}});
    let audio = json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"});
    refused(lowered(sample(audio.clone()), ProtocolVersion::V2024_11_05), "audio");
    assert!(lowered(sample(audio), ProtocolVersion::V2025_03_26).is_ok());
    let tool_use = json!([{"type": "tool_use", "id": "1", "name": "t", "input": {}}]);
    refused(lowered(sample(tool_use.clone()), ProtocolVersion::V2025_06_18), "tool use");
    assert!(lowered(sample(tool_use), ProtocolVersion::V2025_11_25).is_ok());
    let text = json!({"type": "text", "text": "hi"});
    assert_eq!(lowered(sample(text.clone()), ProtocolVersion::V2024_11_05).unwrap(), sample(text));
}
