//! The values that travel on the bus: what a publisher sends ([`BusMessage`]), what a
//! subscriber receives ([`BusEvent`]), and the per-subscription options.
//!
//! Not here: how they are queued (`queue.rs`) or encoded for Redis (`redis/wire.rs`).
//! Invariant: a published message is allocated once and shared by every subscriber
//! (`Arc<BusMessage>`), so fan-out costs a reference count per subscriber, not a copy of
//! the payload.

use std::sync::Arc;

/// One published message.
#[derive(Debug, Clone, PartialEq)]
pub struct BusMessage {
    /// The topic it is published to.
    pub topic: Arc<str>,
    /// The coalescing key: two queued messages with the same key are the same fact at two
    /// moments (for example `"tools"` for a tools `list_changed`, or a resource URI for
    /// `updated`), so [`Overflow::Coalesce`] keeps only the later one.
    pub key: Option<Arc<str>>,
    /// The content, opaque to the bus.
    pub payload: serde_json::Value,
}

impl BusMessage {
    /// A message without a coalescing key.
    pub fn new(topic: impl Into<Arc<str>>, payload: serde_json::Value) -> Self {
        Self { topic: topic.into(), key: None, payload }
    }

    /// Sets the coalescing key.
    pub fn with_key(mut self, key: impl Into<Arc<str>>) -> Self {
        self.key = Some(key.into());
        self
    }
}

/// What a subscription yields.
#[derive(Debug, Clone, PartialEq)]
pub enum BusEvent {
    /// A published message, shared with the other subscribers.
    Message(Arc<BusMessage>),
    /// Messages were lost at this point of the stream; what follows is complete again.
    Gap {
        /// How many messages this subscription lost, when known (drops under a full queue);
        /// `None` when unknown (a reconnection to Redis).
        missed: Option<u64>,
        /// Why.
        reason: GapReason,
    },
}

/// Why a [`BusEvent::Gap`] happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GapReason {
    /// The subscription's queue was full and the oldest messages were dropped
    /// ([`Overflow::DropOldest`], or [`Overflow::Coalesce`] with nothing to coalesce with).
    Dropped,
    /// The connection to the bus's source (Redis) was lost and re-established; whatever was
    /// published meanwhile is unknown.
    Reconnected,
}

/// Why a subscription ended (its `recv` returned `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EndReason {
    /// Its queue was full under [`Overflow::EndStream`].
    Overflow,
    /// The bus was closed.
    Closed,
}

/// What a subscription does when a message arrives and its queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Overflow {
    /// Drop the oldest queued message, count it ([`Subscription::dropped`]) and yield a
    /// [`BusEvent::Gap`] with the count before the next message.
    ///
    /// [`Subscription::dropped`]: crate::Subscription::dropped
    #[default]
    DropOldest,
    /// A keyed message replaces the queued message with the same key, wherever it is in the
    /// queue and whether or not the queue is full (counted in
    /// [`Subscription::coalesced`], no gap: the later fact supersedes the earlier one).
    /// When the queue is full and nothing shares the key, behave like `DropOldest`.
    ///
    /// [`Subscription::coalesced`]: crate::Subscription::coalesced
    Coalesce,
    /// End the subscription: it yields what it had queued, then `None`, and
    /// [`Subscription::end_reason`] says [`EndReason::Overflow`].
    ///
    /// [`Subscription::end_reason`]: crate::Subscription::end_reason
    EndStream,
}

/// Per-subscription options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubscribeOptions {
    /// Queued messages at most (at least 1). Default 256.
    pub capacity: usize,
    /// What happens beyond `capacity`.
    pub overflow: Overflow,
}

impl SubscribeOptions {
    /// The default queue size.
    pub const DEFAULT_CAPACITY: usize = 256;

    /// Default capacity, [`Overflow::DropOldest`].
    pub fn drop_oldest() -> Self {
        Self { capacity: Self::DEFAULT_CAPACITY, overflow: Overflow::DropOldest }
    }

    /// Default capacity, [`Overflow::Coalesce`].
    pub fn coalesce() -> Self {
        Self { capacity: Self::DEFAULT_CAPACITY, overflow: Overflow::Coalesce }
    }

    /// Default capacity, [`Overflow::EndStream`].
    pub fn end_stream() -> Self {
        Self { capacity: Self::DEFAULT_CAPACITY, overflow: Overflow::EndStream }
    }

    /// Sets the capacity (clamped to at least 1).
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }
}

impl Default for SubscribeOptions {
    fn default() -> Self {
        Self::drop_oldest()
    }
}
