//! One resumable SSE stream of a legacy session: a bounded buffer of numbered events, what
//! fills it from a route (a POST stream's pump task; for the standalone stream, the route
//! itself on each send), and the response body that reads it.
//!
//! It is not the session (`session.rs` holds the streams) and not the HTTP answer's
//! choice between JSON and SSE (`mod.rs`). A stream outlives the connection that opened
//! it: the buffer keeps filling while no client reads (a disconnect is not a cancel in
//! this era), and a GET with `Last-Event-ID` attaches a new reader.
//!
//! The standalone stream has no task: it lives as long as its session and is mostly idle,
//! and a pump task kept about 1.3 KB of every idle session. Its route calls
//! [`EventStream::feed`] after each send (`RouteReceiver::on_ready`), and a reader calls it
//! after taking events.
//!
//! Invariants: event ids are `<stream>-<seq>`, `seq` counting from 1 (`0` is the priming
//! event), so an id names its stream and is unique in the session; the buffer never holds
//! more than `event_buffer` events (the oldest go first); at most one reader is attached
//! (a newer one supersedes it), and no lock is held across an await. While a reader is
//! attached the standalone stream is never fed an event that would push out one it has not
//! been handed: the event waits in the route, so a slow reader holds the route back (and,
//! past the server's unread-output bound, the stream's bus queue, whose overflow the
//! client is told of) instead of losing events in silence.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use arbor_server::exchange::{Outgoing, RouteReceiver};
use bytes::{Bytes, BytesMut};
use hyper::body::Frame;
use parking_lot::Mutex;
use tokio::sync::futures::OwnedNotified;
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};

use super::session::Busy;
use crate::server::StreamCount;
use crate::sse;

/// A session's stream: the standalone one (id 0) or one per POST answered with SSE.
#[derive(Debug)]
pub(crate) struct EventStream {
    pub(crate) id: u64,
    state: Mutex<State>,
    /// The route the standalone stream is fed from on demand ([`EventStream::feed_from`]);
    /// dropped once it ended. Locked while feeding, so messages go in their route order.
    source: Mutex<Option<Source>>,
    /// Told whether a reader is attached, on each change (the standalone stream tells its
    /// endpoint, for a 2025-11-25 task's input requests: `Endpoint::set_standalone_read`).
    on_reader: OnceLock<OnReader>,
}

/// The route a stream is fed from, and its buffer's bound.
#[derive(Debug)]
struct Source {
    rx: RouteReceiver,
    cap: usize,
}

/// A hook told `true` when a reader attaches and `false` when the attached one goes.
pub(crate) struct OnReader(pub(crate) Box<dyn Fn(bool) + Send + Sync>);

impl std::fmt::Debug for OnReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnReader")
    }
}

#[derive(Debug, Default)]
struct State {
    /// `(seq, json)`, oldest first, at most `cap`.
    events: VecDeque<(u64, Vec<u8>)>,
    /// The last seq given out (0 before the first event).
    last_seq: u64,
    /// No event will follow (the POST's responses are in, or the session closed).
    done: bool,
    /// Bumped by each reader that attaches; an older reader sees it and ends.
    reader: u64,
    attached: bool,
    /// The last seq handed to a reader: a new standalone GET starts after it.
    delivered: u64,
    /// The attached reader's waker, left when it found nothing new: taken and woken by the
    /// next change (an event, the end, a newer reader). One slot, not a `Notify`: one reader
    /// reads at a time, and a waker is all its body needs (see [`Reader`]).
    waker: Option<Waker>,
}

impl State {
    /// Events held that no reader was handed yet (seqs ascend, so a binary search).
    fn unread(&self) -> usize {
        self.events.len() - self.events.partition_point(|(seq, _)| *seq <= self.delivered)
    }

    /// The waker to wake once the lock is released.
    fn changed(&mut self) -> Option<Waker> {
        self.waker.take()
    }
}

/// Wakes the reader a change concerns, outside the lock.
fn wake(waker: Option<Waker>) {
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// What a read found.
enum Read {
    /// Events were written.
    Some,
    /// Nothing new yet.
    Nothing,
    /// Everything was read and nothing will follow.
    Finished,
    /// A newer reader took the stream over.
    Superseded,
}

impl EventStream {
    pub(crate) fn new(id: u64) -> EventStream {
        EventStream { id, state: Mutex::new(State::default()), source: Mutex::new(None), on_reader: OnceLock::new() }
    }

    /// Feeds this stream from `rx` without a task, keeping at most `cap` events: the
    /// route calls [`EventStream::feed`] after each send and when it ends, through a weak
    /// reference (the stream owns the receiver, so a strong one would keep both forever).
    pub(crate) fn feed_from(self: &Arc<Self>, rx: RouteReceiver, cap: usize) {
        let stream = Arc::downgrade(self);
        rx.on_ready(move || {
            if let Some(stream) = stream.upgrade() {
                stream.feed();
            }
        });
        *self.source.lock() = Some(Source { rx, cap });
        // What was sent before the hook was set.
        self.feed();
    }

    /// Moves what the route holds into the buffer while one more event fits without
    /// pushing out one the attached reader has not been handed (with no reader attached
    /// the buffer is the replay window and always takes the latest `cap`); what does not
    /// fit stays in the route, counted as its unread output. Finishes the stream once the
    /// route ended. A no-op for a stream fed by a task.
    pub(crate) fn feed(&self) {
        let mut source = self.source.lock();
        let Some(Source { rx, cap }) = source.as_mut() else { return };
        let cap = *cap;
        loop {
            {
                let state = self.state.lock();
                if state.attached && state.unread() >= cap.max(1) {
                    return;
                }
            }
            match rx.try_recv() {
                Some(out) => {
                    self.push(out.into_bytes(), cap);
                }
                None => {
                    if rx.is_ended() {
                        *source = None;
                        drop(source);
                        self.finish();
                    }
                    return;
                }
            }
        }
    }

    /// Sets the hook told whether a reader is attached (once; later calls are ignored).
    pub(crate) fn on_reader(&self, hook: impl Fn(bool) + Send + Sync + 'static) {
        let _ = self.on_reader.set(OnReader(Box::new(hook)));
    }

    fn tell(&self, attached: bool) {
        if let Some(hook) = self.on_reader.get() {
            (hook.0)(attached);
        }
    }

    /// Appends an event, dropping the oldest beyond `cap`; answers its seq.
    pub(crate) fn push(&self, json: Vec<u8>, cap: usize) -> u64 {
        let (seq, waker) = {
            let mut state = self.state.lock();
            state.last_seq += 1;
            let seq = state.last_seq;
            state.events.push_back((seq, json));
            while state.events.len() > cap.max(1) {
                state.events.pop_front();
            }
            (seq, state.changed())
        };
        wake(waker);
        seq
    }

    /// Appends an event another node numbered (`cluster`: a stream followed from the
    /// session store); one at or below the last seq held is a repeat and is dropped.
    pub(crate) fn push_at(&self, seq: u64, json: Vec<u8>, cap: usize) {
        let waker = {
            let mut state = self.state.lock();
            if seq <= state.last_seq {
                return;
            }
            state.last_seq = seq;
            state.events.push_back((seq, json));
            while state.events.len() > cap.max(1) {
                state.events.pop_front();
            }
            state.changed()
        };
        wake(waker);
    }

    /// Puts events older than every one held back in front (a reader resuming from
    /// before where this node started following the stream), within `cap`.
    pub(crate) fn backfill(&self, older: Vec<(u64, Vec<u8>)>, cap: usize) {
        let waker = {
            let mut state = self.state.lock();
            let first = state.events.front().map_or(state.last_seq + 1, |(seq, _)| *seq);
            for (seq, json) in older.into_iter().rev().filter(|(seq, _)| *seq < first) {
                if state.events.len() >= cap.max(1) {
                    break;
                }
                state.events.push_front((seq, json));
            }
            if let Some((last, _)) = state.events.back() {
                state.last_seq = state.last_seq.max(*last);
            }
            state.changed()
        };
        wake(waker);
    }

    /// No event will follow.
    pub(crate) fn finish(&self) {
        let waker = {
            let mut state = self.state.lock();
            state.done = true;
            state.changed()
        };
        wake(waker);
    }

    /// Whether the stream is finished and a reader had everything.
    pub(crate) fn is_spent(&self) -> bool {
        let state = self.state.lock();
        state.done && state.delivered >= state.last_seq && !state.attached
    }

    pub(crate) fn is_done(&self) -> bool {
        self.state.lock().done
    }

    /// Where a new standalone reader starts: after what was already delivered.
    pub(crate) fn delivered(&self) -> u64 {
        self.state.lock().delivered
    }

    /// Attaches a reader (superseding any other); returns its generation.
    fn attach(&self) -> u64 {
        let (generation, superseded) = {
            let mut state = self.state.lock();
            state.reader += 1;
            state.attached = true;
            (state.reader, state.changed())
        };
        // The reader this one supersedes wakes, reads `Superseded` and ends.
        wake(superseded);
        self.tell(true);
        generation
    }

    fn detach(&self, generation: u64) {
        let detached = {
            let mut state = self.state.lock();
            let current = state.reader == generation;
            if current {
                state.attached = false;
                state.waker = None;
            }
            current
        };
        // Outside the lock: the hook and the feed take locks of their own.
        if detached {
            self.feed();
            self.tell(false);
        }
    }

    /// Frames the events after `*cursor` into `out`. With `waker`, a read that finds
    /// nothing leaves it to be woken by the next change (under the same lock: none is missed).
    fn read(&self, generation: u64, cursor: &mut u64, out: &mut BytesMut, waker: Option<&Waker>) -> Read {
        let mut state = self.state.lock();
        if state.reader != generation {
            return Read::Superseded;
        }
        let mut wrote = false;
        let after = *cursor;
        for (seq, json) in state.events.iter().filter(|(seq, _)| *seq > after) {
            sse::put_event(out, self.id, *seq, json);
            *cursor = *seq;
            wrote = true;
        }
        // Events that fell out of the buffer are skipped, not waited for.
        if *cursor < state.last_seq && state.events.is_empty() {
            *cursor = state.last_seq;
        }
        state.delivered = state.delivered.max(*cursor);
        match (wrote, state.done && *cursor >= state.last_seq) {
            (_, true) if !wrote => Read::Finished,
            (true, _) => Read::Some,
            (false, _) => {
                if let Some(waker) = waker {
                    match &mut state.waker {
                        Some(held) if held.will_wake(waker) => {}
                        slot => *slot = Some(waker.clone()),
                    }
                }
                Read::Nothing
            }
        }
    }
}

/// Moves a POST's route's messages into `stream` until `expected` responses arrived (or
/// the route ends), then finishes it. Runs as a supervised task.
///
/// It does not wait for a slow reader (the standalone stream does, [`EventStream::feed`]):
/// the request's progress and logs do not hold back, so waiting would only move its
/// backlog into the route.
pub(crate) async fn pump(mut rx: RouteReceiver, stream: Arc<EventStream>, mut expected: usize, cap: usize) {
    while expected > 0 {
        let Some(out) = rx.recv().await else { break };
        match out {
            Outgoing::Response(json) => {
                // A 2025-03-26 batch's answers come as one array.
                expected = if json.first() == Some(&b'[') { 0 } else { expected - 1 };
                stream.push(json, cap);
            }
            Outgoing::Notification(json) | Outgoing::Request(json) => {
                stream.push(json, cap);
            }
        }
    }
    stream.finish();
}

/// How a reader starts.
pub(crate) struct ReaderStart {
    /// Read events after this seq.
    pub(crate) cursor: u64,
    /// Send a priming event with this `retry` first.
    pub(crate) prime: Option<Duration>,
    /// End the response after this long while the stream is unfinished (SEP-1699
    /// polling): the client resumes with `Last-Event-ID`.
    pub(crate) poll_after: Option<Duration>,
    pub(crate) keep_alive: Duration,
}

/// The body of an SSE answer reading `stream`; it ends at the server's shutdown and, for a
/// stream opened with an expiring token, at `expiry` (`server::stream_expiry`).
///
/// A body of its own (`Reader` polled by hyper), not a `futures` `unfold` around an async
/// `next`: the future of such a `next`, with its `select!` over the change, the keep-alive,
/// the end and the polling deadline, made the body 608 bytes, held by every open stream.
/// The keep-alive's timer and the shutdown's waiter are inside the `Reader` too, not boxed
/// beside it (an `Interval`'s boxed `Sleep`, 112 bytes, and a boxed `wait_for` on a
/// receiver of the shutdown, 168).
pub(crate) fn body(
    stream: Arc<EventStream>,
    start: ReaderStart,
    busy: Busy,
    expiry: Option<watch::Receiver<bool>>,
    count: StreamCount,
) -> axum::body::Body {
    let generation = stream.attach();
    let reader = Reader {
        generation,
        cursor: start.cursor,
        prime: start.prime,
        // Boxed: only polling streams pay for a `Sleep`.
        poll_until: start.poll_after.map(|d| Box::pin(tokio::time::sleep(d))),
        keep_alive: tokio::time::sleep(start.keep_alive),
        period: start.keep_alive,
        shutdown: count.on_shutdown(),
        expiry: expiry.map(|mut expiry| -> Pin<Box<dyn Future<Output = ()> + Send>> {
            Box::pin(async move {
                let _ = expiry.wait_for(|stop| *stop).await;
            })
        }),
        ended: false,
        _busy: busy,
        count,
        stream,
    };
    axum::body::Body::new(reader)
}

pin_project_lite::pin_project! {
    struct Reader {
        stream: Arc<EventStream>,
        generation: u64,
        cursor: u64,
        prime: Option<Duration>,
        // SEP-1699 polling: the response ends here while the stream is unfinished.
        poll_until: Option<Pin<Box<Sleep>>>,
        // The next keep-alive comment is due at its deadline, then `period` after it was sent
        // (an `Interval` that delays missed ticks).
        #[pin]
        keep_alive: Sleep,
        period: Duration,
        // Completes at the server's shutdown (if after the body was made: `count` tells the rest).
        #[pin]
        shutdown: OwnedNotified,
        // Resolves when the token the stream was opened with expires.
        expiry: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
        ended: bool,
        _busy: Busy,
        count: StreamCount,
    }

    impl PinnedDrop for Reader {
        fn drop(this: Pin<&mut Self>) {
            this.stream.detach(this.generation);
        }
    }
}

impl hyper::body::Body for Reader {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let mut this = self.project();
        if *this.ended {
            return Poll::Ready(None);
        }
        let data = |out: BytesMut| Poll::Ready(Some(Ok(Frame::data(out.freeze()))));
        let mut out = BytesMut::new();
        if let Some(retry) = this.prime.take() {
            sse::put_priming(&mut out, this.stream.id, *this.cursor, retry);
        }
        match this.stream.read(*this.generation, this.cursor, &mut out, Some(cx.waker())) {
            Read::Some => {
                // What was taken makes room for what the route holds back.
                this.stream.feed();
                return data(out);
            }
            Read::Finished | Read::Superseded => {
                *this.ended = true;
                return if out.is_empty() { Poll::Ready(None) } else { data(out) };
            }
            Read::Nothing if !out.is_empty() => return data(out),
            // The waker is with the stream: the next change wakes this body.
            Read::Nothing => {}
        }
        let polled_out = this.poll_until.as_mut().is_some_and(|at| at.as_mut().poll(cx).is_ready());
        // The flag first: a shutdown before the waiter was made never notifies it.
        let ends = polled_out
            || this.count.shutting_down()
            || this.shutdown.as_mut().poll(cx).is_ready()
            || this.expiry.as_mut().is_some_and(|expiry| expiry.as_mut().poll(cx).is_ready());
        if ends {
            // What the buffer already holds still goes out (a drained server's last
            // answers), then the response ends.
            *this.ended = true;
            let _ = this.stream.read(*this.generation, this.cursor, &mut out, None);
            return if out.is_empty() { Poll::Ready(None) } else { data(out) };
        }
        if this.keep_alive.as_mut().poll(cx).is_ready() {
            // As an `Interval` that delays missed ticks: `period` after the due time, or
            // after now if the tick came late.
            let (due, now) = (this.keep_alive.deadline(), Instant::now());
            let late = now.saturating_duration_since(due) > Duration::from_millis(5);
            this.keep_alive.as_mut().reset(if late { now } else { due } + *this.period);
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(sse::KEEP_ALIVE)))));
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream fed on demand holds its route's receiver, and the route holds the hook
    /// back to the stream only weakly: the session's stream going closes the route (no
    /// cycle keeps either), and the route's end finishes the stream and lets the receiver go.
    #[test]
    fn a_stream_fed_on_demand_ends_with_its_route_and_frees_it_when_dropped() {
        let (route, rx) = arbor_server::exchange::Route::channel();
        let stream = Arc::new(EventStream::new(0));
        stream.feed_from(rx, 8);
        assert!(!stream.is_done());
        drop(route);
        assert!(stream.is_done(), "the last sender's leaving finishes the stream");
        assert!(stream.source.lock().is_none(), "the ended route's receiver is let go");

        let (route, rx) = arbor_server::exchange::Route::channel();
        let stream = Arc::new(EventStream::new(0));
        stream.feed_from(rx, 8);
        let weak = Arc::downgrade(&stream);
        drop(stream);
        assert!(weak.upgrade().is_none(), "the route's hook does not keep the stream");
        assert!(route.is_closed(), "the stream's going drops the receiver, closing the route");
    }

    #[test]
    fn an_open_streams_body_is_one_allocation_of_bounded_size() {
        // Every open SSE stream holds one: its keep-alive timer and shutdown waiter are
        // inside it. 120 bytes plus a 112-byte timer and a 168-byte end beside it before.
        let size = std::mem::size_of::<Reader>();
        assert!(size <= 320, "the legacy SSE body grew to {size} bytes");
    }
}
