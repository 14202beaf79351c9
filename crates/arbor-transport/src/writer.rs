//! The write half: a cloneable handle that queues frames and one task that writes them.
//!
//! Every [`FrameWriter`] clone appends to one shared buffer under a short lock (the frame
//! plus its newline; an encoder may even serialise straight into it with
//! [`FrameWriter::send_with`]). The writer task swaps the buffer out, writes it whole and
//! flushes once, so a burst of responses costs one write and one flush instead of one per
//! message, and the lock is never held across IO.
//!
//! Sends never wait. Backpressure is the reader's job: [`FrameWriter::buffered`] and
//! [`FrameWriter::drained_below`] let whoever admits work (the server's reader) stop taking
//! more input while the peer is not reading its output, which bounds what can be queued.
//!
//! Invariants: frames reach the stream whole and in the order their sends returned; after
//! [`FrameWriter::close`] returns, everything sent before it was written and flushed and the
//! stream was shut down.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{watch, Notify};

use crate::error::SendError;

/// Queues frames for the writer task. Cheap to clone; sends never wait.
#[derive(Clone)]
pub struct FrameWriter {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for FrameWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameWriter").field("closed", &self.is_closed()).finish()
    }
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the writer task when the buffer goes from empty to not empty, or on close.
    wake: Notify,
    /// Wakes those waiting for the buffer to drain, after each batch is written.
    drained: Notify,
    /// `true` once the writer task has stopped (closed, or the stream broke).
    stopped: watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    buf: Vec<u8>,
    /// Bytes of the batch the task is writing now.
    writing: usize,
    /// No more sends are accepted; the task writes what is left and stops.
    closing: bool,
}

impl FrameWriter {
    /// Starts the writer task over `io`. Must be called inside a tokio runtime.
    pub fn spawn(io: Box<dyn AsyncWrite + Send + Unpin>) -> FrameWriter {
        let (stopped, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            drained: Notify::new(),
            stopped,
        });
        tokio::spawn(write_loop(shared.clone(), io));
        FrameWriter { shared }
    }

    /// Queues one frame. The frame must not contain a newline.
    pub fn send(&self, frame: &[u8]) -> Result<(), SendError> {
        if memchr::memchr(b'\n', frame).is_some() {
            return Err(SendError::EmbeddedNewline);
        }
        self.append(|buf| buf.extend_from_slice(frame))
    }

    /// Queues one frame that `encode` writes straight into the output buffer, saving a
    /// copy. If what it wrote holds a newline, it is taken back out and refused.
    pub fn send_with(&self, encode: impl FnOnce(&mut Vec<u8>)) -> Result<(), SendError> {
        let mut refused = false;
        self.append(|buf| {
            let mark = buf.len();
            encode(buf);
            if memchr::memchr(b'\n', &buf[mark..]).is_some() {
                buf.truncate(mark);
                refused = true;
            }
        })?;
        if refused {
            Err(SendError::EmbeddedNewline)
        } else {
            Ok(())
        }
    }

    fn append(&self, write: impl FnOnce(&mut Vec<u8>)) -> Result<(), SendError> {
        let was_empty = {
            let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.closing {
                return Err(SendError::Closed);
            }
            let was_empty = state.buf.is_empty();
            let mark = state.buf.len();
            write(&mut state.buf);
            if state.buf.len() == mark {
                // Nothing was written (a refused frame): no newline either.
                return Ok(());
            }
            state.buf.push(b'\n');
            was_empty
        };
        // Only the first frame of a batch needs to wake the task; the rest ride along.
        if was_empty {
            self.shared.wake.notify_one();
        }
        Ok(())
    }

    /// Stops accepting frames, writes and flushes everything queued, shuts the stream down,
    /// and waits for the writer task to finish.
    pub async fn close(&self) {
        {
            let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            state.closing = true;
        }
        self.shared.wake.notify_one();
        self.closed().await;
    }

    /// Resolves once the writer task has stopped: after [`FrameWriter::close`], or when the
    /// stream broke (the peer went away).
    pub async fn closed(&self) {
        let mut rx = self.shared.stopped.subscribe();
        let _ = rx.wait_for(|stopped| *stopped).await;
    }

    /// Bytes queued or being written and not yet accepted by the stream.
    pub fn buffered(&self) -> usize {
        let state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        state.buf.len() + state.writing
    }

    /// Resolves once fewer than `limit` bytes are queued, or the writer has stopped.
    pub async fn drained_below(&self, limit: usize) {
        loop {
            let drained = self.shared.drained.notified();
            tokio::pin!(drained);
            // Registered before the check, so a batch written in between is not missed.
            drained.as_mut().enable();
            if self.buffered() < limit || *self.shared.stopped.borrow() {
                return;
            }
            drained.await;
        }
    }

    /// Whether sends are refused.
    pub fn is_closed(&self) -> bool {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner()).closing
    }
}

async fn write_loop(shared: Arc<Shared>, mut io: Box<dyn AsyncWrite + Send + Unpin>) {
    let mut batch = Vec::new();
    loop {
        let closing = {
            let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::swap(&mut state.buf, &mut batch);
            state.writing = batch.len();
            state.closing
        };
        if batch.is_empty() {
            if closing {
                break;
            }
            shared.wake.notified().await;
            // tokio runs a task woken from a worker thread next (its LIFO slot), so the
            // writer would otherwise wake after every single producer and write one frame
            // per syscall. Yielding once lets the other ready tasks (request tasks finishing
            // in the same burst) append first: pipelined responses then share a write(2).
            // With nothing else ready the yield returns at once, so one-at-a-time latency
            // is unchanged.
            tokio::task::yield_now().await;
            continue;
        }
        let written = async {
            io.write_all(&batch).await?;
            io.flush().await
        }
        .await;
        if written.is_err() {
            // The peer is gone: refuse further sends so producers notice.
            shared.state.lock().unwrap_or_else(|e| e.into_inner()).closing = true;
            break;
        }
        batch.clear();
        shared.state.lock().unwrap_or_else(|e| e.into_inner()).writing = 0;
        shared.drained.notify_waiters();
        // A rare huge frame should not pin its memory for the life of the connection.
        if batch.capacity() > 1 << 20 {
            batch = Vec::new();
        }
    }
    let _ = io.shutdown().await;
    shared.stopped.send_replace(true);
    shared.drained.notify_waiters();
}
