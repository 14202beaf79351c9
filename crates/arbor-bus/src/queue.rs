//! One subscription's bounded queue (a `Slot`): what the publisher pushes into and the
//! subscriber pops from, with the overflow policy applied on push.
//!
//! Not here: which slots a message goes to (`hub.rs`) or the subscriber's handle
//! (`subscription.rs`).
//!
//! Invariant: at most `capacity` messages are queued, whatever the publisher does; a push
//! takes the slot's lock for a bounded time (at most one scan of the queue, under
//! `Coalesce`) and never waits for the subscriber. Reconnection gap markers are not counted
//! against the capacity but never sit twice in a row, so they are bounded by it too.
//!
//! An idle slot owns no heap memory besides itself: the queue allocates on first use.

use std::collections::VecDeque;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::task::{Poll, Waker};

use parking_lot::Mutex;

use crate::message::{BusEvent, BusMessage, EndReason, GapReason, Overflow, SubscribeOptions};

/// A subscription's shared state.
#[derive(Debug)]
pub(crate) struct Slot {
    /// Position in its topic's slot list; changed only under the topic's write lock.
    pub(crate) index: AtomicUsize,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    queue: VecDeque<Entry>,
    /// Messages in `queue` (the entries that are not gap markers).
    messages: u32,
    capacity: u32,
    overflow: Overflow,
    /// Drops not yet reported to the subscriber as a gap.
    unreported: u64,
    dropped: u64,
    coalesced: u64,
    ended: Option<EndReason>,
    waker: Option<Waker>,
}

#[derive(Debug)]
enum Entry {
    Message(Arc<BusMessage>),
    // Queued by the Redis bus after a reconnection; without the `redis` feature it never is.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    Reconnected,
}

/// Counters of one slot, read together.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counts {
    pub(crate) dropped: u64,
    pub(crate) coalesced: u64,
    pub(crate) queued: usize,
}

impl Slot {
    pub(crate) fn new(options: SubscribeOptions) -> Self {
        Self {
            index: AtomicUsize::new(usize::MAX),
            state: Mutex::new(State {
                queue: VecDeque::new(),
                messages: 0,
                capacity: options.capacity.clamp(1, u32::MAX as usize) as u32,
                overflow: options.overflow,
                unreported: 0,
                dropped: 0,
                coalesced: 0,
                ended: None,
                waker: None,
            }),
        }
    }

    /// Queues `message` under the overflow policy; returns the subscriber's waker if it
    /// must be woken (the caller wakes it after the lock is released).
    pub(crate) fn push(&self, message: &Arc<BusMessage>) -> Option<Waker> {
        let mut s = self.state.lock();
        if s.ended.is_some() {
            return None;
        }
        if s.overflow == Overflow::Coalesce && s.messages > 0 {
            if let Some(key) = &message.key {
                let same = s.queue.iter_mut().find_map(|e| match e {
                    Entry::Message(m) if m.key.as_ref().is_some_and(|k| k == key) => Some(m),
                    _ => None,
                });
                if let Some(queued) = same {
                    *queued = message.clone();
                    s.coalesced += 1;
                    // The queue was not empty, so the subscriber was woken already; taking the
                    // waker anyway costs nothing.
                    return s.waker.take();
                }
            }
        }
        if s.messages >= s.capacity {
            match s.overflow {
                Overflow::DropOldest | Overflow::Coalesce => {
                    let oldest = s.queue.iter().position(|e| matches!(e, Entry::Message(_)));
                    if let Some(i) = oldest {
                        s.queue.remove(i);
                        s.messages -= 1;
                    }
                    s.dropped += 1;
                    s.unreported += 1;
                    crate::metrics::dropped();
                }
                Overflow::EndStream => {
                    s.ended = Some(EndReason::Overflow);
                    return s.waker.take();
                }
            }
        }
        s.queue.push_back(Entry::Message(message.clone()));
        s.messages += 1;
        s.waker.take()
    }

    /// Queues a reconnection gap marker (not counted against the capacity; never two in a
    /// row, since two adjacent gaps say no more than one).
    #[cfg(feature = "redis")]
    pub(crate) fn push_reconnected(&self) -> Option<Waker> {
        let mut s = self.state.lock();
        if s.ended.is_some() || matches!(s.queue.back(), Some(Entry::Reconnected)) {
            return None;
        }
        s.queue.push_back(Entry::Reconnected);
        s.waker.take()
    }

    /// Ends the slot (idempotent: the first reason stays).
    pub(crate) fn end(&self, reason: EndReason) -> Option<Waker> {
        let mut s = self.state.lock();
        if s.ended.is_some() {
            return None;
        }
        s.ended = Some(reason);
        s.waker.take()
    }

    /// The next event, `Ready(None)` once ended and drained, or `Pending` with `waker` kept.
    pub(crate) fn poll_pop(&self, waker: Option<&Waker>) -> Poll<Option<BusEvent>> {
        let mut s = self.state.lock();
        // Drops are always of the oldest messages, so their gap belongs before everything
        // still queued.
        if s.unreported > 0 {
            let missed = std::mem::take(&mut s.unreported);
            crate::metrics::gap("dropped");
            return Poll::Ready(Some(BusEvent::Gap { missed: Some(missed), reason: GapReason::Dropped }));
        }
        match s.queue.pop_front() {
            Some(Entry::Message(m)) => {
                s.messages -= 1;
                crate::metrics::queue_depth(s.messages);
                if s.queue.is_empty() && s.queue.capacity() > 16 {
                    // Give a burst's memory back once it is drained, so idle stays small.
                    s.queue = VecDeque::new();
                }
                Poll::Ready(Some(BusEvent::Message(m)))
            }
            Some(Entry::Reconnected) => {
                crate::metrics::gap("reconnected");
                Poll::Ready(Some(BusEvent::Gap { missed: None, reason: GapReason::Reconnected }))
            }
            None if s.ended.is_some() => Poll::Ready(None),
            None => {
                if let Some(w) = waker {
                    match &mut s.waker {
                        Some(old) if old.will_wake(w) => {}
                        slot => *slot = Some(w.clone()),
                    }
                }
                Poll::Pending
            }
        }
    }

    pub(crate) fn end_reason(&self) -> Option<EndReason> {
        self.state.lock().ended
    }

    pub(crate) fn counts(&self) -> Counts {
        let s = self.state.lock();
        Counts { dropped: s.dropped, coalesced: s.coalesced, queued: s.messages as usize }
    }
}
