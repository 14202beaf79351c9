//! [`Subscription`]: the subscriber's end of one topic, a handle on its bounded queue.
//!
//! Not here: the queue itself (`queue.rs`). Invariant: a subscription is registered with
//! its bus exactly from `subscribe` until it is dropped, so `subscriber_count` counts live
//! handles and a dropped handle costs the publisher nothing more.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::hub::{Hub, Topic};
use crate::message::{BusEvent, EndReason};
use crate::queue::Slot;

/// One subscription to one topic; see [`crate::Bus::subscribe`].
///
/// Yields [`BusEvent`]s through [`recv`](Self::recv) or as a [`futures::Stream`]; `None`
/// means it has ended ([`end_reason`](Self::end_reason) says why). Dropping it
/// unsubscribes. Small on purpose (three pointers; the shared slot is about a hundred
/// bytes when idle): a server may hold tens of thousands.
#[derive(Debug)]
pub struct Subscription {
    hub: Arc<Hub>,
    /// The topic's entry; a detached one when created on a closed bus.
    topic: Arc<Topic>,
    slot: Arc<Slot>,
}

/// [`Subscription::try_recv`] found no event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TryRecvError {
    /// Nothing queued now.
    #[error("receive from subscription: nothing queued")]
    Empty,
    /// The subscription has ended and everything queued was received.
    #[error("receive from subscription: ended ({0:?})")]
    Ended(EndReason),
}

impl Subscription {
    pub(crate) fn new(hub: Arc<Hub>, topic: Arc<Topic>, slot: Arc<Slot>) -> Self {
        Self { hub, topic, slot }
    }

    /// The next event; `None` once the subscription has ended and its queue is drained.
    pub async fn recv(&mut self) -> Option<BusEvent> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Polls for the next event (the building block of `recv` and of the `Stream` impl).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<BusEvent>> {
        self.slot.poll_pop(Some(cx.waker()))
    }

    /// The next event if one is queued now.
    pub fn try_recv(&mut self) -> Result<BusEvent, TryRecvError> {
        match self.slot.poll_pop(None) {
            Poll::Ready(Some(event)) => Ok(event),
            Poll::Ready(None) => Err(TryRecvError::Ended(self.slot.end_reason().unwrap_or(EndReason::Closed))),
            Poll::Pending => Err(TryRecvError::Empty),
        }
    }

    /// The topic subscribed to.
    pub fn topic(&self) -> &str {
        &self.topic.name
    }

    /// Why it ended, once it has (its queue may still hold messages to receive).
    pub fn end_reason(&self) -> Option<EndReason> {
        self.slot.end_reason()
    }

    /// Messages dropped from this subscription's full queue so far (each also reported in a
    /// [`BusEvent::Gap`]).
    pub fn dropped(&self) -> u64 {
        self.slot.counts().dropped
    }

    /// Messages replaced by a later one with the same key so far ([`crate::Overflow::Coalesce`]).
    pub fn coalesced(&self) -> u64 {
        self.slot.counts().coalesced
    }

    /// Messages queued now.
    pub fn queued(&self) -> usize {
        self.slot.counts().queued
    }

    /// A cloneable reader of this subscription's queue depth, for observers that do not
    /// own the subscription (a tree view of the streams of a server).
    pub fn probe(&self) -> QueueProbe {
        QueueProbe { slot: self.slot.clone() }
    }
}

/// Reads one subscription's queue depth from outside ([`Subscription::probe`]); once the
/// subscription is dropped it reads what was left queued then.
#[derive(Debug, Clone)]
pub struct QueueProbe {
    slot: Arc<Slot>,
}

impl QueueProbe {
    /// Messages queued now.
    pub fn queued(&self) -> usize {
        self.slot.counts().queued
    }
}

impl futures::Stream for Subscription {
    type Item = BusEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<BusEvent>> {
        self.get_mut().poll_recv(cx)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.hub.unsubscribe(&self.topic, &self.slot);
    }
}
