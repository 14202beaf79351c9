//! The write half: a cloneable handle that queues frames and one task that writes them.
//!
//! Every [`FrameWriter`] clone appends to one shared buffer under a short lock (the frame
//! plus its newline; an encoder may even serialise straight into it with
//! [`FrameWriter::send_with`]). The writer task swaps the buffer out, writes it whole and
//! flushes once, so a burst of responses costs one write and one flush instead of one per
//! message, and the lock is never held across IO.
//!
//! [`FrameWriter::send_now`] is the latency path for a producer that knows nothing else is
//! about to send (a client with one call in flight): when the writer is idle and nothing
//! is queued, the frame is written to the stream right there with one non-blocking
//! `write(2)`, skipping the hop to the writer task (a wake-up, a task poll and its yield);
//! whatever the stream does not take at once is queued for the task as usual.
//!
//! Sends never wait. Backpressure is the reader's job: [`FrameWriter::buffered`] and
//! [`FrameWriter::drained_below`] let whoever admits work (the server's reader) stop taking
//! more input while the peer is not reading its output, which bounds what can be queued.
//!
//! Invariants: frames reach the stream whole and in the order their sends returned; after
//! [`FrameWriter::close`] returns, everything sent before it was written and flushed and the
//! stream was shut down. When the last handle is dropped without a close, the task writes
//! what was queued and shuts the stream down just the same: a writer nobody can send to
//! never keeps its stream (and the peer waiting for its end) open. The stream is written by one party at a time: the task while it
//! holds a batch (`writing > 0`), a direct send only while the state lock shows the writer
//! idle and the queue empty (lock order: state, then stream).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{watch, Notify};

use crate::error::SendError;

/// Queues frames for the writer task. Cheap to clone; sends never wait.
#[derive(Clone)]
pub struct FrameWriter {
    shared: Arc<Shared>,
    /// Held by the handles only (the task holds `shared`): its drop is the last handle's.
    _last: Arc<CloseOnDrop>,
}

/// Closes the writer when the last [`FrameWriter`] handle goes. Without it the task, which
/// keeps `shared` alive, would wait for a wake-up forever and hold the stream open: a
/// client that dropped its connection would leave the server waiting for end of input.
struct CloseOnDrop(Arc<Shared>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.state.lock().closing = true;
        self.0.wake.notify_one();
    }
}

impl std::fmt::Debug for FrameWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameWriter").field("closed", &self.is_closed()).finish()
    }
}

type Io = Box<dyn AsyncWrite + Send + Unpin>;

struct Shared {
    state: Mutex<State>,
    /// The stream; locked by the task only inside one poll, never across an await.
    io: Mutex<Io>,
    /// Wakes the writer task when the buffer goes from empty to not empty, or on close.
    wake: Notify,
    /// Wakes those waiting for the buffer to drain, after each batch is written.
    drained: Notify,
    /// `true` once the writer task has stopped (closed, or the stream broke).
    stopped: watch::Sender<bool>,
    /// How the task yields before a batch: `false` through tokio's `yield_now` (behind the
    /// IO driver: one `epoll_wait(0)` per batch), `true` behind the ready tasks only.
    yield_to_tasks: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct State {
    buf: Vec<u8>,
    /// Bytes of the batch the task is writing now.
    writing: usize,
    /// No more sends are accepted; the task writes what is left and stops.
    closing: bool,
    /// A direct send left its bytes written but not flushed: the task must flush.
    unflushed: bool,
}

impl FrameWriter {
    /// Starts the writer task over `io`. Must be called inside a tokio runtime.
    pub fn spawn(io: Io) -> FrameWriter {
        let (stopped, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            io: Mutex::new(io),
            wake: Notify::new(),
            drained: Notify::new(),
            stopped,
            yield_to_tasks: std::sync::atomic::AtomicBool::new(false),
        });
        tokio::spawn(write_loop(shared.clone()));
        FrameWriter { _last: Arc::new(CloseOnDrop(shared.clone())), shared }
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

    /// Like [`FrameWriter::send`], but when the writer task is idle and nothing is queued,
    /// writes the frame to the stream at once (non-blocking) instead of waking the task.
    /// For a lone producer that wants its frame on the wire now; producers that send in
    /// bursts should use `send`, whose batching turns a burst into one write.
    ///
    /// Takes the frame by value so that its newline can be appended in place and the
    /// frame reaches the stream in one `write(2)`.
    pub fn send_now(&self, mut frame: Vec<u8>) -> Result<(), SendError> {
        if memchr::memchr(b'\n', &frame).is_some() {
            return Err(SendError::EmbeddedNewline);
        }
        frame.push(b'\n');
        {
            let mut state = self.shared.state.lock();
            if state.closing {
                return Err(SendError::Closed);
            }
            if !state.buf.is_empty() || state.writing > 0 || state.unflushed {
                // The task owns the stream now; queue behind what it has (it was woken
                // when the queue became non-empty, or is busy and will look again).
                state.buf.extend_from_slice(&frame);
                return Ok(());
            }
            let mut io = self.shared.io.lock();
            let mut cx = Context::from_waker(Waker::noop());
            let done = write_some(&mut io, &mut cx, &frame);
            if done == frame.len() {
                match Pin::new(&mut **io).poll_flush(&mut cx) {
                    Poll::Ready(Ok(())) => return Ok(()),
                    // The task will flush (and find a broken stream) for us.
                    _ => state.unflushed = true,
                }
            } else {
                // The rest waits for the stream to take more; a broken stream is found
                // (and the writer stopped) by the task.
                state.buf.extend_from_slice(&frame[done..]);
            }
        }
        self.shared.wake.notify_one();
        Ok(())
    }

    fn append(&self, write: impl FnOnce(&mut Vec<u8>)) -> Result<(), SendError> {
        let was_empty = {
            let mut state = self.shared.state.lock();
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
            let mut state = self.shared.state.lock();
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
        let state = self.shared.state.lock();
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

    /// Makes the task, before each batch, yield only to the tasks already ready to run
    /// (they still append first and share the write) instead of also waiting for a poll
    /// of the IO driver, which costs an `epoll_wait` per batch. For a producer that sends
    /// when answers arrive (a client): nothing new arrives in that poll that would join
    /// the batch. A server, whose request tasks are woken by that poll, keeps the default.
    pub fn yield_to_tasks_only(&self) {
        self.shared.yield_to_tasks.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether sends are refused.
    pub fn is_closed(&self) -> bool {
        self.shared.state.lock().closing
    }
}

/// Writes as much of `bytes` as the stream takes without waiting; the bytes taken.
fn write_some(io: &mut Io, cx: &mut Context<'_>, bytes: &[u8]) -> usize {
    let mut done = 0;
    while done < bytes.len() {
        match Pin::new(&mut **io).poll_write(cx, &bytes[done..]) {
            Poll::Ready(Ok(n)) if n > 0 => done += n,
            _ => break,
        }
    }
    done
}

/// Yields once by waking itself: tokio reschedules a task woken while it runs at the back
/// of the run queue, behind the tasks already ready, without deferring it past the
/// next poll of the IO driver as `tokio::task::yield_now` does.
struct BehindReadyTasks(bool);

impl std::future::Future for BehindReadyTasks {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// The stream behind the shared lock, as an `AsyncWrite` for the task: the lock is taken
/// for one poll at a time.
struct Locked<'a>(&'a Mutex<Io>);

impl AsyncWrite for Locked<'_> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let mut io = self.0.lock();
        Pin::new(&mut **io).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let mut io = self.0.lock();
        Pin::new(&mut **io).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let mut io = self.0.lock();
        Pin::new(&mut **io).poll_shutdown(cx)
    }
}

async fn write_loop(shared: Arc<Shared>) {
    let mut io = Locked(&shared.io);
    let mut batch = Vec::new();
    loop {
        let (closing, unflushed) = {
            let mut state = shared.state.lock();
            std::mem::swap(&mut state.buf, &mut batch);
            state.writing = batch.len();
            (state.closing, std::mem::take(&mut state.unflushed))
        };
        if batch.is_empty() && unflushed {
            // A direct send's flush did not finish at once; `writing` stays 0, but direct
            // sends queue while `unflushed` was set, and it is cleared only here.
            if io.flush().await.is_err() {
                shared.state.lock().closing = true;
                break;
            }
            continue;
        }
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
            if shared.yield_to_tasks.load(std::sync::atomic::Ordering::Relaxed) {
                BehindReadyTasks(false).await;
            } else {
                tokio::task::yield_now().await;
            }
            continue;
        }
        let written = async {
            io.write_all(&batch).await?;
            io.flush().await
        }
        .await;
        if written.is_err() {
            // The peer is gone: refuse further sends so producers notice.
            shared.state.lock().closing = true;
            break;
        }
        batch.clear();
        shared.state.lock().writing = 0;
        shared.drained.notify_waiters();
        // A rare huge frame should not pin its memory for the life of the connection.
        if batch.capacity() > 1 << 20 {
            batch = Vec::new();
        }
    }
    let _ = io.shutdown().await;
    // Drop the stream now, as the task owning it would: for a pipe, only closing the fd
    // makes the peer see the end (the handles may outlive the task).
    drop(std::mem::replace(&mut *shared.io.lock(), Box::new(tokio::io::sink())));
    shared.stopped.send_replace(true);
    shared.drained.notify_waiters();
}
