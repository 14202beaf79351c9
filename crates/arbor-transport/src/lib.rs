//! Arbor transports: frames in, frames out.
//!
//! A frame is the bytes of one JSON-RPC message (or batch). This crate moves frames over
//! newline-delimited byte streams, the framing MCP's stdio transport uses and that the spec
//! recommends for any other byte stream: [`Transport::stdio`] for the process's
//! stdin/stdout, [`Transport::new`] over any `AsyncRead`/`AsyncWrite` pair (pipes, sockets,
//! a child process), and [`Transport::memory_pair`] for tests.
//!
//! A transport splits into a [`FrameReader`] (owned by whoever reads; it hands out frames
//! borrowed from its buffer, so reading costs no allocation per message) and a
//! [`FrameWriter`] (a cloneable handle; many request tasks write concurrently, and one
//! writer task drains what they queued and flushes once per batch, never once per message
//! while more are waiting).
//!
//! ```
//! use arbor_transport::{Inbound, Transport};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let (server, client) = Transport::memory_pair();
//! let (mut server_rx, _server_tx) = server.into_parts();
//! let (_client_rx, client_tx) = client.into_parts();
//! client_tx.send(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
//! assert!(server_rx.fill().await.unwrap());
//! match server_rx.next_buffered() {
//!     Some(Inbound::Frame(bytes)) => assert!(bytes.starts_with(b"{")),
//!     other => panic!("{other:?}"),
//! }
//! # }
//! ```
//!
//! What this crate is not: it knows nothing of JSON-RPC or MCP. It never parses a frame and
//! never matches on a method name; a frame too long for the configured cap is reported as
//! [`Inbound::Oversized`], with its first bytes, and the caller decides what error to
//! answer with.
//!
//! Invariants: nothing but frames, one per line, is ever written to the output; a frame
//! holding a newline is refused rather than written; a reader never buffers more than the
//! frame cap plus one read chunk, whatever the peer sends.

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]
#![forbid(unsafe_code)]

mod error;
mod memory;
mod reader;
mod writer;

pub use error::{RecvError, SendError};
pub use reader::{FrameReader, Inbound, OVERSIZED_PREFIX_BYTES};
pub use writer::FrameWriter;

use tokio::io::{AsyncRead, AsyncWrite};

/// The default cap on one frame: 4 MiB.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 4 * 1024 * 1024;

/// Limits of a transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransportConfig {
    /// The longest frame accepted, in bytes, without its newline. A longer line is
    /// skipped and reported as [`Inbound::Oversized`].
    pub max_frame_bytes: usize,
    /// How many bytes one read asks for at least.
    pub read_chunk: usize,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig { max_frame_bytes: DEFAULT_MAX_FRAME_BYTES, read_chunk: 64 * 1024 }
    }
}

/// A newline-delimited frame transport over a byte stream, not yet started.
pub struct Transport {
    read: Box<dyn AsyncRead + Send + Unpin>,
    write: Box<dyn AsyncWrite + Send + Unpin>,
    config: TransportConfig,
    name: &'static str,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport").field("name", &self.name).field("config", &self.config).finish()
    }
}

impl Transport {
    /// Frames over any byte stream: `read` carries the peer's frames, `write` ours.
    pub fn new<R, W>(read: R, write: W) -> Transport
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        Transport { read: Box::new(read), write: Box::new(write), config: TransportConfig::default(), name: "stream" }
    }

    /// The process's stdin and stdout. Nothing else may write to stdout while it is in
    /// use: logs belong on stderr. Must be called inside a tokio runtime with IO enabled.
    ///
    /// When both are pipes (the usual case: a client launched this process), they are
    /// driven by the runtime's reactor directly, in non-blocking mode; otherwise (a
    /// terminal, a file) through tokio's blocking-pool stdio. The reactor path saves two
    /// thread hops per round trip, which is most of a one-at-a-time request's latency. It
    /// also leaves stdout non-blocking, one more reason never to `println!`.
    pub fn stdio() -> Transport {
        #[cfg(unix)]
        if let Some((read, write)) = stdio_pipes() {
            return Transport { name: "stdio", ..Transport::new(read, write) };
        }
        Transport { name: "stdio", ..Transport::new(tokio::io::stdin(), tokio::io::stdout()) }
    }

    /// Two connected in-memory transports: what one writes, the other reads. Each
    /// direction is a bounded in-memory pipe (256 KiB), so a stalled peer cannot make
    /// the other use unbounded memory.
    pub fn memory_pair() -> (Transport, Transport) {
        const CAPACITY: usize = 256 * 1024;
        let (a_read, b_write) = memory::pipe(CAPACITY);
        let (b_read, a_write) = memory::pipe(CAPACITY);
        (
            Transport { name: "memory", ..Transport::new(a_read, a_write) },
            Transport { name: "memory", ..Transport::new(b_read, b_write) },
        )
    }

    /// Replaces the limits.
    pub fn with_config(mut self, config: TransportConfig) -> Transport {
        self.config = config;
        self
    }

    /// Sets the frame cap (see [`TransportConfig::max_frame_bytes`]).
    pub fn with_max_frame_bytes(mut self, max: usize) -> Transport {
        self.config.max_frame_bytes = max;
        self
    }

    /// The limits in force.
    pub fn config(&self) -> TransportConfig {
        self.config
    }

    /// A short name for logs (`stdio`, `stream`, `memory`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Starts the writer task and returns the two halves. Must be called inside a tokio
    /// runtime.
    pub fn into_parts(self) -> (FrameReader, FrameWriter) {
        let reader = FrameReader::new(self.read, self.config);
        let writer = FrameWriter::spawn(self.write);
        (reader, writer)
    }
}

/// stdin and stdout as reactor-driven pipes, if both are pipes (and stdout is not also
/// stderr: making it non-blocking would then make `eprintln!` fail when the pipe is full).
#[cfg(unix)]
fn stdio_pipes() -> Option<(tokio::net::unix::pipe::Receiver, tokio::net::unix::pipe::Sender)> {
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    fn metadata(fd: BorrowedFd<'_>) -> Option<std::fs::Metadata> {
        std::fs::File::from(fd.try_clone_to_owned().ok()?).metadata().ok()
    }
    fn fifo(fd: &OwnedFd) -> Option<std::fs::Metadata> {
        metadata(fd.as_fd()).filter(|m| m.file_type().is_fifo())
    }
    // Duplicates, so dropping the transport closes neither fd 0 nor fd 1 behind std's back.
    let stdin = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let stdout = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    // Everything is checked before either fd is switched to non-blocking mode, so a
    // fallback to the blocking-pool stdio never meets a non-blocking fd.
    fifo(&stdin)?;
    let out = fifo(&stdout)?;
    if let Some(err) = metadata(std::io::stderr().as_fd()) {
        if err.dev() == out.dev() && err.ino() == out.ino() {
            return None;
        }
    }
    let read = tokio::net::unix::pipe::Receiver::from_owned_fd(stdin).ok()?;
    let write = tokio::net::unix::pipe::Sender::from_owned_fd(stdout).ok()?;
    Some((read, write))
}
