//! Every error code has one wire form, the spec's examples read back into the
//! typed error that writes them again, and a peer's unknown error survives.

use crate::strategies::error_object;
use arbor_protocol::error::{decode_error_response, ErrorCode, McpError};
use arbor_protocol::jsonrpc::{decode_message, DecodeErrorKind, ErrorObject, Message, RequestId};
use arbor_protocol::version::ProtocolVersion;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::path::Path;

fn wire(err: &McpError) -> Value {
    serde_json::to_value(ErrorObject::from(err)).unwrap()
}

#[test]
fn each_typed_error_has_its_code_and_data() {
    let cases = [
        (
            McpError::method_not_found("tools/frobnicate"),
            json!({"code": -32601, "message": "Method not found: tools/frobnicate"}),
        ),
        (McpError::invalid_params("Unknown tool: x"), json!({"code": -32602, "message": "Unknown tool: x"})),
        (McpError::internal("boom"), json!({"code": -32603, "message": "boom"})),
        (
            McpError::header_mismatch("Header mismatch: Mcp-Name header value 'foo' does not match body value 'bar'"),
            json!({"code": -32020, "message": "Header mismatch: Mcp-Name header value 'foo' does not match body value 'bar'"}),
        ),
        (
            McpError::missing_client_capability(json!({"elicitation": {}})),
            json!({"code": -32021, "message": "Missing required client capability",
                   "data": {"requiredCapabilities": {"elicitation": {}}}}),
        ),
        (
            McpError::unsupported_version(["2026-07-28", "2025-11-25"], "1900-01-01"),
            json!({"code": -32022, "message": "Unsupported protocol version",
                   "data": {"supported": ["2026-07-28", "2025-11-25"], "requested": "1900-01-01"}}),
        ),
        (
            McpError::resource_not_found("file:///x", ProtocolVersion::V2026_07_28),
            json!({"code": -32602, "message": "Resource not found", "data": {"uri": "file:///x"}}),
        ),
        (
            McpError::resource_not_found("file:///x", ProtocolVersion::V2025_11_25),
            json!({"code": -32002, "message": "Resource not found", "data": {"uri": "file:///x"}}),
        ),
        (
            McpError::UrlElicitationRequired {
                message: "URL elicitation required".into(),
                elicitations: vec![json!({"mode": "url"})],
            },
            json!({"code": -32042, "message": "URL elicitation required", "data": {"elicitations": [{"mode": "url"}]}}),
        ),
        (McpError::server_busy(), json!({"code": -32000, "message": "Server busy"})),
    ];
    for (err, expected) in cases {
        assert_eq!(wire(&err), expected, "{err}");
        // Reading the wire form back gives the same typed error, except that a
        // modern "resource not found" is, on the wire, just invalid params.
        let back = McpError::from(ErrorObject::from(&err));
        assert_eq!(wire(&back), expected);
        match err {
            McpError::ResourceNotFound { .. } => assert!(matches!(back, McpError::InvalidParams { .. })),
            _ => assert_eq!(back, err),
        }
    }
}

#[test]
fn codes_classify_every_range() {
    let known = [
        (-32700, ErrorCode::ParseError),
        (-32600, ErrorCode::InvalidRequest),
        (-32601, ErrorCode::MethodNotFound),
        (-32602, ErrorCode::InvalidParams),
        (-32603, ErrorCode::InternalError),
        (-32002, ErrorCode::ResourceNotFound),
        (-32020, ErrorCode::HeaderMismatch),
        (-32021, ErrorCode::MissingRequiredClientCapability),
        (-32022, ErrorCode::UnsupportedProtocolVersion),
        (-32042, ErrorCode::UrlElicitationRequired),
    ];
    for (n, code) in known {
        assert_eq!(ErrorCode::from_i64(n), code);
        assert_eq!(code.as_i64(), n);
    }
    assert_eq!(ErrorCode::from_i64(-32000), ErrorCode::ServerError(-32000));
    assert_eq!(ErrorCode::from_i64(-32019), ErrorCode::ServerError(-32019));
    // The drafts' numbers for the modern errors are not the modern errors.
    assert_eq!(ErrorCode::from_i64(-32001), ErrorCode::ServerError(-32001));
    assert_eq!(ErrorCode::from_i64(-32003), ErrorCode::ServerError(-32003));
    assert_eq!(ErrorCode::from_i64(-32099), ErrorCode::Reserved(-32099));
    assert_eq!(ErrorCode::from_i64(-32768), ErrorCode::Reserved(-32768));
    assert_eq!(ErrorCode::from_i64(-32769), ErrorCode::Application(-32769));
    assert_eq!(ErrorCode::from_i64(-31999), ErrorCode::Application(-31999));
    assert_eq!(ErrorCode::from_i64(1), ErrorCode::Application(1));

    let modern: Vec<_> = known.iter().filter(|(_, c)| c.is_modern_signal()).map(|(n, _)| *n).collect();
    assert_eq!(modern, [-32020, -32021, -32022]);
    let retired: Vec<_> = known.iter().filter(|(_, c)| c.is_retired()).map(|(n, _)| *n).collect();
    assert_eq!(retired, [-32002, -32042]);
}

#[test]
fn the_spec_examples_read_into_typed_errors_and_write_back_unchanged() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/spec/2026-07-28/examples");
    let kinds = [
        ("ParseError", ErrorCode::ParseError),
        ("InvalidParamsError", ErrorCode::InvalidParams),
        ("InternalError", ErrorCode::InternalError),
        ("MethodNotFoundError", ErrorCode::MethodNotFound),
        ("HeaderMismatchError", ErrorCode::HeaderMismatch),
        ("MissingRequiredClientCapabilityError", ErrorCode::MissingRequiredClientCapability),
        ("UnsupportedProtocolVersionError", ErrorCode::UnsupportedProtocolVersion),
    ];
    let mut seen = 0;
    for (dir, code) in kinds {
        for entry in std::fs::read_dir(examples.join(dir)).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            let value: Value = serde_json::from_str(&text).unwrap();
            // Some examples are whole responses, some bare error objects.
            let object = value.get("error").cloned().unwrap_or(value.clone());
            let obj: ErrorObject = serde_json::from_value(object.clone()).unwrap();
            let err = McpError::from(obj.clone());
            assert_eq!(err.code(), code, "{dir}");
            assert!(!matches!(err, McpError::Other { .. }), "{dir} was not read as a typed error");
            assert_eq!(wire(&err), object, "{dir}");
            if value.get("jsonrpc").is_some() {
                let Message::Error(resp) = decode_message(text.as_bytes()).unwrap() else { panic!("{dir}") };
                assert_eq!(McpError::from(resp.error), err);
            }
            seen += 1;
        }
    }
    assert!(seen >= 7);
}

#[test]
fn a_known_code_with_an_unexpected_shape_is_kept_verbatim() {
    for obj in [
        json!({"code": -32022, "message": "Unsupported protocol version"}),
        json!({"code": -32022, "message": "m", "data": {"supported": ["x"], "requested": "y", "extra": 1}}),
        json!({"code": -32021, "message": "m", "data": {}}),
        json!({"code": -32020, "message": "m", "data": "why"}),
        json!({"code": -32002, "message": "m", "data": {"uri": 7}}),
    ] {
        let err = McpError::from(serde_json::from_value::<ErrorObject>(obj.clone()).unwrap());
        assert!(matches!(err, McpError::Other { .. }), "{obj}");
        assert_eq!(wire(&err), obj);
        // The code still classifies, so era detection still sees a modern error.
        assert_eq!(err.code(), ErrorCode::from_i64(obj["code"].as_i64().unwrap()));
    }
}

#[test]
fn both_forms_of_resource_not_found_are_recognised() {
    assert!(McpError::resource_not_found("a:b", ProtocolVersion::V2026_07_28).is_resource_not_found());
    assert!(McpError::resource_not_found("a:b", ProtocolVersion::V2024_11_05).is_resource_not_found());
    let legacy = McpError::from(ErrorObject { code: -32002, message: "Resource not found".into(), data: None });
    assert!(legacy.is_resource_not_found());
    assert!(!McpError::invalid_params("Unknown tool: x").is_resource_not_found());
}

#[test]
fn decode_errors_become_parse_or_invalid_request_responses_with_the_id() {
    let err = decode_message(b"{oops").unwrap_err();
    let response = decode_error_response(&err);
    let value = response.to_value();
    assert_eq!(value["error"]["code"], -32700);
    assert!(value.get("id").is_none());

    let err = decode_message(br#"{"jsonrpc":"1.0","id":"q","method":"x"}"#).unwrap_err();
    assert_eq!(err.kind, DecodeErrorKind::InvalidRequest);
    let Message::Error(e) = decode_error_response(&err) else { panic!() };
    assert_eq!((e.id, e.error.code), (Some(RequestId::from("q")), -32600));
}

#[test]
fn method_table_errors_take_their_codes_from_here() {
    use arbor_protocol::methods::{MethodError, MethodName, ParamsError, UnknownMethod};
    let unknown = MethodError::from(UnknownMethod { method: "x/y".into() });
    let params = MethodError::from(ParamsError { method: MethodName::CallTool, detail: "missing field `name`".into() });
    let wrong = MethodError::WrongKind { expected: "request" };
    for e in [unknown, params, wrong] {
        assert_eq!(McpError::from(&e).code().as_i64(), e.code(), "{e}");
    }
    let err = McpError::from(MethodError::from(UnknownMethod { method: "x/y".into() }));
    assert_eq!(wire(&err), json!({"code": -32601, "message": "Method not found: x/y"}));
    assert_eq!(err.to_string(), "-32601 Method not found: x/y");
}

#[test]
fn error_responses_validate_against_the_schemas() {
    use crate::spec_schemas::assert_valid;
    let id = Some(RequestId::from(1));
    let cases = [
        ("2026-07-28", "UnsupportedProtocolVersionError", McpError::unsupported_version(["2026-07-28"], "1900-01-01")),
        (
            "2026-07-28",
            "MissingRequiredClientCapabilityError",
            McpError::missing_client_capability(json!({"elicitation": {}})),
        ),
        ("2026-07-28", "HeaderMismatchError", McpError::header_mismatch("Header mismatch: Mcp-Method is missing")),
        ("2026-07-28", "JSONRPCErrorResponse", McpError::resource_not_found("file:///x", ProtocolVersion::V2026_07_28)),
        (
            "2025-11-25",
            "URLElicitationRequiredError",
            McpError::UrlElicitationRequired {
                message: "URL elicitation required".into(),
                elicitations: vec![json!({"mode": "url", "message": "Sign in", "url": "https://example.com/a",
                                          "elicitationId": "e-1"})],
            },
        ),
        ("2024-11-05", "JSONRPCError", McpError::resource_not_found("file:///x", ProtocolVersion::V2024_11_05)),
    ];
    for (revision, definition, err) in cases {
        assert_valid(revision, definition, &err.to_response(id.clone()).to_value());
    }
    // An error answering an unreadable id leaves the id out, which 2025-11-25 on accept.
    let err = decode_message(b"{oops").unwrap_err();
    for revision in ["2025-11-25", "2026-07-28"] {
        assert_valid(revision, "JSONRPCErrorResponse", &decode_error_response(&err).to_value());
    }
}

proptest! {
    #[test]
    fn every_code_classifies_to_itself(n in any::<i64>()) {
        prop_assert_eq!(ErrorCode::from_i64(n).as_i64(), n);
    }

    #[test]
    fn any_error_object_survives_a_typed_round_trip(obj in error_object()) {
        let err = McpError::from(obj.clone());
        prop_assert_eq!(err.code().as_i64(), obj.code);
        prop_assert_eq!(ErrorObject::from(&err), obj);
    }

    #[test]
    fn typed_errors_survive_a_wire_round_trip(
        supported in prop::collection::vec("[0-9-]{1,12}", 0..4),
        requested in any::<String>(),
        message in any::<String>(),
    ) {
        let err = McpError::UnsupportedProtocolVersion { message, supported, requested };
        let bytes = err.to_response(Some(1.into())).to_vec();
        let Ok(Message::Error(resp)) = decode_message(&bytes) else { return Err(TestCaseError::fail("not an error")) };
        prop_assert_eq!(McpError::from(resp.error), err);
    }
}
