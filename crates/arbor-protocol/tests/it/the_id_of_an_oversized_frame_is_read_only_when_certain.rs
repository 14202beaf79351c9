//! The id scanner for the first bytes of an oversized frame never panics, finds the id of
//! any request whose id member it sees whole, and never reports an id the frame does not
//! have as its request id (a nested one, a response's).

use crate::strategies::message;
use arbor_protocol::jsonrpc::{decode_message, request_id_in_prefix, Message};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn arbitrary_bytes_never_panic_the_scanner(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = request_id_in_prefix(&bytes);
    }

    #[test]
    fn json_like_text_never_panics_the_scanner(text in "[\\[\\]{}\":,0-9a-z \\\\.-]{0,96}") {
        let _ = request_id_in_prefix(text.as_bytes());
        let framed = format!("{{\"id\":1,\"method\":\"m\",{text}");
        let _ = request_id_in_prefix(framed.as_bytes());
    }

    #[test]
    fn any_prefix_of_a_message_gives_its_request_id_or_nothing(
        m in message(),
        cut in any::<prop::sample::Index>(),
    ) {
        let bytes = m.to_vec();
        let cut = cut.index(bytes.len() + 1);
        let found = request_id_in_prefix(&bytes[..cut]);
        match (&m, found) {
            (_, None) => {}
            (Message::Request(r), Some(id)) => prop_assert_eq!(id, r.id.clone()),
            (other, Some(id)) => prop_assert!(false, "read id {id} from {other:?}"),
        }
        // The whole frame of a request always gives its id.
        if let Message::Request(r) = &m {
            prop_assert_eq!(request_id_in_prefix(&bytes), Some(r.id.clone()));
        }
    }

    #[test]
    fn an_id_read_from_a_mangled_frame_is_the_one_it_decodes_with(
        m in message(),
        at in any::<prop::sample::Index>(),
        byte in prop::sample::select(b"{}[]\":,\\0123456789 id".to_vec()),
    ) {
        let mut bytes = m.to_vec();
        let at = at.index(bytes.len());
        bytes[at] = byte;
        if let (Some(id), Ok(Message::Request(r))) = (request_id_in_prefix(&bytes), decode_message(&bytes)) {
            prop_assert_eq!(id, r.id);
        }
    }
}

#[test]
fn the_id_is_found_before_the_params_and_after_them_when_it_is_in_the_prefix() {
    let pad = "p".repeat(8192);
    let before = format!(r#"{{"jsonrpc":"2.0","id":"req-1","method":"tools/call","params":{{"id":2,"a":"{pad}"}}}}"#);
    assert_eq!(request_id_in_prefix(&before.as_bytes()[..4096]), Some("req-1".into()));
    let after = format!(r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"id":2}},"id":3,"pad":"{pad}"}}"#);
    assert_eq!(request_id_in_prefix(&after.as_bytes()[..4096]), Some(3.into()));
    let after_long_params =
        format!(r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"id":2,"a":"{pad}"}},"id":3}}"#);
    assert_eq!(request_id_in_prefix(&after_long_params.as_bytes()[..4096]), None);
}
