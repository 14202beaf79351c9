//! The method traits: what a request or notification *is*, as a type.
//!
//! Each MCP method is an uninhabited marker type (see `methods`) implementing
//! [`Request`] or [`Notification`], which names its wire string, its params type
//! and, for requests, its result type. A response is decoded with the pending
//! request's `Result` type, never by guessing among shapes.
//!
//! This module also holds the frame writers that put typed params or results into
//! a JSON-RPC envelope without going through `serde_json::Value`. It does not
//! decide which methods a revision has (the era modules do). Invariant: the method
//! string of a frame always comes from `METHOD`, so it is spelled in one place.

use crate::jsonrpc::{RequestId, JSONRPC_VERSION};
use crate::methods::{MethodName, ResultError};
use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use std::fmt::Debug;

/// A request: a method that expects exactly one response.
pub trait Request {
    /// The method name.
    const METHOD: MethodName;
    /// The params type.
    type Params: Serialize + DeserializeOwned + Clone + Debug + PartialEq;
    /// The result type of a successful response.
    type Result: Serialize + DeserializeOwned + Clone + Debug + PartialEq;

    /// Reads a result from its raw JSON text. Methods whose result is an
    /// `Outcome` override this to look at `resultType` without copying the text.
    fn read_result(text: &str) -> serde_json::Result<Self::Result> {
        serde_json::from_str(text)
    }
}

/// A notification: a method that is never answered.
pub trait Notification {
    /// The method name.
    const METHOD: MethodName;
    /// The params type.
    type Params: Serialize + DeserializeOwned + Clone + Debug + PartialEq;
}

/// Reads a successful response's `result` with the pending request's result type.
pub fn decode_result<R: Request>(result: &RawValue) -> Result<R::Result, ResultError> {
    R::read_result(result.get()).map_err(|e| ResultError { method: R::METHOD, detail: e.to_string() })
}

/// Encodes a request frame for `R`.
pub fn encode_request<R: Request>(id: &RequestId, params: &R::Params) -> Vec<u8> {
    to_vec(&RequestFrame { id, method: R::METHOD.as_str(), params })
}

/// Encodes a notification frame for `N`.
pub fn encode_notification<N: Notification>(params: &N::Params) -> Vec<u8> {
    to_vec(&NotificationFrame { method: N::METHOD.as_str(), params })
}

/// What every response [`encode_response`] writes begins with, before its id.
pub const RESPONSE_HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;

/// What follows the id in a response [`encode_response`] writes, before its result.
pub const RESULT_KEY: &[u8] = br#","result":"#;

/// Encodes a successful response frame: the bytes [`ResponseFrame`] serialises to, with
/// the envelope's fixed keys written as they are. Serialised as map entries, the
/// `"jsonrpc":"2.0"` entry and the `id` and `result` keys were each scanned for escapes:
/// about 450 instructions of every answer.
pub fn encode_response<T: Serialize>(id: &RequestId, result: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(RESPONSE_HEAD);
    // An id and a model type serialise only to JSON values: writing to a Vec cannot fail.
    serde_json::to_writer(&mut out, id).expect("a request id always serialises");
    out.extend_from_slice(RESULT_KEY);
    serde_json::to_writer(&mut out, result).expect("a model type always serialises");
    out.push(b'}');
    out
}

/// Encodes a frame. The buffer starts at 512 bytes because MCP frames are rarely
/// smaller than serde_json's default 128, and each regrowth copies the frame.
pub(crate) fn to_vec<T: Serialize>(frame: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    // Model types serialise only string-keyed maps, so writing to a Vec cannot fail.
    serde_json::to_writer(&mut out, frame).expect("a model type always serialises");
    out
}

/// A request envelope around borrowed, typed params.
#[derive(Debug)]
pub struct RequestFrame<'a, P> {
    /// The request id.
    pub id: &'a RequestId,
    /// The method name.
    pub method: &'a str,
    /// The params.
    pub params: &'a P,
}

impl<P: Serialize> Serialize for RequestFrame<'_, P> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(4))?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("id", self.id)?;
        map.serialize_entry("method", self.method)?;
        map.serialize_entry("params", self.params)?;
        map.end()
    }
}

/// A notification envelope around borrowed, typed params.
#[derive(Debug)]
pub struct NotificationFrame<'a, P> {
    /// The method name.
    pub method: &'a str,
    /// The params.
    pub params: &'a P,
}

impl<P: Serialize> Serialize for NotificationFrame<'_, P> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("method", self.method)?;
        map.serialize_entry("params", self.params)?;
        map.end()
    }
}

/// A successful response envelope around a borrowed, typed result.
#[derive(Debug)]
pub struct ResponseFrame<'a, T> {
    /// The id of the request being answered.
    pub id: &'a RequestId,
    /// The result.
    pub result: &'a T,
}

impl<T: Serialize> Serialize for ResponseFrame<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("id", self.id)?;
        map.serialize_entry("result", self.result)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_is_encoded_as_its_frame_serialises() {
        let result =
            serde_json::json!({ "content": [{ "type": "text", "text": "a \"quoted\"\n line" }], "isError": false });
        let ids = [
            RequestId::Number(7.into()),
            RequestId::Number((-1).into()),
            RequestId::Number(u64::MAX.into()),
            RequestId::String("call-1".into()),
            RequestId::String("with \"quotes\" and \\ and \u{1}".into()),
        ];
        for id in &ids {
            let framed = serde_json::to_vec(&ResponseFrame { id, result: &result }).unwrap();
            assert_eq!(encode_response(id, &result), framed, "{id:?}");
        }
    }
}
