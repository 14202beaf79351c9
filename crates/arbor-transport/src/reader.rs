//! The read half: splits a byte stream into newline-delimited frames.
//!
//! [`FrameReader`] reads large chunks into one buffer and hands out frames as slices of
//! it, so a burst of pipelined messages costs one read and no allocation per message. The
//! caller drains what is buffered with [`FrameReader::next_buffered`] and only then awaits
//! [`FrameReader::fill`]; that split is what lets a server decode a whole burst before it
//! hands the work on.
//!
//! It does not parse JSON. Empty lines are skipped and a trailing `\r` is dropped, so CRLF
//! peers work. A line longer than the cap is skipped up to its newline and reported once as
//! [`Inbound::Oversized`] with its first bytes (at most [`OVERSIZED_PREFIX_BYTES`]), so the
//! caller can answer it, with the request's id if it can read one there, and carry on.
//!
//! Invariant: the buffer never holds more than the cap plus one read chunk; the bytes of an
//! oversized line are dropped as they arrive, after the report that lends out its first ones.

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::RecvError;
use crate::TransportConfig;

/// How many of an oversized line's first bytes [`Inbound::Oversized`] lends out: enough for
/// a JSON-RPC envelope's `jsonrpc`, `id` and `method` when they come first, and small
/// enough that looking at them costs nothing next to the skipped line.
pub const OVERSIZED_PREFIX_BYTES: usize = 4 * 1024;

/// One thing read from the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inbound<'a> {
    /// One frame: the bytes of a line, without its newline.
    Frame(&'a [u8]),
    /// A line longer than `limit` bytes was skipped.
    Oversized {
        /// The cap in force.
        limit: usize,
        /// The line's first bytes, at most [`OVERSIZED_PREFIX_BYTES`] of what had arrived
        /// when the line was found too long, lent from the reader's buffer; the rest of
        /// the line is never kept.
        prefix: &'a [u8],
    },
}

/// Reads newline-delimited frames from a byte stream.
pub struct FrameReader {
    io: Box<dyn AsyncRead + Send + Unpin>,
    buf: BytesMut,
    /// Bytes before this offset were handed out already; dropped at the next fill.
    start: usize,
    /// Bytes before this offset were searched for a newline already.
    scanned: usize,
    /// Skipping the rest of an oversized line.
    discarding: bool,
    eof: bool,
    config: TransportConfig,
}

impl std::fmt::Debug for FrameReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameReader")
            .field("buffered", &(self.buf.len() - self.start))
            .field("eof", &self.eof)
            .field("config", &self.config)
            .finish()
    }
}

impl FrameReader {
    /// A reader over `io` with the given limits.
    pub fn new(io: Box<dyn AsyncRead + Send + Unpin>, config: TransportConfig) -> FrameReader {
        FrameReader {
            io,
            buf: BytesMut::with_capacity(config.read_chunk),
            start: 0,
            scanned: 0,
            discarding: false,
            eof: false,
            config,
        }
    }

    /// The next frame already in the buffer, without reading. `None` means: call
    /// [`FrameReader::fill`] (or stop, if it returned `false`).
    pub fn next_buffered(&mut self) -> Option<Inbound<'_>> {
        loop {
            let from = self.scanned.max(self.start);
            match memchr::memchr(b'\n', &self.buf[from..]) {
                Some(offset) => {
                    let end = from + offset;
                    let line_start = self.start;
                    self.start = end + 1;
                    self.scanned = self.start;
                    if std::mem::take(&mut self.discarding) {
                        // The tail of a line already reported as oversized.
                        continue;
                    }
                    if end - line_start > self.config.max_frame_bytes {
                        let prefix = &self.buf[line_start..line_start + prefix_len(end - line_start)];
                        return Some(Inbound::Oversized { limit: self.config.max_frame_bytes, prefix });
                    }
                    let (s, e) = trim_line(&self.buf[line_start..end]);
                    if s == e {
                        continue;
                    }
                    return Some(Inbound::Frame(&self.buf[line_start + s..line_start + e]));
                }
                None => {
                    self.scanned = self.buf.len();
                    let pending = self.buf.len() - self.start;
                    if self.discarding {
                        self.start = self.buf.len();
                        return None;
                    }
                    if pending > self.config.max_frame_bytes {
                        // Report at once, then drop the rest of the line as it arrives. The
                        // buffer holds the line from its start (each fill keeps the partial
                        // line whole) and is only cleared at the next fill, so its first
                        // bytes can still be lent out.
                        let line_start = self.start;
                        self.discarding = true;
                        self.start = self.buf.len();
                        let prefix = &self.buf[line_start..line_start + prefix_len(pending)];
                        return Some(Inbound::Oversized { limit: self.config.max_frame_bytes, prefix });
                    }
                    if self.eof && pending > 0 {
                        // A last line without its newline still counts as a frame.
                        let line_start = self.start;
                        self.start = self.buf.len();
                        let (s, e) = trim_line(&self.buf[line_start..]);
                        if s == e {
                            return None;
                        }
                        return Some(Inbound::Frame(&self.buf[line_start + s..line_start + e]));
                    }
                    return None;
                }
            }
        }
    }

    /// Reads more bytes from the stream. `Ok(true)` when some arrived (or the stream just
    /// ended and a final unterminated line is buffered); `Ok(false)` at the end of the
    /// stream with nothing left to hand out.
    pub async fn fill(&mut self) -> Result<bool, RecvError> {
        if self.eof {
            return Ok(self.start < self.buf.len());
        }
        // Drop what was handed out, so the buffer holds at most one partial line.
        self.buf.advance(self.start);
        self.scanned -= self.start.min(self.scanned);
        self.start = 0;
        if self.discarding {
            self.buf.clear();
            self.scanned = 0;
        }
        self.buf.reserve(self.config.read_chunk);
        let n = self.io.read_buf(&mut self.buf).await?;
        if n == 0 {
            self.eof = true;
            return Ok(!self.discarding && !self.buf.is_empty());
        }
        Ok(true)
    }

    /// Convenience for tests and simple peers: the next frame as owned bytes, reading as
    /// needed; `Ok(None)` at the end of the stream.
    pub async fn recv(&mut self) -> Result<Option<Result<Vec<u8>, usize>>, RecvError> {
        loop {
            match self.next_buffered() {
                Some(Inbound::Frame(bytes)) => return Ok(Some(Ok(bytes.to_vec()))),
                Some(Inbound::Oversized { limit, .. }) => return Ok(Some(Err(limit))),
                None => {}
            }
            if !self.fill().await? && self.next_is_empty() {
                return Ok(None);
            }
        }
    }

    fn next_is_empty(&self) -> bool {
        self.start >= self.buf.len()
    }
}

/// How much of an oversized line of `len` bytes to lend out.
fn prefix_len(len: usize) -> usize {
    len.min(OVERSIZED_PREFIX_BYTES)
}

/// The span of `line` without a trailing `\r` and surrounding ASCII whitespace.
fn trim_line(line: &[u8]) -> (usize, usize) {
    let mut s = 0;
    let mut e = line.len();
    while s < e && line[s].is_ascii_whitespace() {
        s += 1;
    }
    while e > s && line[e - 1].is_ascii_whitespace() {
        e -= 1;
    }
    (s, e)
}
