//! Shared helpers: bounded waits and the event shapes tests compare.

pub mod redis_server;

use std::time::Duration;

use arbor_bus::{BusEvent, GapReason, Subscription};

/// The next event, or a panic naming what was awaited after `secs` (real or paused clock).
pub async fn next(sub: &mut Subscription, secs: u64) -> Option<BusEvent> {
    match tokio::time::timeout(Duration::from_secs(secs), sub.recv()).await {
        Ok(event) => event,
        Err(_) => panic!("no event on {:?} within {secs} s", sub.topic()),
    }
}

/// The payload of a message event, or a panic showing the event.
pub fn payload(event: Option<BusEvent>) -> serde_json::Value {
    match event {
        Some(BusEvent::Message(m)) => m.payload.clone(),
        other => panic!("expected a message, got {other:?}"),
    }
}

/// A drop gap of `n`.
pub fn dropped(n: u64) -> Option<BusEvent> {
    Some(BusEvent::Gap { missed: Some(n), reason: GapReason::Dropped })
}

/// Everything queued now, as payloads or gaps.
pub fn drain(sub: &mut Subscription) -> Vec<BusEvent> {
    std::iter::from_fn(|| sub.try_recv().ok()).collect()
}
