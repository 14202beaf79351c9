//! `arbor_protocol::reflect`: text a peer sent comes back in errors at most 200 characters
//! long (chars, not bytes; a cut is marked `…`), with control, bidi and invisible format
//! characters escaped, and the errors that reflect names, URIs and versions use it.

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::ErrorObject;
use arbor_protocol::reflect::{clamp, clamp_bytes, is_hidden, Clamped, MAX_REFLECTED_CHARS, TRUNCATION_MARK};
use arbor_protocol::version::ProtocolVersion;

#[test]
fn short_text_comes_back_unchanged() {
    for text in ["", "tools/call", "démo://notes/ünïcode", &"x".repeat(MAX_REFLECTED_CHARS)] {
        assert_eq!(clamp(text), text);
        assert_eq!(Clamped(text).to_string(), text);
    }
}

#[test]
fn long_text_is_cut_at_the_limit_in_chars_and_marked() {
    let cut = clamp(&"m".repeat(3 * 1024 * 1024)).into_owned();
    assert_eq!(cut.chars().count(), MAX_REFLECTED_CHARS + 1);
    assert!(cut.ends_with(TRUNCATION_MARK));
    assert_eq!(clamp(&"y".repeat(MAX_REFLECTED_CHARS + 1)).chars().count(), MAX_REFLECTED_CHARS + 1);
}

#[test]
fn multi_byte_characters_are_never_split() {
    // Two-, three- and four-byte sequences: the cut falls on a char boundary and counts chars.
    for unit in ["é", "€", "𝄞"] {
        let text = unit.repeat(1000);
        let cut = clamp(&text).into_owned();
        assert_eq!(cut.chars().count(), MAX_REFLECTED_CHARS + 1, "{unit}");
        assert_eq!(cut.chars().filter(|c| c.to_string() == unit).count(), MAX_REFLECTED_CHARS);
        assert!(cut.len() <= 4 * MAX_REFLECTED_CHARS + TRUNCATION_MARK.len_utf8());
    }
}

#[test]
fn control_and_bidi_characters_are_escaped() {
    let text = "a\u{202E}b\u{7}c\nd\u{2066}e\u{200F}f\u{061C}g\u{FEFF}h\u{9B}i";
    let out = clamp(text).into_owned();
    assert!(!out.chars().any(is_hidden), "{out:?}");
    assert_eq!(out, r"a\u{202E}b\u{0007}c\u{000A}d\u{2066}e\u{200F}f\u{061C}g\u{FEFF}h\u{009B}i");
    for c in ['\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{2067}', '\u{2068}', '\u{2069}', '\u{200E}', '\0'] {
        assert!(is_hidden(c), "{c:?}");
    }
    for c in ['a', 'é', '€', '𝄞', ' ', '…'] {
        assert!(!is_hidden(c), "{c:?}");
    }
}

#[test]
fn escapes_count_towards_the_limit_and_are_never_split() {
    let out = clamp(&"\u{202E}".repeat(1000)).into_owned();
    assert!(out.ends_with(TRUNCATION_MARK));
    let body = out.trim_end_matches(TRUNCATION_MARK);
    assert!(body.chars().count() <= MAX_REFLECTED_CHARS);
    assert_eq!(body.len() % 8, 0, "only whole escapes: {body}");
    // Plain text right up to the limit, then an escape that no longer fits.
    let text = format!("{}\u{202E}", "p".repeat(MAX_REFLECTED_CHARS - 4));
    assert_eq!(clamp(&text), format!("{}{TRUNCATION_MARK}", "p".repeat(MAX_REFLECTED_CHARS - 4)));
}

#[test]
fn bytes_that_are_not_utf8_are_replaced_then_clamped() {
    assert_eq!(clamp_bytes(b"2025-\xff11-25"), "2025-\u{FFFD}11-25");
    let out = clamp_bytes(&[b'9'; 100_000]);
    assert_eq!(out.chars().count(), MAX_REFLECTED_CHARS + 1);
    // A four-byte sequence cut where the bytes were cut still yields a bounded, marked text.
    let out = clamp_bytes("𝄞".repeat(10_000).as_bytes());
    assert!(out.ends_with(TRUNCATION_MARK));
    assert!(out.chars().count() <= MAX_REFLECTED_CHARS + 1);
}

#[test]
fn errors_that_reflect_input_are_clamped() {
    let long = format!("\u{202E}{}", "n".repeat(100_000));
    let wire = ErrorObject::from(&McpError::method_not_found(&long));
    assert!(wire.message.len() < 300 && !wire.message.contains('\u{202E}'), "{}", wire.message.len());

    let wire = ErrorObject::from(&McpError::unsupported_version(["2026-07-28"], &long));
    assert!(wire.data.as_ref().unwrap()["requested"].as_str().unwrap().chars().count() <= MAX_REFLECTED_CHARS + 1);

    for version in [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28] {
        let wire = ErrorObject::from(&McpError::resource_not_found(&long, version));
        let uri = wire.data.as_ref().unwrap()["uri"].as_str().unwrap().to_owned();
        assert!(uri.chars().count() <= MAX_REFLECTED_CHARS + 1, "{version:?}");
    }
}
