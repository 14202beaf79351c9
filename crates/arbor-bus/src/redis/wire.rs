//! The Redis payload of one message: `{"node": "<id>", "key": <string|null>, "payload": <json>}`.
//!
//! Not here: the channel (the topic with the node's prefix, `mod.rs`). Invariant: decoding
//! foreign bytes never panics; anything that is not this shape is `None` and counted by the
//! caller, since other programs may publish on the same Redis.

use std::sync::Arc;

use serde_json::Value;

use crate::message::BusMessage;

/// Encodes `message` as sent by node `node`. Written by hand so the payload is serialised
/// in place rather than cloned into a wrapper `Value`.
pub(crate) fn encode(node: &str, message: &BusMessage) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(b"{\"node\":");
    // Serialising a string or a `Value` into a Vec cannot fail.
    serde_json::to_writer(&mut out, node).expect("string to JSON");
    out.extend_from_slice(b",\"key\":");
    serde_json::to_writer(&mut out, &message.key.as_deref()).expect("string to JSON");
    out.extend_from_slice(b",\"payload\":");
    serde_json::to_writer(&mut out, &message.payload).expect("value to JSON");
    out.push(b'}');
    out
}

/// A decoded payload: the sender's node id and the message.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub(crate) node: String,
    pub(crate) message: BusMessage,
}

/// Decodes a payload received on `topic`'s channel.
pub(crate) fn decode(topic: Arc<str>, bytes: &[u8]) -> Option<Decoded> {
    let Value::Object(mut map) = serde_json::from_slice::<Value>(bytes).ok()? else {
        return None;
    };
    let Value::String(node) = map.remove("node")? else {
        return None;
    };
    let key = match map.remove("key") {
        None | Some(Value::Null) => None,
        Some(Value::String(k)) => Some(Arc::from(k)),
        Some(_) => return None,
    };
    let payload = map.remove("payload")?;
    Some(Decoded { node, message: BusMessage { topic, key, payload } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_survives_the_round_trip() {
        let m = BusMessage::new("t", serde_json::json!({"a": [1, "two"]})).with_key("k");
        let d = decode("t".into(), &encode("n1", &m)).unwrap();
        assert_eq!(d.node, "n1");
        assert_eq!(d.message, m);
        let unkeyed = BusMessage::new("t", Value::Null);
        assert_eq!(decode("t".into(), &encode("n1", &unkeyed)).unwrap().message, unkeyed);
    }

    #[test]
    fn foreign_bytes_are_refused() {
        for bytes in
            [&b"hello"[..], b"[]", b"{}", b"{\"node\":1,\"payload\":2}", b"{\"node\":\"n\",\"key\":3,\"payload\":2}"]
        {
            assert!(decode("t".into(), bytes).is_none(), "{:?}", String::from_utf8_lossy(bytes));
        }
    }
}
