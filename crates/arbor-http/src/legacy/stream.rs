//! One resumable SSE stream of a legacy session: a bounded buffer of numbered events, the
//! pump that fills it from a route, and the response body that reads it.
//!
//! It is not the session (`session.rs` holds the streams) and not the HTTP answer's
//! choice between JSON and SSE (`mod.rs`). A stream outlives the connection that opened
//! it: the pump keeps filling the buffer while no client reads (a disconnect is not a
//! cancel in this era), and a GET with `Last-Event-ID` attaches a new reader.
//!
//! Invariants: event ids are `<stream>-<seq>`, `seq` counting from 1 (`0` is the priming
//! event), so an id names its stream and is unique in the session; the buffer never holds
//! more than `event_buffer` events (the oldest go first); at most one reader is attached
//! (a newer one supersedes it), and no lock is held across an await. While a reader is
//! attached the standalone stream's pump never pushes out an event it has not been
//! handed: it waits, so a slow reader holds the route back (and, past the server's unread-output bound, the
//! stream's bus queue, whose overflow the client is told of) instead of losing events
//! in silence.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arbor_server::exchange::{Outgoing, RouteReceiver};
use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use tokio::sync::{watch, Notify};
use tokio::time::{interval_at, Instant, Interval, MissedTickBehavior};

use super::session::Busy;
use crate::server::StreamCount;
use crate::sse;

/// A session's stream: the standalone one (id 0) or one per POST answered with SSE.
#[derive(Debug)]
pub(crate) struct EventStream {
    pub(crate) id: u64,
    state: Mutex<State>,
    changed: Notify,
    /// Told when a reader took events or went away: the pump may have room again.
    taken: Notify,
    /// Told whether a reader is attached, on each change (the standalone stream tells its
    /// endpoint, for a 2025-11-25 task's input requests: `Endpoint::set_standalone_read`).
    on_reader: OnceLock<OnReader>,
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
        EventStream {
            id,
            state: Mutex::new(State::default()),
            changed: Notify::new(),
            taken: Notify::new(),
            on_reader: OnceLock::new(),
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
        let seq = {
            let mut state = self.state.lock();
            state.last_seq += 1;
            let seq = state.last_seq;
            state.events.push_back((seq, json));
            while state.events.len() > cap.max(1) {
                state.events.pop_front();
            }
            seq
        };
        self.changed.notify_waiters();
        seq
    }

    /// Completes once one more event fits in the buffer without pushing out one the
    /// attached reader has not been handed, or once no reader is attached (the buffer is
    /// then the replay window, and keeps the latest `cap`).
    pub(crate) async fn room(&self, cap: usize) {
        loop {
            let taken = self.taken.notified();
            tokio::pin!(taken);
            taken.as_mut().enable();
            {
                let state = self.state.lock();
                let unread = state.events.iter().filter(|(seq, _)| *seq > state.delivered).count();
                if !state.attached || unread < cap.max(1) {
                    return;
                }
            }
            taken.await;
        }
    }

    /// Appends an event another node numbered (`cluster`: a stream followed from the
    /// session store); one at or below the last seq held is a repeat and is dropped.
    pub(crate) fn push_at(&self, seq: u64, json: Vec<u8>, cap: usize) {
        {
            let mut state = self.state.lock();
            if seq <= state.last_seq {
                return;
            }
            state.last_seq = seq;
            state.events.push_back((seq, json));
            while state.events.len() > cap.max(1) {
                state.events.pop_front();
            }
        }
        self.changed.notify_waiters();
    }

    /// Puts events older than every one held back in front (a reader resuming from
    /// before where this node started following the stream), within `cap`.
    pub(crate) fn backfill(&self, older: Vec<(u64, Vec<u8>)>, cap: usize) {
        {
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
        }
        self.changed.notify_waiters();
    }

    /// No event will follow.
    pub(crate) fn finish(&self) {
        self.state.lock().done = true;
        self.changed.notify_waiters();
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
        let generation = {
            let mut state = self.state.lock();
            state.reader += 1;
            state.attached = true;
            state.reader
        };
        self.changed.notify_waiters();
        self.tell(true);
        generation
    }

    fn detach(&self, generation: u64) {
        let detached = {
            let mut state = self.state.lock();
            let current = state.reader == generation;
            if current {
                state.attached = false;
            }
            current
        };
        // Told outside the lock: the hook may take locks of its own.
        if detached {
            self.taken.notify_waiters();
            self.tell(false);
        }
    }

    /// Frames the events after `*cursor` into `out`.
    fn read(&self, generation: u64, cursor: &mut u64, out: &mut BytesMut) -> Read {
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
        if wrote {
            self.taken.notify_waiters();
        }
        match (wrote, state.done && *cursor >= state.last_seq) {
            (_, true) if !wrote => Read::Finished,
            (true, _) => Read::Some,
            (false, _) => Read::Nothing,
        }
    }
}

/// Moves a route's messages into `stream` until `expected` responses arrived (or the
/// route ends), then finishes it. Runs as a supervised task.
///
/// With `hold_back` (the standalone stream) it waits for room while a reader is attached
/// ([`EventStream::room`]): what writes there (subscription streams) holds back in turn
/// past the server's unread-output bound, so a slow reader costs bounded memory and
/// reported gaps, not silent loss. A POST's stream does not wait: the request's progress
/// and logs do not hold back, so waiting would only move its backlog into the route.
pub(crate) async fn pump(
    mut rx: RouteReceiver,
    stream: Arc<EventStream>,
    mut expected: usize,
    cap: usize,
    hold_back: bool,
) {
    while expected > 0 {
        if hold_back {
            stream.room(cap).await;
        }
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

/// The body of an SSE answer reading `stream`.
pub(crate) fn body(
    stream: Arc<EventStream>,
    start: ReaderStart,
    busy: Busy,
    shutdown: watch::Receiver<bool>,
    count: StreamCount,
) -> axum::body::Body {
    let generation = stream.attach();
    let mut keep_alive = interval_at(Instant::now() + start.keep_alive, start.keep_alive);
    keep_alive.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let reader = Reader {
        generation,
        cursor: start.cursor,
        prime: start.prime,
        poll_until: start.poll_after.map(|d| Instant::now() + d),
        keep_alive,
        shutdown,
        ended: false,
        _busy: busy,
        _count: count,
        stream,
    };
    axum::body::Body::from_stream(futures::stream::unfold(reader, Reader::next))
}

enum Wake {
    Changed,
    KeepAlive,
    End,
}

struct Reader {
    stream: Arc<EventStream>,
    generation: u64,
    cursor: u64,
    prime: Option<Duration>,
    poll_until: Option<Instant>,
    keep_alive: Interval,
    shutdown: watch::Receiver<bool>,
    ended: bool,
    _busy: Busy,
    _count: StreamCount,
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stream.detach(self.generation);
    }
}

impl Reader {
    async fn next(mut self) -> Option<(Result<Bytes, Infallible>, Reader)> {
        if self.ended {
            return None;
        }
        let mut out = BytesMut::new();
        if let Some(retry) = self.prime.take() {
            sse::put_priming(&mut out, self.stream.id, self.cursor, retry);
        }
        loop {
            let stream = self.stream.clone();
            let changed = stream.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match self.stream.read(self.generation, &mut self.cursor, &mut out) {
                Read::Some => return Some((Ok(out.freeze()), self)),
                Read::Finished | Read::Superseded => {
                    self.ended = true;
                    return if out.is_empty() { None } else { Some((Ok(out.freeze()), self)) };
                }
                Read::Nothing if !out.is_empty() => return Some((Ok(out.freeze()), self)),
                Read::Nothing => {}
            }
            let poll_until = self.poll_until;
            let poll = async move {
                // Boxed: only polling streams pay for a `Sleep`; inline it sized every
                // stream's body.
                match poll_until {
                    Some(at) => Box::pin(tokio::time::sleep_until(at)).await,
                    None => std::future::pending().await,
                }
            };
            let woke = tokio::select! {
                _ = &mut changed => Wake::Changed,
                _ = self.keep_alive.tick() => Wake::KeepAlive,
                _ = self.shutdown.wait_for(|stop| *stop) => Wake::End,
                _ = poll => Wake::End,
            };
            match woke {
                Wake::Changed => continue,
                Wake::KeepAlive => return Some((Ok(Bytes::from_static(sse::KEEP_ALIVE)), self)),
                Wake::End => {
                    // What the buffer already holds still goes out (a drained server's last
                    // answers), then the response ends.
                    self.ended = true;
                    let _ = self.stream.read(self.generation, &mut self.cursor, &mut out);
                    return (!out.is_empty()).then(|| (Ok(out.freeze()), self));
                }
            }
        }
    }
}
