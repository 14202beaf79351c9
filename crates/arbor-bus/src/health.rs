//! [`BusHealth`]: whether a bus reaches its source, as a readiness probe reads it.
//!
//! It is a value, not a monitor: the bus keeps its state as it goes (the Redis subscriber
//! task marks when its connection was lost and when it is back), and [`crate::Bus::health`]
//! reads it. Invariant: `Reconnecting` is reported from the moment a connection is lost
//! until every live topic is subscribed again, so "up" means what is published elsewhere
//! reaches this node's subscribers.

use std::time::Duration;

/// The state of a bus's link to its source, from [`Bus::health`](crate::Bus::health).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BusHealth {
    /// Connected (always, for an in-process bus).
    Up,
    /// The link was lost `down_for` ago and the bus is reconnecting on its own; local
    /// subscribers are still served meanwhile.
    Reconnecting {
        /// How long the link has been down.
        down_for: Duration,
    },
    /// Closed ([`Bus::close`](crate::Bus::close)): it will not come back.
    Closed,
}

impl BusHealth {
    /// Whether the bus is up, or reconnecting for no longer than `grace`.
    pub fn is_ready_within(&self, grace: Duration) -> bool {
        match self {
            BusHealth::Up => true,
            BusHealth::Reconnecting { down_for } => *down_for <= grace,
            BusHealth::Closed => false,
        }
    }
}
