//! `decode_frame` (one pass) gives exactly what `decode_raw` + `from_raw` (two
//! steps) gives, for valid frames, unusual member orders and broken frames alike.

use crate::spec_schemas::spec_dir;
use crate::strategies::json_object;
use arbor_protocol::jsonrpc::decode_raw;
use arbor_protocol::methods::{
    ClientNotification, ClientRequest, FrameError, MethodName, ServerNotification, ServerRequest,
};
use proptest::prelude::*;
use serde_json::{json, Value};

fn agree(bytes: &[u8]) {
    let two_step = |bytes: &[u8]| -> Result<(arbor_protocol::jsonrpc::RequestId, ClientRequest), FrameError> {
        Ok(ClientRequest::from_raw(&decode_raw(bytes)?)?)
    };
    assert_eq!(ClientRequest::decode_frame(bytes), two_step(bytes), "{}", String::from_utf8_lossy(bytes));
    let two_step = |bytes: &[u8]| -> Result<_, FrameError> { Ok(ServerRequest::from_raw(&decode_raw(bytes)?)?) };
    assert_eq!(ServerRequest::decode_frame(bytes), two_step(bytes));
    let two_step = |bytes: &[u8]| -> Result<_, FrameError> { Ok(ClientNotification::from_raw(&decode_raw(bytes)?)?) };
    assert_eq!(ClientNotification::decode_frame(bytes), two_step(bytes));
    let two_step = |bytes: &[u8]| -> Result<_, FrameError> { Ok(ServerNotification::from_raw(&decode_raw(bytes)?)?) };
    assert_eq!(ServerNotification::decode_frame(bytes), two_step(bytes));
}

#[test]
fn official_envelopes_decode_the_same_both_ways() {
    let mut n = 0;
    for folder in std::fs::read_dir(spec_dir().join("2026-07-28/examples")).unwrap() {
        for file in std::fs::read_dir(folder.unwrap().path()).unwrap() {
            let bytes = std::fs::read(file.unwrap().path()).unwrap();
            agree(&bytes);
            n += 1;
        }
    }
    assert_eq!(n, 129);
}

#[test]
fn unusual_and_broken_frames_decode_the_same_both_ways() {
    let frames: &[&str] = &[
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
        r#"{"params":{"name":"x"},"method":"tools/call","id":1,"jsonrpc":"2.0"}"#,
        r#"{"id":"a","jsonrpc":"2.0","method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/nope","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
        r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2\u002e0","id":1,"method":"ping"}"#,
        r#"{"id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":null}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":7}"#,
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","x-extension":{"a":[1]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"} trailing"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}  "#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}"#,
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"}"#,
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
        r#"{"jsonrpc":"2.0","id":1,"method":42}"#,
        r#"not json"#,
        r#""#,
    ];
    for frame in frames {
        agree(frame.as_bytes());
    }
    // Bytes that are not UTF-8, inside a string and outside any.
    agree(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xff\"}");
    agree(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\xff");
}

/// A frame for a real method with arbitrary params, its members in any order.
fn frame() -> impl Strategy<Value = Vec<u8>> {
    let method = prop::sample::select(MethodName::ALL.to_vec());
    let id =
        prop_oneof![Just(None), any::<i64>().prop_map(|n| Some(json!(n))), "[a-z]{0,4}".prop_map(|s| Some(json!(s)))];
    let params = prop_oneof![
        Just(None),
        json_object().prop_map(Some),
        Just(Some(json!({"name": "t", "arguments": {"a": 1}}))),
        Just(Some(json!({"uri": "file:///a", "_meta": {"progressToken": 1}}))),
        Just(Some(json!({"requestId": 4, "reason": "r"}))),
        Just(Some(json!({"progressToken": "p", "progress": 1}))),
    ];
    (method, id, params, any::<u64>()).prop_map(|(method, id, params, order)| {
        let mut members: Vec<(&str, Value)> = vec![("jsonrpc", json!("2.0")), ("method", json!(method.as_str()))];
        if let Some(id) = id {
            members.push(("id", id));
        }
        if let Some(params) = params {
            members.push(("params", params));
        }
        // A deterministic shuffle driven by `order`.
        let mut order = order;
        for i in (1..members.len()).rev() {
            members.swap(i, (order % (i as u64 + 1)) as usize);
            order /= i as u64 + 1;
        }
        let body: Vec<String> = members.iter().map(|(k, v)| format!("{}:{}", json!(k), v)).collect();
        format!("{{{}}}", body.join(",")).into_bytes()
    })
}

proptest! {
    #[test]
    fn arbitrary_frames_decode_the_same_both_ways(bytes in frame()) {
        agree(&bytes);
    }
}
