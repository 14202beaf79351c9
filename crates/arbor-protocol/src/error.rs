//! Every JSON-RPC and MCP error code, as a typed error that carries its data.
//!
//! [`McpError`] is what the protocol layer returns and what a peer's error
//! response is read back into. It becomes a wire [`ErrorObject`] in exactly one
//! place, `impl From<&McpError> for ErrorObject`, and is read back in one place,
//! `impl From<ErrorObject> for McpError`. This module does not decide *when* an
//! error applies (the era modules and handlers do), and it knows no HTTP status.
//!
//! ```
//! use arbor_protocol::error::{ErrorCode, McpError};
//! use arbor_protocol::jsonrpc::ErrorObject;
//!
//! let err = McpError::unsupported_version(["2026-07-28"], "1900-01-01");
//! let wire = ErrorObject::from(&err);
//! assert_eq!(wire.code, -32022);
//! assert_eq!(wire.data.as_ref().unwrap()["requested"], "1900-01-01");
//! assert_eq!(McpError::from(wire), err);
//! assert!(err.code().is_modern_signal());
//! ```
//!
//! Invariant: reading an error object and writing it again gives the same
//! object. A code Arbor does not know, or a known code whose `data` does not
//! have the spec's shape, is kept verbatim in [`McpError::Other`].

use crate::jsonrpc::{DecodeError, DecodeErrorKind, ErrorObject, ErrorResponse, Message, RequestId};
use crate::methods::MethodError;
use crate::reflect::{clamp, Clamped};
use serde_json::{json, Map, Value};

/// A JSON-RPC error code, classified.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// -32700: the bytes are not JSON.
    ParseError,
    /// -32600: the JSON is not a valid JSON-RPC request.
    InvalidRequest,
    /// -32601: unknown method, or one behind a server capability not advertised.
    MethodNotFound,
    /// -32602: invalid params; since 2026-07-28 also missing `_meta` terms and
    /// a resource that does not exist.
    InvalidParams,
    /// -32603: an unexpected failure in the receiver.
    InternalError,
    /// -32002: resource not found, 2025-11-25 and earlier. Retired in 2026-07-28,
    /// where clients still accept it.
    ResourceNotFound,
    /// -32020: an HTTP header is missing, malformed, or disagrees with the body.
    HeaderMismatch,
    /// -32021: serving the request needs a client capability it did not declare.
    MissingRequiredClientCapability,
    /// -32022: the request's protocol version is unknown or unsupported.
    UnsupportedProtocolVersion,
    /// -32042: URL elicitation required, 2025-11-25 only.
    UrlElicitationRequired,
    /// -32000 … -32019 (except -32002): legacy implementation-defined server
    /// errors. Receivers must not give them a meaning.
    ServerError(i64),
    /// Any other code in -32768 … -32000: reserved by JSON-RPC or MCP, but not
    /// defined by any revision Arbor knows.
    Reserved(i64),
    /// A code outside -32768 … -32000: defined by the application.
    Application(i64),
}

impl ErrorCode {
    /// Whether a server answering with this code failed, for telemetry (the OpenTelemetry
    /// MCP conventions' server-side classification): a parse error, an invalid request, an
    /// unknown method, invalid params (an unknown tool too) and resource-not-found are the
    /// caller's mistakes and "SHOULD NOT be considered errors"; every other code is. A
    /// client counts every error code as an error.
    pub const fn is_server_fault(self) -> bool {
        !matches!(
            self,
            ErrorCode::ParseError
                | ErrorCode::InvalidRequest
                | ErrorCode::MethodNotFound
                | ErrorCode::InvalidParams
                | ErrorCode::ResourceNotFound
        )
    }

    /// Classifies a numeric code. Every `i64` has exactly one class, and
    /// `ErrorCode::from_i64(c).as_i64() == c`.
    pub const fn from_i64(code: i64) -> ErrorCode {
        match code {
            -32700 => ErrorCode::ParseError,
            -32600 => ErrorCode::InvalidRequest,
            -32601 => ErrorCode::MethodNotFound,
            -32602 => ErrorCode::InvalidParams,
            -32603 => ErrorCode::InternalError,
            -32002 => ErrorCode::ResourceNotFound,
            -32020 => ErrorCode::HeaderMismatch,
            -32021 => ErrorCode::MissingRequiredClientCapability,
            -32022 => ErrorCode::UnsupportedProtocolVersion,
            -32042 => ErrorCode::UrlElicitationRequired,
            -32019..=-32000 => ErrorCode::ServerError(code),
            -32768..=-32000 => ErrorCode::Reserved(code),
            _ => ErrorCode::Application(code),
        }
    }

    /// The numeric code.
    pub const fn as_i64(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::ResourceNotFound => -32002,
            ErrorCode::HeaderMismatch => -32020,
            ErrorCode::MissingRequiredClientCapability => -32021,
            ErrorCode::UnsupportedProtocolVersion => -32022,
            ErrorCode::UrlElicitationRequired => -32042,
            ErrorCode::ServerError(c) | ErrorCode::Reserved(c) | ErrorCode::Application(c) => c,
        }
    }

    /// Whether this code proves the peer speaks the per-request era. A dual-era
    /// client that gets one of these must retry, never fall back to `initialize`.
    pub const fn is_modern_signal(self) -> bool {
        matches!(
            self,
            ErrorCode::HeaderMismatch
                | ErrorCode::MissingRequiredClientCapability
                | ErrorCode::UnsupportedProtocolVersion
        )
    }

    /// Whether a 2026-07-28 implementation must no longer emit this code
    /// (clients still accept -32002).
    pub const fn is_retired(self) -> bool {
        matches!(self, ErrorCode::ResourceNotFound | ErrorCode::UrlElicitationRequired)
    }

    /// The spec's default message for the code, used when Arbor builds the error.
    pub const fn default_message(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "Parse error",
            ErrorCode::InvalidRequest => "Invalid Request",
            ErrorCode::MethodNotFound => "Method not found",
            ErrorCode::InvalidParams => "Invalid params",
            ErrorCode::InternalError => "Internal error",
            ErrorCode::ResourceNotFound => "Resource not found",
            ErrorCode::HeaderMismatch => "Header mismatch",
            ErrorCode::MissingRequiredClientCapability => "Missing required client capability",
            ErrorCode::UnsupportedProtocolVersion => "Unsupported protocol version",
            ErrorCode::UrlElicitationRequired => "URL elicitation required",
            ErrorCode::ServerError(_) => "Server error",
            ErrorCode::Reserved(_) | ErrorCode::Application(_) => "Error",
        }
    }
}

impl From<i64> for ErrorCode {
    fn from(code: i64) -> Self {
        ErrorCode::from_i64(code)
    }
}

/// A protocol error, typed by code, carrying the data the spec defines for it.
///
/// It displays as the code and the message, e.g. `-32601 Method not found: x/y`.
///
/// Every variant keeps the `message` it travels with, so a peer's wording
/// survives a read/write round trip. The constructors (`McpError::invalid_params`
/// and friends) fill in the spec's wording.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum McpError {
    /// -32700.
    #[error("-32700 {message}")]
    Parse {
        /// The message.
        message: String,
        /// Optional detail.
        data: Option<Value>,
    },
    /// -32600.
    #[error("-32600 {message}")]
    InvalidRequest {
        /// The message.
        message: String,
        /// Optional detail.
        data: Option<Value>,
    },
    /// -32601.
    #[error("-32601 {message}")]
    MethodNotFound {
        /// The message.
        message: String,
        /// Optional detail; a modern-only server answering `initialize` puts
        /// `{supported: [...]}` here.
        data: Option<Value>,
    },
    /// -32602.
    #[error("-32602 {message}")]
    InvalidParams {
        /// The message.
        message: String,
        /// Optional detail.
        data: Option<Value>,
    },
    /// -32603.
    #[error("-32603 {message}")]
    Internal {
        /// The message.
        message: String,
        /// Optional detail.
        data: Option<Value>,
    },
    /// A resource that does not exist, 2026-07-28 style: -32602 with `data.uri`.
    #[error("-32602 {message}: {uri}")]
    ResourceNotFound {
        /// The message.
        message: String,
        /// The URI that was asked for.
        uri: String,
    },
    /// A resource that does not exist, legacy style: -32002 with optional `data.uri`.
    #[error("-32002 {message}")]
    LegacyResourceNotFound {
        /// The message.
        message: String,
        /// The URI that was asked for, when the peer said.
        uri: Option<String>,
    },
    /// -32020.
    #[error("-32020 {message}")]
    HeaderMismatch {
        /// What disagreed, e.g. "Mcp-Name header value 'foo' does not match body value 'bar'".
        message: String,
    },
    /// -32021 with `data.requiredCapabilities`.
    #[error("-32021 {message}: {required_capabilities}")]
    MissingRequiredClientCapability {
        /// The message.
        message: String,
        /// The capabilities needed, as a `ClientCapabilities` object such as
        /// `{"elicitation": {}}`.
        required_capabilities: Value,
    },
    /// -32022 with `data: {supported, requested}`.
    #[error("-32022 {message}: {requested:?} (supported: {supported:?})")]
    UnsupportedProtocolVersion {
        /// The message.
        message: String,
        /// The versions the server speaks. Strings, not `ProtocolVersion`: a
        /// newer peer may list revisions Arbor does not know.
        supported: Vec<String>,
        /// The version the request asked for, verbatim.
        requested: String,
    },
    /// -32042 with `data.elicitations` (2025-11-25 only).
    #[error("-32042 {message}")]
    UrlElicitationRequired {
        /// The message.
        message: String,
        /// The URL-mode elicitation params the client should show.
        elicitations: Vec<Value>,
    },
    /// Any other error object, kept verbatim: implementation-defined server
    /// errors, application codes, and known codes whose data is not the spec's
    /// shape.
    #[error("{code} {message}")]
    Other {
        /// The numeric code.
        code: i64,
        /// The message.
        message: String,
        /// The data, untouched.
        data: Option<Value>,
    },
}

impl McpError {
    /// -32601 for `method`.
    pub fn method_not_found(method: &str) -> McpError {
        McpError::MethodNotFound { message: format!("Method not found: {}", Clamped(method)), data: None }
    }

    /// -32000 "Server busy": the implementation-defined server error Arbor
    /// answers with when it refuses work it has no room for. Peers must not read
    /// meaning into the code (the spec leaves -32000 … -32019 undefined), so the
    /// message is what tells a person what happened.
    pub fn server_busy() -> McpError {
        McpError::Other { code: -32000, message: "Server busy".to_owned(), data: None }
    }

    /// -32602 with a message saying what was wrong.
    pub fn invalid_params(message: impl Into<String>) -> McpError {
        McpError::InvalidParams { message: message.into(), data: None }
    }

    /// -32603 with a message.
    pub fn internal(message: impl Into<String>) -> McpError {
        McpError::Internal { message: message.into(), data: None }
    }

    /// -32020 with a message saying which header disagreed.
    pub fn header_mismatch(message: impl Into<String>) -> McpError {
        McpError::HeaderMismatch { message: message.into() }
    }

    /// -32021 naming the capabilities needed (a `ClientCapabilities` object).
    pub fn missing_client_capability(required_capabilities: Value) -> McpError {
        McpError::MissingRequiredClientCapability {
            message: ErrorCode::MissingRequiredClientCapability.default_message().to_owned(),
            required_capabilities,
        }
    }

    /// -32022 for `requested`, listing `supported`.
    pub fn unsupported_version<S: AsRef<str>>(supported: impl IntoIterator<Item = S>, requested: &str) -> McpError {
        McpError::UnsupportedProtocolVersion {
            message: ErrorCode::UnsupportedProtocolVersion.default_message().to_owned(),
            supported: supported.into_iter().map(|s| s.as_ref().to_owned()).collect(),
            // The request's own text, echoed in `data`: clamped like any reflection.
            requested: clamp(requested).into_owned(),
        }
    }

    /// "Resource not found" in the form `version` uses: -32002 in the handshake
    /// era, -32602 with `data.uri` from 2026-07-28.
    pub fn resource_not_found(uri: &str, version: crate::version::ProtocolVersion) -> McpError {
        let message = ErrorCode::ResourceNotFound.default_message().to_owned();
        let uri = clamp(uri);
        if version.supports(crate::version::Feature::ResourceNotFoundCode) {
            McpError::LegacyResourceNotFound { message, uri: Some(uri.into_owned()) }
        } else {
            McpError::ResourceNotFound { message, uri: uri.into_owned() }
        }
    }

    /// The code this error travels with.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::from_i64(self.code_i64())
    }

    fn code_i64(&self) -> i64 {
        match self {
            McpError::Parse { .. } => -32700,
            McpError::InvalidRequest { .. } => -32600,
            McpError::MethodNotFound { .. } => -32601,
            McpError::InvalidParams { .. } | McpError::ResourceNotFound { .. } => -32602,
            McpError::Internal { .. } => -32603,
            McpError::LegacyResourceNotFound { .. } => -32002,
            McpError::HeaderMismatch { .. } => -32020,
            McpError::MissingRequiredClientCapability { .. } => -32021,
            McpError::UnsupportedProtocolVersion { .. } => -32022,
            McpError::UrlElicitationRequired { .. } => -32042,
            McpError::Other { code, .. } => *code,
        }
    }

    /// The message the error travels with.
    pub fn message(&self) -> &str {
        match self {
            McpError::Parse { message, .. }
            | McpError::InvalidRequest { message, .. }
            | McpError::MethodNotFound { message, .. }
            | McpError::InvalidParams { message, .. }
            | McpError::Internal { message, .. }
            | McpError::ResourceNotFound { message, .. }
            | McpError::LegacyResourceNotFound { message, .. }
            | McpError::HeaderMismatch { message }
            | McpError::MissingRequiredClientCapability { message, .. }
            | McpError::UnsupportedProtocolVersion { message, .. }
            | McpError::UrlElicitationRequired { message, .. }
            | McpError::Other { message, .. } => message,
        }
    }

    /// Whether this says a resource does not exist, in either era's form.
    pub fn is_resource_not_found(&self) -> bool {
        matches!(self, McpError::ResourceNotFound { .. } | McpError::LegacyResourceNotFound { .. })
            || self.code() == ErrorCode::ResourceNotFound
    }

    /// The error object as it travels.
    pub fn to_error_object(&self) -> ErrorObject {
        ErrorObject::from(self)
    }

    /// The error response answering request `id` (`None` when the id could not be read).
    pub fn to_response(&self, id: Option<RequestId>) -> Message {
        Message::Error(ErrorResponse { id, error: self.to_error_object() })
    }
}

/// The one place an [`McpError`] becomes wire JSON.
impl From<&McpError> for ErrorObject {
    fn from(err: &McpError) -> ErrorObject {
        let data = match err {
            McpError::Parse { data, .. }
            | McpError::InvalidRequest { data, .. }
            | McpError::MethodNotFound { data, .. }
            | McpError::InvalidParams { data, .. }
            | McpError::Internal { data, .. }
            | McpError::Other { data, .. } => data.clone(),
            McpError::ResourceNotFound { uri, .. } => Some(json!({ "uri": uri })),
            McpError::LegacyResourceNotFound { uri, .. } => uri.as_ref().map(|uri| json!({ "uri": uri })),
            McpError::HeaderMismatch { .. } => None,
            McpError::MissingRequiredClientCapability { required_capabilities, .. } => {
                Some(json!({ "requiredCapabilities": required_capabilities }))
            }
            McpError::UnsupportedProtocolVersion { supported, requested, .. } => {
                Some(json!({ "supported": supported, "requested": requested }))
            }
            McpError::UrlElicitationRequired { elicitations, .. } => Some(json!({ "elicitations": elicitations })),
        };
        ErrorObject { code: err.code_i64(), message: err.message().to_owned(), data }
    }
}

impl From<McpError> for ErrorObject {
    fn from(err: McpError) -> ErrorObject {
        ErrorObject::from(&err)
    }
}

/// Reads a peer's error object back into the typed error.
impl From<ErrorObject> for McpError {
    fn from(obj: ErrorObject) -> McpError {
        let typed = typed_from_wire(&obj);
        // Keep the typed reading only if it writes back to the same object;
        // otherwise the peer sent something richer than the spec's shape and
        // we must not drop it.
        match typed {
            Some(err) if ErrorObject::from(&err) == obj => err,
            _ => McpError::Other { code: obj.code, message: obj.message, data: obj.data },
        }
    }
}

fn typed_from_wire(obj: &ErrorObject) -> Option<McpError> {
    let message = obj.message.clone();
    let data = obj.data.clone();
    let field =
        |name: &str| obj.data.as_ref().and_then(Value::as_object).and_then(|m: &Map<String, Value>| m.get(name));
    Some(match ErrorCode::from_i64(obj.code) {
        ErrorCode::ParseError => McpError::Parse { message, data },
        ErrorCode::InvalidRequest => McpError::InvalidRequest { message, data },
        ErrorCode::MethodNotFound => McpError::MethodNotFound { message, data },
        ErrorCode::InvalidParams => McpError::InvalidParams { message, data },
        ErrorCode::InternalError => McpError::Internal { message, data },
        ErrorCode::ResourceNotFound => {
            McpError::LegacyResourceNotFound { message, uri: field("uri").and_then(Value::as_str).map(str::to_owned) }
        }
        ErrorCode::HeaderMismatch => McpError::HeaderMismatch { message },
        ErrorCode::MissingRequiredClientCapability => McpError::MissingRequiredClientCapability {
            message,
            required_capabilities: field("requiredCapabilities")?.clone(),
        },
        ErrorCode::UnsupportedProtocolVersion => McpError::UnsupportedProtocolVersion {
            message,
            supported: serde_json::from_value(field("supported")?.clone()).ok()?,
            requested: field("requested")?.as_str()?.to_owned(),
        },
        ErrorCode::UrlElicitationRequired => {
            McpError::UrlElicitationRequired { message, elicitations: field("elicitations")?.as_array()?.clone() }
        }
        ErrorCode::ServerError(_) | ErrorCode::Reserved(_) | ErrorCode::Application(_) => return None,
    })
}

/// A frame that could not be decoded becomes -32700 or -32600, with the
/// decoder's detail in the message.
impl From<&DecodeError> for McpError {
    fn from(err: &DecodeError) -> McpError {
        let (code, ctor): (ErrorCode, fn(String) -> McpError) = match err.kind {
            DecodeErrorKind::Parse => (ErrorCode::ParseError, |message| McpError::Parse { message, data: None }),
            DecodeErrorKind::InvalidRequest => {
                (ErrorCode::InvalidRequest, |message| McpError::InvalidRequest { message, data: None })
            }
        };
        // The decoder's detail may quote the input (serde names an unknown variant).
        ctor(format!("{}: {}", code.default_message(), Clamped(&err.detail)))
    }
}

impl From<DecodeError> for McpError {
    fn from(err: DecodeError) -> McpError {
        McpError::from(&err)
    }
}

/// A request whose method or params could not be read: -32601, -32602, or
/// -32600 for a message of the wrong kind.
impl From<&MethodError> for McpError {
    fn from(err: &MethodError) -> McpError {
        match err {
            MethodError::UnknownMethod(e) => McpError::method_not_found(&e.method),
            MethodError::InvalidParams(e) => {
                McpError::invalid_params(format!("Invalid params for {}: {}", e.method.as_str(), Clamped(&e.detail)))
            }
            MethodError::WrongKind { expected } => McpError::InvalidRequest {
                message: format!("{}: expected a {expected}", ErrorCode::InvalidRequest.default_message()),
                data: None,
            },
        }
    }
}

impl From<MethodError> for McpError {
    fn from(err: MethodError) -> McpError {
        McpError::from(&err)
    }
}

/// The error response to send for a frame that could not be decoded, echoing
/// the id when the decoder could read one.
pub fn decode_error_response(err: &DecodeError) -> Message {
    McpError::from(err).to_response(err.id.clone())
}

#[cfg(test)]
mod server_fault_tests {
    use super::ErrorCode;

    #[test]
    fn only_the_callers_mistakes_are_not_server_faults() {
        for code in [-32700, -32600, -32601, -32602, -32002] {
            assert!(!ErrorCode::from_i64(code).is_server_fault(), "{code}");
        }
        for code in [-32603, -32000, -32020, -32021, -32022, -32042, 1, -32099] {
            assert!(ErrorCode::from_i64(code).is_server_fault(), "{code}");
        }
    }
}
