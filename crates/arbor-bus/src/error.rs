//! The bus's errors, named after the operation that fails.
//!
//! Not here: losses inside a subscription's queue, which are not errors of the publisher
//! but events of that subscriber ([`crate::BusEvent::Gap`]).

use std::sync::Arc;

/// [`crate::Bus::publish`] failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum PublishError {
    /// The bus was closed; nobody received the message.
    #[error("publish to topic {topic:?}: the bus is closed")]
    Closed {
        /// The message's topic.
        topic: Arc<str>,
    },
    /// `RedisBus` (feature `redis`) only: the outbound queue to Redis is full (Redis slow or
    /// unreachable). Local subscribers received the message; other nodes will not.
    #[error("publish to topic {topic:?}: the outbound queue to Redis is full ({capacity} messages); delivered on this node only")]
    Backlogged {
        /// The message's topic.
        topic: Arc<str>,
        /// The outbound queue's capacity.
        capacity: usize,
    },
}

/// [`crate::RedisBus::connect`] failed.
#[cfg(feature = "redis")]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedisConnectError {
    /// The URL is not a Redis URL.
    #[error("connect to Redis: invalid URL {url:?}: {source}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// The parser's complaint.
        source: redis::RedisError,
    },
    /// The first connection could not be made.
    #[error("connect to Redis at {url:?}: {source}")]
    Unreachable {
        /// The URL given.
        url: String,
        /// The client's error.
        source: redis::RedisError,
    },
}
