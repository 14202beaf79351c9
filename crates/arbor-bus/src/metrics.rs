//! The bus's metrics, through the [`metrics`] facade: publishes per bus kind, gaps by
//! reason and messages dropped on overflow (as the subscribers see them), Redis
//! reconnections, and the depth of a subscription's queue each time it yields a message
//! (every subscription stream of a server reads one bus subscription, so this is the
//! streams' queue depth).
//!
//! What it is not: a recorder (the application installs one; without it every call is the
//! facade's no-op, and every name and label here is static, so nothing is allocated).
//! Invariant: each publish, gap event, dropped message and reconnection is counted once.

use metrics::{counter, histogram};

/// Messages published (counter; [`BUS`]: `local` or `redis`).
pub const PUBLISHES: &str = "arbor.bus.publishes";
/// Gap events delivered to subscribers (counter; [`GAP_REASON`]: `dropped`, `reconnected`).
pub const GAPS: &str = "arbor.bus.gaps";
/// Messages dropped from a full subscription queue (counter).
pub const DROPS: &str = "arbor.bus.drops";
/// Redis subscriber reconnections (counter).
pub const REDIS_RECONNECTS: &str = "arbor.bus.redis.reconnects";
/// Messages still queued behind the one a subscription just yielded (histogram).
pub const QUEUE_DEPTH: &str = "arbor.bus.subscription.queue_depth";
/// `arbor.bus`: which bus.
pub const BUS: &str = "arbor.bus";
/// `arbor.bus.gap.reason`.
pub const GAP_REASON: &str = "arbor.bus.gap.reason";

/// The queue-depth histogram's buckets (messages), for exporters that need them.
pub const QUEUE_DEPTH_BUCKETS: [f64; 10] = [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

pub(crate) fn published(bus: &'static str) {
    counter!(PUBLISHES, BUS => bus).increment(1);
}

pub(crate) fn gap(reason: &'static str) {
    counter!(GAPS, GAP_REASON => reason).increment(1);
}

pub(crate) fn dropped() {
    counter!(DROPS).increment(1);
}

#[cfg(feature = "redis")]
pub(crate) fn redis_reconnected() {
    counter!(REDIS_RECONNECTS).increment(1);
}

pub(crate) fn queue_depth(depth: u32) {
    histogram!(QUEUE_DEPTH).record(depth as f64);
}
