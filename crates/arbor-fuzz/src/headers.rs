//! Header targets: the `WWW-Authenticate` parser (`arbor_protocol::www_authenticate`), the
//! 2026-07-28 header value codec and the server's `x-mcp-header` checks
//! (`arbor_protocol::era::http`) against what the client sends (`arbor_client`).
//!
//! Not a test of HTTP itself (no request is built). Invariant of each body: it panics
//! only when a parse does not survive its own re-encoding, or when the client and the
//! server disagree about headers the client built from the body.

use arbor_protocol::era::http::{
    check_request_headers, decode_header_value, encode_header_text, encode_header_value, METHOD_HEADER, NAME_HEADER,
    PROTOCOL_VERSION_HEADER,
};
use arbor_protocol::www_authenticate::{parse_challenges, ParsedChallenge};
use serde_json::{json, Value};

use crate::text;

/// Writes challenges back as a header value, every parameter value quoted.
fn write_challenges(challenges: &[ParsedChallenge]) -> String {
    let one = |c: &ParsedChallenge| {
        let params: Vec<String> =
            c.params.iter().map(|(n, v)| format!("{n}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))).collect();
        if params.is_empty() {
            c.scheme.clone()
        } else {
            format!("{} {}", c.scheme, params.join(", "))
        }
    };
    challenges.iter().map(one).collect::<Vec<_>>().join(", ")
}

/// `parse_challenges`: never panics; what it reads, written back with quoted values,
/// reads the same.
pub fn www_authenticate(data: &[u8]) {
    let Some(value) = text(data) else { return };
    let Some(challenges) = parse_challenges(value) else { return };
    for c in &challenges {
        assert!(!c.scheme.is_empty());
        for (name, _) in &c.params {
            assert_eq!(*name, name.to_ascii_lowercase(), "a parameter name is not lower-cased");
        }
    }
    let written = write_challenges(&challenges);
    assert_eq!(parse_challenges(&written).as_ref(), Some(&challenges), "re-reading {written:?}");
}

/// Whether a header value is what an HTTP stack carries: visible ASCII and inner spaces.
fn header_safe(v: &str) -> bool {
    !v.is_empty() && v.bytes().all(|b| (0x20..=0x7e).contains(&b)) && !v.starts_with(' ') && !v.ends_with(' ')
}

/// The header value codec: any text encodes to a header-safe value that decodes to it;
/// a decode never panics, and a plain value decodes to itself. When the input is JSON,
/// its encoding as a header value (when it has one) decodes to its text.
pub fn header_codec(data: &[u8]) {
    let Some(s) = text(data) else { return };
    let encoded = encode_header_text(s);
    assert!(header_safe(&encoded), "{encoded:?} cannot travel as a header value");
    assert_eq!(decode_header_value(&encoded).as_deref(), Ok(s), "{s:?} through {encoded:?}");
    if let Ok(plain) = decode_header_value(s) {
        if !(s.starts_with("=?base64?") && s.ends_with("?=")) {
            assert_eq!(plain, s);
        }
    }
    if let Ok(value) = serde_json::from_str::<Value>(s) {
        if let Some(encoded) = encode_header_value(&value) {
            assert!(header_safe(&encoded), "{encoded:?} cannot travel as a header value");
            let decoded = decode_header_value(&encoded).expect("an encoded value decodes");
            let want = match &value {
                Value::String(t) => t.clone(),
                other => other.to_string(),
            };
            assert_eq!(decoded, want);
        }
    }
}

/// The `x-mcp-header` rules end to end: the input is JSON `{"name", "inputSchema",
/// "arguments"}`. When the client accepts the tool's schema, the headers it builds for a
/// `tools/call` with those arguments (its own rules: `value_in`, `encode_header_value`)
/// pass the server's check; and each annotated header changed to another text is refused.
pub fn x_mcp_header(data: &[u8]) {
    let Ok(input) = serde_json::from_slice::<Value>(data) else { return };
    let (Some(name), Some(schema), Some(arguments)) =
        (input.get("name").and_then(Value::as_str), input.get("inputSchema"), input.get("arguments"))
    else {
        return;
    };
    let Ok(annotations) = arbor_client::fuzzing::tool_headers(schema) else { return };
    const VERSION: &str = "2026-07-28";
    let mut headers: Vec<(String, String)> = vec![
        (PROTOCOL_VERSION_HEADER.to_owned(), VERSION.to_owned()),
        (METHOD_HEADER.to_owned(), "tools/call".to_owned()),
        (NAME_HEADER.to_owned(), encode_header_text(name)),
    ];
    for a in &annotations {
        if let Some(value) = a.value_in(arguments).and_then(encode_header_value) {
            headers.push((a.header_name(), value));
        }
    }
    let params = json!({"name": name, "arguments": arguments});
    let check = |headers: &[(String, String)]| {
        let lookup =
            |n: &str| headers.iter().find(|(h, _)| h.eq_ignore_ascii_case(n)).map(|(_, v)| Ok::<_, ()>(v.as_str()));
        check_request_headers(&lookup, "tools/call", Some(&params), VERSION, &annotations)
    };
    if let Err(e) = check(&headers) {
        panic!("the server refused the client's own headers {headers:?}: {e}");
    }
    for i in 3..headers.len() {
        let mut changed = headers.clone();
        let text = decode_header_value(&changed[i].1).expect("the client's value decodes");
        changed[i].1 = encode_header_text(&format!("{text}x"));
        assert!(check(&changed).is_err(), "a changed {} was accepted", changed[i].0);
    }
}
