//! The header rules against the spec's examples, the round trip, and each way a request's
//! headers can disagree with its body.

use super::*;
use proptest::prelude::*;
use serde_json::json;

#[test]
fn the_spec_encoding_examples_hold() {
    assert_eq!(encode_header_value(&json!("us-west1")).unwrap(), "us-west1");
    assert_eq!(encode_header_value(&json!("Hello, 世界")).unwrap(), "=?base64?SGVsbG8sIOS4lueVjA==?=");
    assert_eq!(encode_header_value(&json!(" padded ")).unwrap(), "=?base64?IHBhZGRlZCA=?=");
    assert_eq!(encode_header_value(&json!("line1\nline2")).unwrap(), "=?base64?bGluZTEKbGluZTI=?=");
    assert_eq!(encode_header_value(&json!("=?base64?literal?=")).unwrap(), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
    assert_eq!(encode_header_value(&json!(42)).unwrap(), "42");
    assert_eq!(encode_header_value(&json!(-7)).unwrap(), "-7");
    assert_eq!(encode_header_value(&json!(true)).unwrap(), "true");
    assert_eq!(encode_header_value(&json!(false)).unwrap(), "false");
    assert_eq!(encode_header_value(&json!("two words")).unwrap(), "two words");
    for none in [json!(null), json!({}), json!([1])] {
        assert_eq!(encode_header_value(&none), None);
    }
}

#[test]
fn awkward_strings_are_encoded() {
    for s in ["", " ", "tab\there", "trailing ", "\u{7f}", "é"] {
        let encoded = encode_header_value(&json!(s)).unwrap();
        assert!(encoded.starts_with("=?base64?") && encoded.ends_with("?="), "{s:?} -> {encoded}");
        assert_eq!(decode_header_value(&encoded).unwrap(), s);
    }
}

#[test]
fn decoding_refuses_bad_values() {
    assert_eq!(decode_header_value("plain value").unwrap(), "plain value");
    assert_eq!(decode_header_value("=?base64?SGVsbG8=?=").unwrap(), "Hello");
    // SEP-2243's test cases: unpadded base64 is invalid and the server must reject it.
    assert_eq!(decode_header_value("=?base64?SGVsbG8?="), Err(HeaderError::InvalidBase64));
    assert_eq!(decode_header_value("line1\nline2"), Err(HeaderError::InvalidCharacters));
    assert_eq!(decode_header_value("caf\u{e9}"), Err(HeaderError::InvalidCharacters));
    assert_eq!(decode_header_value("=?base64?%%%?="), Err(HeaderError::InvalidBase64));
    // Valid base64 of bytes that are not UTF-8.
    assert_eq!(decode_header_value("=?base64?//4=?="), Err(HeaderError::InvalidBase64));
    // The markers are case-sensitive: this is a plain value.
    assert_eq!(decode_header_value("=?BASE64?SGk=?=").unwrap(), "=?BASE64?SGk=?=");
}

proptest! {
    #[test]
    fn any_string_round_trips(s in any::<String>()) {
        let encoded = encode_header_value(&json!(s)).unwrap();
        prop_assert!(encoded.bytes().all(|b| (0x20..=0x7e).contains(&b)), "header-safe: {encoded:?}");
        prop_assert!(!encoded.starts_with(' ') && !encoded.ends_with(' ') && !encoded.is_empty());
        prop_assert_eq!(decode_header_value(&encoded).unwrap(), s);
    }

    #[test]
    fn any_integer_agrees_with_its_encoding(n in any::<i64>()) {
        let value = json!(n);
        prop_assert!(agrees(&decode_header_value(&encode_header_value(&value).unwrap()).unwrap(), &value));
    }
}

#[test]
fn annotations_are_read_from_properties_chains_only() {
    let schema = json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"},
            "target": {"type": "object", "properties": {"zone": {"type": "integer", "x-mcp-header": "Zone"}}},
            "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}},
        },
        "oneOf": [{"properties": {"x": {"type": "string", "x-mcp-header": "X"}}}],
    });
    let found = param_headers(&schema);
    assert_eq!(found.len(), 2, "{found:?}");
    let region = found.iter().find(|p| p.header == "Region").unwrap();
    assert_eq!(region, &ParamHeader::new("Region", "region"));
    let zone = found.iter().find(|p| p.header == "Zone").unwrap();
    assert_eq!(zone.argument, "target");
    assert_eq!(zone.path, ["target", "zone"]);
    assert_eq!(zone.value_in(&json!({"target": {"zone": 3}})), Some(&json!(3)));
    assert_eq!(param_headers(&json!({"type": "object"})), vec![]);
}

/// A case-insensitive header map, as the HTTP layer passes it.
/// A case-insensitive lookup over `pairs`, as a request's header map gives.
fn headers<'h>(pairs: &'h [(&'h str, &'h str)]) -> impl Fn(&str) -> Option<Result<&'h str, ()>> + 'h {
    move |name: &str| pairs.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| Ok(*v))
}

const V: &str = "2026-07-28";

fn check(
    pairs: &[(&str, &str)],
    method: &str,
    params: serde_json::Value,
    annotations: &[ParamHeader],
) -> Result<(), McpError> {
    check_request_headers(&headers(pairs), method, Some(&params), V, annotations)
}

fn refused(result: Result<(), McpError>, naming: &str) {
    let err = result.expect_err("should be refused");
    assert_eq!(err.code(), crate::error::ErrorCode::HeaderMismatch);
    assert!(err.message().contains(naming), "{} should name {naming}", err.message());
}

#[test]
fn agreeing_headers_pass() {
    let annotations = [ParamHeader::new("Region", "region"), ParamHeader::new("Count", "count")];
    let params = json!({"name": "héllo", "arguments": {"region": "us-west1", "count": 42, "query": "x"}});
    let pairs = [
        ("mcp-protocol-version", V),
        ("MCP-METHOD", "tools/call"),
        ("Mcp-Name", "=?base64?aMOpbGxv?="),
        ("mcp-param-region", "us-west1"),
        ("Mcp-Param-Count", "42.0"),
    ];
    check(&pairs, "tools/call", params, &annotations).unwrap();
    let pairs = [("MCP-Protocol-Version", V), ("Mcp-Method", "resources/read"), ("Mcp-Name", "file:///a b")];
    check(&pairs, "resources/read", json!({"uri": "file:///a b"}), &[]).unwrap();
    let pairs = [("MCP-Protocol-Version", V), ("Mcp-Method", "tools/list")];
    check(&pairs, "tools/list", json!({}), &[]).unwrap();
    // Absent and null arguments expect no header.
    let pairs = [("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "t")];
    check(&pairs, "tools/call", json!({"name": "t", "arguments": {"region": null}}), &annotations).unwrap();
}

#[test]
fn each_disagreement_is_refused_naming_its_header() {
    let base = [("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "t")];
    let call = json!({"name": "t", "arguments": {"region": "eu", "flag": true}});
    let region = [ParamHeader::new("Region", "region")];
    refused(check(&base[1..], "tools/call", call.clone(), &[]), "MCP-Protocol-Version");
    refused(
        check(&[("MCP-Protocol-Version", "2025-11-25"), base[1], base[2]], "tools/call", call.clone(), &[]),
        "MCP-Protocol-Version",
    );
    refused(check(&[base[0], base[2]], "tools/call", call.clone(), &[]), "Mcp-Method");
    refused(check(&[base[0], ("Mcp-Method", "Tools/Call"), base[2]], "tools/call", call.clone(), &[]), "Mcp-Method");
    refused(check(&base[..2], "tools/call", call.clone(), &[]), "Mcp-Name");
    refused(check(&[base[0], base[1], ("Mcp-Name", "u")], "tools/call", call.clone(), &[]), "Mcp-Name");
    refused(check(&[base[0], base[1], ("Mcp-Name", "=?base64?!!?=")], "tools/call", call.clone(), &[]), "Mcp-Name");
    // The annotated argument is in the body: its header is required and must agree.
    refused(check(&base, "tools/call", call.clone(), &region), "Mcp-Param-Region");
    refused(
        check(&[base[0], base[1], base[2], ("Mcp-Param-Region", "us")], "tools/call", call.clone(), &region),
        "Mcp-Param-Region",
    );
    let flag = [ParamHeader::new("Flag", "flag")];
    refused(
        check(&[base[0], base[1], base[2], ("Mcp-Param-Flag", "True")], "tools/call", call.clone(), &flag),
        "Mcp-Param-Flag",
    );
    check(&[base[0], base[1], base[2], ("Mcp-Param-Flag", "true")], "tools/call", call.clone(), &flag).unwrap();
    // A header whose argument is absent disagrees with the body.
    let bare = json!({"name": "t", "arguments": {}});
    refused(
        check(&[base[0], base[1], base[2], ("Mcp-Param-Region", "eu")], "tools/call", bare, &region),
        "Mcp-Param-Region",
    );
    // Bytes that are not header text.
    let invalid = |name: &str| if name.eq_ignore_ascii_case("mcp-name") { Some(Err(())) } else { headers(&base)(name) };
    refused(check_request_headers(&invalid, "tools/call", Some(&call), V, &[]), "Mcp-Name");
    let control = [base[0], base[1], ("Mcp-Name", "t\u{1}")];
    refused(check(&control, "tools/call", call, &[]), "Mcp-Name");
}

/// What `routing_headers_agree` reads, from `pairs` (the first of each name).
fn routing<'h>(pairs: &'h [(&'h str, &'h str)]) -> RoutingHeaders<'h> {
    let find = |name: &str| pairs.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_bytes());
    RoutingHeaders {
        protocol_version: find(PROTOCOL_VERSION_HEADER),
        method: find(METHOD_HEADER),
        name: find(NAME_HEADER),
    }
}

#[test]
fn every_known_revision_and_method_is_plain_header_text() {
    // What `routing_headers_agree` takes for granted instead of scanning them.
    let plain = |s: &str| !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b));
    for version in ProtocolVersion::ALL {
        assert!(plain(version.as_str()), "{version:?}");
    }
    for method in MethodName::ALL {
        assert!(plain(method.as_str()), "{method:?}");
    }
}

#[test]
fn the_usual_request_is_decided_by_the_plain_comparison() {
    let call = [("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")];
    assert!(routing_headers_agree(routing(&call), "tools/call", Some(Target::Text("echo")), V));
    let list = [("MCP-Protocol-Version", V), ("Mcp-Method", "tools/list")];
    assert!(routing_headers_agree(routing(&list), "tools/list", None, V));
    // Anything else goes to the full check: a name in the sentinel form, a mismatch, a
    // missing header, a value that is not plain text, a target that is not a string.
    let encoded = [("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "=?base64?aMOpbGxv?=")];
    assert!(!routing_headers_agree(routing(&encoded), "tools/call", Some(Target::Text("h\u{e9}llo")), V));
    let literal = [("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "=?base64?SGk=?=")];
    assert!(!routing_headers_agree(routing(&literal), "tools/call", Some(Target::Text("=?base64?SGk=?=")), V));
    assert!(!routing_headers_agree(routing(&call), "tools/call", Some(Target::Text("other")), V));
    assert!(!routing_headers_agree(routing(&call), "tools/call", Some(Target::Other), V));
    assert!(!routing_headers_agree(routing(&call[..2]), "tools/call", Some(Target::Text("echo")), V));
    assert!(!routing_headers_agree(routing(&call), "tools/call", Some(Target::Text("echo")), "2025-11-25"));
    let control = [("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "a\nb")];
    assert!(!routing_headers_agree(routing(&control), "tools/call", Some(Target::Text("a\nb")), V));
}

/// The plain comparison never lets through what the full check refuses: over every request
/// built from a few values each header and body member may take (chosen so that they often
/// agree), whenever it says `true` the full check says `Ok`.
#[test]
fn the_plain_comparison_never_passes_what_the_full_check_refuses() {
    let versions = [Some(V), Some("2025-11-25"), Some(""), Some(" 2026-07-28"), None];
    let methods = ["tools/call", "tools/list", "prompts/get", "resources/read", "tasks/get", "x"];
    let sent_methods = [Some("tools/call"), Some("tools/list"), Some("tasks/get"), Some("TOOLS/CALL"), None];
    let names = [
        Some("echo"),
        Some("=?base64?ZWNobw==?="),
        Some("=?base64?x?="),
        Some("a\tb"),
        Some("caf\u{e9}"),
        Some(""),
        None,
    ];
    let (mut passed, mut cases) = (0, 0);
    for version in versions {
        for meta in versions.iter().flatten() {
            for method in methods {
                for sent_method in sent_methods {
                    for name in names {
                        for body in names {
                            let pairs: Vec<(&str, &str)> = [
                                version.map(|v| (PROTOCOL_VERSION_HEADER, v)),
                                sent_method.map(|m| (METHOD_HEADER, m)),
                                name.map(|n| (NAME_HEADER, n)),
                            ]
                            .into_iter()
                            .flatten()
                            .collect();
                            let target = body.map(Target::Text);
                            cases += 1;
                            if routing_headers_agree(routing(&pairs), method, target, meta) {
                                passed += 1;
                                let full = check_request_headers_of(&headers(&pairs), method, target, None, meta, &[]);
                                assert!(full.is_ok(), "{pairs:?} {method} {body:?} {meta}: {full:?}");
                            }
                        }
                    }
                }
            }
        }
    }
    // Not vacuous: tools/list with each version that is plain text, and tools/call with the
    // plain names.
    assert!(passed >= 6, "only {passed} of {cases} cases agreed plainly");
}
