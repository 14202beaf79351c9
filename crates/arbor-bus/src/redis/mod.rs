//! [`RedisBus`]: the bus across several nodes, through Redis pub/sub.
//!
//! What it is: a [`Hub`] (the same bounded queues and fan-out as [`crate::LocalBus`]) plus
//! two tasks per node. The subscriber task (`subscriber.rs`) owns one dedicated pub/sub
//! connection: it `SUBSCRIBE`s a topic's channel when the topic gets its first local
//! subscription and `UNSUBSCRIBE`s when the last one leaves, fans what Redis delivers out to
//! the local queues, and after a lost connection reconnects with backoff, re-subscribes
//! every live topic and queues a [`crate::BusEvent::Gap`] (`Reconnected`) in every local
//! subscription. The publisher task (`publisher.rs`) sends what `publish` queued to Redis
//! over a multiplexed connection, pipelined in batches.
//!
//! What it is not: durable or exactly-once. What is published while a node is cut off from
//! Redis is lost for the other nodes, which the subscribers learn through the gap.
//!
//! Invariants:
//! - `publish` never awaits Redis: it delivers to local subscriptions at once (directly,
//!   not through Redis, so a node's own subscribers are served even when Redis is down and
//!   the node ignores its own messages coming back, recognised by its node id), then queues
//!   the message for the publisher task in a bounded channel. When that channel is full
//!   (Redis slow or unreachable) the publish is refused with
//!   [`PublishError::Backlogged`] and counted; nothing grows without bound.
//! - While Redis is unreachable, the publisher task waits to reconnect (the batch it was
//!   sending when the connection broke, if any, is lost and counted in `publish_failed`):
//!   the outbound channel buffers up to `outbound_capacity` messages, sent once Redis is
//!   back, and `publish` refuses the rest with `Backlogged`.
//! - The Redis channel of topic `t` is `channel_prefix + t`; the payload is
//!   `{"node", "key", "payload"}` JSON (`wire.rs`).

mod backoff;
mod publisher;
mod subscriber;
mod wire;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;

use crate::hub::{Hub, TopicHook};
use crate::message::{BusMessage, SubscribeOptions};
use crate::{Bus, BusHealth, PublishError, RedisConnectError, Settled, Subscription};

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
    /// Longest reconnection delay. Default 2 s.
    pub reconnect_max: Duration,
    /// How often the idle subscriber connection is pinged, and how long the answer may
    /// take, to notice a connection that died without being closed. Default 5 s.
    pub ping_interval: Duration,
}

impl Default for RedisBusOptions {
    fn default() -> Self {
        Self {
            channel_prefix: "arbor:".into(),
            outbound_capacity: 4096,
            reconnect_min: Duration::from_millis(50),
            reconnect_max: Duration::from_secs(2),
            ping_interval: Duration::from_secs(5),
        }
    }
}

/// Counters of a [`RedisBus`] node, since it connected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisBusStats {
    /// Messages sent to Redis.
    pub published: u64,
    /// Publishes refused because the outbound queue was full.
    pub backlogged: u64,
    /// Messages taken from the outbound queue but lost because the connection failed.
    pub publish_failed: u64,
    /// Messages received from other nodes.
    pub received: u64,
    /// Messages on our channels that were not of our shape (other programs may publish).
    pub undecodable: u64,
    /// Times the subscriber connection was re-established.
    pub reconnects: u64,
}

#[derive(Debug, Default)]
struct Counters {
    published: AtomicU64,
    backlogged: AtomicU64,
    publish_failed: AtomicU64,
    received: AtomicU64,
    undecodable: AtomicU64,
    reconnects: AtomicU64,
}

/// Topics whose local subscriptions changed, waiting for the subscriber task to
/// (un)subscribe them in Redis, and the generation counters behind [`Bus::settled`].
#[derive(Debug)]
struct Dirty {
    topics: Mutex<HashSet<Arc<str>>>,
    /// Changes made so far; bumped after the topic is in `topics`.
    requested: AtomicU64,
    /// The largest `requested` value whose changes have all reached Redis.
    applied: watch::Sender<u64>,
    wake: Notify,
}

impl TopicHook for Dirty {
    fn topic_changed(&self, topic: &Arc<str>) {
        self.topics.lock().insert(topic.clone());
        self.requested.fetch_add(1, Ordering::SeqCst);
        self.wake.notify_one();
    }
}

impl Dirty {
    fn mark_applied(&self, generation: u64) {
        self.applied.send_if_modified(|a| {
            let newer = generation > *a;
            if newer {
                *a = generation;
            }
            newer
        });
    }
}

/// What the node's tasks share. Holds no handle of the bus, so dropping the last
/// [`RedisBus`] clone stops them.
#[derive(Debug)]
struct Shared {
    hub: Arc<Hub>,
    client: redis::Client,
    node: String,
    options: RedisBusOptions,
    dirty: Arc<Dirty>,
    counters: Counters,
    /// Bumped by the subscriber task each time its connection is lost.
    lost: watch::Sender<u64>,
    /// When the subscriber connection was lost, until every live topic is subscribed
    /// again (`Bus::health`).
    down_since: Mutex<Option<tokio::time::Instant>>,
}

impl Shared {
    fn channel(&self, topic: &str) -> String {
        format!("{}{topic}", self.options.channel_prefix)
    }
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// A bus node backed by Redis pub/sub. Cheap to clone; clones are the same node. Dropping
/// the last clone (or [`Bus::close`]) stops the node's tasks and ends its subscriptions.
#[derive(Debug, Clone)]
pub struct RedisBus {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    shared: Arc<Shared>,
    outbound: mpsc::Sender<Arc<BusMessage>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl RedisBus {
    /// Connects to Redis at `url` (`redis://host:port/`): opens the pub/sub connection and
    /// the publishing connection, and starts the node's two tasks. Fails if Redis cannot be
    /// reached now; after that, the node reconnects on its own.
    pub async fn connect(url: &str, options: RedisBusOptions) -> Result<Self, RedisConnectError> {
        let client =
            redis::Client::open(url).map_err(|source| RedisConnectError::InvalidUrl { url: url.into(), source })?;
        let unreachable = |source| RedisConnectError::Unreachable { url: url.into(), source };
        let pubsub = subscriber::connect(&client).await.map_err(unreachable)?;
        let connection = publisher::connect(&client).await.map_err(unreachable)?;

        let dirty = Arc::new(Dirty {
            topics: Mutex::new(HashSet::new()),
            requested: AtomicU64::new(0),
            applied: watch::Sender::new(0),
            wake: Notify::new(),
        });
        let hub = Arc::new(Hub::new(Some(dirty.clone() as Arc<dyn TopicHook>)));
        let (outbound, outbound_rx) = mpsc::channel(options.outbound_capacity.max(1));
        let shared = Arc::new(Shared {
            hub,
            client,
            node: format!("{:016x}", fastrand::u64(..)),
            options,
            dirty,
            counters: Counters::default(),
            lost: watch::Sender::new(0),
            down_since: Mutex::new(None),
        });
        let tasks = vec![
            tokio::spawn(subscriber::run(shared.clone(), pubsub)),
            tokio::spawn(publisher::run(shared.clone(), outbound_rx, connection)),
        ];
        Ok(Self { inner: Arc::new(Inner { shared, outbound, tasks: Mutex::new(tasks) }) })
    }

    /// This node's id, as written in the payloads it publishes.
    pub fn node_id(&self) -> &str {
        &self.inner.shared.node
    }

    /// The node's counters.
    pub fn stats(&self) -> RedisBusStats {
        let c = &self.inner.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RedisBusStats {
            published: get(&c.published),
            backlogged: get(&c.backlogged),
            publish_failed: get(&c.publish_failed),
            received: get(&c.received),
            undecodable: get(&c.undecodable),
            reconnects: get(&c.reconnects),
        }
    }
}

impl Bus for RedisBus {
    fn subscribe(&self, topic: &str, options: SubscribeOptions) -> Subscription {
        self.inner.shared.hub.subscribe(topic, options)
    }

    fn publish(&self, message: BusMessage) -> Result<(), PublishError> {
        let shared = &self.inner.shared;
        if shared.hub.is_closed() {
            return Err(PublishError::Closed { topic: message.topic });
        }
        let message = Arc::new(message);
        crate::metrics::published("redis");
        shared.hub.fan_out(&message);
        match self.inner.outbound.try_send(message) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(m)) => {
                shared.counters.backlogged.fetch_add(1, Ordering::Relaxed);
                Err(PublishError::Backlogged { topic: m.topic.clone(), capacity: self.inner.outbound.max_capacity() })
            }
            Err(mpsc::error::TrySendError::Closed(m)) => Err(PublishError::Closed { topic: m.topic.clone() }),
        }
    }

    fn subscriber_count(&self) -> usize {
        self.inner.shared.hub.subscriber_count()
    }

    fn settled(&self) -> Settled {
        let dirty = self.inner.shared.dirty.clone();
        let target = dirty.requested.load(Ordering::SeqCst);
        let mut applied = dirty.applied.subscribe();
        Box::pin(async move {
            // An error means the node is gone, and with it anything left to wait for.
            let _ = applied.wait_for(|a| *a >= target).await;
        })
    }

    fn health(&self) -> BusHealth {
        let shared = &self.inner.shared;
        if shared.hub.is_closed() {
            return BusHealth::Closed;
        }
        match *shared.down_since.lock() {
            None => BusHealth::Up,
            Some(since) => BusHealth::Reconnecting { down_for: since.elapsed() },
        }
    }

    fn close(&self) {
        self.inner.close();
    }
}

impl Inner {
    fn close(&self) {
        self.shared.hub.close();
        for task in self.tasks.lock().drain(..) {
            task.abort();
        }
        // Nothing will be applied any more: release whoever waits in `settled`.
        self.shared.dirty.mark_applied(u64::MAX);
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.close();
    }
}
