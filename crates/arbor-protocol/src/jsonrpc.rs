//! The JSON-RPC 2.0 envelope: requests, notifications, responses and errors.
//!
//! This module knows nothing about MCP methods: `method` stays a string here and
//! `params`/`result` stay raw JSON until `methods` reads them into typed values.
//! It is not where error codes get their meaning either (`error` does that).
//!
//! Invariant: decoding never panics. Any byte string yields either a [`Message`]
//! (or a batch of them) or a [`DecodeError`] that says which JSON-RPC error to
//! answer with (-32700 for bytes that are not JSON, -32600 for JSON that is not a
//! valid JSON-RPC message) and which id, if any could be read, to echo.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};
use std::fmt;

/// The only JSON-RPC version string MCP speaks.
pub const JSONRPC_VERSION: &str = "2.0";

/// A request id: a string or an integer, never null, echoed back byte for byte.
///
/// Integers keep their exact `serde_json::Number` so that a peer's `7` is never
/// echoed as `7.0` and a `u64` beyond `i64::MAX` survives.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// An integer id.
    Number(Number),
    /// A string id.
    String(String),
}

impl RequestId {
    /// Reads an id from JSON, refusing null, floats, booleans, arrays and objects.
    pub fn from_value(value: &Value) -> Option<RequestId> {
        match value {
            Value::String(s) => Some(RequestId::String(s.clone())),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(RequestId::Number(n.clone())),
            _ => None,
        }
    }

    /// The id as JSON.
    pub fn to_value(&self) -> Value {
        match self {
            RequestId::Number(n) => Value::Number(n.clone()),
            RequestId::String(s) => Value::String(s.clone()),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n.into())
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s)
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => n.serialize(s),
            RequestId::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        RequestId::from_value(&v).ok_or_else(|| de::Error::custom("request id must be a string or an integer"))
    }
}

/// The error object of an error response, exactly as it travels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The JSON-RPC error code.
    pub code: i64,
    /// A short human-readable description.
    pub message: String,
    /// Optional structured detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// A request: has an id and expects exactly one response.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The id the response must echo.
    pub id: RequestId,
    /// The method name, still as a string (see `methods` for the closed enum).
    pub method: String,
    /// The params object, if any, unparsed.
    pub params: Option<Value>,
}

/// A notification: no id, never answered.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The params object, if any.
    pub params: Option<Value>,
}

/// A successful response.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result object, unparsed: it is read with the pending request's type.
    pub result: Value,
}

/// An error response. The id is absent only when the request's id could not be read.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorResponse {
    /// The id of the failed request, when known.
    pub id: Option<RequestId>,
    /// What went wrong.
    pub error: ErrorObject,
}

/// One JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A successful response.
    Response(Response),
    /// An error response.
    Error(ErrorResponse),
}

/// What one frame (one stdio line, one HTTP body) held.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// A single message.
    Single(Message),
    /// A JSON-RPC batch: each element decoded on its own, so one bad element
    /// costs only its own error.
    Batch(Vec<Result<Message, DecodeError>>),
}

/// Which JSON-RPC error a decode failure maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// The bytes are not JSON at all (-32700).
    Parse,
    /// The JSON is not a valid JSON-RPC message (-32600), including a batch where
    /// batches are not allowed.
    InvalidRequest,
}

/// A frame that could not be read as JSON-RPC.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{detail}")]
pub struct DecodeError {
    /// Parse error or invalid request.
    pub kind: DecodeErrorKind,
    /// The id to echo in the error response, when one could be read.
    pub id: Option<RequestId>,
    /// What exactly was wrong, for the error message.
    pub detail: String,
}

impl DecodeError {
    fn parse(detail: impl fmt::Display) -> Self {
        DecodeError { kind: DecodeErrorKind::Parse, id: None, detail: detail.to_string() }
    }

    fn invalid(id: Option<RequestId>, detail: impl Into<String>) -> Self {
        DecodeError { kind: DecodeErrorKind::InvalidRequest, id, detail: detail.into() }
    }
}

/// Whether a frame may hold a batch. Batches exist only in 2025-03-26; callers
/// ask the feature table (`Feature::Batching`) and pass the answer here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batching {
    /// A JSON array is decoded as a batch.
    Allowed,
    /// A JSON array is refused with -32600.
    Refused,
}

/// Decodes one frame.
pub fn decode_frame(bytes: &[u8], batching: Batching) -> Result<Frame, DecodeError> {
    // Peek at the first significant byte so a batch is recognised without
    // parsing twice.
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first == Some(b'[') {
        let items: Vec<&RawValue> = serde_json::from_slice(bytes).map_err(DecodeError::parse)?;
        if batching == Batching::Refused {
            return Err(DecodeError::invalid(None, "JSON-RPC batches are not supported by this protocol revision"));
        }
        if items.is_empty() {
            return Err(DecodeError::invalid(None, "empty batch"));
        }
        let decoded = items.into_iter().map(|raw| decode_message(raw.get().as_bytes())).collect();
        return Ok(Frame::Batch(decoded));
    }
    decode_message(bytes).map(Frame::Single)
}

/// Decodes exactly one message (a JSON object).
pub fn decode_message(bytes: &[u8]) -> Result<Message, DecodeError> {
    decode_raw(bytes)?.into_owned()
}

/// Decodes a message from an already parsed JSON value.
pub fn message_from_value(value: Value) -> Result<Message, DecodeError> {
    // Rare path (tests, bridges): go through text so there is one decoder.
    decode_message(value.to_string().as_bytes())
}

/// Decodes one message but leaves `params`, `result` and `error` as borrowed raw
/// JSON, so a typed decoder can read them straight into their Rust types without
/// building a `serde_json::Value` first. This is the fast path; [`decode_message`]
/// is this plus a conversion to owned values.
pub fn decode_raw(bytes: &[u8]) -> Result<RawMessage<'_>, DecodeError> {
    let env: Envelope<'_> = match serde_json::from_slice(bytes) {
        Ok(env) => env,
        Err(e) if e.is_syntax() || e.is_eof() => return Err(DecodeError::parse(e)),
        Err(e) => return Err(DecodeError::invalid(None, e.to_string())),
    };
    env.classify()
}

/// A message whose payload is still raw JSON borrowed from the input frame.
#[derive(Clone, Debug)]
pub enum RawMessage<'a> {
    /// A request.
    Request {
        /// The id to echo.
        id: RequestId,
        /// The method name.
        method: String,
        /// The params, unparsed.
        params: Option<&'a RawValue>,
    },
    /// A notification.
    Notification {
        /// The method name.
        method: String,
        /// The params, unparsed.
        params: Option<&'a RawValue>,
    },
    /// A successful response.
    Response {
        /// The id of the answered request.
        id: RequestId,
        /// The result, unparsed.
        result: &'a RawValue,
    },
    /// An error response.
    Error(ErrorResponse),
}

impl RawMessage<'_> {
    /// Converts the raw payloads into owned JSON values.
    ///
    /// The envelope parse only checked that the payload is well-formed JSON
    /// text; building a `Value` can still fail on nesting deeper than
    /// serde_json's recursion limit or a number beyond `f64`. Those are -32700
    /// with the id echoed, never a silent `null`.
    pub fn into_owned(self) -> Result<Message, DecodeError> {
        fn value(raw: &RawValue, id: Option<&RequestId>) -> Result<Value, DecodeError> {
            serde_json::from_str(raw.get()).map_err(|e| DecodeError {
                kind: DecodeErrorKind::Parse,
                id: id.cloned(),
                detail: e.to_string(),
            })
        }
        fn params(raw: Option<&RawValue>, id: Option<&RequestId>) -> Result<Option<Value>, DecodeError> {
            raw.map(|raw| value(raw, id)).transpose()
        }
        Ok(match self {
            RawMessage::Request { id, method, params: raw } => {
                let params = params(raw, Some(&id))?;
                Message::Request(Request { id, method, params })
            }
            RawMessage::Notification { method, params: raw } => {
                Message::Notification(Notification { method, params: params(raw, None)? })
            }
            RawMessage::Response { id, result } => {
                let result = value(result, Some(&id))?;
                Message::Response(Response { id, result })
            }
            RawMessage::Error(e) => Message::Error(e),
        })
    }
}

impl Message {
    /// Encodes the message as compact JSON bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        // Serialising our own types into a Vec cannot fail: every map key is a string.
        serde_json::to_vec(self).expect("a JSON-RPC message always serialises")
    }

    /// The message as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a JSON-RPC message always serialises")
    }

    /// The method name, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) | Message::Error(_) => None,
        }
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        match self {
            Message::Request(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("method", &r.method)?;
                if let Some(p) = &r.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Notification(n) => {
                map.serialize_entry("method", &n.method)?;
                if let Some(p) = &n.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Response(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("result", &r.result)?;
            }
            Message::Error(e) => {
                // An unknown id is left out, not sent as `null`: no MCP schema
                // accepts a null id, and 2025-11-25 on allow the member to be absent.
                if let Some(id) = &e.id {
                    map.serialize_entry("id", id)?;
                }
                map.serialize_entry("error", &e.error)?;
            }
        }
        map.end()
    }
}

/// The envelope's members as read, before the rules decide what kind of
/// message it is. Every member is optional and raw so that a missing or
/// mistyped one becomes a -32600 with the id echoed, not a serde error that
/// loses the id.
#[derive(Default)]
struct Envelope<'a> {
    jsonrpc: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    method: Option<&'a RawValue>,
    params: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Envelope<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Envelope<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'a>, A::Error> {
                let mut env = Envelope::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    let slot = match key.as_ref() {
                        "jsonrpc" => &mut env.jsonrpc,
                        "id" => &mut env.id,
                        "method" => &mut env.method,
                        "params" => &mut env.params,
                        "result" => &mut env.result,
                        "error" => &mut env.error,
                        // JSON-RPC defines no other members; ignore rather than fail
                        // so a peer's extension never costs it its request.
                        _ => {
                            map.next_value::<de::IgnoredAny>()?;
                            continue;
                        }
                    };
                    if slot.is_some() {
                        return Err(de::Error::custom(format!("duplicate member `{key}`")));
                    }
                    *slot = Some(map.next_value()?);
                }
                Ok(env)
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

fn raw_is_null(raw: &RawValue) -> bool {
    raw.get() == "null"
}

impl<'a> Envelope<'a> {
    fn classify(self) -> Result<RawMessage<'a>, DecodeError> {
        // Read the id first so every later error can echo it.
        let id_was_null = self.id.is_some_and(raw_is_null);
        let id = match self.id {
            None => None,
            Some(raw) if raw_is_null(raw) => None,
            Some(raw) => match serde_json::from_str::<Value>(raw.get()).ok().as_ref().and_then(RequestId::from_value) {
                Some(id) => Some(id),
                None => return Err(DecodeError::invalid(None, "id must be a string or an integer")),
            },
        };
        // Read as an owned string: a borrowed `&str` cannot hold an escaped form
        // such as "2\u002e0", which is still the string "2.0".
        let version = self.jsonrpc.and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
        if version.as_deref() != Some(JSONRPC_VERSION) {
            return Err(DecodeError::invalid(id, "jsonrpc must be \"2.0\""));
        }
        if let Some(method) = self.method {
            let Ok(method) = serde_json::from_str::<String>(method.get()) else {
                return Err(DecodeError::invalid(id, "method must be a string"));
            };
            if self.result.is_some() || self.error.is_some() {
                return Err(DecodeError::invalid(id, "a request carries no result or error"));
            }
            let params = match self.params {
                None => None,
                Some(p) if p.get().starts_with(['{', '[']) => Some(p),
                // By-position (array) params are valid JSON-RPC; MCP's typed
                // decoding answers them with -32602, not -32600.
                Some(_) => return Err(DecodeError::invalid(id, "params must be an object or an array")),
            };
            if id_was_null {
                return Err(DecodeError::invalid(None, "request id must not be null"));
            }
            return Ok(match id {
                Some(id) => RawMessage::Request { id, method, params },
                None => RawMessage::Notification { method, params },
            });
        }
        match (self.result, self.error) {
            (Some(_), Some(_)) => Err(DecodeError::invalid(id, "a response carries result or error, not both")),
            (Some(result), None) => match id {
                Some(id) => Ok(RawMessage::Response { id, result }),
                None => Err(DecodeError::invalid(None, "a result response needs an id")),
            },
            (None, Some(error)) => {
                let error: ErrorObject = serde_json::from_str(error.get())
                    .map_err(|e| DecodeError::invalid(id.clone(), format!("malformed error object: {e}")))?;
                Ok(RawMessage::Error(ErrorResponse { id, error }))
            }
            (None, None) => Err(DecodeError::invalid(id, "neither a request, a notification nor a response")),
        }
    }
}

/// Builds a params object from a map; a helper for encoders.
pub fn params_object(map: Map<String, Value>) -> Option<Value> {
    if map.is_empty() {
        None
    } else {
        Some(Value::Object(map))
    }
}

mod prefix;
pub use prefix::request_id_in_prefix;

#[cfg(test)]
mod tests;
