//! Entry points for the fuzz targets (`fuzz/`, `crates/arbor-fuzz`): the crate-private
//! parsers a peer's bytes reach, exposed as they are, with no behaviour of their own.
//!
//! Hidden from the docs and not part of the API: nothing here is stable, and an
//! application has no reason to call it. Invariant: every function is the crate's own
//! code path, called unchanged (no stub, no copy), so what the fuzzer finds is real.

use bytes::BytesMut;

/// The server's reading of a `Last-Event-ID` header (`{stream}-{seq}`).
pub fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    crate::sse::parse_event_id(id)
}

/// The bytes of one SSE event as the server writes it (its `id` line and `data`).
pub fn event_bytes(stream: u64, seq: u64, json: &[u8]) -> Vec<u8> {
    let mut out = BytesMut::new();
    crate::sse::put_event(&mut out, stream, seq, json);
    out.to_vec()
}
