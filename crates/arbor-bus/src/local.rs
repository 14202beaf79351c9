//! [`LocalBus`]: the in-process bus, the embedded default.
//!
//! Not here: anything crossing a process (see `RedisBus`, feature `redis`). It is the hub and
//! nothing else, so its invariants are the hub's.

use std::sync::Arc;

use crate::hub::Hub;
use crate::message::{BusMessage, SubscribeOptions};
use crate::{Bus, BusHealth, PublishError, Subscription};

/// The in-process bus. Cheap to clone (one `Arc`); clones are the same bus. Dropping the
/// last clone closes it, so no subscription waits for a publisher that can no longer exist.
#[derive(Debug, Clone)]
pub struct LocalBus {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    hub: Arc<Hub>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.hub.close();
    }
}

impl LocalBus {
    /// A new, empty bus.
    pub fn new() -> Self {
        Self { inner: Arc::new(Inner { hub: Arc::new(Hub::new(None)) }) }
    }

    /// Topics with at least one subscription now (a second leak check).
    pub fn topic_count(&self) -> usize {
        self.inner.hub.topic_names().len()
    }
}

impl Default for LocalBus {
    fn default() -> Self {
        Self::new()
    }
}

impl Bus for LocalBus {
    fn subscribe(&self, topic: &str, options: SubscribeOptions) -> Subscription {
        self.inner.hub.subscribe(topic, options)
    }

    fn publish(&self, message: BusMessage) -> Result<(), PublishError> {
        if self.inner.hub.is_closed() {
            return Err(PublishError::Closed { topic: message.topic });
        }
        crate::metrics::published("local");
        if let Some(topic) = self.inner.hub.topic(&message.topic) {
            topic.fan_out(&Arc::new(message));
        }
        Ok(())
    }

    fn subscriber_count(&self) -> usize {
        self.inner.hub.subscriber_count()
    }

    fn health(&self) -> BusHealth {
        if self.inner.hub.is_closed() {
            BusHealth::Closed
        } else {
            BusHealth::Up
        }
    }

    fn close(&self) {
        self.inner.hub.close();
    }
}
