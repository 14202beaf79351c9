//! The errors of reading and writing frames, named after the operation.
//!
//! These are transport facts only (the stream broke, the writer is closed); they carry no
//! JSON-RPC meaning. Invariant: a refused send never leaves partial bytes in the output.

/// Reading frames failed: the underlying stream returned an error.
#[derive(Debug, thiserror::Error)]
#[error("reading frames failed: {0}")]
pub struct RecvError(#[from] pub std::io::Error);

/// A frame could not be queued for writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The writer was closed, or the stream broke earlier.
    #[error("the frame writer is closed")]
    Closed,
    /// The frame holds a newline, which would split it into two lines on the wire.
    #[error("a frame must not contain a newline")]
    EmbeddedNewline,
}
