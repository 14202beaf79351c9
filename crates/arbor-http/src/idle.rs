//! The clock of one HTTP/1.1 connection in the accept loop: how long a request's head may
//! take to arrive, and how long a keep-alive connection may sit idle between exchanges.
//!
//! hyper has one timer for both (its header read timeout starts as soon as it waits for the
//! next head, so an idle keep-alive connection is closed after it). A short head timeout
//! bounds the slowloris; a short idle timeout loses requests: a client that keeps pooled
//! connections longer (reqwest and Go keep them 90 s) can send its next request on a
//! connection at the very moment the server closes it, and that request fails with no
//! answer. The one-hour soak lost one request exactly so. Here the two are apart: the head
//! timeout runs from a head's first byte (and from the accept), the idle timeout from the
//! end of the previous exchange, and an exchange in progress (an SSE stream included) is
//! never timed here. It is not the body's timeout (`body.rs` has those) and it answers
//! nothing: a connection past its time is closed.
//!
//! Invariant: a connection is in exactly one [`State`]; a deadline exists only in `Head`
//! and `Idle`, counted from when that state began; [`Clock::expired`] wakes at least every
//! `min(head, idle)`, so a state that begins while it sleeps is never seen late.
//! Known limit: the head of a request pipelined behind a busy exchange is timed as idle.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use parking_lot::{Mutex, MutexGuard};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// What the connection is doing, and since when.
#[derive(Debug, Clone, Copy)]
enum State {
    /// A request's head is due: bytes of it have arrived (or the connection is new).
    Head(Instant),
    /// This many exchanges are open (hyper has called the service; the answer's body is
    /// not yet written out).
    Busy(usize),
    /// Nothing in progress since then.
    Idle(Instant),
}

/// Why a connection was closed by its clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// A request's head did not arrive whole within the header read timeout.
    Head,
    /// No request began within the idle timeout after the last exchange.
    Idle,
}

/// One connection's clock, shared by its socket, its service and its watchdog.
#[derive(Clone)]
pub(crate) struct Clock(Arc<Shared>);

struct Shared {
    state: Mutex<State>,
    /// `state` is `Idle`: lets a read skip the lock in every other state.
    idle: AtomicBool,
}

impl Clock {
    /// A new connection: its first head is due within the header read timeout.
    pub(crate) fn new() -> Clock {
        Clock(Arc::new(Shared { state: Mutex::new(State::Head(Instant::now())), idle: AtomicBool::new(false) }))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.state.lock()
    }

    /// Bytes arrived: on an idle connection, the next head has begun.
    fn bytes_arrived(&self) {
        if self.0.idle.load(Ordering::Relaxed) {
            let mut state = self.state();
            if let State::Idle(_) = *state {
                *state = State::Head(Instant::now());
            }
            self.0.idle.store(false, Ordering::Relaxed);
        }
    }

    /// hyper has read a head and calls the service: an exchange is open until the returned
    /// guard is dropped (with the answer's body).
    pub(crate) fn begin(&self) -> Exchange {
        let mut state = self.state();
        *state = match *state {
            State::Busy(n) => State::Busy(n + 1),
            State::Head(_) | State::Idle(_) => State::Busy(1),
        };
        self.0.idle.store(false, Ordering::Relaxed);
        Exchange(self.clone())
    }

    /// Resolves once the connection has been in `Head` or `Idle` past that state's time.
    pub(crate) async fn expired(&self, head: Duration, idle: Duration) -> Expiry {
        // Never a busy loop, even if a timeout is configured as zero.
        let step = head.min(idle).max(Duration::from_millis(10));
        loop {
            let now = Instant::now();
            let deadline = match *self.state() {
                State::Head(since) => Some((since + head, Expiry::Head)),
                State::Idle(since) => Some((since + idle, Expiry::Idle)),
                State::Busy(_) => None,
            };
            if let Some((at, why)) = deadline {
                if at <= now {
                    return why;
                }
            }
            let wake = deadline.map_or(now + step, |(at, _)| at.min(now + step));
            tokio::time::sleep_until(wake).await;
        }
    }
}

/// An open exchange; dropping it (with the answer's body, once written or abandoned) ends it.
pub(crate) struct Exchange(Clock);

impl Drop for Exchange {
    fn drop(&mut self) {
        let mut state = self.0.state();
        *state = match *state {
            State::Busy(n) if n > 1 => State::Busy(n - 1),
            _ => {
                self.0 .0.idle.store(true, Ordering::Relaxed);
                State::Idle(Instant::now())
            }
        };
    }
}

/// A socket that tells its [`Clock`] when bytes arrive.
pub(crate) struct Watched<T> {
    io: T,
    clock: Clock,
}

impl<T> Watched<T> {
    pub(crate) fn new(io: T, clock: Clock) -> Watched<T> {
        Watched { io, clock }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.clock.bytes_arrived();
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// An answer's body that holds its exchange open until hyper drops it.
pub(crate) struct Tracked {
    body: axum::body::Body,
    _exchange: Exchange,
}

impl Tracked {
    pub(crate) fn new(body: axum::body::Body, exchange: Exchange) -> Tracked {
        Tracked { body, _exchange: exchange }
    }
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_new_connection_owes_its_head_within_the_head_timeout() {
        let clock = Clock::new();
        let start = Instant::now();
        assert_eq!(clock.expired(Duration::from_secs(30), Duration::from_secs(120)).await, Expiry::Head);
        assert_eq!(start.elapsed(), Duration::from_secs(30));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_is_timed_by_the_idle_timeout_and_a_busy_one_not_at_all() {
        let clock = Clock::new();
        let exchange = clock.begin();
        let watchdog = tokio::spawn({
            let clock = clock.clone();
            async move { clock.expired(Duration::from_secs(30), Duration::from_secs(120)).await }
        });
        // A long exchange (an SSE stream) is never cut by this clock.
        tokio::time::sleep(Duration::from_secs(1_000)).await;
        assert!(!watchdog.is_finished());
        let ended = Instant::now();
        drop(exchange);
        assert_eq!(watchdog.await.unwrap(), Expiry::Idle);
        assert_eq!(ended.elapsed(), Duration::from_secs(120), "idle is counted from the exchange's end");
    }

    #[tokio::test(start_paused = true)]
    async fn bytes_on_an_idle_connection_start_the_head_timeout() {
        let clock = Clock::new();
        drop(clock.begin());
        let watchdog = tokio::spawn({
            let clock = clock.clone();
            async move { clock.expired(Duration::from_secs(30), Duration::from_secs(120)).await }
        });
        tokio::time::sleep(Duration::from_secs(50)).await;
        let head = Instant::now();
        clock.bytes_arrived();
        assert_eq!(watchdog.await.unwrap(), Expiry::Head);
        assert_eq!(head.elapsed(), Duration::from_secs(30), "the head is due 30 s after its first byte");
    }
}
