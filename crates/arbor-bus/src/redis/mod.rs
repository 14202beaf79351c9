//! [`RedisBus`]: the bus across several nodes, through Redis pub/sub.
//!
//! (Skeleton: the public surface is final, the driver is being written.)

use std::sync::Arc;
use std::time::Duration;

use crate::hub::Hub;
use crate::message::{BusMessage, SubscribeOptions};
use crate::{Bus, PublishError, RedisConnectError, Subscription};

/// Options of a [`RedisBus`] node.
#[derive(Debug, Clone)]
pub struct RedisBusOptions {
    /// Prefix of the Redis channel of each topic (`prefix + topic`). Default `"arbor:"`.
    pub channel_prefix: String,
    /// Messages waiting to be sent to Redis at most; beyond it `publish` answers
    /// [`PublishError::Backlogged`]. Default 4096.
    pub outbound_capacity: usize,
    /// First reconnection delay; doubled up to `reconnect_max`, with jitter. Default 50 ms.
    pub reconnect_min: Duration,
    /// Longest reconnection delay. Default 5 s.
    pub reconnect_max: Duration,
}

impl Default for RedisBusOptions {
    fn default() -> Self {
        Self {
            channel_prefix: "arbor:".into(),
            outbound_capacity: 4096,
            reconnect_min: Duration::from_millis(50),
            reconnect_max: Duration::from_secs(5),
        }
    }
}

/// Counters of a [`RedisBus`] node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RedisBusStats {
    /// Messages sent to Redis.
    pub published: u64,
    /// Publishes refused because the outbound queue was full.
    pub backlogged: u64,
    /// Messages taken from the outbound queue but lost because the connection failed.
    pub publish_failed: u64,
    /// Messages received from other nodes.
    pub received: u64,
    /// Messages from Redis that were not ours to decode (not JSON of the expected shape).
    pub undecodable: u64,
    /// Times the subscriber connection was re-established.
    pub reconnects: u64,
}

/// A bus node backed by Redis pub/sub.
#[derive(Debug, Clone)]
pub struct RedisBus {
    hub: Arc<Hub>,
}

impl RedisBus {
    /// Connects to Redis at `url` (`redis://host:port/`) and starts the node's two tasks.
    pub async fn connect(url: &str, options: RedisBusOptions) -> Result<Self, RedisConnectError> {
        let _ = (url, options);
        todo!()
    }

    /// The node's counters.
    pub fn stats(&self) -> RedisBusStats {
        RedisBusStats::default()
    }
}

impl Bus for RedisBus {
    fn subscribe(&self, topic: &str, options: SubscribeOptions) -> Subscription {
        self.hub.subscribe(topic, options)
    }

    fn publish(&self, message: BusMessage) -> Result<(), PublishError> {
        let _ = message;
        todo!()
    }

    fn subscriber_count(&self) -> usize {
        self.hub.subscriber_count()
    }

    fn close(&self) {
        self.hub.close();
    }
}
