//! Any JSON-RPC message encodes to bytes that decode back to the same message,
//! alone, in a batch, and through the borrowed fast path.

use crate::strategies::message;
use arbor_protocol::jsonrpc::{decode_frame, decode_message, decode_raw, Batching, Frame, Message};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_message_decodes_to_itself(m in message()) {
        let bytes = m.to_vec();
        prop_assert_eq!(decode_message(&bytes), Ok(m.clone()));
        prop_assert_eq!(decode_raw(&bytes).and_then(|raw| raw.into_owned()), Ok(m.clone()));
        for batching in [Batching::Allowed, Batching::Refused] {
            prop_assert_eq!(decode_frame(&bytes, batching), Ok(Frame::Single(m.clone())));
        }
    }

    #[test]
    fn encoding_is_stable_after_one_round_trip(m in message()) {
        let once = m.to_vec();
        let again = decode_message(&once).unwrap().to_vec();
        prop_assert_eq!(once, again);
    }

    #[test]
    fn the_value_form_and_the_byte_form_agree(m in message()) {
        let from_value = arbor_protocol::jsonrpc::message_from_value(m.to_value());
        prop_assert_eq!(from_value, Ok(m));
    }

    #[test]
    fn a_batch_decodes_element_by_element(ms in prop::collection::vec(message(), 1..6)) {
        let values: Vec<_> = ms.iter().map(Message::to_value).collect();
        let bytes = serde_json::to_vec(&values).unwrap();
        let expected: Vec<_> = ms.into_iter().map(Ok).collect();
        prop_assert_eq!(decode_frame(&bytes, Batching::Allowed), Ok(Frame::Batch(expected)));
        prop_assert!(decode_frame(&bytes, Batching::Refused).is_err());
    }

    #[test]
    fn surrounding_whitespace_does_not_matter(m in message(), pre in "[ \t\r\n]{0,3}", post in "[ \t\r\n]{0,3}") {
        let mut bytes = pre.into_bytes();
        bytes.extend(m.to_vec());
        bytes.extend(post.into_bytes());
        prop_assert_eq!(decode_frame(&bytes, Batching::Refused), Ok(Frame::Single(m)));
    }
}
