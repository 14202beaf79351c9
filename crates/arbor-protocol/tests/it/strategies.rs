//! proptest strategies for JSON values and JSON-RPC messages, shared by the
//! property tests of this binary.
//!
//! Floats are dyadic fractions (`m / 2^k`): their shortest decimal form reads
//! back to the same `f64` whatever parser reads it, so a round trip can be
//! compared with `==` without depending on serde_json's float precision.

use arbor_protocol::jsonrpc::{ErrorObject, ErrorResponse, Message, Notification, Request, RequestId, Response};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Any JSON number that survives text exactly.
pub fn json_number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<i64>().prop_map(Number::from),
        any::<u64>().prop_map(Number::from),
        (any::<i32>(), 0..20u32)
            .prop_filter_map("finite", |(m, k)| Number::from_f64(f64::from(m) / f64::from(2u32.pow(k.min(30))))),
    ]
}

/// Any JSON value up to a few levels deep.
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        json_number().prop_map(Value::Number),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A JSON object (what MCP params and results are).
pub fn json_object() -> impl Strategy<Value = Value> {
    prop::collection::vec((any::<String>(), json_value()), 0..6)
        .prop_map(|entries| Value::Object(entries.into_iter().collect()))
}

/// Params as JSON-RPC allows them: absent, an object, or an array.
pub fn params() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        json_object().prop_map(Some),
        prop::collection::vec(json_value(), 0..4).prop_map(|v| Some(Value::Array(v))),
    ]
}

/// Any request id: integers across the whole i64/u64 range, or any string.
pub fn request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::from),
        any::<u64>().prop_map(|n| RequestId::Number(n.into())),
        any::<String>().prop_map(RequestId::from),
    ]
}

/// A method name: mostly MCP-shaped, sometimes any string.
pub fn method() -> impl Strategy<Value = String> {
    prop_oneof![3 => "[a-z]{1,12}(/[a-z_]{1,12}){0,2}", 1 => any::<String>()]
}

/// An error object. `data` is never `null`: `"data": null` and a missing
/// `data` read back the same, as `None`.
pub fn error_object() -> impl Strategy<Value = ErrorObject> {
    (any::<i64>(), any::<String>(), prop::option::of(json_value().prop_filter("not null", |v| !v.is_null())))
        .prop_map(|(code, message, data)| ErrorObject { code, message, data })
}

/// Any JSON-RPC message.
pub fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (request_id(), method(), params()).prop_map(|(id, method, params)| Message::Request(Request {
            id,
            method,
            params
        })),
        (method(), params()).prop_map(|(method, params)| Message::Notification(Notification { method, params })),
        (request_id(), json_value()).prop_map(|(id, result)| Message::Response(Response { id, result })),
        (prop::option::of(request_id()), error_object())
            .prop_map(|(id, error)| Message::Error(ErrorResponse { id, error })),
    ]
}
