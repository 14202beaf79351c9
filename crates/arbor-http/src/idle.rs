//! The clock of one HTTP/1.1 connection in the accept loop: how long a request's head may
//! take to arrive, and how long a keep-alive connection may sit idle between exchanges; and
//! the one [`Sweeper`] per accept loop that watches every connection's clock.
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
//! One sweeper per server, not a timer per connection: a timer future in every
//! connection's task (232 bytes, and the select over it and the stop signals) was held by
//! every open connection, an idle SSE stream's too. The sweeper keeps one queue entry per
//! connection and wakes the connection's task when its time is up or the server stops;
//! the connection's task only reads flags ([`Clock::expiry`], [`SweeperHandle::phase`]).
//!
//! Invariant: a connection is in exactly one [`State`]; a deadline exists only in `Head`
//! and `Idle`, counted from when that state began; the sweeper looks at each clock at
//! least every `min(head, idle)`, so a state that begins between two looks is never seen
//! late (its deadline is at least that far away), and at its deadline exactly otherwise.
//! Every live tracked clock has one entry in the queue until it expires.
//! Known limit: the head of a request pipelined behind a busy exchange is timed as idle.

use std::cmp::Ordering as CmpOrdering;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use futures::task::AtomicWaker;
use hyper::body::{Body, Frame, SizeHint};
use parking_lot::{Mutex, MutexGuard};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
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

/// [`Shared::expired`]'s values.
const NOT_EXPIRED: u8 = 0;
const EXPIRED_HEAD: u8 = 1;
const EXPIRED_IDLE: u8 = 2;

/// One connection's clock, shared by its socket, its service, its task and (weakly) the
/// sweeper's queue.
#[derive(Clone)]
pub(crate) struct Clock(Arc<Shared>);

struct Shared {
    state: Mutex<State>,
    /// `state` is `Idle`: lets a read skip the lock in every other state.
    idle: AtomicBool,
    /// Set once by the sweeper: the connection's time is up, and why.
    expired: AtomicU8,
    /// The connection's task, woken by the sweeper when its time is up or the server stops.
    task: AtomicWaker,
}

impl Clock {
    /// A new connection: its first head is due within the header read timeout. Untimed
    /// until a [`Sweeper`] tracks it.
    pub(crate) fn new() -> Clock {
        Clock(Arc::new(Shared {
            state: Mutex::new(State::Head(Instant::now())),
            idle: AtomicBool::new(false),
            expired: AtomicU8::new(NOT_EXPIRED),
            task: AtomicWaker::new(),
        }))
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

    /// The task to wake when the time is up or the server stops (a task's waker: stored
    /// again only if it changed).
    pub(crate) fn watch(&self, waker: &Waker) {
        self.0.task.register(waker);
    }

    /// Whether the sweeper found the connection past its time, and why.
    pub(crate) fn expiry(&self) -> Option<Expiry> {
        match self.0.expired.load(Ordering::Acquire) {
            EXPIRED_HEAD => Some(Expiry::Head),
            EXPIRED_IDLE => Some(Expiry::Idle),
            _ => None,
        }
    }

    /// Resolves once the sweeper found the connection past its time.
    #[cfg(test)]
    pub(crate) async fn expired(&self) -> Expiry {
        std::future::poll_fn(|cx| {
            self.watch(cx.waker());
            self.expiry().map_or(Poll::Pending, Poll::Ready)
        })
        .await
    }
}

impl Shared {
    /// When the connection's time is up in its present state, and why; `None` while busy.
    fn deadline(&self, head: Duration, idle: Duration) -> Option<(Instant, Expiry)> {
        match *self.state.lock() {
            State::Head(since) => Some((since + head, Expiry::Head)),
            State::Idle(since) => Some((since + idle, Expiry::Idle)),
            State::Busy(_) => None,
        }
    }

    fn expire(&self, why: Expiry) {
        let flag = match why {
            Expiry::Head => EXPIRED_HEAD,
            Expiry::Idle => EXPIRED_IDLE,
        };
        self.expired.store(flag, Ordering::Release);
        self.task.wake();
    }
}

/// Where a server's connections are in its life: [`SweeperHandle::phase`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Serving.
    Running,
    /// The shutdown signal came: connections finish their exchange.
    Stopping,
    /// The shutdown grace is over: connections still open are dropped.
    Forced,
}

/// The clocks of one accept loop's connections, and the task that watches them: it sleeps
/// until the earliest entry is due, closes what is past its time (sets the clock's flag
/// and wakes its connection's task) and looks again at the rest.
///
/// Dropping it ends the watching task.
pub(crate) struct Sweeper {
    timers: Arc<Timers>,
    task: tokio::task::JoinHandle<()>,
}

struct Timers {
    head: Duration,
    idle: Duration,
    /// The longest between two looks at one clock: `min(head, idle)`, and never below
    /// 10 ms so that no timeout configured as zero makes the sweeper spin.
    step: Duration,
    queue: Mutex<Queue>,
    /// Told when a clock joins an empty queue (the sweeper then has nothing to sleep on).
    joined: Notify,
    /// A [`Phase`] as `u8`.
    phase: AtomicU8,
}

struct Queue {
    due: BinaryHeap<Due>,
    /// Entries kept by the last compaction: the next one comes at twice as many.
    kept: usize,
}

/// When the sweeper looks at a clock next. Weak: a closed connection's clock is not kept
/// alive by its entry, which goes at its next look (or at a compaction).
struct Due {
    at: Instant,
    clock: Weak<Shared>,
}

impl PartialEq for Due {
    fn eq(&self, other: &Due) -> bool {
        self.at == other.at
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Due) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Due {
    /// Reversed: `BinaryHeap` is a max-heap and the earliest is wanted first.
    fn cmp(&self, other: &Due) -> CmpOrdering {
        other.at.cmp(&self.at)
    }
}

/// Below this many entries the queue is never compacted (a few KiB at most).
const COMPACT_FLOOR: usize = 1024;

impl Sweeper {
    /// Starts watching with these timeouts (on the current runtime).
    pub(crate) fn start(head: Duration, idle: Duration) -> Sweeper {
        let timers = Arc::new(Timers {
            head,
            idle,
            step: head.min(idle).max(Duration::from_millis(10)),
            queue: Mutex::new(Queue { due: BinaryHeap::new(), kept: 0 }),
            joined: Notify::new(),
            phase: AtomicU8::new(Phase::Running as u8),
        });
        let task = tokio::spawn(sweep(timers.clone()));
        Sweeper { timers, task }
    }

    /// A handle on the phase and the queue, for a connection's task.
    pub(crate) fn handle(&self) -> SweeperHandle {
        SweeperHandle(self.timers.clone())
    }

    /// Times `clock` from now on, from the state it is in.
    pub(crate) fn track(&self, clock: &Clock) {
        let timers = &self.timers;
        let mut queue = timers.queue.lock();
        // Entries of closed connections go at their next look, within `step`; under a
        // burst of short connections they could pile up meanwhile, so past twice what the
        // last compaction kept they go at once (linear, and only after as many accepts).
        if queue.due.len() >= 2 * queue.kept + COMPACT_FLOOR {
            queue.due.retain(|due| due.clock.strong_count() > 0);
            queue.kept = queue.due.len();
        }
        let was_empty = queue.due.is_empty();
        // Every entry is due within `step` of its push, so a new one is never the earliest
        // the sweeper must wake for, unless there is none.
        queue.due.push(Due { at: Instant::now() + timers.step, clock: Arc::downgrade(&clock.0) });
        drop(queue);
        if was_empty {
            timers.joined.notify_one();
        }
    }

    /// The server moves to `phase` (only ever forward): every tracked connection's task is
    /// woken to see it.
    pub(crate) fn set_phase(&self, phase: Phase) {
        self.timers.phase.fetch_max(phase as u8, Ordering::AcqRel);
        let queue = self.timers.queue.lock();
        for due in queue.due.iter() {
            if let Some(clock) = due.clock.upgrade() {
                clock.task.wake();
            }
        }
    }

    /// Entries in the queue (live connections and closed ones not yet looked at).
    #[cfg(test)]
    fn queued(&self) -> usize {
        self.timers.queue.lock().due.len()
    }
}

impl Drop for Sweeper {
    /// The accept loop is gone (returned, or its future dropped): its connections are
    /// dropped too, as when their stop signals' senders went with it, not served untimed.
    fn drop(&mut self) {
        self.set_phase(Phase::Forced);
        self.task.abort();
    }
}

/// What a connection's task reads of its server's [`Sweeper`].
pub(crate) struct SweeperHandle(Arc<Timers>);

impl SweeperHandle {
    pub(crate) fn phase(&self) -> Phase {
        match self.0.phase.load(Ordering::Acquire) {
            0 => Phase::Running,
            1 => Phase::Stopping,
            _ => Phase::Forced,
        }
    }
}

/// The sweeper's task: looks at each clock when its entry is due.
async fn sweep(timers: Arc<Timers>) {
    let sleep = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(sleep);
    loop {
        let next = {
            let mut queue = timers.queue.lock();
            let now = Instant::now();
            while let Some(mut top) = queue.due.peek_mut() {
                if top.at > now {
                    break;
                }
                let Some(clock) = top.clock.upgrade() else {
                    PeekMut::pop(top);
                    continue;
                };
                match clock.deadline(timers.head, timers.idle) {
                    Some((at, why)) if at <= now => {
                        PeekMut::pop(top);
                        clock.expire(why);
                    }
                    // Looked at again at its deadline, or within `step` if its state
                    // changes meanwhile (a new state's deadline is at least `step` away).
                    deadline => top.at = deadline.map_or(now + timers.step, |(at, _)| at.min(now + timers.step)),
                }
            }
            queue.due.peek().map(|due| due.at)
        };
        match next {
            Some(at) => {
                sleep.as_mut().reset(at);
                sleep.as_mut().await;
            }
            None => timers.joined.notified().await,
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

    /// The server defaults: a head within 30 s, idle for at most 120 s.
    fn sweeper() -> Sweeper {
        Sweeper::start(Duration::from_secs(30), Duration::from_secs(120))
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_connection_owes_its_head_within_the_head_timeout() {
        let sweeper = sweeper();
        let clock = Clock::new();
        sweeper.track(&clock);
        let start = Instant::now();
        assert_eq!(clock.expired().await, Expiry::Head);
        assert_eq!(start.elapsed(), Duration::from_secs(30));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_is_timed_by_the_idle_timeout_and_a_busy_one_not_at_all() {
        let sweeper = sweeper();
        let clock = Clock::new();
        sweeper.track(&clock);
        let exchange = clock.begin();
        let watchdog = tokio::spawn({
            let clock = clock.clone();
            async move { clock.expired().await }
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
        let sweeper = sweeper();
        let clock = Clock::new();
        sweeper.track(&clock);
        drop(clock.begin());
        let watchdog = tokio::spawn({
            let clock = clock.clone();
            async move { clock.expired().await }
        });
        tokio::time::sleep(Duration::from_secs(50)).await;
        let head = Instant::now();
        clock.bytes_arrived();
        assert_eq!(watchdog.await.unwrap(), Expiry::Head);
        assert_eq!(head.elapsed(), Duration::from_secs(30), "the head is due 30 s after its first byte");
    }

    #[tokio::test(start_paused = true)]
    async fn one_sweeper_times_each_connection_to_its_own_deadline() {
        let sweeper = sweeper();
        let start = Instant::now();
        // Idle from 0 s (due at 120 s), a head begun at 50 s (due at 80 s: earlier than
        // the idle deadline it replaced), new at 10 s (due at 40 s), busy throughout.
        let idle_then_head = Clock::new();
        sweeper.track(&idle_then_head);
        drop(idle_then_head.begin());
        let busy = Clock::new();
        sweeper.track(&busy);
        let _exchange = busy.begin();
        tokio::time::sleep(Duration::from_secs(10)).await;
        let late = Clock::new();
        sweeper.track(&late);
        let waits = [idle_then_head.clone(), late.clone()].map(|clock| {
            tokio::spawn(async move {
                let why = clock.expired().await;
                (why, start.elapsed())
            })
        });
        tokio::time::sleep(Duration::from_secs(40)).await;
        idle_then_head.bytes_arrived();
        let [first, second] = waits;
        assert_eq!(second.await.unwrap(), (Expiry::Head, Duration::from_secs(40)));
        assert_eq!(first.await.unwrap(), (Expiry::Head, Duration::from_secs(80)), "never seen late");
        tokio::time::sleep(Duration::from_secs(1_000)).await;
        assert_eq!(busy.expiry(), None, "a busy connection is never timed");
        assert_eq!(sweeper.queued(), 1, "expired connections leave the queue");
    }

    #[tokio::test(start_paused = true)]
    async fn closed_connections_leave_the_queue_within_a_step_or_at_a_compaction() {
        let sweeper = sweeper();
        let kept = Clock::new();
        sweeper.track(&kept);
        let _busy = kept.begin();
        for _ in 1..COMPACT_FLOOR {
            sweeper.track(&Clock::new());
        }
        assert_eq!(sweeper.queued(), COMPACT_FLOOR);
        // Past the floor, the next accept drops the closed connections' entries at once.
        let next = Clock::new();
        sweeper.track(&next);
        assert_eq!(sweeper.queued(), 2);
        drop(next);
        // A closed connection's entry goes at its next look otherwise: within 30 s.
        tokio::time::sleep(Duration::from_secs(31)).await;
        assert_eq!(sweeper.queued(), 1);
        assert_eq!(kept.expiry(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_phase_change_wakes_every_tracked_connection() {
        let sweeper = sweeper();
        let handle = sweeper.handle();
        let clocks: Vec<Clock> = (0..3).map(|_| Clock::new()).collect();
        let mut waits = Vec::new();
        for clock in &clocks {
            sweeper.track(clock);
            let _exchange = clock.begin();
            let (clock, handle) = (clock.clone(), sweeper.handle());
            // A busy connection: nothing but the phase can wake it.
            waits.push(tokio::spawn(async move {
                let _busy = _exchange;
                std::future::poll_fn(|cx| {
                    clock.watch(cx.waker());
                    if handle.phase() == Phase::Stopping {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    }
                })
                .await
            }));
        }
        tokio::time::sleep(Duration::from_secs(1_000)).await;
        assert!(waits.iter().all(|wait| !wait.is_finished()));
        assert_eq!(handle.phase(), Phase::Running);
        sweeper.set_phase(Phase::Stopping);
        for wait in waits {
            tokio::time::timeout(Duration::from_secs(1), wait).await.expect("woken").unwrap();
        }
        sweeper.set_phase(Phase::Running);
        assert_eq!(handle.phase(), Phase::Stopping, "phases only go forward");
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_sweeper_forces_its_connections_closed() {
        let sweeper = sweeper();
        let handle = sweeper.handle();
        let clock = Clock::new();
        sweeper.track(&clock);
        let exchange = clock.begin();
        let wait = tokio::spawn({
            let handle = sweeper.handle();
            async move {
                let _busy = exchange;
                std::future::poll_fn(|cx| {
                    clock.watch(cx.waker());
                    if handle.phase() == Phase::Forced {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    }
                })
                .await
            }
        });
        tokio::time::sleep(Duration::from_secs(1_000)).await;
        assert!(!wait.is_finished());
        drop(sweeper);
        tokio::time::timeout(Duration::from_secs(1), wait).await.expect("woken").unwrap();
        assert_eq!(handle.phase(), Phase::Forced);
    }
}
