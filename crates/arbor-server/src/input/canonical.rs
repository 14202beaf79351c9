//! The canonical JSON text of a request's arguments, the input of the digest that binds a
//! `requestState` to them.
//!
//! Two retries that carry the same arguments must digest alike even when the client
//! re-serialised them: object members are written in key order (byte order of the UTF-8
//! keys, recursively), numbers in serde_json's own text for the parsed number, strings with
//! serde_json's escaping, and no whitespace. An absent `arguments` and an empty object are
//! the same request, so both write `{}`. This is not RFC 8785 (JCS): it only has to agree
//! with itself, since the server that seals is the server that opens.
//!
//! Invariant: equal JSON values (as serde_json compares them) write equal bytes, whatever
//! the member order they arrived in.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The arguments of the request a `requestState` answers, besides its subject.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Arguments<'a> {
    /// No arguments (`resources/read`, whose URI is the subject, or a call without any).
    #[default]
    None,
    /// `tools/call` `arguments`.
    Object(&'a Map<String, Value>),
    /// `prompts/get` `arguments`.
    Strings(&'a BTreeMap<String, String>),
}

impl<'a> From<Option<&'a Map<String, Value>>> for Arguments<'a> {
    fn from(map: Option<&'a Map<String, Value>>) -> Self {
        map.map_or(Arguments::None, Arguments::Object)
    }
}

impl<'a> From<Option<&'a BTreeMap<String, String>>> for Arguments<'a> {
    fn from(map: Option<&'a BTreeMap<String, String>>) -> Self {
        map.map_or(Arguments::None, Arguments::Strings)
    }
}

impl Arguments<'_> {
    /// The canonical text of the arguments.
    pub(crate) fn canonical(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        match self {
            Arguments::None => out.extend_from_slice(b"{}"),
            Arguments::Object(map) => object(map, &mut out),
            // A BTreeMap iterates in key order already.
            Arguments::Strings(map) => {
                out.push(b'{');
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    string(k, &mut out);
                    out.push(b':');
                    string(v, &mut out);
                }
                out.push(b'}');
            }
        }
        out
    }
}

fn object(map: &Map<String, Value>, out: &mut Vec<u8>) {
    // The workspace keeps members in arrival order (`preserve_order`), so sort here.
    let mut members: Vec<(&String, &Value)> = map.iter().collect();
    members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    out.push(b'{');
    for (i, (k, v)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(k, out);
        out.push(b':');
        value(v, out);
    }
    out.push(b'}');
}

// Recursion is bounded: serde_json refuses to decode values nested deeper than 128.
fn value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                value(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => object(map, out),
    }
}

fn string(s: &str, out: &mut Vec<u8>) {
    // Writing a `str` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(v: Value) -> String {
        String::from_utf8(Arguments::Object(v.as_object().unwrap()).canonical()).unwrap()
    }

    #[test]
    fn member_order_and_escapes_do_not_matter() {
        let a: Value = serde_json::from_str(r#"{"b":{"y":[1,{"q":2,"p":1}],"x":"\u0041"},"a":1.5}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{ "a" : 1.5, "b" : { "x" : "A", "y" : [1, {"p":1,"q":2}] } }"#).unwrap();
        assert_eq!(canon(a.clone()), canon(b));
        assert_eq!(canon(a), r#"{"a":1.5,"b":{"x":"A","y":[1,{"p":1,"q":2}]}}"#);
    }

    #[test]
    fn different_values_write_differently() {
        assert_ne!(canon(json!({"path": "A"})), canon(json!({"path": "B"})));
        assert_ne!(canon(json!({"n": 1})), canon(json!({"n": "1"})));
        assert_ne!(canon(json!({"a": [1, 2]})), canon(json!({"a": [2, 1]})));
    }

    #[test]
    fn absent_and_empty_arguments_are_the_same_request() {
        assert_eq!(Arguments::None.canonical(), canon(json!({})).into_bytes());
        let empty = BTreeMap::new();
        assert_eq!(Arguments::Strings(&empty).canonical(), Arguments::None.canonical());
        let one = BTreeMap::from([("b".to_owned(), "2".to_owned()), ("a".to_owned(), "1".to_owned())]);
        assert_eq!(Arguments::Strings(&one).canonical(), br#"{"a":"1","b":"2"}"#);
    }
}
