//! Whatever bytes arrive, the decoder answers with a message, a batch, or a
//! typed error that says which JSON-RPC error to send; it never panics.

use crate::strategies::message;
use arbor_protocol::error::{decode_error_response, ErrorCode, McpError};
use arbor_protocol::jsonrpc::{decode_frame, decode_message, Batching, DecodeError, DecodeErrorKind, Frame, Message};
use proptest::prelude::*;

/// Checks what must hold of any decode outcome, and returns it.
fn decode_and_check(bytes: &[u8], batching: Batching) -> Result<Frame, TestCaseError> {
    let outcome = decode_frame(bytes, batching);
    match &outcome {
        Ok(Frame::Single(_)) => {}
        Ok(Frame::Batch(items)) => {
            prop_assert_eq!(batching, Batching::Allowed);
            prop_assert!(!items.is_empty());
            for err in items.iter().filter_map(|i| i.as_ref().err()) {
                check_error(err)?;
            }
        }
        Err(err) => {
            check_error(err)?;
            // Bytes that parse as JSON are never a parse error.
            if err.kind == DecodeErrorKind::Parse {
                prop_assert!(serde_json::from_slice::<serde_json::Value>(bytes).is_err());
            }
        }
    }
    Ok(outcome.unwrap_or(Frame::Batch(Vec::new())))
}

/// A decode error always becomes a well-formed error response with the right
/// code and the id it read.
fn check_error(err: &DecodeError) -> Result<(), TestCaseError> {
    let code = McpError::from(err).code();
    let expected = match err.kind {
        DecodeErrorKind::Parse => ErrorCode::ParseError,
        DecodeErrorKind::InvalidRequest => ErrorCode::InvalidRequest,
    };
    prop_assert_eq!(code, expected);
    let response = decode_error_response(err);
    let Message::Error(e) = &response else { return Err(TestCaseError::fail("not an error response")) };
    prop_assert_eq!(&e.id, &err.id);
    prop_assert_eq!(e.error.code, expected.as_i64());
    prop_assert_eq!(decode_message(&response.to_vec()), Ok(response.clone()));
    Ok(())
}

/// One edit to a valid frame.
#[derive(Clone, Debug)]
enum Mutation {
    Flip(usize, u8),
    Delete(usize, usize),
    Insert(usize, u8),
    Truncate(usize),
    Duplicate(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    // Bytes that matter to JSON are over-weighted so edits hit structure.
    let interesting = prop_oneof![
        3 => prop::sample::select(b"{}[]\":,\\0123456789-.eE ntfalsru\x00\xff\xc3".to_vec()),
        1 => any::<u8>(),
    ];
    prop_oneof![
        (any::<usize>(), interesting.clone()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), 1..8usize).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (any::<usize>(), interesting).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 1..16usize).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let len = bytes.len();
    let at = |i: usize| if len == 0 { 0 } else { i % len };
    match *m {
        Mutation::Flip(i, b) if len > 0 => bytes[at(i)] = b,
        Mutation::Flip(..) => {}
        Mutation::Delete(i, n) => {
            let start = at(i);
            bytes.drain(start..(start + n).min(len));
        }
        Mutation::Insert(i, b) => bytes.insert(at(i), b),
        Mutation::Truncate(i) => bytes.truncate(at(i)),
        Mutation::Duplicate(i, n) => {
            let start = at(i);
            let piece = bytes[start..(start + n).min(len)].to_vec();
            bytes.splice(start..start, piece);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_decode_or_fail_cleanly(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        decode_and_check(&bytes, Batching::Allowed)?;
        decode_and_check(&bytes, Batching::Refused)?;
    }

    #[test]
    fn arbitrary_text_decodes_or_fails_cleanly(text in "[\\[\\]{}\":,0-9a-z \\\\.-]{0,64}") {
        decode_and_check(text.as_bytes(), Batching::Allowed)?;
        decode_and_check(text.as_bytes(), Batching::Refused)?;
    }

    #[test]
    fn mutated_valid_frames_decode_or_fail_cleanly(
        ms in prop::collection::vec(message(), 1..4),
        batch in any::<bool>(),
        edits in prop::collection::vec(mutation(), 1..4),
    ) {
        let mut bytes = if batch {
            serde_json::to_vec(&ms.iter().map(Message::to_value).collect::<Vec<_>>()).unwrap()
        } else {
            ms[0].to_vec()
        };
        for edit in &edits {
            apply(&mut bytes, edit);
        }
        decode_and_check(&bytes, Batching::Allowed)?;
        decode_and_check(&bytes, Batching::Refused)?;
    }

    #[test]
    fn a_truncated_frame_is_a_parse_error(m in message(), cut in any::<prop::sample::Index>()) {
        let bytes = m.to_vec();
        let cut = cut.index(bytes.len());
        let err = decode_frame(&bytes[..cut], Batching::Allowed).unwrap_err();
        prop_assert_eq!(err.kind, DecodeErrorKind::Parse);
    }
}
