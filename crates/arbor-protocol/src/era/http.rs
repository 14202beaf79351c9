//! The HTTP header rules of 2026-07-28 Streamable HTTP, as pure functions.
//!
//! A 2026-07-28 POST mirrors parts of its body into headers so intermediaries can route
//! without reading JSON (`basic/transports/streamable-http`, "Request Metadata"):
//! `MCP-Protocol-Version` (the `_meta` version), `Mcp-Method` (the method), `Mcp-Name`
//! (`params.name` of `tools/call` and `prompts/get`, `params.uri` of `resources/read`,
//! `params.taskId` of the tasks extension's `tasks/*`) and one `Mcp-Param-{X}` per tool
//! argument whose input schema property carries `"x-mcp-header": "X"`. Values that cannot
//! travel as plain header text go as `=?base64?<base64 of the UTF-8>?=`.
//!
//! This module is the codec of those values ([`encode_header_value`],
//! [`decode_header_value`]), the reading of the annotations ([`param_headers`]) and the
//! server's check that headers and body agree ([`check_request_headers`], -32020; the usual
//! request is settled first by a plain comparison, [`routing_headers_agree`]). It is
//! not the HTTP layer: it never sees a request, only a header lookup function, and it does
//! not decide status codes.
//!
//! Invariant: `decode_header_value(&encode_header_value(v)?) ` gives back the text of `v`
//! for every string (tested with arbitrary strings), and a header the body disagrees with,
//! or that the body's values require and that is absent, is always refused.

use std::borrow::Cow;

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;
use serde_json::{Map, Value};

use crate::error::McpError;
use crate::methods::MethodName;
use crate::reflect::Clamped;
use crate::version::ProtocolVersion;

/// The sentinel's opening marker (case-sensitive).
const PREFIX: &str = "=?base64?";
/// The sentinel's closing marker.
const SUFFIX: &str = "?=";

/// The header carrying the protocol version.
pub const PROTOCOL_VERSION_HEADER: &str = "MCP-Protocol-Version";
/// The header mirroring the JSON-RPC method.
pub const METHOD_HEADER: &str = "Mcp-Method";
/// The header mirroring the named subject (tool, prompt, resource URI, task id).
pub const NAME_HEADER: &str = "Mcp-Name";
/// The prefix of the headers mirroring annotated tool arguments.
pub const PARAM_HEADER_PREFIX: &str = "Mcp-Param-";

/// One `x-mcp-header` annotation of a tool's input schema: the argument at `path` is
/// mirrored into the header `Mcp-Param-{header}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParamHeader {
    /// The header name's suffix, as annotated (`Region` for `Mcp-Param-Region`).
    pub header: String,
    /// The top-level argument (input schema property) the annotation is on, or under.
    pub argument: String,
    /// The whole chain of `properties` keys from the arguments object to the annotated
    /// property: `[argument]` for a top-level one, longer for a nested one (the spec allows
    /// any chain made of `properties` keys alone).
    pub path: Vec<String>,
}

impl ParamHeader {
    /// An annotation on the top-level argument `argument`.
    pub fn new(header: impl Into<String>, argument: impl Into<String>) -> ParamHeader {
        let argument = argument.into();
        ParamHeader { header: header.into(), path: vec![argument.clone()], argument }
    }

    /// The full header name, `Mcp-Param-{header}`.
    pub fn header_name(&self) -> String {
        format!("{PARAM_HEADER_PREFIX}{}", self.header)
    }

    /// The value this annotation mirrors in a call's `arguments` object, if present (a
    /// JSON `null` is returned as is; [`encode_header_value`] gives it no header).
    pub fn value_in<'a>(&self, arguments: &'a Value) -> Option<&'a Value> {
        let path = if self.path.is_empty() { std::slice::from_ref(&self.argument) } else { &self.path[..] };
        path.iter().try_fold(arguments, |at, key| at.as_object()?.get(key))
    }

    /// [`ParamHeader::value_in`] for arguments already known to be an object.
    pub fn value_in_map<'a>(&self, arguments: &'a Map<String, Value>) -> Option<&'a Value> {
        let path = if self.path.is_empty() { std::slice::from_ref(&self.argument) } else { &self.path[..] };
        let (first, rest) = path.split_first()?;
        rest.iter().try_fold(arguments.get(first)?, |at, key| at.as_object()?.get(key))
    }
}

/// Why a header value could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// The value holds characters a plain header value may not (control characters,
    /// non-ASCII).
    #[error("the header value holds characters outside visible ASCII")]
    InvalidCharacters,
    /// The `=?base64?…?=` form does not hold valid base64 of UTF-8 text.
    #[error("the header value's base64 form is not valid base64 of UTF-8 text")]
    InvalidBase64,
}

/// Whether `s` has the sentinel's shape (and so must be encoded to travel as itself).
fn looks_like_sentinel(s: &str) -> bool {
    s.len() >= PREFIX.len() + SUFFIX.len() && s.starts_with(PREFIX) && s.ends_with(SUFFIX)
}

/// Whether `s` may travel as a plain header value: visible ASCII and inner spaces, not
/// empty (an empty header is dropped by too many stacks), no leading or trailing space,
/// not shaped like the sentinel.
fn travels_plain(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && !s.starts_with(' ')
        && !s.ends_with(' ')
        && !looks_like_sentinel(s)
}

/// Encodes a text for an `Mcp-Param-*` / `Mcp-Name` header: as is when it travels plain,
/// else in the base64 sentinel form.
pub fn encode_header_text(text: &str) -> String {
    if travels_plain(text) {
        text.to_owned()
    } else {
        format!("{PREFIX}{}{SUFFIX}", STANDARD.encode(text.as_bytes()))
    }
}

/// Encodes a JSON value for an `Mcp-Param-*` / `Mcp-Name` header per 2026-07-28: strings
/// as is, integers as decimals, booleans `true`/`false`; values not plain visible ASCII,
/// with leading or trailing whitespace, or looking like the sentinel go as
/// `=?base64?<b64(utf8)>?=`. `None` for null, objects and arrays (no header).
pub fn encode_header_value(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(encode_header_text(s)),
        Value::Bool(b) => Some(b.to_string()),
        // Integers print as decimals; a non-integral number (never valid for an annotated
        // property, which the schema rules keep to integers) prints as its JSON text.
        Value::Number(n) => Some(n.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// Base64 as the spec writes it: the standard alphabet with canonical padding. SEP-2243
/// lists unpadded base64 (`=?base64?SGVsbG8?=`) among the values a server MUST reject.
const CANONICAL: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

/// Decodes a header value: the base64 sentinel form into its UTF-8 text, a plain value as
/// is. Plain values may hold visible ASCII, spaces and tabs; anything else is
/// [`HeaderError::InvalidCharacters`].
pub fn decode_header_value(raw: &str) -> Result<String, HeaderError> {
    decode_header_text(raw).map(Cow::into_owned)
}

/// [`decode_header_value`], borrowing `raw` when it is plain text.
fn decode_header_text(raw: &str) -> Result<Cow<'_, str>, HeaderError> {
    if looks_like_sentinel(raw) {
        let inner = &raw[PREFIX.len()..raw.len() - SUFFIX.len()];
        let bytes = CANONICAL.decode(inner).map_err(|_| HeaderError::InvalidBase64)?;
        return String::from_utf8(bytes).map(Cow::Owned).map_err(|_| HeaderError::InvalidBase64);
    }
    if raw.bytes().all(|b| (0x20..=0x7e).contains(&b) || b == b'\t') {
        Ok(Cow::Borrowed(raw))
    } else {
        Err(HeaderError::InvalidCharacters)
    }
}

/// The `x-mcp-header` annotations of a tool's inputSchema, in schema order: property `p`
/// with `"x-mcp-header": "Region"` gives `("Region", "p")`. Annotations are read where the
/// spec allows them, on properties reached from the root through `properties` keys alone
/// (nested objects included); annotations anywhere else, or whose value is not a string,
/// are not headers and are left out (a tool registry refuses such schemas up front).
pub fn param_headers(input_schema: &Value) -> Vec<ParamHeader> {
    let mut found = Vec::new();
    let mut path = Vec::new();
    collect(input_schema, &mut path, &mut found);
    found
}

fn collect(schema: &Value, path: &mut Vec<String>, found: &mut Vec<ParamHeader>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
    for (name, property) in properties {
        path.push(name.clone());
        if let Some(header) = property.get("x-mcp-header").and_then(Value::as_str) {
            found.push(ParamHeader { header: header.to_owned(), argument: path[0].clone(), path: path.clone() });
        }
        collect(property, path, found);
        path.pop();
    }
}

/// The body field `Mcp-Name` mirrors for `method`, if it has one.
fn name_field(method: &str) -> Option<&'static str> {
    name_field_of(MethodName::parse(method)?)
}

/// [`name_field`] of a parsed method.
fn name_field_of(method: MethodName) -> Option<&'static str> {
    match method {
        MethodName::CallTool | MethodName::GetPrompt => Some("name"),
        MethodName::ReadResource => Some("uri"),
        // SEP-2663: only the methods that name one task; `tasks/result` and `tasks/list`
        // are not methods of the extension and must reach the server to get -32601.
        MethodName::GetTask | MethodName::UpdateTask | MethodName::CancelTask => Some("taskId"),
        _ => None,
    }
}

/// Whether `method` is one of the tasks extension's methods that may name no task.
fn is_task_method(method: &str) -> bool {
    matches!(MethodName::parse(method), Some(MethodName::GetTask | MethodName::UpdateTask | MethodName::CancelTask))
}

/// How [`check_request_headers`] looks a header up: its raw value, borrowed from the
/// request (`None` when absent, `Some(Err(()))` when its bytes are not valid header text).
pub type HeaderLookup<'h> = dyn Fn(&str) -> Option<Result<&'h str, ()>> + 'h;

/// Reads a required header: missing and invalid bytes are both -32020.
fn required<'h>(header: &HeaderLookup<'h>, name: &str) -> Result<&'h str, McpError> {
    match header(name) {
        None => Err(McpError::header_mismatch(format!("Header mismatch: required header {name} is missing"))),
        Some(Err(())) => Err(invalid_characters(name)),
        Some(Ok(value)) => Ok(value),
    }
}

fn invalid_characters(name: &str) -> McpError {
    McpError::header_mismatch(format!("Header mismatch: {name} header contains invalid characters"))
}

/// Reads and decodes an optional header that may use the sentinel form (borrowed unless
/// it does: the usual `Mcp-Name` costs no allocation).
fn decoded<'h>(header: &HeaderLookup<'h>, name: &str) -> Result<Option<Cow<'h, str>>, McpError> {
    match header(name) {
        None => Ok(None),
        Some(Err(())) => Err(invalid_characters(name)),
        Some(Ok(raw)) => match decode_header_text(raw) {
            Ok(text) => Ok(Some(text)),
            Err(HeaderError::InvalidCharacters) => Err(invalid_characters(name)),
            Err(HeaderError::InvalidBase64) => {
                Err(McpError::header_mismatch(format!("Header mismatch: {name} header has an invalid base64 value")))
            }
        },
    }
}

/// Whether a decoded header text says the same as a body value: strings exactly,
/// booleans as `true`/`false`, numbers numerically (`42.0` equals `42`).
fn agrees(text: &str, value: &Value) -> bool {
    match value {
        Value::String(s) => s == text,
        Value::Bool(b) => text == if *b { "true" } else { "false" },
        Value::Number(n) => {
            if let (Some(body), Ok(head)) = (n.as_i64(), text.parse::<i64>()) {
                return body == head;
            }
            if let (Some(body), Ok(head)) = (n.as_u64(), text.parse::<u64>()) {
                return body == head;
            }
            match (n.as_f64(), text.parse::<f64>()) {
                (Some(body), Ok(head)) => body == head,
                _ => false,
            }
        }
        Value::Null | Value::Array(_) | Value::Object(_) => false,
    }
}

/// The body member `Mcp-Name` must equal ([`check_request_headers_of`]): its text, or
/// `Other` for a value that is not a string (which no header equals).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target<'a> {
    /// A string member.
    Text(&'a str),
    /// A member that is not a string.
    Other,
}

impl<'a> From<&'a Value> for Target<'a> {
    fn from(value: &'a Value) -> Self {
        value.as_str().map_or(Target::Other, Target::Text)
    }
}

/// Everything the server must check on a 2026-07-28 POST before serving it (spec:
/// `basic/transports/streamable-http`, "Server Validation"): `MCP-Protocol-Version` equal
/// to the `_meta` version, `Mcp-Method` equal to the method, `Mcp-Name` equal to
/// `params.name` / `params.uri` (`tools/call`, `prompts/get`, `resources/read`; `params.taskId`
/// for `tasks/*`), and every `Mcp-Param-{X}` of `param_headers` present exactly when the
/// annotated argument is present and not null, decoded and equal to it (numbers compared
/// numerically). `header(name)` looks a header up case-insensitively and returns its raw
/// value (`None` when absent, `Some(Err(()))` when its bytes are not valid header text).
///
/// Err is -32020 (HeaderMismatch) with a message naming the header.
pub fn check_request_headers<'h>(
    header: &HeaderLookup<'h>,
    method: &str,
    params: Option<&Value>,
    meta_version: &str,
    param_headers: &[ParamHeader],
) -> Result<(), McpError> {
    let target = name_field(method).and_then(|field| params.and_then(|p| p.get(field))).map(Target::from);
    // A non-object `arguments` holds no annotated argument: `value_in` finds none in it.
    let arguments = params.and_then(|p| p.get("arguments")).and_then(Value::as_object);
    check_request_headers_of(header, method, target, arguments, meta_version, param_headers)
}

/// [`check_request_headers`] with the params members it reads passed in directly, for a
/// caller that decoded the params into types and need not rebuild them as JSON: `target`
/// is the member `Mcp-Name` names (`params.name`, `params.uri` or `params.taskId`,
/// whichever the method uses; ignored for the other methods) and `arguments` is
/// `params.arguments` (read for `tools/call` only when `param_headers` is not empty).
pub fn check_request_headers_of<'h>(
    header: &HeaderLookup<'h>,
    method: &str,
    target: Option<Target<'_>>,
    arguments: Option<&Map<String, Value>>,
    meta_version: &str,
    param_headers: &[ParamHeader],
) -> Result<(), McpError> {
    let version = required(header, PROTOCOL_VERSION_HEADER)?;
    if version != meta_version {
        return Err(McpError::header_mismatch(format!(
            "Header mismatch: {PROTOCOL_VERSION_HEADER} header value '{}' does not match body value '{}'",
            Clamped(version),
            Clamped(meta_version)
        )));
    }
    let sent_method = required(header, METHOD_HEADER)?;
    if sent_method != method {
        return Err(McpError::header_mismatch(format!(
            "Header mismatch: {METHOD_HEADER} header value '{}' does not match body value '{}'",
            Clamped(sent_method),
            Clamped(method)
        )));
    }
    if name_field(method).is_some() {
        match (decoded(header, NAME_HEADER)?, target) {
            // The tasks extension's methods carry a task id only when they name one.
            (None, None) if is_task_method(method) => {}
            (None, _) => {
                return Err(McpError::header_mismatch(format!(
                    "Header mismatch: required header {NAME_HEADER} is missing"
                )))
            }
            (Some(text), Some(Target::Text(body))) if text == body => {}
            (Some(text), body) => {
                let body = match body {
                    Some(Target::Text(body)) => body,
                    _ => "",
                };
                return Err(McpError::header_mismatch(format!(
                    "Header mismatch: {NAME_HEADER} header value '{}' does not match body value '{}'",
                    Clamped(&text),
                    Clamped(body)
                )));
            }
        }
    }
    if MethodName::parse(method) == Some(MethodName::CallTool) && !param_headers.is_empty() {
        for annotation in param_headers {
            let name = annotation.header_name();
            let value = arguments.and_then(|a| annotation.value_in_map(a)).filter(|v| encode_header_value(v).is_some());
            match (decoded(header, &name)?, value) {
                (None, None) => {}
                (None, Some(_)) => {
                    return Err(McpError::header_mismatch(format!(
                        "Header mismatch: header {name} is missing but its argument is in the body"
                    )))
                }
                (Some(_), None) => {
                    return Err(McpError::header_mismatch(format!(
                        "Header mismatch: header {name} is present but its argument is absent from the body"
                    )))
                }
                (Some(text), Some(value)) if agrees(&text, value) => {}
                (Some(text), Some(value)) => {
                    return Err(McpError::header_mismatch(format!(
                        "Header mismatch: {name} header value '{}' does not match body value '{}'",
                        Clamped(&text),
                        Clamped(&encode_header_value(value).unwrap_or_default())
                    )))
                }
            }
        }
    }
    Ok(())
}

/// The routing headers of a 2026-07-28 POST as the HTTP layer found them: raw bytes,
/// borrowed from the request, `None` when absent.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoutingHeaders<'h> {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<&'h [u8]>,
    /// `Mcp-Method`.
    pub method: Option<&'h [u8]>,
    /// `Mcp-Name`.
    pub name: Option<&'h [u8]>,
}

/// Whether `headers` plainly say what the body says: each routing header the request needs
/// is present and byte for byte the body's value, and that value is plain header text (so
/// no decoding can make it say anything else). `true` only when
/// [`check_request_headers_of`] would answer `Ok` for the same request with no
/// `Mcp-Param-*` annotations; `false` says nothing: run the full check, which also words
/// the error. The usual request is decided here, without the full check's lookups and
/// decoding (about 385 instructions of a request's 45,000).
pub fn routing_headers_agree(
    headers: RoutingHeaders<'_>,
    method: &str,
    target: Option<Target<'_>>,
    meta_version: &str,
) -> bool {
    // A known revision and a known method are plain header text (tested), so only the name
    // needs its bytes looked at: a scan byte by byte cost more than the lookups it saves.
    if ProtocolVersion::parse(meta_version).is_none() || headers.protocol_version != Some(meta_version.as_bytes()) {
        return false;
    }
    let Some(kind) = MethodName::parse(method) else { return false };
    if headers.method != Some(method.as_bytes()) {
        return false;
    }
    match (name_field_of(kind), target) {
        (None, _) => true,
        // Plain header text decodes to itself (`Borrowed`); the sentinel form does not.
        (Some(_), Some(Target::Text(body))) => {
            headers.name == Some(body.as_bytes()) && matches!(decode_header_text(body), Ok(Cow::Borrowed(_)))
        }
        (Some(_), _) => false,
    }
}

#[cfg(test)]
mod tests;
