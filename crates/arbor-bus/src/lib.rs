//! Topic pub/sub for Arbor: a [`Bus`] trait, an in-process [`LocalBus`] and, with the
//! `redis` feature, a Redis-backed `RedisBus` for several nodes.
//!
//! What it is: the event source of subscription streams and of server code that wants to
//! reach every connected client ("broadcast to everyone" is `bus.publish(..)`). A
//! subscriber names one topic and gets a [`Subscription`], a bounded queue of
//! [`BusEvent`]s; a subscriber that follows several topics holds several subscriptions.
//!
//! What it is not: a durable log or a work queue. Messages are delivered to the
//! subscriptions that exist when they are published, at most once; there is no replay, no
//! acknowledgement and no ordering across publishers (one publisher's messages to one topic
//! arrive in order, and on Redis, one node's).
//!
//! The invariant it keeps: **nothing grows without bound and nobody waits for a slow
//! subscriber.** Every subscription has its own bounded queue; [`Bus::publish`] never
//! awaits and costs each subscriber one short lock; what happens when a queue is full is the
//! subscription's explicit [`Overflow`] policy, and every loss is counted and surfaced to the
//! subscriber as a [`BusEvent::Gap`] (or, for [`Overflow::EndStream`], as the end of the
//! stream with [`EndReason::Overflow`]).
//!
//! ```
//! use arbor_bus::{Bus, BusEvent, BusMessage, LocalBus, SubscribeOptions};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let bus = LocalBus::new();
//! let mut sub = bus.subscribe("tools", SubscribeOptions::coalesce());
//! bus.publish(BusMessage::new("tools", serde_json::json!({"changed": true})).with_key("tools"))
//!     .unwrap();
//! match sub.recv().await {
//!     Some(BusEvent::Message(m)) => assert_eq!(m.payload["changed"], true),
//!     other => panic!("{other:?}"),
//! }
//! drop(sub);
//! assert_eq!(bus.subscriber_count(), 0);
//! # }
//! ```
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
mod health;
mod hub;
mod local;
mod message;
pub mod metrics;
mod queue;
#[cfg(feature = "redis")]
mod redis;
mod subscription;

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;

pub use error::PublishError;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use error::RedisConnectError;
pub use health::BusHealth;
pub use local::LocalBus;
pub use message::{BusEvent, BusMessage, EndReason, GapReason, Overflow, SubscribeOptions};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use redis::{RedisBus, RedisBusOptions, RedisBusStats};
pub use subscription::{QueueProbe, Subscription, TryRecvError};

/// A boxed future returned by [`Bus::settled`].
pub type Settled = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A topic pub/sub bus. Object safe: servers hold an `Arc<dyn Bus>`.
pub trait Bus: Send + Sync + Debug + 'static {
    /// Opens a subscription to one topic, with its own bounded queue and overflow policy.
    /// Dropping the [`Subscription`] unsubscribes. On a closed bus the subscription is
    /// returned already ended ([`EndReason::Closed`]).
    fn subscribe(&self, topic: &str, options: SubscribeOptions) -> Subscription;

    /// Delivers `message` to every current subscription of `message.topic` (and, on a
    /// distributed bus, hands it to the other nodes). Never blocks and never awaits: a full
    /// subscriber queue is resolved by that subscription's [`Overflow`] policy. Publishing to
    /// a topic nobody follows costs one map lookup.
    fn publish(&self, message: BusMessage) -> Result<(), PublishError>;

    /// Live subscriptions (created and not yet dropped, ended ones included): the leak check.
    fn subscriber_count(&self) -> usize;

    /// Resolves once every subscribe and unsubscribe made before the call has taken effect
    /// at the bus's source, so that a message published elsewhere afterwards will be seen.
    /// Immediate for [`LocalBus`]; for `RedisBus`, the Redis `SUBSCRIBE` has been
    /// acknowledged (or the connection is down, in which case the reconnection's
    /// [`BusEvent::Gap`] covers it).
    fn settled(&self) -> Settled {
        Box::pin(std::future::ready(()))
    }

    /// Whether the bus reaches its source now: [`BusHealth::Up`] for an in-process bus
    /// until it is closed; a distributed bus says since when it has been reconnecting.
    /// Cheap (a load or a short lock): readiness probes call it on every request.
    fn health(&self) -> BusHealth {
        BusHealth::Up
    }

    /// Closes the bus: every subscription ends ([`EndReason::Closed`], after what it has
    /// queued), later publishes fail with [`PublishError::Closed`] and later subscriptions
    /// start ended. Idempotent.
    fn close(&self);
}
