//! Unit tests of the envelope decoder: classification, id echo, and the frames
//! that must never panic or silently change.

use super::*;

#[test]
fn ids_are_echoed_exactly() {
    let m = decode_message(br#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#).unwrap();
    assert_eq!(
        String::from_utf8(m.to_vec()).unwrap(),
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#
    );
    let m = decode_message(br#"{"jsonrpc":"2.0","id":"a-1","result":{}}"#).unwrap();
    assert_eq!(m, Message::Response(Response { id: "a-1".into(), result: serde_json::json!({}) }));
}

#[test]
fn bad_frames_are_classified() {
    assert_eq!(decode_message(b"{not json").unwrap_err().kind, DecodeErrorKind::Parse);
    assert_eq!(decode_message(b"").unwrap_err().kind, DecodeErrorKind::Parse);
    assert_eq!(decode_message(b"42").unwrap_err().kind, DecodeErrorKind::InvalidRequest);
    let e = decode_message(br#"{"jsonrpc":"1.0","id":3,"method":"x"}"#).unwrap_err();
    assert_eq!((e.kind, e.id), (DecodeErrorKind::InvalidRequest, Some(3.into())));
    let e = decode_message(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#).unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::InvalidRequest);
    let e = decode_message(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::InvalidRequest);
}

#[test]
fn payloads_that_cannot_become_values_are_parse_errors_with_the_id() {
    let deep =
        format!(r#"{{"jsonrpc":"2.0","id":4,"method":"x","params":{{"a":{}{}}}}}"#, "[".repeat(300), "]".repeat(300));
    let e = decode_message(deep.as_bytes()).unwrap_err();
    assert_eq!((e.kind, e.id), (DecodeErrorKind::Parse, Some(4.into())));
    let e = decode_message(br#"{"jsonrpc":"2.0","id":"r","result":{"n":1e400}}"#).unwrap_err();
    assert_eq!((e.kind, e.id), (DecodeErrorKind::Parse, Some("r".into())));
    // The fast path still hands the raw payload to a typed decoder.
    assert!(decode_raw(deep.as_bytes()).is_ok());
}

#[test]
fn very_deep_nesting_anywhere_returns_without_overflowing_the_stack() {
    let deep = |open: &str, close: &str| format!("{}{}", open.repeat(100_000), close.repeat(100_000));
    let frames = [
        deep("[", "]"),
        deep(r#"{"a":"#, "}"),
        format!(r#"{{"jsonrpc":"2.0","method":"x","extra":{}}}"#, deep("[", "]")),
        format!(r#"{{"jsonrpc":"2.0","method":"x","params":{{"p":{}}}}}"#, deep("[", "]")),
    ];
    for batching in [Batching::Allowed, Batching::Refused] {
        // A batch of one bad element, or refused outright.
        assert!(!matches!(decode_frame(frames[0].as_bytes(), batching), Ok(Frame::Single(_))));
        assert!(decode_frame(frames[1].as_bytes(), batching).is_err());
        // An unknown member is skipped whatever it holds.
        assert!(decode_frame(frames[2].as_bytes(), batching).is_ok());
        assert_eq!(decode_frame(frames[3].as_bytes(), batching).unwrap_err().kind, DecodeErrorKind::Parse);
    }
}

#[test]
fn escaped_version_strings_are_still_2_0() {
    assert!(decode_message(br#"{"jsonrpc":"2\u002e0","id":1,"method":"x"}"#).is_ok());
}

#[test]
fn an_error_without_a_known_id_leaves_the_id_out() {
    let m = decode_message(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#).unwrap();
    assert_eq!(
        String::from_utf8(m.to_vec()).unwrap(),
        r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#
    );
}

#[test]
fn batches_follow_the_revision() {
    let b = br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"bad":true}]"#;
    assert_eq!(decode_frame(b, Batching::Refused).unwrap_err().kind, DecodeErrorKind::InvalidRequest);
    let Frame::Batch(items) = decode_frame(b, Batching::Allowed).unwrap() else { panic!("not a batch") };
    assert!(items[0].is_ok() && items[1].is_err());
    assert_eq!(decode_frame(b"[]", Batching::Allowed).unwrap_err().kind, DecodeErrorKind::InvalidRequest);
}
