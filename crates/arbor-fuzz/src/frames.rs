//! Frame-level targets: the JSON-RPC body decoder both transports use
//! (`arbor_server::exchange::Parsed`, the byte-stream reader's decode), the id reader for
//! oversized frames (`arbor_protocol::jsonrpc::prefix`) and the newline framer
//! (`arbor_transport::FrameReader`).
//!
//! Not a test of routing or answering: only what the decoders return. Invariant of each
//! body: it panics only when the decoder breaks a property stated in its documentation.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use arbor_protocol::jsonrpc::{decode_raw, request_id_in_prefix, RawMessage};
use arbor_server::exchange::{BodyKind, Parsed};
use arbor_transport::{FrameReader, Inbound, TransportConfig, OVERSIZED_PREFIX_BYTES};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, ReadBuf};

/// `Parsed::parse`: never panics; its facts agree with each other; a request that decoded
/// re-encodes (method, id, typed params as JSON) into a frame that decodes to the same
/// method, id and params.
pub fn jsonrpc_frame(data: &[u8]) {
    let parsed = Parsed::parse(data);
    let kind = parsed.kind();
    let error = parsed.error().map(|e| e.to_error_object().code);
    if let Some(code) = error {
        assert!(matches!(code, -32700 | -32600 | -32601 | -32602), "unexpected refusal code {code}");
        assert_eq!(kind, BodyKind::Request);
    }
    let expected = parsed.expected_responses();
    match kind {
        BodyKind::Request => assert_eq!(expected, 1),
        BodyKind::Notification | BodyKind::Response => assert_eq!(expected, 0),
        BodyKind::Batch => assert!(expected <= 1),
    }
    // Every accessor runs on every input.
    let _ = (parsed.method(), parsed.response_id(), parsed.raw_body(), parsed.modern_version());
    let _ = (parsed.typed_arguments(), parsed.requests(), parsed.is_initialize());
    let Some(target) = parsed.typed_target() else { return };
    // A decoded request.
    assert!(error.is_none());
    let method = parsed.method().expect("a decoded request has a method").to_owned();
    let id = parsed.request_id().expect("a decoded request has an id").clone();
    let params = parsed.params_json().cloned();
    let target = target.map(str::to_owned);
    let mut frame = json!({"jsonrpc": "2.0", "id": id.to_value(), "method": method});
    if let Some(p) = &params {
        frame["params"] = p.clone();
    }
    let again = Parsed::parse(&serde_json::to_vec(&frame).expect("JSON writes"));
    assert!(again.error().is_none(), "re-encoded request refused: {:?} for {frame}", again.error());
    assert_eq!(again.method(), Some(method.as_str()));
    assert_eq!(again.request_id(), Some(&id));
    assert_eq!(again.params_json(), params.as_ref(), "params changed through a re-encode");
    assert_eq!(again.typed_target(), Some(target.as_deref()));
}

/// `request_id_in_prefix`: never panics, and an id it reads from a prefix of a frame is
/// the id the full decoder reads from the whole frame, when that frame is a request.
/// The first two bytes choose where the prefix ends.
pub fn oversized_id(data: &[u8]) {
    let (cut, frame) = match data {
        [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), rest),
        _ => return,
    };
    let prefix = &frame[..cut.min(frame.len())];
    let Some(id) = request_id_in_prefix(prefix) else { return };
    if let Ok(RawMessage::Request { id: full, .. }) = decode_raw(frame) {
        assert_eq!(id, full, "prefix id differs from the frame's");
    }
    // Whatever the frame turns out to be, what was read from the prefix is a valid id.
    assert!(matches!(arbor_protocol::jsonrpc::RequestId::from_value(&id.to_value()), Some(ref same) if *same == id));
    let _: Value = id.to_value();
}

/// A reader that hands out its bytes in the chunk sizes it was given (cycled), so frames
/// straddle reads at every offset the fuzzer picks.
struct Chunked {
    bytes: Vec<u8>,
    pos: usize,
    sizes: Vec<usize>,
    turn: usize,
}

impl AsyncRead for Chunked {
    fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let size = self.sizes[self.turn % self.sizes.len()];
        self.turn += 1;
        let n = size.min(self.bytes.len() - self.pos).min(buf.remaining());
        let from = self.pos;
        buf.put_slice(&self.bytes[from..from + n]);
        self.pos += n;
        Poll::Ready(Ok(()))
    }
}

/// One line as the reader must report it.
#[derive(Debug, PartialEq)]
enum Want {
    Frame(Vec<u8>),
    Oversized(Vec<u8>),
}

/// `FrameReader`: over any byte stream cut into any reads, it reports exactly the lines
/// of the stream: each line longer than the cap once, as `Oversized` with a prefix of
/// that line; each other line trimmed of ASCII whitespace, unless empty. The first byte
/// sets the cap (1 to 64 bytes), the next four the read sizes.
pub fn frame_reader(data: &[u8]) {
    let [cap, s1, s2, s3, s4, stream @ ..] = data else { return };
    let max = usize::from(*cap % 64) + 1;
    let sizes: Vec<usize> = [s1, s2, s3, s4].iter().map(|s| usize::from(**s % 32) + 1).collect();
    let config = TransportConfig { max_frame_bytes: max, read_chunk: 16 };
    let io = Chunked { bytes: stream.to_vec(), pos: 0, sizes, turn: 0 };
    let mut reader = FrameReader::new(Box::new(io), config);
    let mut got = Vec::new();
    futures::executor::block_on(async {
        loop {
            while let Some(item) = reader.next_buffered() {
                got.push(match item {
                    Inbound::Frame(f) => Want::Frame(f.to_vec()),
                    Inbound::Oversized { limit, prefix } => {
                        assert_eq!(limit, max);
                        Want::Oversized(prefix.to_vec())
                    }
                });
            }
            if !reader.fill().await.expect("reading from memory") {
                break;
            }
        }
    });
    // What the stream holds: its lines (the last one also without a newline).
    let mut lines: Vec<&[u8]> = stream.split(|b| *b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let mut want = Vec::new();
    for line in lines {
        if line.len() > max {
            want.push((Want::Oversized(Vec::new()), line));
        } else {
            let trimmed = line.trim_ascii();
            if !trimmed.is_empty() {
                want.push((Want::Frame(trimmed.to_vec()), line));
            }
        }
    }
    assert_eq!(got.len(), want.len(), "got {got:?}, want {want:?}");
    for (got, (want, line)) in got.iter().zip(&want) {
        match (got, want) {
            (Want::Frame(g), Want::Frame(w)) => assert_eq!(g, w),
            (Want::Oversized(prefix), Want::Oversized(_)) => {
                assert!(line.starts_with(prefix), "an oversized line's prefix is not its start");
                let least = (max + 1).min(OVERSIZED_PREFIX_BYTES);
                assert!(prefix.len() >= least && prefix.len() <= OVERSIZED_PREFIX_BYTES);
            }
            _ => panic!("got {got:?} for the line {line:?}"),
        }
    }
}
