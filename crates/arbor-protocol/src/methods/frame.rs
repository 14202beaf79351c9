//! One-pass decoding of a whole request or notification frame into a typed enum.
//!
//! The two-step path (`jsonrpc::decode_raw`, then `from_raw`) scans the params twice:
//! once to delimit them as raw JSON and once to read them. For the usual member
//! order (`jsonrpc`, `id`, `method`, then `params`) this module reads the frame in a
//! single pass, handing `params` straight to the method's params type once the
//! method is known.
//!
//! It is not a second set of envelope rules: on anything unusual (params before
//! method, a missing or wrong member, a duplicate, a result or error member, params
//! that do not fit) it gives up and the caller falls back to the two-step path, so
//! every error, and every success, is exactly the two-step path's.

use super::{MethodError, MethodName};
use crate::jsonrpc::{decode_raw, DecodeError, RequestId};
use crate::model::wire::Key;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Number;
use std::fmt;
use std::marker::PhantomData;

/// A closed enum of typed calls whose params can be read for a known method.
pub(crate) trait TypedCall: Sized {
    /// Reads the params of `method` from `d`, failing for a method this enum lacks.
    fn read_params<'de, D: Deserializer<'de>>(method: MethodName, d: D) -> Result<Self, D::Error>;
}

/// Why a frame could not be read as a typed request or notification.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FrameError {
    /// The frame is not JSON (-32700) or not a JSON-RPC message (-32600).
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The method is unknown (-32601), the params invalid (-32602), or the message
    /// is of the wrong kind.
    #[error(transparent)]
    Method(#[from] MethodError),
}

/// Decodes a frame in one pass, or returns `None` so the caller takes the two-step path.
pub(crate) fn fast<T: TypedCall>(bytes: &[u8]) -> Option<(Option<RequestId>, T)> {
    // Checking UTF-8 once up front (fast, vectorised) lets serde_json read from a
    // `&str`, which skips its per-string checks and measurably speeds up decoding.
    let text = std::str::from_utf8(bytes).ok()?;
    let mut de = serde_json::Deserializer::from_str(text);
    let frame = de.deserialize_map(FrameVisitor::<T>(PhantomData)).ok()?;
    de.end().ok()?;
    Some(frame)
}

/// The two-step path, for when [`fast`] gives up.
pub(crate) fn slow(bytes: &[u8]) -> Result<crate::jsonrpc::RawMessage<'_>, FrameError> {
    Ok(decode_raw(bytes)?)
}

struct FrameVisitor<T>(PhantomData<T>);

struct ParamsSeed<T>(MethodName, PhantomData<T>);

impl<'de, T: TypedCall> DeserializeSeed<'de> for ParamsSeed<T> {
    type Value = T;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        T::read_params(self.0, d)
    }
}

/// Reads a request id without building a `serde_json::Value`.
struct IdSeed;

impl<'de> DeserializeSeed<'de> for IdSeed {
    type Value = RequestId;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RequestId, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IdSeed {
    type Value = RequestId;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or an integer")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
        Ok(RequestId::Number(Number::from(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
        Ok(RequestId::Number(Number::from(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
        Ok(RequestId::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<RequestId, E> {
        Ok(RequestId::String(v))
    }
}

fn give_up<E: de::Error>() -> E {
    E::custom("take the two-step path")
}

impl<'de, T: TypedCall> Visitor<'de> for FrameVisitor<T> {
    type Value = (Option<RequestId>, T);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request or notification")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut version_ok, mut id, mut method, mut call) = (None, None, None, None);
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match &*key.0 {
                "jsonrpc" if version_ok.is_none() => {
                    version_ok = Some(&*map.next_value::<Key<'de>>()?.0 == crate::jsonrpc::JSONRPC_VERSION);
                }
                "id" if id.is_none() => id = Some(map.next_value_seed(IdSeed)?),
                "method" if method.is_none() => {
                    let name = map.next_value::<Key<'de>>()?;
                    method = Some(MethodName::parse(&name.0).ok_or_else(give_up)?);
                }
                // Params before the method, a duplicate, or a response member: let the
                // two-step path decide.
                "params" if call.is_none() => {
                    let Some(method) = method else { return Err(give_up()) };
                    call = Some(map.next_value_seed(ParamsSeed::<T>(method, PhantomData))?);
                }
                "jsonrpc" | "id" | "method" | "params" | "result" | "error" => return Err(give_up()),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if version_ok != Some(true) {
            return Err(give_up());
        }
        let method = method.ok_or_else(give_up)?;
        let call = match call {
            Some(call) => call,
            // Absent params read as `{}`, as on the two-step path.
            None => T::read_params(method, &mut serde_json::Deserializer::from_str("{}")).map_err(|_| give_up())?,
        };
        Ok((id, call))
    }
}

#[cfg(test)]
mod tests {
    use super::fast;
    use crate::methods::{ClientNotification, ClientRequest};

    #[test]
    fn usual_frames_take_the_one_pass_path() {
        let request = br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"_meta":{"progressToken":1},"name":"t","arguments":{"a":[1,{"b":null}]}}}"#;
        assert!(fast::<ClientRequest>(request).is_some());
        assert!(fast::<ClientRequest>(br#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#).is_some());
        assert!(fast::<ClientNotification>(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).is_some());
    }

    #[test]
    fn unusual_frames_give_up() {
        assert!(fast::<ClientRequest>(br#"{"params":{},"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_none());
        assert!(fast::<ClientRequest>(br#"{"jsonrpc":"2.0","id":1,"method":"ping","id":2}"#).is_none());
        assert!(fast::<ClientRequest>(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#).is_none());
    }
}
