//! An in-memory byte pipe, the wire of [`Transport::memory_pair`](crate::Transport::memory_pair).
//!
//! A bounded buffer behind a mutex, with one reader and one writer. It exists because
//! `tokio::io::duplex` moves its whole unread buffer on every write, which makes pipelined
//! traffic cost time proportional to what is in flight; here a read takes from a cursor
//! and the buffer is compacted only when the cursor has passed half of it. It is not a
//! channel of frames: it carries bytes, so the same framing code runs as over a real pipe.
//!
//! Invariants: at most `capacity` unread bytes are held (a writer beyond that waits); the
//! reader sees end of stream once the writer is dropped or shut down and the buffer is
//! drained; a writer whose reader is gone gets `BrokenPipe`.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

struct State {
    data: Vec<u8>,
    pos: usize,
    capacity: usize,
    writer_closed: bool,
    reader_closed: bool,
    reader_waker: Option<Waker>,
    writer_waker: Option<Waker>,
}

type Shared = Arc<Mutex<State>>;

/// The read end of an in-memory pipe.
pub(crate) struct PipeReader(Shared);

/// The write end of an in-memory pipe.
pub(crate) struct PipeWriter(Shared);

/// A pipe holding at most `capacity` unread bytes.
pub(crate) fn pipe(capacity: usize) -> (PipeReader, PipeWriter) {
    let state = State {
        data: Vec::new(),
        pos: 0,
        capacity,
        writer_closed: false,
        reader_closed: false,
        reader_waker: None,
        writer_waker: None,
    };
    let shared = Arc::new(Mutex::new(state));
    (PipeReader(shared.clone()), PipeWriter(shared))
}

impl AsyncRead for PipeReader {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let mut state = self.0.lock();
        let unread = state.data.len() - state.pos;
        if unread == 0 {
            if state.writer_closed {
                return Poll::Ready(Ok(()));
            }
            state.reader_waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let n = unread.min(buf.remaining());
        let pos = state.pos;
        buf.put_slice(&state.data[pos..pos + n]);
        state.pos += n;
        if state.pos == state.data.len() {
            state.data.clear();
            state.pos = 0;
        }
        if let Some(waker) = state.writer_waker.take() {
            waker.wake();
        }
        Poll::Ready(Ok(()))
    }
}

impl Drop for PipeReader {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.reader_closed = true;
        if let Some(waker) = state.writer_waker.take() {
            waker.wake();
        }
    }
}

impl PipeWriter {
    fn close(&self) {
        let mut state = self.0.lock();
        state.writer_closed = true;
        if let Some(waker) = state.reader_waker.take() {
            waker.wake();
        }
    }
}

impl AsyncWrite for PipeWriter {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let mut state = self.0.lock();
        if state.reader_closed || state.writer_closed {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        let room = state.capacity.saturating_sub(state.data.len() - state.pos);
        if room == 0 {
            state.writer_waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        if state.pos > 0 && state.pos >= state.data.len() / 2 {
            let pos = state.pos;
            state.data.drain(..pos);
            state.pos = 0;
        }
        let n = room.min(buf.len());
        state.data.extend_from_slice(&buf[..n]);
        if let Some(waker) = state.reader_waker.take() {
            waker.wake();
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.close();
        Poll::Ready(Ok(()))
    }
}

impl Drop for PipeWriter {
    fn drop(&mut self) {
        self.close();
    }
}
