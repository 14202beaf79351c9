//! SSE targets: the client's event-stream parser (`arbor_client`'s `link::sse`) and the
//! server's event ids (`arbor_http`'s `sse`: how it writes them and reads
//! `Last-Event-ID`).
//!
//! Not a test of the HTTP streams themselves. Invariant of each body: it panics only when
//! the parser depends on how the bytes were split, or when what the server writes is not
//! read back as written (by the client, then by the server again on resume).

use arbor_client::fuzzing::SseParser;
use arbor_http::fuzzing::{event_bytes, parse_event_id};
use serde_json::Value;

use crate::text;

/// What a parser saw: the events' data, the last event id and the retry delay.
type Seen = (Vec<Vec<u8>>, Option<String>, Option<u64>);

fn parse_in_chunks(stream: &[u8], chunk: usize) -> Seen {
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    for piece in stream.chunks(chunk.max(1)) {
        events.extend(parser.feed(piece));
    }
    (events, parser.last_event_id().map(str::to_owned), parser.retry_ms())
}

/// The first byte picks the mode. Below 0x80: the rest is an event stream, parsed whole
/// and in chunks of 1 to 16 bytes (from that byte): the events, last id and retry must
/// not depend on the split, and no event is empty. From 0x80: the next 16 bytes are a
/// stream id and a sequence number and the rest JSON; the server writes that event, the
/// client must read exactly that JSON and that id, and the server must read the id back.
pub fn client_sse(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode < 0x80 {
        let whole = parse_in_chunks(rest, rest.len());
        let split = parse_in_chunks(rest, usize::from(mode % 16) + 1);
        assert_eq!(whole, split, "the events depend on how the stream was split");
        assert!(whole.0.iter().all(|e| !e.is_empty()), "an empty event was delivered");
        return;
    }
    let s = rest;
    if s.len() < 16 {
        return;
    }
    let stream = u64::from_le_bytes(s[..8].try_into().expect("8 bytes"));
    let seq = u64::from_le_bytes(s[8..16].try_into().expect("8 bytes"));
    let Ok(value) = serde_json::from_slice::<Value>(&s[16..]) else { return };
    let json = serde_json::to_vec(&value).expect("JSON writes");
    let bytes = event_bytes(stream, seq, &json);
    let (events, last_id, _) = parse_in_chunks(&bytes, usize::from(mode % 16) + 1);
    assert_eq!(events, vec![json], "the client read another event than the server wrote");
    let id = last_id.expect("the event's id is remembered");
    assert_eq!(parse_event_id(&id), Some((stream, seq)), "the id {id:?} does not read back");
}

/// `parse_event_id`: never panics, and what it reads, written as the server writes ids,
/// reads the same.
pub fn event_id(data: &[u8]) {
    let Some(id) = text(data) else { return };
    let Some((stream, seq)) = parse_event_id(id) else { return };
    assert_eq!(parse_event_id(&format!("{stream}-{seq}")), Some((stream, seq)));
}
