//! [`LocalBus`]: the in-process bus, the embedded default.
//!
//! Not here: anything crossing a process (see [`crate::RedisBus`]). It is the hub and
//! nothing else, so its invariants are the hub's.

use std::sync::Arc;

use crate::hub::Hub;
use crate::message::{BusMessage, SubscribeOptions};
use crate::{Bus, PublishError, Subscription};

/// The in-process bus. Cheap to clone (one `Arc`); clones are the same bus.
#[derive(Debug, Clone)]
pub struct LocalBus {
    hub: Arc<Hub>,
}

impl LocalBus {
    /// A new, empty bus.
    pub fn new() -> Self {
        Self { hub: Arc::new(Hub::new(None)) }
    }

    /// Topics with at least one subscription now (a second leak check).
    pub fn topic_count(&self) -> usize {
        self.hub.topic_names().len()
    }
}

impl Default for LocalBus {
    fn default() -> Self {
        Self::new()
    }
}

impl Bus for LocalBus {
    fn subscribe(&self, topic: &str, options: SubscribeOptions) -> Subscription {
        self.hub.subscribe(topic, options)
    }

    fn publish(&self, message: BusMessage) -> Result<(), PublishError> {
        if self.hub.is_closed() {
            return Err(PublishError::Closed { topic: message.topic });
        }
        self.hub.fan_out(&Arc::new(message));
        Ok(())
    }

    fn subscriber_count(&self) -> usize {
        self.hub.subscriber_count()
    }

    fn close(&self) {
        self.hub.close();
    }
}
