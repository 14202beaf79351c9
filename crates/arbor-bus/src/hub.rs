//! The fan-out machinery shared by [`crate::LocalBus`] and `RedisBus`: a map from
//! topic to the slots of its subscriptions.
//!
//! Not here: the queue policy (`queue.rs`) or anything about Redis; a distributed bus
//! learns that a topic gained its first or lost its last local subscriber through the
//! [`TopicHook`], and feeds remote messages in through [`Hub::fan_out`].
//!
//! Invariants:
//! - A topic is in the map exactly while it has subscriptions: the last one to leave marks
//!   it dead (under its slot lock) and removes it, and a subscriber that finds a dead topic
//!   makes a new one. So publishing to an unfollowed topic is one read-locked lookup, and
//!   the map never keeps topics nobody follows.
//! - Publishing takes the map's read lock only for the lookup, then the topic's read lock
//!   for the fan-out: subscribers of other topics are never held up by it.
//! - A subscription registered concurrently with [`Hub::close`] is ended by one of the two.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::message::{BusMessage, EndReason, SubscribeOptions};
use crate::queue::Slot;
use crate::subscription::Subscription;

/// Told when a topic gains its first or loses its last local subscription. Called outside
/// the hub's locks; it must not block (the Redis bus marks the topic dirty for its driver).
pub(crate) trait TopicHook: Send + Sync + 'static {
    fn topic_changed(&self, topic: &Arc<str>);
}

#[derive(Default)]
pub(crate) struct Hub {
    topics: RwLock<HashMap<Arc<str>, Arc<Topic>>>,
    subscribers: AtomicUsize,
    closed: AtomicBool,
    hook: Option<Arc<dyn TopicHook>>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("topics", &self.topics.read().len())
            .field("subscribers", &self.subscribers.load(Ordering::Relaxed))
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish()
    }
}

#[derive(Debug)]
pub(crate) struct Topic {
    pub(crate) name: Arc<str>,
    slots: RwLock<Vec<Arc<Slot>>>,
    /// Set (under the `slots` write lock) when the last subscription left.
    dead: AtomicBool,
}

impl Topic {
    fn new(name: Arc<str>) -> Self {
        Self { name, slots: RwLock::new(Vec::new()), dead: AtomicBool::new(false) }
    }

    /// Pushes `message` into every slot; returns how many there were. Wakers are woken
    /// as we go: waking only schedules a task, and batching them would cost an allocation.
    pub(crate) fn fan_out(&self, message: &Arc<BusMessage>) -> usize {
        let slots = self.slots.read();
        for slot in slots.iter() {
            if let Some(waker) = slot.push(message) {
                waker.wake();
            }
        }
        slots.len()
    }
}

impl Hub {
    pub(crate) fn new(hook: Option<Arc<dyn TopicHook>>) -> Self {
        Self { hook, ..Self::default() }
    }

    pub(crate) fn subscribe(self: &Arc<Self>, topic: &str, options: SubscribeOptions) -> Subscription {
        let slot = Arc::new(Slot::new(options));
        if self.closed.load(Ordering::SeqCst) {
            slot.end(EndReason::Closed);
            // Never registered: its slot index stays unset, which `unsubscribe` reads as such.
            let detached = Arc::new(Topic::new(topic.into()));
            return Subscription::new(self.clone(), detached, slot);
        }
        let (entry, created) = loop {
            let (entry, created) = self.topic_for_subscribe(topic);
            let mut slots = entry.slots.write();
            if entry.dead.load(Ordering::SeqCst) {
                // Its last subscriber left between our lookup and our lock; look again.
                continue;
            }
            slot.index.store(slots.len(), Ordering::Relaxed);
            slots.push(slot.clone());
            break (entry.clone(), created);
        };
        self.subscribers.fetch_add(1, Ordering::Relaxed);
        if created {
            if let Some(hook) = &self.hook {
                hook.topic_changed(&entry.name);
            }
        }
        // Pairs with `close`: either it saw our slot or we see it closed.
        if self.closed.load(Ordering::SeqCst) {
            slot.end(EndReason::Closed);
        }
        Subscription::new(self.clone(), entry, slot)
    }

    fn topic_for_subscribe(&self, topic: &str) -> (Arc<Topic>, bool) {
        if let Some(t) = self.topics.read().get(topic) {
            if !t.dead.load(Ordering::SeqCst) {
                return (t.clone(), false);
            }
        }
        let mut map = self.topics.write();
        match map.get(topic) {
            Some(t) if !t.dead.load(Ordering::SeqCst) => (t.clone(), false),
            _ => {
                let name: Arc<str> = topic.into();
                let t = Arc::new(Topic {
                    name: name.clone(),
                    slots: RwLock::new(Vec::new()),
                    dead: AtomicBool::new(false),
                });
                map.insert(name, t.clone());
                (t, true)
            }
        }
    }

    /// Removes a subscription (its handle's `Drop`).
    pub(crate) fn unsubscribe(&self, entry: &Arc<Topic>, slot: &Arc<Slot>) {
        let i = slot.index.load(Ordering::Relaxed);
        if i == usize::MAX {
            return;
        }
        let mut slots = entry.slots.write();
        // Re-read under the lock: a swap_remove by another unsubscribe may have moved us.
        let i = slot.index.load(Ordering::Relaxed);
        debug_assert!(Arc::ptr_eq(&slots[i], slot));
        slots.swap_remove(i);
        if let Some(moved) = slots.get(i) {
            moved.index.store(i, Ordering::Relaxed);
        }
        let last = slots.is_empty();
        if last {
            entry.dead.store(true, Ordering::SeqCst);
        }
        drop(slots);
        self.subscribers.fetch_sub(1, Ordering::Relaxed);
        if last {
            let mut map = self.topics.write();
            if map.get(&entry.name).is_some_and(|t| Arc::ptr_eq(t, entry)) {
                map.remove(&entry.name);
            }
            drop(map);
            if let Some(hook) = &self.hook {
                hook.topic_changed(&entry.name);
            }
        }
    }

    /// Pushes `message` into every slot of its topic; returns how many slots it reached.
    #[cfg(feature = "redis")] // the Redis bus's delivery and reconnection paths only
    pub(crate) fn fan_out(&self, message: &Arc<BusMessage>) -> usize {
        match self.topic(&message.topic) {
            Some(entry) => entry.fan_out(message),
            None => 0,
        }
    }

    /// The topic's entry, if it has subscriptions (lets a publisher skip allocating for an
    /// unfollowed topic).
    pub(crate) fn topic(&self, name: &str) -> Option<Arc<Topic>> {
        self.topics.read().get(name).cloned()
    }

    /// Queues a reconnection gap in every slot of the named topics.
    #[cfg(feature = "redis")] // the Redis bus's delivery and reconnection paths only
    pub(crate) fn reconnected(&self, topics: &[Arc<str>]) {
        for name in topics {
            let Some(entry) = self.topics.read().get(name).cloned() else { continue };
            for slot in entry.slots.read().iter() {
                if let Some(waker) = slot.push_reconnected() {
                    waker.wake();
                }
            }
        }
    }

    /// Whether `topic` has local subscriptions now.
    #[cfg(feature = "redis")] // the Redis bus's delivery and reconnection paths only
    pub(crate) fn has_topic(&self, topic: &str) -> bool {
        self.topics.read().contains_key(topic)
    }

    /// The topics with local subscriptions now.
    pub(crate) fn topic_names(&self) -> Vec<Arc<str>> {
        self.topics.read().keys().cloned().collect()
    }

    pub(crate) fn subscriber_count(&self) -> usize {
        self.subscribers.load(Ordering::Relaxed)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    pub(crate) fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let topics: Vec<Arc<Topic>> = self.topics.read().values().cloned().collect();
        for entry in topics {
            for slot in entry.slots.read().iter() {
                if let Some(waker) = slot.end(EndReason::Closed) {
                    waker.wake();
                }
            }
        }
    }
}
