//! The per-request era (2026-07-28): every request carries its own terms in
//! `params._meta`, and the server checks them on arrival.
//!
//! The checks, in the order they run: the `_meta` protocol version is present
//! (-32602 if not); on HTTP the `MCP-Protocol-Version` header is present and
//! equals it (-32020); the version is one this server speaks per request
//! (-32022 with `{supported, requested}`); the client capabilities are present
//! (-32602); the optional log level and progress token are well formed
//! (-32602). The version goes first because the rest of `_meta` is read under
//! it. Capabilities a method needs are checked later, by [`require`], when the
//! handler knows what it needs (-32021 with `requiredCapabilities`).
//!
//! This module keeps no state between requests: the spec forbids carrying
//! capabilities over, even on one stdio pipe. It does not know HTTP beyond the
//! header values it is handed.
//! Invariant: a [`Terms`] built here has a supported modern version and a
//! capabilities object that came from this very request.

use super::{progress_token_of, SupportedVersions, Terms};
use crate::error::McpError;
use crate::meta::{self, Meta};
use crate::model::capabilities::ClientCapabilities;
use crate::model::logging::LoggingLevel;
use crate::reflect::Clamped;
use crate::version::{Era, ProtocolVersion};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// How the request arrived, as far as the checks care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport<'a> {
    /// stdio or another byte stream: the body is all there is.
    Stdio,
    /// Streamable HTTP, with the MCP header values the request carried.
    Http(HttpHeaders<'a>),
}

/// The MCP header values of one HTTP request, as received (still encoded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpHeaders<'a> {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<&'a str>,
    /// `Mcp-Method`.
    pub method: Option<&'a str>,
    /// `Mcp-Name`.
    pub name: Option<&'a str>,
}

/// The per-request rules of one server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerRequest {
    supported: SupportedVersions,
}

impl PerRequest {
    /// Serves the modern versions in `supported`. The -32022 error lists all of
    /// `supported`, legacy ones included, as the spec's example does, so a
    /// dual-era client learns it may fall back to `initialize`.
    pub fn new(supported: SupportedVersions) -> PerRequest {
        PerRequest { supported }
    }

    /// Checks a request's `_meta` (and, on HTTP, its version header) and lifts
    /// its terms.
    pub fn terms(&self, request_meta: Option<&Meta>, transport: Transport<'_>) -> Result<Terms, McpError> {
        let Some(m) = request_meta else {
            return Err(missing(meta::PROTOCOL_VERSION));
        };
        let Some(requested) = m.protocol_version() else {
            return Err(missing(meta::PROTOCOL_VERSION));
        };
        if let Transport::Http(headers) = transport {
            let header = headers.protocol_version.ok_or_else(|| {
                McpError::header_mismatch("Header mismatch: required header MCP-Protocol-Version is missing")
            })?;
            if header != requested {
                return Err(McpError::header_mismatch(format!(
                    "Header mismatch: MCP-Protocol-Version header value '{}' does not match body value '{}'",
                    Clamped(header),
                    Clamped(requested)
                )));
            }
        }
        let version = ProtocolVersion::parse(requested)
            .filter(|v| v.era() == Era::Modern && self.supported.contains(*v))
            .ok_or_else(|| McpError::unsupported_version(self.supported.strings(), requested))?;
        let client_capabilities = m.client_capabilities().cloned().ok_or_else(|| missing(meta::CLIENT_CAPABILITIES))?;
        // Checked only for its shape; `{}` (no capabilities, what most requests send) has
        // nothing to check, and the typed read cost as much as the rest of the terms.
        if let Err(e) =
            (!client_capabilities.is_empty()).then(|| super::read_capabilities(&client_capabilities)).transpose()
        {
            return Err(McpError::invalid_params(format!(
                "Malformed {}: {}",
                meta::CLIENT_CAPABILITIES,
                Clamped(&e.to_string())
            )));
        }
        let log_level =
            match m.get(meta::LOG_LEVEL) {
                None => None,
                Some(raw) => Some(LoggingLevel::deserialize(raw).map_err(|_| {
                    McpError::invalid_params(format!("Invalid log level: {}", Clamped(&raw.to_string())))
                })?),
            };
        let progress_token = progress_token_of(Some(m));
        if progress_token.is_none() && m.get(meta::PROGRESS_TOKEN).is_some() {
            return Err(McpError::invalid_params("progressToken must be a string or an integer"));
        }
        Ok(Terms { version, client_capabilities, log_level, logs_by_default: false, progress_token })
    }

    /// Checks the `Mcp-Method` header against the body's `method`, and the
    /// `Mcp-Name` header against `name_in_body` (the `name` or `uri` param of
    /// the methods that require the header; `None` for the others).
    pub fn check_method_headers(
        &self,
        headers: &HttpHeaders<'_>,
        method: &str,
        name_in_body: Option<&str>,
    ) -> Result<(), McpError> {
        check_header("Mcp-Method", headers.method, method)?;
        match name_in_body {
            Some(name) => check_header("Mcp-Name", headers.name, name),
            None => Ok(()),
        }
    }
}

/// Client side: writes the terms a modern request must carry into its `_meta`
/// (version and capabilities, plus the log level when the client opts into
/// log messages). Other keys already in `request_meta` are kept.
pub fn stamp(
    request_meta: &mut Meta,
    version: ProtocolVersion,
    capabilities: &ClientCapabilities,
    log_level: Option<LoggingLevel>,
) {
    request_meta.set_protocol_version(version);
    // A capabilities model always serialises to an object.
    request_meta.set_client_capabilities(serde_json::to_value(capabilities).unwrap_or_else(|_| json!({})));
    if let Some(level) = log_level {
        request_meta.set_log_level(level);
    }
}

fn missing(key: &str) -> McpError {
    McpError::invalid_params(format!("Missing required _meta field {key}"))
}

fn check_header(header: &str, value: Option<&str>, body: &str) -> Result<(), McpError> {
    let raw = value
        .ok_or_else(|| McpError::header_mismatch(format!("Header mismatch: required header {header} is missing")))?;
    let decoded = decode_header_value(raw)
        .ok_or_else(|| McpError::header_mismatch(format!("Header mismatch: {header} header value is malformed")))?;
    if decoded != body {
        return Err(McpError::header_mismatch(format!(
            "Header mismatch: {header} header value '{}' does not match body value '{}'",
            Clamped(raw),
            Clamped(body)
        )));
    }
    Ok(())
}

/// Decodes an MCP header value: plain visible ASCII as is, or the
/// `=?base64?…?=` sentinel form for anything else. `None` when the value has
/// characters a header may not carry or the base64 is broken.
pub fn decode_header_value(raw: &str) -> Option<Cow<'_, str>> {
    if let Some(inner) = raw.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) {
        return String::from_utf8(base64_decode(inner)?).ok().map(Cow::Owned);
    }
    let plain = raw.bytes().all(|b| b == b' ' || b == b'\t' || b.is_ascii_graphic());
    plain.then_some(Cow::Borrowed(raw))
}

/// Standard base64 with optional padding. Small on purpose: the headers are the
/// only base64 this crate reads, and pulling a dependency for it is not worth it.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    fn sextet(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let body = text.trim_end_matches('=');
    if text.len() - body.len() > 2 || body.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    for chunk in body.as_bytes().chunks(4) {
        let mut acc = 0u32;
        for &c in chunk {
            acc = (acc << 6) | sextet(c)?;
        }
        acc <<= 6 * (4 - chunk.len() as u32);
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

/// A client capability a request may need in order to be served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientNeed {
    /// Form-mode elicitation (`elicitation: {}` or `elicitation.form`).
    Elicitation,
    /// URL-mode elicitation (`elicitation.url`).
    UrlElicitation,
    /// Sampling (`sampling`).
    Sampling,
    /// Sampling with tools (`sampling.tools`).
    SamplingTools,
    /// Sampling with `includeContext` (`sampling.context`).
    SamplingContext,
    /// Roots (`roots`).
    Roots,
    /// An extension, by identifier (`extensions["io.modelcontextprotocol/tasks"]`).
    Extension(String),
    /// An experimental capability, by name (`experimental[name]`).
    Experimental(String),
}

impl ClientNeed {
    /// Whether a `ClientCapabilities` object declares this.
    pub fn declared_in(&self, capabilities: &Map<String, Value>) -> bool {
        let section = |key: &str| capabilities.get(key).and_then(Value::as_object);
        let entry = |key: &str, sub: &str| section(key).is_some_and(|s| s.contains_key(sub));
        match self {
            // A bare `elicitation: {}` means form only; naming only `url` means
            // URL only.
            ClientNeed::Elicitation => {
                section("elicitation").is_some_and(|e| e.contains_key("form") || !e.contains_key("url"))
            }
            ClientNeed::UrlElicitation => entry("elicitation", "url"),
            ClientNeed::Sampling => section("sampling").is_some(),
            ClientNeed::SamplingTools => entry("sampling", "tools"),
            ClientNeed::SamplingContext => entry("sampling", "context"),
            ClientNeed::Roots => section("roots").is_some(),
            ClientNeed::Extension(id) => entry("extensions", id),
            ClientNeed::Experimental(name) => entry("experimental", name),
        }
    }

    /// The `ClientCapabilities` fragment that would declare this, as listed in
    /// a -32021 error's `requiredCapabilities`.
    pub fn as_capabilities(&self) -> Value {
        match self {
            ClientNeed::Elicitation => json!({ "elicitation": {} }),
            ClientNeed::UrlElicitation => json!({ "elicitation": { "url": {} } }),
            ClientNeed::Sampling => json!({ "sampling": {} }),
            ClientNeed::SamplingTools => json!({ "sampling": { "tools": {} } }),
            ClientNeed::SamplingContext => json!({ "sampling": { "context": {} } }),
            ClientNeed::Roots => json!({ "roots": {} }),
            ClientNeed::Extension(id) => json!({ "extensions": { id.as_str(): {} } }),
            ClientNeed::Experimental(name) => json!({ "experimental": { name.as_str(): {} } }),
        }
    }
}

/// Checks that the request declared everything in `needs`; otherwise -32021
/// listing every undeclared need in one `requiredCapabilities` object.
pub fn require(terms: &Terms, needs: &[ClientNeed]) -> Result<(), McpError> {
    let mut required = Value::Object(Map::new());
    for need in needs.iter().filter(|n| !terms.declares(n)) {
        merge(&mut required, need.as_capabilities());
    }
    match required.as_object() {
        Some(m) if m.is_empty() => Ok(()),
        _ => Err(McpError::missing_client_capability(required)),
    }
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert_with(|| Value::Object(Map::new())), v);
            }
        }
        (slot, v) => *slot = v,
    }
}
