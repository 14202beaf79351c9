//! The MRTR `requestState` opener (`arbor_server::input::modern`): sealing a handler's
//! state into a token and opening the client's retry.
//!
//! To reach the code behind the tag check, one mode signs payloads of its own with the
//! key, in the token format `seal.rs` documents (base64url payload, a dot, base64url
//! HMAC-SHA256 over a domain label and the payload); a self-check (an unchanged payload
//! re-signed here must open) fails the body if that format ever changes. Not a test of
//! the key ring's rotation. Invariant of the body: it panics only when a forged token
//! opens, a token opens for another binding, or what opens is not what was sealed.

use std::collections::BTreeMap;

use arbor_protocol::methods::MethodName;
use arbor_protocol::model::capabilities::ClientCapabilities;
use arbor_protocol::model::mrtr::InputResponses;
use arbor_server::input::modern::{open_bound, seal_bound, Arguments, Binding};
use arbor_server::{InputRequired, StateKey};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{json, Map, Value};
use sha2::Sha256;

const KEY: [u8; 32] = [7; 32];
/// The domain label of `requestState` tags (`seal.rs`).
const DOMAIN: &[u8] = b"arbor/mcp/requestState\0";

fn sign(payload: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&KEY).expect("HMAC takes any key");
    mac.update(DOMAIN);
    mac.update(payload);
    format!("{}.{}", URL_SAFE_NO_PAD.encode(payload), URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()))
}

fn caps() -> ClientCapabilities {
    serde_json::from_value(json!({"roots": {}, "sampling": {}, "elicitation": {"form": {}, "url": {}}}))
        .expect("capabilities decode")
}

/// Seals a state with one roots request under `key` for `binding`; the token.
fn seal(key: &StateKey, binding: Binding<'_>, state: Value, request: &str) -> String {
    let reply = InputRequired::new().roots(request).state(state);
    let sealed = seal_bound(key, binding, reply, &caps()).expect("a roots request with a state seals");
    sealed.request_state.expect("a sealed reply has a requestState")
}

/// The same JSON with every object's members in reverse order (the canonical digest
/// must not care).
fn reordered(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().rev().map(|(k, v)| (k.clone(), reordered(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(reordered).collect()),
        other => other.clone(),
    }
}

/// The first byte picks the mode (mod 3). 0: the rest is a token, which must not open.
/// 1: the rest is JSON `{"payload": {...}, "responses": {...}}`; the members of
/// `payload` replace those of a real sealed payload, which is signed with the key and
/// opened: what opens must be bound to the request and carry the payload's state and
/// only answers to issued keys. 2: the rest is JSON `{"subject", "arguments", "state",
/// "principal"}`; sealed, it opens for the same request (arguments in another order)
/// with its state, and not for another subject, arguments or principal.
pub fn request_state(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let key = StateKey::from_bytes(&KEY);
    let empty = Map::new();
    match mode % 3 {
        0 => {
            let Ok(token) = std::str::from_utf8(rest) else { return };
            let binding = Binding::new(MethodName::CallTool, "t").arguments(Arguments::Object(&empty));
            assert!(open_bound(&key, binding, Some(token), None).is_err(), "a forged requestState opened: {token}");
        }
        1 => {
            let Ok(input) = serde_json::from_slice::<Value>(rest) else { return };
            let Some(overrides) = input.get("payload").and_then(Value::as_object) else { return };
            let responses =
                input.get("responses").and_then(|r| serde_json::from_value::<InputResponses>(r.clone()).ok());
            let binding = Binding::new(MethodName::CallTool, "t").arguments(Arguments::Object(&empty));
            let token = seal(&key, binding, json!({"step": 1}), "r");
            let (payload, _) = token.split_once('.').expect("a token has a dot");
            let payload = URL_SAFE_NO_PAD.decode(payload).expect("the payload is base64url");
            let mut payload: Map<String, Value> = serde_json::from_slice(&payload).expect("the payload is JSON");
            if overrides.is_empty() {
                // The self-check of `sign`: the server's own payload, signed here, opens.
                let opened = open_bound(&key, binding, Some(&sign(&serde_json::to_vec(&payload).expect("JSON"))), None);
                assert!(opened.is_ok(), "the token format changed: {opened:?}");
            }
            for (k, v) in overrides {
                payload.insert(k.clone(), v.clone());
            }
            let token = sign(&serde_json::to_vec(&payload).expect("JSON writes"));
            let Ok(resumed) = open_bound(&key, binding, Some(&token), responses) else { return };
            assert_eq!(payload.get("m"), Some(&json!("tools/call")), "opened for another method");
            assert_eq!(payload.get("s"), Some(&json!("t")), "opened for another subject");
            let state = payload.get("d").filter(|d| !d.is_null());
            assert_eq!(resumed.state.as_ref(), state, "the state is not the payload's");
            let issued: BTreeMap<String, Value> =
                payload.get("k").and_then(|k| serde_json::from_value(k.clone()).ok()).unwrap_or_default();
            for name in resumed.responses.iter().flat_map(|r| r.keys()) {
                assert!(issued.contains_key(name), "an answer to the unissued key {name:?} kept");
            }
        }
        _ => {
            let Ok(input) = serde_json::from_slice::<Value>(rest) else { return };
            let (Some(subject), Some(arguments), Some(state)) = (
                input.get("subject").and_then(Value::as_str),
                input.get("arguments").and_then(Value::as_object),
                input.get("state"),
            ) else {
                return;
            };
            let principal = input.get("principal").and_then(Value::as_str);
            let binding = Binding::new(MethodName::CallTool, subject)
                .arguments(Arguments::Object(arguments))
                .principal(principal);
            let token = seal(&key, binding, state.clone(), "r");
            let reordered_args = reordered(&Value::Object(arguments.clone()));
            let same = binding.arguments(Arguments::Object(reordered_args.as_object().expect("an object")));
            let resumed = open_bound(&key, same, Some(&token), None).expect("a sealed state opens for its request");
            assert_eq!(resumed.state.as_ref(), Some(state).filter(|s| !s.is_null()));
            let other_subject = format!("{subject}x");
            let other = Binding { subject: &other_subject, ..binding };
            assert!(open_bound(&key, other, Some(&token), None).is_err(), "opened for another subject");
            let mut other_args = arguments.clone();
            other_args.insert("\u{0}fuzz".to_owned(), json!(1));
            let other = binding.arguments(Arguments::Object(&other_args));
            assert!(open_bound(&key, other, Some(&token), None).is_err(), "opened for other arguments");
            let other_principal = format!("{}x", principal.unwrap_or_default());
            let other = binding.principal(Some(&other_principal));
            assert!(open_bound(&key, other, Some(&token), None).is_err(), "opened for another principal");
        }
    }
}
