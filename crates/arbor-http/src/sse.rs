//! Server-sent events: the framing of one event, and the response head every SSE answer
//! carries.
//!
//! It is not a stream: the bodies that produce events are `modern::ExchangeStream` (one
//! request's route, read directly) and `legacy::stream` (a session's buffered, resumable
//! streams).
//!
//! Invariant: an event's data is one line of compact JSON (the runtime never writes a
//! newline inside a message), so every event is `data: <json>` on one line, optionally
//! after an `id:` line, and ends with a blank line.

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use bytes::{BufMut, Bytes, BytesMut};

/// A keep-alive comment; clients ignore it, proxies see traffic.
pub(crate) const KEEP_ALIVE: &[u8] = b":\n\n";

/// Appends `data: <json>\n\n` to `out`.
pub(crate) fn put_data(out: &mut BytesMut, json: &[u8]) {
    out.reserve(json.len() + 8);
    out.put_slice(b"data: ");
    out.put_slice(json);
    out.put_slice(b"\n\n");
}

/// Appends `id: <stream>-<seq>\ndata: <json>\n\n` to `out`.
pub(crate) fn put_event(out: &mut BytesMut, stream: u64, seq: u64, json: &[u8]) {
    use std::fmt::Write;
    out.reserve(json.len() + 40);
    let _ = writeln!(out, "id: {stream}-{seq}");
    put_data(out, json);
}

/// Appends the priming event of a resumable stream: the id to resume from (`cursor`, the
/// last event already delivered), `retry`, empty data.
pub(crate) fn put_priming(out: &mut BytesMut, stream: u64, cursor: u64, retry: Duration) {
    use std::fmt::Write;
    let _ = write!(out, "id: {stream}-{cursor}\nretry: {}\ndata: \n\n", retry.as_millis());
}

/// `event: <name>\ndata: <data>\n\n` (the 2024-11-05 transport names its events).
pub(crate) fn named(name: &str, data: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(name.len() + data.len() + 16);
    out.put_slice(b"event: ");
    out.put_slice(name.as_bytes());
    out.put_slice(b"\ndata: ");
    out.put_slice(data);
    out.put_slice(b"\n\n");
    out.freeze()
}

/// Parses a `Last-Event-ID` of ours, `<stream>-<seq>`.
pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// A 200 `text/event-stream` answer around `body`, unbuffered by proxies.
pub(crate) fn response(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    // Sized for the three below: hyper keeps a response's header map, emptied, for the
    // connection's next request, so a stream held open holds it; grown on demand it
    // would reserve six slots (624 bytes) where three take 312.
    *response.headers_mut() = HeaderMap::with_capacity(3);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, no-transform"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_frame_on_one_line_each() {
        let mut out = BytesMut::new();
        put_priming(&mut out, 3, 0, Duration::from_millis(1500));
        put_event(&mut out, 3, 1, br#"{"a":1}"#);
        assert_eq!(&out[..], b"id: 3-0\nretry: 1500\ndata: \n\nid: 3-1\ndata: {\"a\":1}\n\n");
        assert_eq!(parse_event_id("3-17"), Some((3, 17)));
        assert_eq!(parse_event_id("x-1"), None);
    }
}
