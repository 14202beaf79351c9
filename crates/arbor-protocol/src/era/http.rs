//! The HTTP header rules of 2026-07-28 Streamable HTTP, as pure functions.
//!
//! TODO(skeleton): filled in by the next commit.

use serde_json::Value;

use crate::error::McpError;

/// One `x-mcp-header` annotation of a tool's input schema: argument `argument` is mirrored
/// into the header `Mcp-Param-{header}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParamHeader {
    /// The header name's suffix, as annotated (`Region` for `Mcp-Param-Region`).
    pub header: String,
    /// The top-level argument (input schema property) it mirrors.
    pub argument: String,
}

/// Why a header value could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// The value holds characters a plain header value may not.
    #[error("the header value holds characters outside visible ASCII")]
    InvalidCharacters,
    /// The `=?base64?…?=` form does not hold valid base64 of UTF-8 text.
    #[error("the header value's base64 form is not valid base64 of UTF-8 text")]
    InvalidBase64,
}

/// Encodes a JSON value for an `Mcp-Param-*` / `Mcp-Name` header (see the contract).
pub fn encode_header_value(value: &Value) -> Option<String> {
    let _ = value;
    todo!()
}

/// Decodes a header value (base64 sentinel form or plain).
pub fn decode_header_value(raw: &str) -> Result<String, HeaderError> {
    let _ = raw;
    todo!()
}

/// The `x-mcp-header` annotations of a tool's inputSchema (top-level properties only).
pub fn param_headers(input_schema: &Value) -> Vec<ParamHeader> {
    let _ = input_schema;
    todo!()
}

/// Everything the server must check on a 2026-07-28 POST before serving it.
pub fn check_request_headers(
    header: &dyn Fn(&str) -> Option<Result<String, ()>>,
    method: &str,
    params: Option<&Value>,
    meta_version: &str,
    param_headers: &[ParamHeader],
) -> Result<(), McpError> {
    let _ = (header, method, params, meta_version, param_headers);
    todo!()
}
