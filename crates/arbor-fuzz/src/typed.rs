//! Typed decoding of every method (`arbor_protocol::methods`): the four message enums
//! (client and server requests and notifications), whole frames and raw params.
//!
//! Not a test of what a method means, only of its codec. Invariant of the body: it panics
//! only when the one-pass decoder and the two-step decoder disagree, or when a decoded
//! message does not survive its own encoding.

use arbor_protocol::jsonrpc::decode_raw;
use arbor_protocol::methods::{ClientNotification, ClientRequest, MethodName, ServerNotification, ServerRequest};
use serde_json::value::RawValue;

/// Checks one request enum on one frame.
macro_rules! request_frame {
    ($ty:ty, $frame:expr) => {{
        let frame: &[u8] = $frame;
        let fast = <$ty>::decode_frame(frame);
        let slow = decode_raw(frame).ok().map(|raw| <$ty>::from_raw(&raw));
        match &fast {
            Ok((id, call)) => {
                assert!(
                    matches!(&slow, Some(Ok((sid, scall))) if sid == id && scall == call),
                    "decode_frame and decode_raw + from_raw disagree: {fast:?} against {slow:?}"
                );
                let again = <$ty>::decode_frame(&call.to_vec(id)).expect("an encoded request decodes");
                assert_eq!(&again, &(id.clone(), call.clone()), "a request changed through its encoding");
            }
            Err(_) => assert!(!matches!(slow, Some(Ok(_))), "only the two-step decoder accepted: {slow:?}"),
        }
    }};
}

/// Checks one notification enum on one frame.
macro_rules! notification_frame {
    ($ty:ty, $frame:expr) => {{
        let frame: &[u8] = $frame;
        let fast = <$ty>::decode_frame(frame);
        let slow = decode_raw(frame).ok().map(|raw| <$ty>::from_raw(&raw));
        match &fast {
            Ok(call) => {
                assert!(
                    matches!(&slow, Some(Ok(scall)) if scall == call),
                    "decode_frame and decode_raw + from_raw disagree: {fast:?} against {slow:?}"
                );
                let again = <$ty>::decode_frame(&call.to_vec()).expect("an encoded notification decodes");
                assert_eq!(&again, call, "a notification changed through its encoding");
            }
            Err(_) => assert!(!matches!(slow, Some(Ok(_))), "only the two-step decoder accepted: {slow:?}"),
        }
    }};
}

/// Decodes raw params as one enum's method; what decodes survives a frame round trip.
macro_rules! params_of {
    ($ty:ty, $method:expr, $params:expr, request) => {{
        if let Ok(call) = <$ty>::decode($method, $params) {
            let id = arbor_protocol::jsonrpc::RequestId::from(7);
            let again = <$ty>::decode_frame(&call.to_vec(&id)).expect("encoded params decode");
            assert_eq!(again, (id, call), "params changed through their encoding");
        }
    }};
    ($ty:ty, $method:expr, $params:expr, notification) => {{
        if let Ok(call) = <$ty>::decode($method, $params) {
            let again = <$ty>::decode_frame(&call.to_vec()).expect("encoded params decode");
            assert_eq!(again, call, "params changed through their encoding");
        }
    }};
}

/// The first byte picks the mode. Below 0x80: the rest is a whole frame, decoded as each
/// of the four enums. From 0x80: the second byte picks a method of `MethodName::ALL` and
/// the rest is its params (JSON), decoded by every enum that has the method.
pub fn typed_request(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode < 0x80 {
        request_frame!(ClientRequest, rest);
        request_frame!(ServerRequest, rest);
        notification_frame!(ClientNotification, rest);
        notification_frame!(ServerNotification, rest);
        return;
    }
    let Some((&pick, params)) = rest.split_first() else { return };
    let method = MethodName::ALL[usize::from(pick) % MethodName::ALL.len()].as_str();
    let raw: Option<&RawValue> = if params.is_empty() {
        None
    } else {
        match serde_json::from_slice(params) {
            Ok(raw) => Some(raw),
            Err(_) => return,
        }
    };
    params_of!(ClientRequest, method, raw, request);
    params_of!(ServerRequest, method, raw, request);
    params_of!(ClientNotification, method, raw, notification);
    params_of!(ServerNotification, method, raw, notification);
}
